"""Durations as the config writes them: "500ms", "90s", "1h30m", "2d".

A duration is one or more `<number><unit>` parts (units ms, s, m, h, d),
summed. A bare "0" is zero; the keys that can be switched off also take "0"
or "" to mean "disabled". Any other number without a unit is refused:
"30" could mean seconds or minutes, and guessing wrong would make afd poll a
pane every 30 minutes or hammer it every 30 seconds.
"""

from __future__ import annotations

import math
import re

UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}

# No afd duration needs more than a year (a weekly limit resets within 7 days);
# a larger one overflows datetime arithmetic and the sleeps of the poll loop.
MAX_SECONDS = 365 * 86400.0

# "ms" is listed before "m" so "500ms" is not read as 500 minutes and a stray "s".
_PART = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)")
_HINT = '(use a number with a unit: ms, s, m, h, d, e.g. "90s" or "1h30m")'


class DurationError(ValueError):
    """A duration string that cannot be read; the message says how to write one."""


def parse_duration(text: str) -> float:
    """Seconds in ``text``; "0" is zero. Raises DurationError for anything else unreadable."""
    if not isinstance(text, str):
        raise DurationError(f"expected a duration string {_HINT}")
    stripped = text.strip()
    if stripped == "":
        raise DurationError(f"empty duration {_HINT}")
    if re.fullmatch(r"0+(?:\.0+)?", stripped):
        return 0.0
    total = 0.0
    pos = 0
    while pos < len(stripped):
        match = _PART.match(stripped, pos)
        if match is None:
            if re.fullmatch(r"\d+(?:\.\d+)?", stripped):
                raise DurationError(f'"{text}" has no unit {_HINT}')
            raise DurationError(f'"{text}" is not a duration {_HINT}')
        total += float(match.group(1)) * UNITS[match.group(2)]
        pos = match.end()
    if not math.isfinite(total) or total > MAX_SECONDS:
        raise DurationError(f'"{text}" is too long (at most "365d")')
    return total


def parse_duration_or_disabled(text: str) -> float | None:
    """Like parse_duration, but "0" and "" mean disabled and give None."""
    if isinstance(text, str) and text.strip() == "":
        return None
    seconds = parse_duration(text)
    return None if seconds == 0 else seconds


def format_duration(seconds: float | None) -> str:
    """The shortest duration string that reads back as ``seconds``; "0" for None or zero."""
    if not seconds:
        return "0"
    millis = round(seconds * 1000)
    if millis == 0:
        return "0"
    parts = []
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1)):
        count, millis = divmod(millis, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)
