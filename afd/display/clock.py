"""Instants as a person reads them: clock times in their zone, with a countdown where it helps.

afd keeps and sends instants in ISO 8601 UTC (the store, `--json`, webhook
payloads, the words of events as stored). What a person reads is made from
those at the moment of reading: `08:00 (in 3h24m)` in the reader's zone,
with the day once it is far away, and, where others read it later (a
pull request), with its offset (`2026-12-04 09:30 +01:00`).
"""

from __future__ import annotations

import re
from datetime import datetime, tzinfo

# Past this, a clock time alone is ambiguous: the day is shown too.
_SAME_DAY = 20 * 3600

# An instant in afd's own words: ISO 8601 UTC (`2026-12-04T07:00:05Z`, the
# store's `…+00:00`), or the older form some stored refusals carry
# (`2026-12-04 05:08 UTC`). Another offset is someone else's words (a
# `--now` a person typed, quoted back in an error) and is left as written.
_INSTANT = re.compile(
    r"(?<![\w.:+-])(?P<iso>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|\+00:00))(?![\w:])"
    r"|(?<![\w.:+-])(?P<utc>\d{4}-\d{2}-\d{2} \d{2}:\d{2}(?::\d{2})?) UTC\b"
)


def parse_iso(text: object) -> datetime | None:
    """An ISO 8601 instant with its zone (`…Z` or an offset) as an aware datetime; None for anything else."""
    if isinstance(text, datetime):
        return text if text.tzinfo is not None else None
    if not isinstance(text, str):
        return None
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo is not None else None


def countdown(at: datetime, now: datetime) -> str:
    """`in 1h12m`, `in 3m`, `in 40s`, `in 2d3h` — or `due now` once `at` has come."""
    seconds = int((at - now).total_seconds())
    if seconds <= 0:
        return "due now"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours >= 24:
        return f"in {hours // 24}d{hours % 24}h"
    if hours:
        return f"in {hours}h{minutes:02d}m"
    if minutes:
        return f"in {minutes}m"
    return f"in {secs}s"


def short_countdown(at: datetime, now: datetime) -> str:
    """`1h30m`, `12m`, `40s`, `2d3h`, `now`: a countdown for a status bar."""
    words = countdown(at, now)
    return "now" if words == "due now" else words.removeprefix("in ")


def clock_time(at: datetime, now: datetime, zone: tzinfo) -> str:
    """`15:02 (in 1h12m)` while ahead, `15:02` once past; the day too when 20 hours or more away, the year in another."""
    local = at.astimezone(zone)
    if abs((at - now).total_seconds()) < _SAME_DAY:
        shown = local.strftime("%H:%M")
    elif local.year == now.astimezone(zone).year:
        shown = local.strftime("%a %b %d %H:%M")
    else:
        shown = local.strftime("%Y-%m-%d %H:%M")
    return f"{shown} ({countdown(at, now)})" if at > now else shown


def moment(at: datetime, now: datetime, zone: tzinfo) -> str:
    """When something happened: `09:30:05` today, `Dec 04 09:30:05` on another day (the reader's day)."""
    local, today = at.astimezone(zone), now.astimezone(zone).date()
    if local.date() == today:
        return local.strftime("%H:%M:%S")
    return local.strftime("%b %d %H:%M:%S") if local.year == today.year else local.strftime("%Y-%m-%d %H:%M:%S")


def with_offset(at: datetime, zone: tzinfo) -> str:
    """`2026-12-04 09:30 +01:00`: for text others read later, elsewhere (a pull request)."""
    local = at.astimezone(zone)
    offset = local.strftime("%z") or "+0000"
    return f"{local.strftime('%Y-%m-%d %H:%M')} {offset[:3]}:{offset[3:]}"


def local_instants(text: str, now: datetime, zone: tzinfo) -> str:
    """`text` with every instant in afd's words (`resume at 2026-12-04T07:00:05Z`) as a clock time in `zone`."""
    if "-" not in text:
        return text

    def shown(found: re.Match[str]) -> str:
        if found.group("iso"):
            at = parse_iso(found.group("iso"))
        else:
            at = parse_iso(found.group("utc").replace(" ", "T") + "Z")
        try:
            return clock_time(at, now, zone) if at is not None else found.group()
        except (OverflowError, ValueError):  # year 9999 in a zone east of UTC: past what a datetime holds
            return found.group()

    return _INSTANT.sub(shown, text)
