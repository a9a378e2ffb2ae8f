"""Reading reset clauses into instants: zones, times of day, dates, weekdays, durations, epochs."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from afd.kit.resettime import (
    from_epoch,
    local_zone,
    parse_relative,
    parse_reset,
    parse_time_of_day,
    resolve_zone,
)
from afd.model import Clock

NOW = datetime(2026, 7, 13, 9, 0, tzinfo=timezone.utc)  # a Monday
UTC_CLOCK = Clock(now=NOW, local_zone=timezone.utc)
NEW_YORK_CLOCK = Clock(now=NOW, local_zone=ZoneInfo("America/New_York"))


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("name", "offset_hours"),
    [
        pytest.param("Asia/Calcutta", 5.5, id="alias-asia-calcutta"),
        pytest.param("US/Eastern", -4, id="alias-us-eastern"),
        pytest.param("Etc/GMT+5", -5, id="etc-gmt-plus-is-behind-utc"),
        pytest.param("Etc/GMT-3", 3, id="etc-gmt-minus-is-ahead-of-utc"),
        pytest.param("UTC", 0, id="utc"),
        pytest.param("utc", 0, id="utc-lowercase"),
        pytest.param("GMT", 0, id="gmt"),
        pytest.param("Europe/Monaco", 2, id="europe-monaco"),
        pytest.param("UTC+5:30", 5.5, id="offset-with-minutes"),
        pytest.param("GMT-3", -3, id="offset-behind"),
        pytest.param("America/New York", -4, id="space-for-underscore"),
    ],
)
def test_zone_names_and_aliases_resolve(name, offset_hours):
    zone = resolve_zone(name, UTC_CLOCK)
    assert zone is not None
    assert NOW.astimezone(zone).utcoffset() == timedelta(hours=offset_hours)


@pytest.mark.parametrize(
    "name",
    ["Mars/Olympus", "America", "localtime", "posixrules", "../etc/passwd", "x\x00y", "a" * 300, "UTC+99", "PST"],
)
def test_unknown_zone_is_none_never_a_guess(name):
    assert resolve_zone(name, NEW_YORK_CLOCK) is None


@pytest.mark.parametrize("name", [None, "", "   "])
def test_no_zone_means_the_clocks_local_zone(name):
    assert resolve_zone(name, NEW_YORK_CLOCK) is NEW_YORK_CLOCK.local_zone


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2pm", (14, 0)),
        ("6:50pm", (18, 50)),
        ("2:51 PM", (14, 51)),
        ("9 a.m.", (9, 0)),
        ("12am", (0, 0)),
        ("12pm", (12, 0)),
        ("14:30", (14, 30)),
        ("9", None),
        ("13pm", None),
        ("25:00", None),
        ("9:75am", None),
    ],
)
def test_time_of_day(text, expected):
    assert parse_time_of_day(text) == expected


RESETS = [
    pytest.param("2pm", None, UTC_CLOCK, "2026-07-13T14:00", id="later-today"),
    pytest.param("9am", None, UTC_CLOCK, "2026-07-14T09:00", id="exactly-now-is-tomorrow"),
    pytest.param("2am", None, UTC_CLOCK, "2026-07-14T02:00", id="earlier-is-tomorrow"),
    pytest.param("at 2pm", None, UTC_CLOCK, "2026-07-13T14:00", id="leading-at"),
    pytest.param("2pm", "America/New_York", UTC_CLOCK, "2026-07-13T18:00", id="named-zone"),
    pytest.param("6pm", None, NEW_YORK_CLOCK, "2026-07-13T22:00", id="local-zone"),
    pytest.param("6pm", "UTC", NEW_YORK_CLOCK, "2026-07-13T18:00", id="named-zone-wins-over-local"),
    pytest.param("3pm", "Etc/GMT+5", UTC_CLOCK, "2026-07-13T20:00", id="etc-gmt-plus-5"),
    pytest.param("11pm", "Asia/Calcutta", UTC_CLOCK, "2026-07-13T17:30", id="asia-calcutta"),
    pytest.param("Oct 31, 9am", None, UTC_CLOCK, "2026-10-31T09:00", id="date-ahead"),
    pytest.param("Sep 15 at 7pm", None, UTC_CLOCK, "2026-09-15T19:00", id="date-at-time"),
    pytest.param("Jul 31, 2am", "UTC", UTC_CLOCK, "2026-07-31T02:00", id="date-in-utc"),
    pytest.param("Jul 13, 10am", None, UTC_CLOCK, "2026-07-13T10:00", id="date-today-still-ahead"),
    pytest.param("Jul 13, 9am", None, UTC_CLOCK, "2027-07-13T09:00", id="date-today-at-now-is-next-year"),
    pytest.param("Jan 5, 9am", None, UTC_CLOCK, "2027-01-05T09:00", id="date-passed-is-next-year"),
    pytest.param("Feb 29, 9am", None, UTC_CLOCK, "2028-02-29T09:00", id="leap-day-is-next-leap-year"),
    pytest.param("Jun 18th, 2026 8:41 AM", None, UTC_CLOCK, "2026-06-18T08:41", id="full-date-past-as-is"),
    pytest.param("Jun 18th, 2027 8:41 AM", None, UTC_CLOCK, "2027-06-18T08:41", id="full-date-ahead"),
    pytest.param("Oct 31", None, UTC_CLOCK, "2026-10-31T00:00", id="date-without-time-is-midnight"),
    pytest.param("Mon 10am", None, UTC_CLOCK, "2026-07-13T10:00", id="weekday-today-ahead"),
    pytest.param("Monday 9am", None, UTC_CLOCK, "2026-07-20T09:00", id="weekday-today-at-now-is-next-week"),
    pytest.param("Fri, 2:30 PM", None, UTC_CLOCK, "2026-07-17T14:30", id="weekday-later-this-week"),
    pytest.param("Sunday at 1am", "Asia/Tokyo", UTC_CLOCK, "2026-07-18T16:00", id="weekday-in-zone"),
    pytest.param("in 3 hours 2 minutes", None, UTC_CLOCK, "2026-07-13T12:02", id="relative"),
    pytest.param("in 4 days 20 hours 9 minutes.", None, UTC_CLOCK, "2026-07-18T05:09", id="relative-with-period"),
    pytest.param("3 hours 2 minutes", None, UTC_CLOCK, "2026-07-13T12:02", id="relative-without-in"),
    pytest.param("2pm", "Mars/Olympus", UTC_CLOCK, None, id="unknown-zone"),
    pytest.param("Monaco 9am", None, UTC_CLOCK, None, id="not-a-weekday"),
    pytest.param("soon", None, UTC_CLOCK, None, id="unparseable"),
    pytest.param("", None, UTC_CLOCK, None, id="empty"),
    pytest.param("in 99999999999 days", None, UTC_CLOCK, None, id="beyond-any-clock"),
    pytest.param("Dec 31, 9999 11pm", "Etc/GMT+12", UTC_CLOCK, None, id="full-date-past-the-last-instant"),
    pytest.param("Jan 1, 0001 1am", "Etc/GMT-14", UTC_CLOCK, None, id="full-date-before-the-first-instant"),
]


@pytest.mark.parametrize(("phrase", "zone", "clock", "expected"), RESETS)
def test_reset_phrase_is_read_by_the_rules(phrase, zone, clock, expected):
    assert parse_reset(phrase, zone, clock) == (utc(expected) if expected else None)


def test_reset_instants_are_utc():
    reset = parse_reset("2pm", "America/New_York", UTC_CLOCK)
    assert reset.tzinfo is timezone.utc


def test_next_occurrence_crosses_a_dst_change_on_the_wall_clock():
    # 2026-11-01 is the night New York falls back: 9am after it is 14:00 UTC, not 13:00.
    clock = Clock(now=utc("2026-10-31T14:00"), local_zone=ZoneInfo("America/New_York"))
    assert parse_reset("9am", None, clock) == utc("2026-11-01T14:00")


@pytest.mark.parametrize(
    ("phrase", "now", "expected"),
    [
        # New York falls back at 2am EDT on 2026-11-01: 1:00-1:59 happens twice.
        pytest.param("1:15am", "2026-11-01T05:45", "2026-11-01T06:15", id="second-pass-of-the-repeated-hour"),
        pytest.param("1:30am", "2026-11-01T05:10", "2026-11-01T05:30", id="first-pass-still-ahead"),
        pytest.param("1:30am", "2026-11-01T06:15", "2026-11-01T06:30", id="now-inside-the-second-pass"),
        pytest.param("1:10am", "2026-11-01T06:15", "2026-11-02T06:10", id="both-passes-gone-is-tomorrow"),
        pytest.param("Nov 1, 1:15am", "2026-11-01T05:45", "2026-11-01T06:15", id="dated-second-pass"),
        pytest.param("Sun 1:15am", "2026-11-01T05:45", "2026-11-01T06:15", id="weekday-second-pass"),
        # Springs forward at 2am EST on 2026-03-08: 3am EDT is 07:00 UTC.
        pytest.param("3am", "2026-03-08T06:30", "2026-03-08T07:00", id="after-the-skipped-hour"),
    ],
)
def test_a_wall_time_in_a_repeated_hour_is_its_next_occurrence(phrase, now, expected):
    clock = Clock(now=utc(now), local_zone=timezone.utc)
    assert parse_reset(phrase, "America/New_York", clock) == utc(expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("in 3 hours 2 minutes", timedelta(hours=3, minutes=2)),
        ("3d 11h", timedelta(days=3, hours=11)),
        ("in 4 days 20 hours 9 minutes.", timedelta(days=4, hours=20, minutes=9)),
        ("45 seconds", timedelta(seconds=45)),
        ("in: 3 hours", timedelta(hours=3)),
        ("in:3 hours 5 minutes", timedelta(hours=3, minutes=5)),
        ("in: 2pm", None),
        ("2pm", None),
        ("", None),
        # as Gemini CLI, OpenCode and Copilot CLI draw them
        ("10177.564s", timedelta(seconds=10177.564)),
        ("~3 days", timedelta(days=3)),
        ("about an hour", timedelta(hours=1)),
        ("in under a minute", timedelta(minutes=1)),
        ("less than a minute", timedelta(minutes=1)),
        ("a while", None),
        ("9am", None),
    ],
)
def test_relative_durations(text, expected):
    assert parse_relative(text) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1783940400", "2026-07-13T11:00"),
        (1783940400, "2026-07-13T11:00"),
        ("1783940400000", "2026-07-13T11:00"),
        ("not a number", None),
        ("9" * 30, None),
    ],
)
def test_epoch_is_exact(value, expected):
    assert from_epoch(value) == (utc(expected) if expected else None)


def test_local_zone_follows_tz(monkeypatch):
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    assert NOW.astimezone(local_zone()).utcoffset() == timedelta(hours=9)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60), st.one_of(st.none(), st.text(max_size=40)))
def test_arbitrary_phrases_never_crash(phrase, zone):
    result = parse_reset(phrase, zone, UTC_CLOCK)
    assert result is None or result.utcoffset() == timedelta(0)
