"""Calibration's bookkeeping: working time counted per account since its reset, a stop at each new wall."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from afd.judge import calibration
from afd.judge.calibration import Period
from afd.judge.limits import LimitFact, LimitState
from afd.judge.usage import Busy, Stop

T0 = datetime(2026, 7, 13, 12, 0, tzinfo=timezone.utc)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def wall(first_seen: float, reset: float | None, account="codex") -> dict:
    fact = LimitFact(agent="codex", state=LimitState.LIMITED, reset_at=at(reset) if reset is not None else None,
                     observed_at=at(first_seen), source_session="s", banner="■ You've hit your usage limit.",
                     account=None if account == "codex" else account)
    return {account: fact}


def run(periods, polls):
    """`polls`: (minute, working sessions as (account, agent), limit facts); each poll lasting a minute."""
    stops = []
    for minute, working, limits in polls:
        periods, found = calibration.step(periods, working=working, limits=limits, now=at(minute), elapsed=60.0)
        stops += found
    return periods, stops


CODEX = ("codex", "codex")


def test_a_period_afd_joined_midway_counts_but_calibrates_nothing_and_its_wall_starts_a_whole_one():
    periods, stops = run({}, [(0, [CODEX], {}), (1, [CODEX], {}), (2, [], wall(2, 60))])
    assert stops == []  # afd did not see this period begin
    assert periods["codex"] == Period("codex", Busy("codex", at(60), 0.0), whole=True)


def test_a_whole_period_ends_in_a_stop_with_its_working_time_counted_per_session():
    start = {"codex": Period("codex", Busy("codex", at(0), 0.0), whole=True)}
    periods, stops = run(start, [(1, [CODEX], {}), (2, [CODEX, CODEX], {}), (3, [], {}), (4, [], wall(4, 300))])
    assert stops == [Stop("codex", "codex", at(4), 180.0)]  # one session a minute, then two
    assert periods["codex"].busy == Busy("codex", at(300), 0.0)


def test_the_same_wall_seen_again_is_no_new_stop_and_time_before_its_reset_is_not_counted():
    start = {"codex": Period("codex", Busy("codex", at(0), 0.0), whole=True)}
    periods, stops = run(start, [(1, [CODEX], {}), (2, [], wall(2, 30)), (3, [CODEX], wall(2, 30)), (31, [CODEX], {})])
    assert len(stops) == 1
    assert periods["codex"].busy.seconds == 60.0  # only the minute after the reset


def test_a_wall_without_a_reset_starts_a_period_that_is_not_whole():
    start = {"codex": Period("codex", Busy("codex", at(0), 0.0), whole=True)}
    periods, stops = run(start, [(1, [CODEX], {}), (2, [], wall(2, None))])
    assert len(stops) == 1 and not periods["codex"].whole


def test_a_period_read_back_after_a_long_gap_is_not_whole():
    period = Period("codex", Busy("codex", at(0), 600.0), whole=True)
    assert calibration.resumed(period, at(10), at(12)) == period
    assert not calibration.resumed(period, at(10), at(20)).whole
