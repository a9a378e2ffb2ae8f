"""Session names: for adopted panes, which panes the user asked afd to ignore, and which session a name a person types means."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Collection, Iterable, Sequence

from afd.errors import UserError
from afd.record.types import SessionRecord

_VALID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+-]{0,63}")


def is_valid_name(name: str) -> bool:
    """Session names appear in branch names (`afd/NAME`) and tmux targets: keep them plain."""
    # fullmatch: `$` would let a trailing newline through, and a name is printed one per line.
    return bool(_VALID.fullmatch(name)) and ".." not in name


def unique_name(base: str, taken: Collection[str]) -> str:
    """``base``, or ``base-2``, ``base-3``… — the first not already taken."""
    cleaned = re.sub(r"[^A-Za-z0-9._:@+-]", "-", base).strip("-") or "pane"
    if cleaned not in taken:
        return cleaned
    n = 2
    while f"{cleaned}-{n}" in taken:
        n += 1
    return f"{cleaned}-{n}"


def is_ignored(location: str, patterns: Sequence[str]) -> bool:
    """`watch_ignore` globs match the pane's `session:window.pane` location."""
    return any(fnmatch.fnmatchcase(location, p) for p in patterns)


class NameNotFound(UserError):
    """No session answers to the name a person typed; the message lists the sessions there are."""


class NameAmbiguous(UserError):
    """More than one live session answers to the name; `candidates` are their afd names."""

    def __init__(self, message: str, candidates: tuple[str, ...]):
        super().__init__(message)
        self.candidates = candidates


def resolve(text: str, records: Iterable[SessionRecord]) -> SessionRecord:
    """The session a person means by `text`: its afd name, or a name tmux gives its pane.

    An exact afd name wins, whatever the session's state. Otherwise the one live
    session (not gone) whose tmux session name, `session:window`, `session:window.pane`
    or pane id (`%3`) is `text`; more than one is an error that lists them all, so
    a guess never picks which pane afd types into.
    """
    records = list(records)
    for rec in records:
        if rec.name == text:
            return rec
    found = [rec for rec in records if rec.state != "gone" and text in _tmux_names(rec)]
    if len(found) == 1:
        return found[0]
    if found:
        listed = ", ".join(f"{r.name} ({r.location or '?'} {r.pane_id})" for r in found)
        raise NameAmbiguous(f"{text!r} names {len(found)} sessions: {listed}; give one of their names", tuple(r.name for r in found))
    known = ", ".join(r.name for r in records) or "none"
    raise NameNotFound(f"no session named {text!r}, nor a live one in a tmux pane of that name (sessions: {known})")


def _tmux_names(rec: SessionRecord) -> tuple[str, ...]:
    """What tmux calls the session's pane: its id, `session:window.pane`, `session:window` and `session`."""
    names = [rec.pane_id]
    if rec.location:
        window, _, _pane = rec.location.rpartition(".")
        names += [rec.location, window, window.rpartition(":")[0]]
    return tuple(n for n in names if n)
