"""Instants as a person reads them: their zone, a countdown while ahead, the day when far, an offset for others."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from afd.display.clock import clock_time, countdown, local_instants, moment, short_countdown, with_offset
from afd.display.reader import Reader

NOW = datetime(2026, 12, 4, 3, 36, tzinfo=timezone.utc)
BERLIN = ZoneInfo("Europe/Berlin")
KATHMANDU = ZoneInfo("Asia/Kathmandu")  # +05:45: a zone no hour-rounding gets right by chance


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        pytest.param("resume at 2026-12-04T07:00:05Z", "resume at 08:00 (in 3h24m)", id="ahead-with-countdown"),
        pytest.param("seen 2026-12-04T01:00:00Z", "seen 02:00", id="past-no-countdown"),
        pytest.param("stored 2026-12-04T07:00:05.000000+00:00 form", "stored 08:00 (in 3h24m) form", id="store-form"),
        pytest.param("until 2026-12-04 05:08 UTC", "until 06:08 (in 1h32m)", id="older-refusal-form"),
        pytest.param("resets 2026-12-09T09:00:00Z", "resets Wed Dec 09 10:00 (in 5d5h)", id="far-gets-the-day"),
        pytest.param("a and 2026-12-04T04:00:00Z, 2026-12-04T05:00:00Z.", "a and 05:00 (in 24m), 06:00 (in 1h24m).",
                     id="several"),
        pytest.param("commit 2026-12-04T07:00:05Zeta", "commit 2026-12-04T07:00:05Zeta", id="not-an-instant"),
        pytest.param("no times here", "no times here", id="nothing"),
        pytest.param("--now: '2026-12-04T09:00:00+02:00' is not", "--now: '2026-12-04T09:00:00+02:00' is not",
                     id="someone-elses-offset-is-left-as-written"),
        pytest.param("at 9999-12-31T23:59:00Z", "at 9999-12-31T23:59:00Z", id="beyond-what-the-zone-holds"),
    ],
)
def test_instants_in_afds_words_are_read_in_the_readers_zone(text, shown):
    assert local_instants(text, NOW, BERLIN) == shown


def test_kathmandu_reads_its_own_quarter_hour():
    assert local_instants("resume at 2026-12-04T07:00:05Z", NOW, KATHMANDU) == "resume at 12:45 (in 3h24m)"


@given(st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(timezone.utc)))
def test_no_instant_is_left_in_utc(at):
    text = f"resume at {at.strftime('%Y-%m-%dT%H:%M:%SZ')} please"
    shown = local_instants(text, NOW, KATHMANDU)
    assert re.fullmatch(r"resume at (\d\d:\d\d|\w{3} \w{3} \d\d \d\d:\d\d|\d{4}-\d\d-\d\d \d\d:\d\d)( \(in \w+\))? please", shown), shown


@pytest.mark.parametrize(
    ("seconds", "words", "short"),
    [(0, "due now", "now"), (40, "in 40s", "40s"), (180, "in 3m", "3m"), (5400, "in 1h30m", "1h30m"),
     (27 * 3600, "in 1d3h", "1d3h")],
)
def test_countdowns(seconds, words, short):
    at = NOW + timedelta(seconds=seconds)
    assert countdown(at, NOW) == words and short_countdown(at, NOW) == short


def test_a_time_of_day_is_dated_once_it_is_a_day_away_either_side():
    assert clock_time(NOW + timedelta(hours=2), NOW, BERLIN) == "06:36 (in 2h00m)"
    assert clock_time(NOW - timedelta(hours=30), NOW, BERLIN) == "Wed Dec 02 22:36"
    assert clock_time(NOW - timedelta(days=400), NOW, BERLIN) == "2025-10-30 04:36"


def test_when_something_happened_carries_the_date_on_another_day_of_the_reader():
    assert moment(NOW - timedelta(minutes=5), NOW, BERLIN) == "04:31:00"
    # 03:36 UTC is the same day in Berlin, but a minute before midnight UTC yesterday is another.
    assert moment(datetime(2026, 12, 3, 22, 59, tzinfo=timezone.utc), NOW, BERLIN) == "Dec 03 23:59:00"


@pytest.mark.parametrize(
    ("zone", "shown"),
    [(BERLIN, "2026-12-04 08:00 +01:00"), (KATHMANDU, "2026-12-04 12:45 +05:45"),
     (ZoneInfo("America/New_York"), "2026-12-04 02:00 -05:00"), (timezone.utc, "2026-12-04 07:00 +00:00")],
)
def test_text_for_others_carries_its_offset(zone, shown):
    assert with_offset(datetime(2026, 12, 4, 7, 0, 5, tzinfo=timezone.utc), zone) == shown


def test_a_reader_neutralises_before_rendering_times():
    reader = Reader(NOW, BERLIN)
    assert reader.says("\x1b[2Jresume at 2026-12-04T07:00:05Z") == "\\x1b[2Jresume at 08:00 (in 3h24m)"
    assert reader.at("2026-12-04T07:00:05Z") == "08:00 (in 3h24m)" and reader.at(None) is None
    assert reader.at("next\x07week") == "next\\x07week"
    assert reader.happened("2026-12-04T03:00:00Z") == "04:00:00"
    assert reader.dated("2026-12-04T07:00:05Z") == "2026-12-04 08:00 +01:00"


def test_the_reader_here_is_in_tz(monkeypatch):
    monkeypatch.setenv("TZ", "Asia/Kathmandu")
    assert Reader.here(NOW).at("2026-12-04T07:00:05Z") == "12:45 (in 3h24m)"
