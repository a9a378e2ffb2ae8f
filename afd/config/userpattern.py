"""A user's `[limit_patterns]` regex, matched with a time budget.

A user's regex can backtrack catastrophically (`(a|aa)+$` against a row
of `a`s) and a pane's text is written by whatever runs in it, so one row
could otherwise hold the poll loop at full CPU until the watchdog kills
afd. The `regex` package stops a match after `timeout` seconds (the
standard `re` cannot be interrupted); a pattern that runs out of time once
is tripped: it matches nothing from then on, says so once in the log, and
`compiled_limit_patterns` leaves it out, so the plugin's built-in banner
pattern is in force again until the user changes theirs.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable
from typing import Any

import regex

log = logging.getLogger("afd.config")

# Per row: a sane banner regex takes microseconds on a terminal row.
MATCH_BUDGET = 0.05


class UserPattern:
    """What detectors use of a compiled `re.Pattern` (`search`, `match`, `fullmatch`, `sub`), budgeted."""

    __slots__ = ("_compiled", "pattern", "flags", "tripped", "source")

    def __init__(self, text: str, source: str | None = None):
        self._compiled = regex.compile(text, regex.VERSION0)
        self.pattern = text
        self.flags = self._compiled.flags
        self.tripped = False
        # Where the pattern was written (`mycli.toml:12`) when it is not a
        # `[limit_patterns]` entry; it names the culprit in the log.
        self.source = source

    def _budgeted(self, method: str, string: str, *args):
        if self.tripped:
            return None
        try:
            return getattr(self._compiled, method)(string, *args, timeout=MATCH_BUDGET)
        except TimeoutError:
            self._trip()
            return None

    def _trip(self) -> None:
        self.tripped = True
        if self.source is not None:
            log.warning(
                "%s: pattern %r took over %g ms on one row (catastrophic backtracking?); it matches "
                "nothing until the file is fixed and afd reloads",
                self.source,
                self.pattern,
                MATCH_BUDGET * 1000,
            )
            return
        log.warning(
            "limit pattern %r took over %g ms on one row (catastrophic backtracking?); it is off until "
            "you change it, and the plugin's built-in pattern is in force",
            self.pattern,
            MATCH_BUDGET * 1000,
        )

    def search(self, string: str, *args):
        return self._budgeted("search", string, *args)

    def match(self, string: str, *args):
        return self._budgeted("match", string, *args)

    def fullmatch(self, string: str, *args):
        return self._budgeted("fullmatch", string, *args)

    def sub(self, repl: str | Callable[[Any], str], string: str, count: int = 0) -> str:
        """``string`` with each match replaced; unchanged once the pattern is tripped (it matches nothing)."""
        if self.tripped:
            return string
        try:
            return self._compiled.sub(repl, string, count, timeout=MATCH_BUDGET)
        except TimeoutError:
            self._trip()
            return string

    @property
    def groupindex(self):
        return self._compiled.groupindex

    def __repr__(self) -> str:
        return f"UserPattern({self.pattern!r})"


def check(text: str) -> str | None:
    """Why `text` cannot be a user pattern, or None when it compiles."""
    try:
        re.compile(text)  # users know its messages (and its syntax) best
        regex.compile(text, regex.VERSION0)
    except (re.error, regex.error) as exc:
        return str(exc)
    return None


@functools.lru_cache(maxsize=64)
def compiled(text: str) -> UserPattern:
    """One object per pattern text for the life of the process, so a trip is remembered across polls."""
    return UserPattern(text)
