"""The usage figures' stored values, and the one read that makes them (`read_inputs`), for the daemon and `afd status`.

The figures themselves are made in afd/judge/usage.py (pure); what is kept
is written by afd/record/usage_book.py. This module imports neither, so the
status read (afd/record/statusread.py) reads usage without the book.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

RECENT = timedelta(minutes=30)  # the span of the recent burn rate
# Two reports of one window may name its reset a little apart (rounding, clock skew).
RESET_SLACK = timedelta(minutes=2)
MAX_STOPS = 10  # the walls calibration remembers per account


@dataclass(frozen=True, slots=True)
class Sample:
    """One stored report of one window of one account."""

    account: str
    agent: str
    window: str
    used_percent: float | None
    resets_at: datetime | None
    at: datetime  # when the agent reported it
    source: str
    limit_id: str | None = None
    window_minutes: int | None = None
    plan_type: str | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.account, self.limit_id or "", self.window)


@dataclass(frozen=True, slots=True)
class Stop:
    """One confirmed wall on an account: when, and the working time its sessions had spent since the reset before it."""

    account: str
    agent: str
    at: datetime
    busy_seconds: float


@dataclass(frozen=True, slots=True)
class Busy:
    """An account's working time since its last reset (or since afd first saw it work)."""

    account: str
    since: datetime
    seconds: float


@dataclass(frozen=True, slots=True)
class UsageInputs:
    """What the figures are made of, as stored."""

    samples: Mapping[tuple[str, str, str], Sequence[Sample]] = field(default_factory=dict)  # key -> oldest first
    stops: Mapping[str, Sequence[Stop]] = field(default_factory=dict)  # account -> oldest first
    busy: Mapping[str, Busy] = field(default_factory=dict)


def _iso(value: datetime | None) -> str | None:
    return value.astimezone(timezone.utc).isoformat(timespec="microseconds") if value is not None else None


def _dt(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


Query = Callable[[str], Sequence[Sequence]]


def read_inputs(query: Query, now: datetime | None = None) -> UsageInputs:
    """What the figures are made of: `query` runs one SELECT on the store (the daemon's, or a read-only one).

    Only the samples a figure reads: those of the last `RECENT` (the recent burn rate), and the one
    before them of each window (its value when that span began); the window's average needs none.
    """
    since = _iso((now or datetime.now(timezone.utc)) - RECENT - RESET_SLACK)
    rows = query("SELECT account, limit_id, window, agent, used_percent, resets_at, window_minutes, observed_at,"
                 " source, plan_type FROM usage_windows")
    latest = {(r[0], r[1], r[2]): r for r in rows}
    samples: dict[tuple[str, str, str], list[Sample]] = {}
    for account, limit_id, window, at, used, resets in query(
            "SELECT account, limit_id, window, at, used_percent, resets_at FROM usage_samples"
            f" WHERE at >= '{since}' OR id IN (SELECT MAX(id) FROM usage_samples WHERE at < '{since}'"
            " GROUP BY account, limit_id, window) ORDER BY id"):
        row = latest.get((account, limit_id, window))
        if row is None:
            continue
        samples.setdefault((account, limit_id, window), []).append(_sample(row, used, resets, at))
    for key, row in latest.items():
        series = samples.setdefault(key, [])
        last = _sample(row, row[4], row[5], row[7])
        if not series or series[-1].at < last.at:
            series.append(last)
    stops: dict[str, list[Stop]] = {}
    for account, agent, at, busy in query("SELECT account, agent, at, busy_seconds FROM usage_stops ORDER BY id"):
        stops.setdefault(account, []).append(Stop(account, agent, _dt(at) or datetime.now(timezone.utc), busy))
    busy_rows = {r[0]: Busy(r[0], _dt(r[1]) or datetime.now(timezone.utc), r[2])
                 for r in query("SELECT account, since, seconds FROM usage_busy WHERE whole = 1")}
    return UsageInputs(samples=samples, stops={a: s[-MAX_STOPS:] for a, s in stops.items()}, busy=busy_rows)


def _sample(row, used, resets, at) -> Sample:
    account, limit_id, window, agent, _, _, minutes, _, source, plan = row
    return Sample(account=account, agent=agent, window=window, used_percent=used, resets_at=_dt(resets),
                  at=_dt(at) or datetime.now(timezone.utc), source=source, limit_id=limit_id or None,
                  window_minutes=minutes, plan_type=plan)
