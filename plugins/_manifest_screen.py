"""A manifest's walls on a screen: the generic detector every manifest agent shares.

The same reading of regions the Python detectors do, with the manifest's
patterns: the composer and every row below it are chrome; the lowest banner
block above it is the wall, unless a "not a limit" rule claims its row, a
later row says the limit reset, or the user submitted a prompt below it
that the agent answered. Pure: rows and a clock in, a Detection out.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

from afd.kit.resettime import from_epoch, parse_relative, parse_reset
from afd.kit.text import answered_prompt_below, composer_top, lowest_block, masked
from afd.model import Clock, Detection
from afd_plugins._manifest import BannerRule, Manifest

_NEVER = re.compile(r"(?!)")
_ANY = re.compile(r"^\s*\S")
_FENCE = re.compile(r"^\s*(?:```|~~~)")
_MAX_BLOCK_ROWS = 16  # a dialog drawn around its wall (Gemini CLI) is one block
# `2h5m`, `1d2h`: compact durations, read as `2h 5m`.
_GLUED_UNITS = re.compile(r"(?<=[A-Za-z])(?=\d)")


def find_banner(m: Manifest, lines: list[str], clock: Clock, pattern: re.Pattern[str] | None = None) -> Detection | None:
    """The lowest wall of ``m``'s agent in ``lines``, or None."""
    agent = m.spec.name
    chrome_row = composer_top(lines, m.composer, m.transcript or _NEVER) if m.composer is not None else None
    body = lines[:chrome_row] if chrome_row is not None else lines

    def rule_of(row: str) -> BannerRule | None:
        return next((rule for rule in m.banners if rule.regex.search(row)), None)

    def is_banner(row: str) -> bool:
        if not row.strip() or _is_chrome(m, row) or any(p.search(row) for p in m.not_limits):
            return False
        if pattern is not None:
            return pattern.search(row) is not None
        return rule_of(row) is not None

    def block_end(first: int) -> int:
        rule = rule_of(body[first]) if pattern is None else None
        last = first
        if rule is None or rule.continuation is None:
            return last
        while last + 1 < len(body) and last - first + 1 < _MAX_BLOCK_ROWS:
            nxt = body[last + 1]
            if not nxt.strip() or is_banner(nxt) or not rule.continuation.search(nxt):
                break
            last += 1
        return last

    block = lowest_block(body, is_banner, block_end, _FENCE)
    if block is None:
        return None
    first, last = block
    if m.reset_notice is not None and any(m.reset_notice.search(row) for row in body[last + 1 :]):
        return None  # the agent said the limit reset: this wall is over
    if m.submitted is not None and answered_prompt_below(body, last, m.submitted, _ANY):
        return None
    text = " ".join(r.strip() for r in body[first : last + 1])
    # The banner as the gates compare it between polls and as afd names its
    # appearance: a spinner or countdown in it (volatile) is masked; its reset
    # is read from the text as drawn.
    shown = " ".join(masked(r, m.spec.volatile).strip() for r in body[first : last + 1]) if m.spec.volatile else text
    if pattern is not None:
        return Detection(agent, first, last, None, f"{agent}.pattern", shown, chrome_row)
    rule = rule_of(body[first])
    return Detection(agent, first, last, read_reset(rule, text, clock), f"{agent}.{rule.kind}", shown, chrome_row,
                     offers_other_model=rule.offers_other_model)


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
