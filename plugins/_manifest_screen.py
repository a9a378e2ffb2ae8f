"""A manifest's walls on a screen: the generic detector every manifest agent shares.

The same reading of regions the Python detectors do, with the manifest's
patterns: the composer and every row below it are chrome; the lowest banner
block above it is the wall, unless a "not a limit" rule claims its row, a
later row says the limit reset, or the user submitted a prompt below it
that the agent answered. Pure: rows and a clock in, a Detection out.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime, timezone

from afd.kit.resettime import from_epoch, parse_relative, parse_reset
from afd.kit.text import answered_prompt_below, box_rows, composer_top, masked
from afd.model import Clock, Detection
from afd_plugins._manifest import BannerRule, Manifest

_NEVER = re.compile(r"(?!)")
_ANY = re.compile(r"^\s*\S")
_FENCE = re.compile(r"^\s*(?:```|~~~)")
_MAX_BLOCK_ROWS = 16  # a dialog drawn around its wall (Gemini CLI) is one block
# `2h5m`, `1d2h`: compact durations, read as `2h 5m`.
_GLUED_UNITS = re.compile(r"(?<=[A-Za-z])(?=\d)")


def find_banner(m: Manifest, lines: list[str], clock: Clock, pattern: re.Pattern[str] | None = None) -> Detection | None:
    """The lowest wall of ``m``'s agent in ``lines``, or None.

    With ``walls_below_composer``, the status rows under the input box are
    read first: a wall there is what the agent is doing now (its own retry),
    reported with no composer row, since those rows are the tail.
    """
    if m.trim:
        lines = [_trimmed(m, row) for row in lines]
    chrome_row, below = _composer(m, lines)
    if m.walls_below_composer and below is not None:
        status = lines[below:]
        found = _find_in(m, status, clock, pattern, None)
        if found is not None:
            return replace(found, first_row=found.first_row + below, last_row=found.last_row + below)
        if any(p.search(row) for row in status for p in m.spec.busy):
            return None  # working on the next request: what the history shows above is behind it
    return _find_in(m, lines[:chrome_row] if chrome_row is not None else lines, clock, pattern, chrome_row)


def _trimmed(m: Manifest, row: str) -> str:
    for p in m.trim:
        row = p.sub("", row)
    return row


def _composer(m: Manifest, lines: list[str]) -> tuple[int | None, int | None]:
    """(the first row of the input area, the first row below the input box or row), each None when there is none."""
    if m.composer is not None:
        top = composer_top(lines, m.composer, m.transcript or _NEVER)
        return top, None if top is None else top + 1
    box = m.spec.composer_box
    if box is not None:
        found = box_rows(lines, box.side, box.edge)
        if found is not None:
            return found[0], found[1] + 1
    return None, None


def _find_in(m: Manifest, body: list[str], clock: Clock, pattern: re.Pattern[str] | None,
             chrome_row: int | None) -> Detection | None:
    agent = m.spec.name

    def rule_of(row: str) -> BannerRule | None:
        return next((rule for rule in m.banners if rule.regex.search(row)), None)

    def is_banner_at(i: int) -> bool:
        row = body[i]
        if not row.strip() or _is_chrome(m, row) or any(p.search(row) for p in m.not_limits):
            return False
        if pattern is not None:
            return pattern.search(row) is not None
        rule = rule_of(row)
        return rule is not None and (rule.under is None or _under(body, i, rule.under))

    def block_end(first: int) -> int:
        rule = rule_of(body[first]) if pattern is None else None
        last = first
        if rule is None or rule.continuation is None:
            return last
        limit = _MAX_BLOCK_ROWS
        if _dialog_around(m, body, first) is not None:
            limit = _MAX_DIALOG_ROWS  # a wall inside its dialog runs to the dialog's edge
        while last + 1 < len(body) and last - first + 1 < limit:
            step = 1
            while rule.spans_blank_rows and step <= 2 and last + step + 1 < len(body) and not body[last + step].strip():
                step += 1  # up to two blank rows inside the message (a tip block's, a hint's)
            nxt = body[last + step]
            if not nxt.strip() or _is_chrome(m, nxt) or is_banner_at(last + step) or not rule.continuation.search(nxt):
                break
            last += step
        return last

    block = _lowest_block(body, is_banner_at, block_end)
    if block is None:
        return None
    first, wall_last = block
    last, offered = _dialogs_after(m, body, first, wall_last)
    head = rule_of(body[first]) if pattern is None else None
    if head is not None and head.nothing_after and any(_TEXT.search(r) and not _is_chrome(m, r) for r in body[last + 1 :]):
        return None  # drawn like a prompt, and something came after it: not the agent's last word
    if m.reset_notice is not None and any(m.reset_notice.search(row) for row in body[last + 1 :]):
        return None  # the agent said the limit reset: this wall is over
    if m.submitted is not None and answered_prompt_below(body, last, m.submitted, _ANY):
        return None
    text = " ".join(r.strip() for r in body[first : wall_last + 1])
    # The banner as the gates compare it between polls and as afd names its
    # appearance: a spinner or countdown in it (volatile) is masked; its reset
    # is read from the text as drawn. A dialog below the wall is not part of
    # it: answering the dialog leaves the same wall.
    shown = " ".join(masked(r, m.spec.volatile).strip() for r in body[first : wall_last + 1]) if m.spec.volatile else text
    if pattern is not None:
        return Detection(agent, first, last, None, f"{agent}.pattern", shown, chrome_row)
    rule = rule_of(body[first])
    assert rule is not None  # the block starts at a row a rule found
    everything = " ".join(r.strip() for r in body[first : last + 1])
    offers = rule.offers_other_model or offered or (
        rule.offers_other_model_when is not None
        and any(rule.offers_other_model_when.search(r) for r in body[first : last + 1]))
    unstated = rule.reset_unstated is not None and rule.reset_unstated.search(everything) is not None
    return Detection(agent, first, last, read_reset(rule, text, clock), f"{agent}.{rule.kind}", shown, chrome_row,
                     reset_unstated=unstated, offers_other_model=offers)


def _lowest_block(body: list[str], is_banner_at, block_end) -> tuple[int, int] | None:
    """The lowest banner block outside code fences (`afd.kit.text.banner_blocks`, its rows judged by index)."""
    found, in_fence, i = None, False, 0
    while i < len(body):
        if _FENCE.match(body[i]):
            in_fence = not in_fence
            i += 1
        elif in_fence or not is_banner_at(i):
            i += 1
        else:
            last = max(block_end(i), i)
            found = (i, last)
            i = last + 1
    return found


def _under(body: list[str], row: int, above: re.Pattern[str]) -> bool:
    """Whether the nearest row above ``row`` with a letter or digit in it (past frames, bars, blank rows) is one ``above`` finds."""
    j = row - 1
    while j >= 0 and not _TEXT.search(body[j]):
        j -= 1
    return j >= 0 and above.search(body[j]) is not None


_TEXT = re.compile(r"\w")


_MAX_DIALOG_ROWS = 40  # a dialog taller than this is not one the wall drew


def _dialog_around(m: Manifest, body: list[str], row: int) -> tuple[int, int] | None:
    """(start, end) of a dialog drawn around ``row`` (the wall inside its box), or None."""
    for rule in m.dialogs:
        start = None
        for j in range(row, max(-1, row - _MAX_DIALOG_ROWS), -1):
            if rule.start.search(body[j]):
                start = j
                break
            if j < row and rule.end.search(body[j]):
                break  # a dialog that closed above the wall
        if start is None:
            continue
        for end in range(row, min(len(body), start + _MAX_DIALOG_ROWS)):
            if rule.end.search(body[end]):
                return start, end
    return None


def _dialogs_after(m: Manifest, body: list[str], first: int, last: int) -> tuple[int, bool]:
    """The wall's last row with the dialogs the agent opened around and under it, and whether one offers another model.

    A dialog (a menu, a question with options) the agent opens at its wall
    belongs to the wall, as Claude's rate-limit menu and Codex's modal do:
    it is not output after the wall, whatever it says.
    """
    offered = False
    around = _dialog_around(m, body, first)
    if around is not None:
        last = max(last, around[1])
        offered |= _offers(m, body, *around)
    while m.dialogs:
        nxt = next((j for j in range(last + 1, len(body)) if body[j].strip()), None)
        if nxt is None:
            break
        span = None
        for rule in m.dialogs:
            if not rule.start.search(body[nxt]):
                continue
            end = next((j for j in range(nxt, min(len(body), nxt + _MAX_DIALOG_ROWS)) if rule.end.search(body[j])), None)
            if end is None and len(body) - nxt <= _MAX_DIALOG_ROWS:
                end = len(body) - 1  # drawn to the bottom of the screen, its edge cut off
            if end is not None:
                span = (nxt, end)
                break
        if span is None:
            break
        offered |= _offers(m, body, *span)
        last = span[1]
    return last, offered


def _offers(m: Manifest, body: list[str], start: int, end: int) -> bool:
    return any(rule.offers_other_model is not None and rule.offers_other_model.search(row)
               for rule in m.dialogs for row in body[start : end + 1])


def _is_chrome(m: Manifest, row: str) -> bool:
    return any(p.search(row) for p in m.spec.chrome)


def read_reset(rule: BannerRule, text: str, clock: Clock) -> datetime | None:
    """The instant the banner's reset groups name, or None when it names none (or none that parses)."""
    found = (rule.reset or rule.regex).search(text)
    if found is None:
        return None
    groups = {k: v for k, v in found.groupdict().items() if v}
    try:
        if "epoch" in groups:
            return from_epoch(groups["epoch"])
        if "relative" in groups:
            delta = parse_relative(_GLUED_UNITS.sub(" ", groups["relative"]))
            return clock.now.astimezone(timezone.utc) + delta if delta is not None else None
        phrase = " ".join(groups[k] for k in ("date", "clock") if k in groups)
        if phrase:
            return parse_reset(phrase, groups.get("zone"), clock)
    except (OverflowError, ValueError):  # a reset past what a datetime holds: unreadable, still a wall
        return None
    return None
