"""What an agent's screen offers someone about to type into it: menus, modals, the composer.

Pure readings of captured rows (as `afd.kit.text.capture_rows` gives them), for
delivery to decide whether and how to type. Each reading says "not found"
(None) rather than guess: a composer afd cannot find is not an empty one.
How an agent draws its input row, which menus it opens at its wall, how it
shows a turn in progress and its own auto-continue are its `AgentSpec`'s
(`input_rows`, `input_placeholders`, `limit_menus`, `busy`,
`auto_continue_armed`), set by the plugin that knows the agent: nothing
here names an agent or quotes one.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from afd.kit.resettime import parse_reset
from afd.model import AgentSpec, Clock, LimitMenu

# A menu option: a highlight mark (or two spaces), a number, the text.
_OPTION = re.compile(r"^\s*(?P<mark>[❯›>▶]?)\s*(?P<n>\d+)\.\s+(?P<text>\S.*?)\s*$")
_DESCRIPTION_GAP = re.compile(r"\s{2,}")
_RULE = re.compile(r"^\s*─{8,}\s*$")
# How far up from the last row a turn in progress shows (its spinner sits above the input box and its hints).
BUSY_ROWS = 8


class Native(enum.Enum):
    """The agent's own auto-continue at a wall (`AgentSpec.auto_continue_armed`), as the screen shows it."""

    NONE = "none"  # no such feature on screen
    ARMED = "armed"  # it will type its own continuation (at a time, or now)
    CANCELLED = "cancelled"  # it said it will not


@dataclass(frozen=True, slots=True)
class Menu:
    """A numbered list of choices that takes the composer's place."""

    options: tuple[str, ...]
    highlighted: int | None  # index into options, None when no row is marked
    first_row: int
    title: str  # the rows just above the options, joined

    def index_of(self, text: str) -> int | None:
        """The option that reads exactly `text` (never by number)."""
        for i, option in enumerate(self.options):
            if option == text:
                return i
        return None


def find_menu(rows: Sequence[str]) -> Menu | None:
    """The lowest run of numbered options on screen (two or more), if any."""
    runs: list[list[tuple[int, re.Match]]] = []
    current: list[tuple[int, re.Match]] = []
    for i, row in enumerate(rows):
        m = _OPTION.match(row)
        if m and (not current or int(m["n"]) == int(current[-1][1]["n"]) + 1):
            current.append((i, m))
        elif m and int(m["n"]) == 1:
            if len(current) >= 2:
                runs.append(current)
            current = [(i, m)]
        elif row.strip() == "" or m is None:
            if len(current) >= 2:
                runs.append(current)
            current = []
    if len(current) >= 2:
        runs.append(current)
    if not runs:
        return None
    run = runs[-1]
    # An option may carry a description after a wide gap (Codex: "Switch to …   Fast and affordable …").
    options = tuple(_DESCRIPTION_GAP.split(m["text"], maxsplit=1)[0] for _, m in run)
    marked = [k for k, (_, m) in enumerate(run) if m["mark"]]
    first = run[0][0]
    title = " ".join(r.strip() for r in rows[max(0, first - 3) : first] if r.strip())
    return Menu(options=options, highlighted=marked[0] if len(marked) == 1 else None, first_row=first, title=title)


def limit_menu(spec: AgentSpec | None, menu: Menu) -> LimitMenu | None:
    """Which of the agent's known wall menus this is (`AgentSpec.limit_menus`); None: one afd does not know."""
    if spec is None:
        return None
    text = " ".join((menu.title, *menu.options))
    return next((known for known in spec.limit_menus if known.pattern.search(text)), None)


def reads_composer(spec: AgentSpec | None) -> bool:
    """Whether `composer_text` knows this agent's input row (else a missing row proves nothing)."""
    return spec is not None and bool(spec.input_rows)


def composer_text(spec: AgentSpec | None, rows: Sequence[str]) -> str | None:
    """The text in the agent's input row, "" when empty; None when no input row is on screen (or none is known)."""
    if spec is None or not spec.input_rows:
        return None
    for i in range(len(rows) - 1, -1, -1):
        row = rows[i]
        for way in spec.input_rows:
            m = way.pattern.match(row)
            if m is None or (way.between_rules and not _between_rules(rows, i)):
                continue
            typed = m.groupdict().get("text")
            text = (row[m.end():] if typed is None else typed).strip()
            return "" if text in spec.input_placeholders else text
    return None


def _between_rules(rows: Sequence[str], i: int) -> bool:
    return i > 0 and i + 1 < len(rows) and bool(_RULE.match(rows[i - 1])) and bool(_RULE.match(rows[i + 1]))


def busy(spec: AgentSpec | None, rows: Sequence[str]) -> bool:
    """The agent shows it is working on a turn: one of its busy rows (`AgentSpec.busy`) near the bottom."""
    if spec is None or not spec.busy:
        return False
    return any(p.search(row) for row in rows[-BUSY_ROWS:] for p in spec.busy)


def native_continue(spec: AgentSpec | None, rows: Sequence[str], clock: Clock) -> tuple[Native, datetime | None]:
    """The agent's own auto-continue: armed (and when it fires), cancelled, or not on screen.

    The lowest of its messages wins: a cancel after an arm disarms it, a
    second banner re-arms it.
    """
    state, at = Native.NONE, None
    if spec is None:
        return state, at
    for row in rows:
        if any(p.search(row) for p in spec.auto_continue_cancelled):
            state, at = Native.CANCELLED, None
        elif m := next((m for p in spec.auto_continue_armed if (m := p.search(row))), None):
            when = m.groupdict().get("at")
            state, at = Native.ARMED, (parse_reset(when, None, clock) if when else clock.now)
    return state, at


def text_seen(pasted: str, spec: AgentSpec | None, rows: Sequence[str]) -> bool:
    """Whether the pasted text shows in the composer (its start; a long paste may be cut or folded,
    or drawn as the agent's placeholder for a paste of that many lines)."""
    head = " ".join(pasted.split())[:24]
    shown = composer_text(spec, rows)
    if shown is not None:
        return " ".join(shown.split()).startswith(head) or _paste_marker(pasted, spec, [shown])
    # No composer this module knows: the text's start on one of the last rows.
    if any(head in " ".join(row.split()) for row in rows[-6:]):
        return True
    return _paste_marker(pasted, spec, rows[-PASTE_MARKER_ROWS:])


# How far up from the last row a paste's placeholder is looked for when the input row is not known:
# an input box with its hint and status rows below it.
PASTE_MARKER_ROWS = 12


def _paste_marker(pasted: str, spec: AgentSpec | None, rows: Sequence[str]) -> bool:
    """One of the rows is the agent's placeholder for a paste, naming this text's number of lines if it names any."""
    if spec is None or not spec.paste_markers:
        return False
    # Counted either way a CLI may count: lines of text, or newlines plus one (a final newline makes a last, empty line).
    counts = {str(len(pasted.splitlines())), str(pasted.count("\n") + 1)}
    for row in rows:
        for marker in spec.paste_markers:
            m = marker.search(row)
            if m is not None and m.groupdict().get("lines") in (None, *counts):
                return True
    return False
