"""Calibration's bookkeeping: each account's working time since its last reset, and a stop at each new wall (pure).

An account with no exact figures gets a calibrated one (`afd.judge.usage`)
from afd's own confirmed walls on it: how much working time its sessions
had spent since the reset before each wall. That time is counted here, poll
by poll, from what the poll saw (which accounts had a session working) and
the limit map (a wall is the account going `limited` on a banner first seen
after the period began).

A period counts only when afd watched it whole: it began at a reset afd
knew of, and afd was running throughout. A period afd joined midway (its
first start, a restart after a gap) is counted but calibrates nothing; the
next wall starts a whole one from its reset.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from afd.judge.limits import LimitFact, LimitState
from afd.judge.usage import Busy, Stop

# A gap longer than this in afd's watch (a restart, a suspended machine) leaves a period not whole.
MAX_GAP = timedelta(minutes=3)


@dataclass(frozen=True, slots=True)
class Period:
    """One account's working time since its last reset, and whether afd watched all of it."""

    agent: str
    busy: Busy
    whole: bool


def step(
    periods: Mapping[str, Period],
    *,
    working: Iterable[tuple[str, str]],
    limits: Mapping[str, LimitFact],
    now: datetime,
    elapsed: float,
) -> tuple[dict[str, Period], list[Stop]]:
    """The periods after one poll that lasted `elapsed` seconds, and the stops (walls) it brought."""
    out = dict(periods)
    stops: list[Stop] = []
    for account, fact in limits.items():
        if fact.state is not LimitState.LIMITED or fact.observed_at is None:
            continue
        period = out.get(account)
        if period is not None and fact.observed_at <= period.busy.since:
            continue  # the wall that began this period, or one before it
        if period is not None and period.whole and period.busy.seconds > 0:
            stops.append(Stop(account, fact.agent, fact.observed_at, period.busy.seconds))
        since = fact.reset_at or fact.observed_at
        out[account] = Period(fact.agent, Busy(account, since, 0.0), whole=fact.reset_at is not None)
    for account, agent in working:
        period = out.get(account)
        if period is None:
            out[account] = Period(agent, Busy(account, now, 0.0), whole=False)  # joined midway
        elif now > period.busy.since:
            out[account] = replace(period, busy=replace(period.busy, seconds=period.busy.seconds + max(0.0, elapsed)))
    return out, stops


def resumed(period: Period, saved_at: datetime, now: datetime) -> Period:
    """A period read back at start: not whole if afd was away longer than `MAX_GAP`."""
    return period if now - saved_at <= MAX_GAP else replace(period, whole=False)
