"""What an agent's screen offers someone about to type into it: menus, modals, the composer.

Pure readings of captured rows (as `afd.kit.text.capture_rows` gives them), for
delivery to decide whether and how to type. Each reading says "not found"
(None) rather than guess: a composer afd cannot find is not an empty one.
How an agent draws its input row is its `AgentSpec`'s (`input_rows`,
`input_placeholders`), set by the plugin that knows the agent.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from afd.kit.resettime import parse_reset
from afd.model import AgentSpec, Clock

# A menu option: a highlight mark (or two spaces), a number, the text.
_OPTION = re.compile(r"^\s*(?P<mark>[❯›>▶]?)\s*(?P<n>\d+)\.\s+(?P<text>\S.*?)\s*$")
_DESCRIPTION_GAP = re.compile(r"\s{2,}")
_RULE = re.compile(r"^\s*─{8,}\s*$")
_BUSY = re.compile(r"esc to interrupt|\bWorking…? \(\d+s", re.I)
_ARMED = re.compile(r"(?:set to continue|Continuing) automatically at (?P<at>[^·]+?)\s*(?:·|$)", re.I)
_SHORTLY = re.compile(r"Continuing shortly\b", re.I)
_CANCELLED = re.compile(r"Automatic continue cancelled", re.I)


class Native(enum.Enum):
    """The agent's own auto-continue (Claude Code), as the screen shows it."""

    NONE = "none"  # no such feature on screen
    ARMED = "armed"  # "set to continue automatically at …"
    CANCELLED = "cancelled"  # "Automatic continue cancelled"


STOP_AND_WAIT = "Stop and wait for limit to reset"
KEEP_MODEL = "Keep current model"


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


class MenuKind:
    RATE_LIMIT_OPTIONS = "rate-limit-options"  # Claude's /rate-limit-options
    SWITCH_MODEL = "switch-model"  # Codex "Approaching rate limits / Switch to …?"
    LIMIT_INCREASE = "limit-increase"  # Codex "Request a limit increase from your owner"
    OTHER = "other"


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


def menu_kind(menu: Menu) -> str:
    text = " ".join((menu.title, *menu.options))
    if "Request a limit increase" in text or "Request increase?" in text:
        return MenuKind.LIMIT_INCREASE
    if STOP_AND_WAIT in menu.options or "What do you want to do?" in menu.title:
        return MenuKind.RATE_LIMIT_OPTIONS
    if KEEP_MODEL in menu.options:
        return MenuKind.SWITCH_MODEL
    return MenuKind.OTHER


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


def busy(rows: Sequence[str]) -> bool:
    """The agent shows it is working on a turn (spinner / "esc to interrupt")."""
    return any(_BUSY.search(row) for row in rows[-8:])


def native_continue(rows: Sequence[str], clock: Clock) -> tuple[Native, datetime | None]:
    """Claude's own auto-continue: armed (and when it fires), cancelled, or not on screen.

    The lowest of the two messages wins: a cancel after an arm disarms it, a
    second banner re-arms it.
    """
    state, at = Native.NONE, None
    for row in rows:
        if _CANCELLED.search(row):
            state, at = Native.CANCELLED, None
        elif m := _ARMED.search(row):
            state, at = Native.ARMED, parse_reset(m["at"], None, clock)
        elif _SHORTLY.search(row):
            state, at = Native.ARMED, clock.now
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
