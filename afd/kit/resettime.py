"""Reading the reset clause of a banner into an instant.

Pure functions of text and a ``Clock``; detectors call them and never read
the system clock. Rules (see the detection issue):

* an IANA zone named in the banner wins (``UTC``, ``Etc/GMT+5`` included);
  no zone means the clock's local zone; an unknown zone means no reset time,
  never a guess;
* a bare time of day is its next occurrence strictly after now;
* a date without a year is the next such date and time strictly after now;
* a weekday with a time (``Mon 9am``) is the next such weekday and time;
* a full date is returned as it is, even when already past;
* ``in N days N hours N minutes`` (also ``in: N hours``) is relative to now;
* a unix timestamp is exact.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from afd.model import Clock

_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    )
}

# "2pm", "6:50pm", "2:51 PM", "14:30", "9 am"
TIME_OF_DAY = r"(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?\s*(?P<ampm>[ap]\.?m\.?)?"
# "Oct 31", "Sep 15th", "June 18"
MONTH_DAY = r"(?P<month>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?"

_TIME_RE = re.compile(rf"^{TIME_OF_DAY}$", re.IGNORECASE)
_DATE_TIME_RE = re.compile(
    rf"^{MONTH_DAY}(?:,?\s*(?P<year>\d{{4}}))?(?:,?\s*(?:at\s+)?(?P<time>.+))?$",
    re.IGNORECASE,
)
_REL_UNIT = re.compile(
    r"(?P<n>\d+(?:\.\d+)?|an?)\s*(?P<unit>days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)\b",
    re.IGNORECASE,
)
_WEEKDAYS = {d: i for i, d in enumerate(["mon", "tue", "wed", "thu", "fri", "sat", "sun"])}
# "Mon 9am", "Monday at 9am", "Fri, 2:30 PM"; anchored, so a zone name such
# as Europe/Monaco (read out of its parentheses first) is never a Monday.
_WEEKDAY_TIME_RE = re.compile(
    r"^(?P<wd>mon|tue|wed|thu|fri|sat|sun)(?:day|s|sday|nesday|rs|rsday|urday)?\.?,?\s*(?:at\s+)?(?P<time>.+)$",
    re.IGNORECASE,
)
# "UTC+5", "GMT-03:30", "UTC+0530": a fixed offset, read the ISO way round
# (unlike Etc/GMT+5, which IANA defines as five hours *behind* UTC).
_OFFSET_ZONE_RE = re.compile(r"^(?:UTC|GMT)\s*(?P<sign>[+-])(?P<h>\d{1,2})(?::?(?P<m>\d{2}))?$", re.IGNORECASE)
# Names zoneinfo accepts that are not zones a banner could mean: resolving
# them would be a silent guess at the host's zone.
_NOT_ZONES = frozenset({"localtime", "posixrules", "factory"})
# "in 3 hours", "10177.564s" (Gemini's retry delay), "~3 days", "about an hour"; "under a minute"
# and "less than a minute" are read as the minute they are within.
_REL_WHOLE = re.compile(
    r"^(?:in(?::\s*|\s+))?(?:~\s*|about\s+|approximately\s+|under\s+|less\s+than\s+)?"
    r"(?:(?:\d+(?:\.\d+)?|an?)\s*(?:days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)\b[\s,]*(?:and\s+)?)+$",
    re.IGNORECASE,
)


def resolve_zone(name: str | None, clock: Clock) -> tzinfo | None:
    """The zone a banner names, the clock's local zone when it names none, None when unknown.

    Aliases (``Asia/Calcutta``, ``US/Eastern``) resolve through the shipped
    ``tzdata``; ``UTC``/``GMT``/``Z`` and ``UTC+5``-style offsets are read
    directly; anything else unknown is None, never a guess.
    """
    if name is None or not name.strip():
        return clock.local_zone
    name = name.strip()
    if name.upper() in ("UTC", "GMT", "Z"):
        return timezone.utc
    m = _OFFSET_ZONE_RE.match(name)
    if m:
        hours, minutes = int(m["h"]), int(m["m"] or 0)
        if hours > 14 or minutes > 59:
            return None
        offset = timedelta(hours=hours, minutes=minutes)
        return timezone(-offset if m["sign"] == "-" else offset)
    # A wrapped banner may come back as "America/New York".
    for candidate in dict.fromkeys((name, re.sub(r"\s+", "_", name))):
        if candidate.lower() in _NOT_ZONES or len(candidate) > 255:
            continue
        try:
            return ZoneInfo(candidate)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            continue
    return None


def parse_time_of_day(text: str) -> tuple[int, int] | None:
    m = _TIME_RE.match(text.strip())
    if not m:
        return None
    hour, minute = int(m["hour"]), int(m["minute"] or 0)
    ampm = (m["ampm"] or "").lower().replace(".", "")
    if ampm:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if ampm == "pm" else 0)
    elif m["minute"] is None:
        return None  # a bare number is not a time
    if hour > 23 or minute > 59:
        return None
    return hour, minute


def _utc(local: datetime) -> datetime:
    return local.astimezone(timezone.utc)


def _first_pass_after(wall: datetime, now: datetime) -> datetime | None:
    """The first instant strictly after ``now`` at which the wall clock reads ``wall``, in UTC.

    In the hour a zone falls back, a wall time happens twice (``fold`` 0 then
    1); its next occurrence may be the second pass. Instants are compared in
    UTC: datetimes sharing a tzinfo compare by wall clock and ignore ``fold``.
    """
    for fold in (0, 1):
        candidate = _utc(wall.replace(fold=fold))
        if candidate > now:
            return candidate
    return None


def next_time_of_day(hour: int, minute: int, zone: tzinfo, now: datetime) -> datetime:
    """The next instant strictly after ``now`` at which the wall clock in ``zone`` reads hour:minute."""
    day = now.astimezone(zone).replace(hour=hour, minute=minute, second=0, microsecond=0, fold=0)
    for _ in range(3):
        found = _first_pass_after(day, now)
        if found is not None:
            return found
        day += timedelta(days=1)  # wall-clock arithmetic: the same time on the next day
    return _utc(day)


def next_date_time(month: int, day: int, hour: int, minute: int, zone: tzinfo, now: datetime) -> datetime | None:
    """The next instant strictly after ``now`` on month/day at hour:minute in ``zone``."""
    local_now = now.astimezone(zone)
    for year in range(local_now.year, local_now.year + 9):
        try:
            candidate = datetime(year, month, day, hour, minute, tzinfo=zone)
        except ValueError:  # Feb 29 in a common year
            continue
        found = _first_pass_after(candidate, now)
        if found is not None:
            return found
    return None


def next_weekday_time(weekday: int, hour: int, minute: int, zone: tzinfo, now: datetime) -> datetime:
    """The next instant strictly after ``now`` on ``weekday`` (Monday is 0) at hour:minute in ``zone``."""
    local_now = now.astimezone(zone)
    for days in range(8):
        day = local_now + timedelta(days=days)
        if day.weekday() != weekday:
            continue
        found = _first_pass_after(day.replace(hour=hour, minute=minute, second=0, microsecond=0, fold=0), now)
        if found is not None:
            return found
    return _utc((local_now + timedelta(days=7)).replace(hour=hour, minute=minute, second=0, microsecond=0))


def parse_relative(text: str) -> timedelta | None:
    """``in 4 days 20 hours 9 minutes``, ``3 hours 2 minutes.``, ``3d 11h``, ``10177.564s``, ``~3 days`` → a duration."""
    text = text.strip().rstrip(".").strip()
    if not text or not _REL_WHOLE.match(text):
        return None
    total = timedelta()
    try:
        for m in _REL_UNIT.finditer(text):
            n, unit = (1.0 if m["n"].lower() in ("a", "an") else float(m["n"])), m["unit"].lower()
            if unit.startswith("d"):
                total += timedelta(days=n)
            elif unit.startswith("h"):
                total += timedelta(hours=n)
            elif unit.startswith("m"):
                total += timedelta(minutes=n)
            else:
                total += timedelta(seconds=n)
    except (OverflowError, ValueError):  # "in 99999999999 days": no instant a clock can hold
        return None
    return total


def from_epoch(seconds: str | int) -> datetime | None:
    try:
        value = int(seconds)
    except (TypeError, ValueError):
        return None
    if value > 10**11:  # milliseconds
        value //= 1000
    try:
        return datetime.fromtimestamp(value, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None


def parse_reset(phrase: str, zone_name: str | None, clock: Clock) -> datetime | None:
    """Read one reset phrase (the part after ``resets``/``at``/``in``) into aware UTC.

    Accepts a time of day (``2pm``), a date with a time (``Oct 31, 9am``,
    ``Sep 15 at 7pm``, ``Jun 18th, 2026 8:41 AM``), or a relative duration
    (``in 3 hours 2 minutes``). Returns None for anything else or an
    unknown zone.
    """
    try:
        return _parse_reset(phrase, zone_name, clock)
    except OverflowError:  # "Dec 31, 9999 11pm (Etc/GMT+12)": past the last instant a datetime holds
        return None


def _parse_reset(phrase: str, zone_name: str | None, clock: Clock) -> datetime | None:
    phrase = phrase.strip().rstrip(".").strip()
    phrase = re.sub(r"^at\s+", "", phrase, flags=re.IGNORECASE)
    if not phrase:
        return None
    delta = parse_relative(phrase)
    if delta is not None:
        return _utc(clock.now) + delta
    zone = resolve_zone(zone_name, clock)
    if zone is None:
        return None
    tod = parse_time_of_day(phrase)
    if tod is not None:
        return next_time_of_day(*tod, zone, clock.now)
    m = _WEEKDAY_TIME_RE.match(phrase)
    if m:
        tod = parse_time_of_day(m["time"])
        return next_weekday_time(_WEEKDAYS[m["wd"][:3].lower()], *tod, zone, clock.now) if tod else None
    m = _DATE_TIME_RE.match(phrase)
    if not m:
        return None
    month, day = _MONTHS[m["month"][:3].lower()], int(m["day"])
    tod = parse_time_of_day(m["time"]) if m["time"] else (0, 0)
    if tod is None:
        return None
    if m["year"]:
        try:
            return _utc(datetime(int(m["year"]), month, day, *tod, tzinfo=zone))
        except ValueError:
            return None
    return next_date_time(month, day, *tod, zone, clock.now)


def local_zone() -> tzinfo:
    """The process's local zone: ``TZ`` when it names a zone, else the system's, DST rules kept."""
    import os

    for name in (os.environ.get("TZ", "").lstrip(":"), _system_zone_name()):
        if name:
            zone = resolve_zone(name, Clock(datetime.now(timezone.utc), timezone.utc))
            if zone is not None:
                return zone
    return datetime.now().astimezone().tzinfo or timezone.utc


def _system_zone_name() -> str:
    import os

    try:
        target = os.readlink("/etc/localtime")
    except OSError:
        return ""
    marker = "zoneinfo/"
    return target.split(marker, 1)[1] if marker in target else ""


def local_clock(now: datetime | None = None) -> Clock:
    """A clock at ``now`` (default: the system time) in the process's local zone."""
    return Clock(now=now or datetime.now(timezone.utc), local_zone=local_zone())
