"""Usage before the wall: each account's windows, where each figure comes from, and when it runs out (pure).

The agents hand a local program exact figures (Claude Code's status line,
Codex's rollout `token_count` records): how much of a window is used and
when it resets. afd keeps every report as a sample and answers, per account
and window, with one `WindowFigure`:

* **exact**, with its age: the agent's own latest figure; past
  `usage_stale_after` it is shown as stale, and a stale figure forecasts
  nothing (the burn rate it would use is old news);
* **calibrated from N stops**, only for an account with no exact figure:
  afd's own confirmed walls on that account, each with the working time its
  sessions had spent since the previous reset, set the ceiling; the figure
  is the working time since the last reset against that ceiling;
* otherwise **no figure at all**. A provider's entitlement is never guessed:
  an account afd has no word on shows none.

A window whose reset has passed has no figure either: the window it
measured is over, and the new one is not measured until the agent reports
again (the limit map says `unknown` after a reset, never `available`).

The forecast is when the window runs out at the recent burn rate, as a
range: the slope over the last `RECENT` and the average since the window
opened (its reset minus its length), the faster of the two giving the
earliest run-out and the slower the latest. A bound past the reset is no
bound: the window resets first.

`UsageFigures` is the value that leaves afd (`afd usage --json`, the status
report, peers): typed, and versioned by `SCHEMA`.
"""

from __future__ import annotations

import enum
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone, tzinfo

from afd.model import UsageReading, UsageWindow

SCHEMA = 1

# Windows by length, never by their place in a report: Codex's primary is not always the 5-hour one.
NAMES_BY_MINUTES = {300: "five_hour", 10080: "seven_day"}
MINUTES_BY_NAME = {name: minutes for minutes, name in NAMES_BY_MINUTES.items()}
SPEND = "spend_limit"
# How people read a window's name.
LABELS = {"five_hour": "5-hour", "seven_day": "7-day", SPEND: "spend", "walls": "until a wall"}

RECENT = timedelta(minutes=30)  # the span of the recent burn rate
MIN_SPAN = timedelta(minutes=2)  # a rate over less time than this is noise
# Two reports of one window may name its reset a little apart (rounding, clock skew).
RESET_SLACK = timedelta(minutes=2)
MAX_STOPS = 10  # the walls calibration remembers per account
MIN_CEILING = 60.0  # seconds of work: a wall hit sooner than this calibrates nothing


class Provenance(enum.StrEnum):
    EXACT = "exact"  # the agent's own figure
    CALIBRATED = "calibrated"  # afd's own confirmed walls on the account set its ceiling


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
class Forecast:
    """When the window runs out at the recent burn rate: a range; None for a bound past the reset."""

    earliest: datetime | None
    latest: datetime | None
    per_hour: tuple[float, float]  # percent of the window per hour: the slowest and the fastest estimate

    @property
    def lasts_to_reset(self) -> bool:
        return self.earliest is None and self.latest is None


@dataclass(frozen=True, slots=True)
class WindowFigure:
    """One window of one account, as `afd usage` shows it."""

    account: str
    agent: str
    window: str  # five_hour, seven_day, spend_limit, `<n>m`; `walls` for a calibrated figure
    provenance: Provenance
    used_percent: float | None
    resets_at: datetime | None
    observed_at: datetime | None  # exact: when the agent reported it
    age_seconds: float | None
    stale: bool
    forecast: Forecast | None
    source: str  # statusline, rollout, calibration
    limit_id: str | None = None
    window_minutes: int | None = None
    plan_type: str | None = None
    stops: int = 0  # calibrated: how many walls set the ceiling

    @property
    def label(self) -> str:
        name = LABELS.get(self.window, self.window)
        return f"{name} ({self.limit_id})" if self.limit_id and self.limit_id != self.agent else name

    @property
    def provenance_words(self) -> str:
        if self.provenance is Provenance.CALIBRATED:
            return f"calibrated from {self.stops} stop{'s' if self.stops != 1 else ''}"
        return f"exact, {age_words(self.age_seconds)} old" + (" (stale)" if self.stale else "")

    def to_json(self) -> dict:
        return {
            "window": self.window,
            "limit_id": self.limit_id,
            "window_minutes": self.window_minutes,
            "used_percent": self.used_percent,
            "resets_at": iso(self.resets_at),
            "provenance": self.provenance.value,
            "observed_at": iso(self.observed_at),
            "age_seconds": None if self.age_seconds is None else round(self.age_seconds, 1),
            "stale": self.stale,
            "stops": self.stops,
            "source": self.source,
            "plan_type": self.plan_type,
            "forecast": None if self.forecast is None else {
                "earliest": iso(self.forecast.earliest),
                "latest": iso(self.forecast.latest),
                "lasts_to_reset": self.forecast.lasts_to_reset,
                "percent_per_hour": [round(r, 2) for r in self.forecast.per_hour],
            },
        }


@dataclass(frozen=True, slots=True)
class AccountUsage:
    account: str
    agent: str
    windows: tuple[WindowFigure, ...] = ()
    note: str | None = None  # why there is no figure, when there is none

    def to_json(self) -> dict:
        return {"account": self.account, "agent": self.agent, "windows": [w.to_json() for w in self.windows],
                "note": self.note}


@dataclass(frozen=True, slots=True)
class UsageFigures:
    """Every account's figures at one instant: the value `afd usage --json` prints and peers exchange."""

    at: datetime
    accounts: tuple[AccountUsage, ...] = ()
    schema: int = SCHEMA

    def to_json(self) -> dict:
        return {"schema": self.schema, "at": iso(self.at), "accounts": [a.to_json() for a in self.accounts]}

    @classmethod
    def from_json(cls, data: Mapping) -> UsageFigures:
        """Read back what `to_json` wrote; a newer schema is refused (ValueError), never half read."""
        if data.get("schema") != SCHEMA:
            raise ValueError(f"usage figures of schema {data.get('schema')!r}; this afd reads schema {SCHEMA}")
        at = _instant(data["at"])
        assert at is not None
        accounts = []
        for a in data.get("accounts", ()):
            windows = []
            for w in a.get("windows", ()):
                f = w.get("forecast")
                windows.append(WindowFigure(
                    account=a["account"], agent=a["agent"], window=w["window"], provenance=Provenance(w["provenance"]),
                    used_percent=w.get("used_percent"), resets_at=_instant(w.get("resets_at")),
                    observed_at=_instant(w.get("observed_at")), age_seconds=w.get("age_seconds"),
                    stale=bool(w.get("stale")), source=w.get("source") or "", limit_id=w.get("limit_id"),
                    window_minutes=w.get("window_minutes"), plan_type=w.get("plan_type"), stops=int(w.get("stops") or 0),
                    forecast=None if f is None else Forecast(
                        _instant(f.get("earliest")), _instant(f.get("latest")),
                        _rates(f.get("percent_per_hour"))),
                ))
            accounts.append(AccountUsage(a["account"], a["agent"], tuple(windows), a.get("note")))
        return cls(at=at, accounts=tuple(accounts))

    def account(self, name: str) -> AccountUsage | None:
        return next((a for a in self.accounts if a.account == name), None)


def iso(value: datetime | None) -> str | None:
    return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if value is not None else None


def _rates(value: object) -> tuple[float, float]:
    if isinstance(value, list) and len(value) == 2:
        return (float(value[0]), float(value[1]))
    return (0.0, 0.0)


def _instant(text: object) -> datetime | None:
    if not isinstance(text, str):
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def age_words(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{int(seconds)}s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)}m"
    return f"{seconds / 3600:.1f}h"


# --- reading what the agents report ---------------------------------------------


def window_name(minutes: object) -> str | None:
    if isinstance(minutes, float) and minutes.is_integer():
        minutes = int(minutes)
    if isinstance(minutes, bool) or not isinstance(minutes, int) or minutes <= 0:
        return None
    return NAMES_BY_MINUTES.get(minutes, f"{minutes}m")


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _epoch(value: object) -> datetime | None:
    seconds = _number(value)
    if seconds is None or seconds <= 0:
        return None
    try:
        return datetime.fromtimestamp(seconds, timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None


def used_figure(used: object, resets_at: object, *, spend: bool = False) -> float | None:
    """A reported `used_percentage` as a figure, or None where it is not one.

    Claude Code reports `used_percentage` equal to the `resets_at` epoch at a
    fresh window and after `/clear`: a number that size is no percentage. A
    plan window never passes 100; a spend window does once exceeded.
    """
    value = _number(used)
    if value is None or value < 0:
        return None
    reset = _number(resets_at)
    if reset is not None and value == reset:
        return None
    if value > (10_000 if spend else 100):
        return None
    return value


def reading_from_statusline(payload: Mapping, at: datetime, agent: str) -> UsageReading | None:
    """The windows of one status-line payload (`rate_limits`), or None when it carries none.

    Before its first answer, or for an API key, Claude Code sends no
    `rate_limits`: that is no reading, not a reading of nothing used.
    """
    limits = payload.get("rate_limits")
    if not isinstance(limits, Mapping):
        return None
    windows = []
    for name in ("five_hour", "seven_day", SPEND):
        w = limits.get(name)
        if not isinstance(w, Mapping):
            continue  # absent or null: the window is not reported, which says nothing of it
        spend = name == SPEND
        windows.append(UsageWindow(
            window=name,
            used_percent=used_figure(w.get("used_percentage"), w.get("resets_at"), spend=spend),
            resets_at=_epoch(w.get("resets_at")),
            window_minutes=MINUTES_BY_NAME.get(name),
        ))
    if not windows:
        return None
    return UsageReading(agent=agent, at=at, windows=tuple(windows), source="statusline")


# --- samples into figures --------------------------------------------------------


def same_window(a: datetime | None, b: datetime | None) -> bool:
    """Whether two reports with these resets speak of one window (its instance, not only its kind)."""
    if a is None or b is None:
        return a is b
    return abs(a - b) <= RESET_SLACK


def _value_at(series: Sequence[Sample], when: datetime) -> float | None:
    value = None
    for s in series:
        if s.at > when:
            break
        value = s.used_percent
    return value


def forecast(series: Sequence[Sample], observed_at: datetime) -> Forecast | None:
    """When the window of `series` (one window instance, oldest first) runs out, or None without a burn rate."""
    latest = series[-1]
    used = latest.used_percent
    if used is None or used >= 100:
        return None  # nothing to forecast: not measured, or already used up
    rates: list[float] = []  # percent per second
    known = [s for s in series if s.used_percent is not None]
    start = observed_at - RECENT
    before = _value_at(known, start)
    if before is None:
        first = known[0]
        span, before = (observed_at - first.at).total_seconds(), first.used_percent
    else:
        span = RECENT.total_seconds()
    if span >= MIN_SPAN.total_seconds() and before is not None and used > before:
        rates.append((used - before) / span)
    if latest.window_minutes and latest.resets_at is not None:
        opened = latest.resets_at - timedelta(minutes=latest.window_minutes)
        elapsed = (observed_at - opened).total_seconds()
        if elapsed >= MIN_SPAN.total_seconds() and used > 0:
            rates.append(used / elapsed)
    if not rates:
        return None
    left = 100.0 - used

    def bound(rate: float) -> datetime | None:
        try:
            at = observed_at + timedelta(seconds=round(left / rate))
        except OverflowError:
            return None
        return None if latest.resets_at is not None and at >= latest.resets_at else _second(at)

    slow, fast = min(rates), max(rates)
    return Forecast(earliest=bound(fast), latest=bound(slow), per_hour=(round(slow * 3600, 2), round(fast * 3600, 2)))


def _second(value: datetime) -> datetime:
    """Whole seconds: what the JSON form keeps, so a figure reads back equal."""
    return value.replace(microsecond=0)


def exact_figure(history: Sequence[Sample], now: datetime, stale_after: float) -> WindowFigure | None:
    """The figure of one window from its samples (oldest first), or None when its reset has passed."""
    latest = history[-1]
    if latest.resets_at is not None and latest.resets_at + RESET_SLACK <= now:
        return None
    series = [s for s in history if same_window(s.resets_at, latest.resets_at)]
    age = round(max(0.0, (now - latest.at).total_seconds()), 1)
    stale = age > stale_after
    return WindowFigure(
        account=latest.account, agent=latest.agent, window=latest.window, provenance=Provenance.EXACT,
        used_percent=latest.used_percent, resets_at=latest.resets_at and _second(latest.resets_at),
        observed_at=_second(latest.at), age_seconds=age,
        stale=stale, forecast=None if stale else forecast(series, latest.at), source=latest.source,
        limit_id=latest.limit_id, window_minutes=latest.window_minutes, plan_type=latest.plan_type,
    )


def calibrated_figure(account: str, agent: str, stops: Sequence[Stop], busy: Busy | None, now: datetime) -> WindowFigure | None:
    """The working time since the last reset against what the account's last walls took, or None without walls."""
    ceilings = [s.busy_seconds for s in stops[-MAX_STOPS:] if s.busy_seconds >= MIN_CEILING]
    if not ceilings:
        return None
    spent = busy.seconds if busy is not None else 0.0
    typical = statistics.median(ceilings)
    return WindowFigure(
        account=account, agent=agent, window="walls", provenance=Provenance.CALIBRATED,
        used_percent=round(100 * spent / typical, 1), resets_at=None,
        observed_at=_second(busy.since) if busy else None, age_seconds=None, stale=False, source="calibration",
        stops=len(ceilings),
        # At the pace the stops measured: the account working from now on, until the least and the most work a wall took.
        forecast=Forecast(_second(now + timedelta(seconds=max(0.0, min(ceilings) - spent))),
                          _second(now + timedelta(seconds=max(0.0, max(ceilings) - spent))),
                          (round(100 * 3600 / max(ceilings), 2), round(100 * 3600 / min(ceilings), 2))),
    )


@dataclass(frozen=True, slots=True)
class UsageInputs:
    """What the figures are made of, as stored."""

    samples: Mapping[tuple[str, str, str], Sequence[Sample]] = field(default_factory=dict)  # key -> oldest first
    stops: Mapping[str, Sequence[Stop]] = field(default_factory=dict)  # account -> oldest first
    busy: Mapping[str, Busy] = field(default_factory=dict)


def figures(inputs: UsageInputs, accounts: Iterable[tuple[str, str]], now: datetime, *, stale_after: float) -> UsageFigures:
    """Every account's figures: `accounts` are (name, agent) pairs to list even with no figure."""
    owner: dict[str, str] = dict(accounts)
    exact: dict[str, list[WindowFigure]] = {}
    expired: dict[str, datetime] = {}
    for history in inputs.samples.values():
        if not history:
            continue
        latest = history[-1]
        owner.setdefault(latest.account, latest.agent)
        figure = exact_figure(history, now, stale_after)
        if figure is None:
            assert latest.resets_at is not None
            expired[latest.account] = max(expired.get(latest.account, latest.resets_at), latest.resets_at)
        else:
            exact.setdefault(latest.account, []).append(figure)
    for name in inputs.stops:
        if inputs.stops[name]:
            owner.setdefault(name, inputs.stops[name][-1].agent)
    out = []
    for name in sorted(owner, key=lambda n: (owner[n], n != owner[n], n)):
        agent = owner[name]
        windows = sorted(exact.get(name, ()), key=_window_order)
        note = None
        if not windows:
            calibrated = calibrated_figure(name, agent, inputs.stops.get(name, ()), inputs.busy.get(name), now)
            if calibrated is not None:
                windows = [calibrated]
            elif name in expired:
                note = f"its windows reset at {iso(expired[name])}; no report since"
            else:
                note = "no figure: the agent has reported none, and afd has seen no wall on this account"
        out.append(AccountUsage(name, agent, tuple(windows), note))
    return UsageFigures(at=now, accounts=tuple(out))


def _window_order(w: WindowFigure) -> tuple:
    return (w.limit_id or "", w.window_minutes or (10**9 if w.window == SPEND else 10**8), w.window)


# --- telling the person early ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class Alert:
    """A `usage.high` event due: once per window (its reset) and level, kept across restarts by `key`."""

    key: str
    account: str
    level: str  # "80", "95", … or "runout"
    message: str
    figure: WindowFigure


def alerts_due(
    found: UsageFigures,
    *,
    warn_at: Sequence[float],
    spend_warn_at: float | None,
    runout_within: timedelta,
    done: Iterable[str],
    zone: tzinfo,
) -> list[Alert]:
    """The `usage.high` alerts not yet given: a threshold reached, or a window that runs out soon.

    Only exact, fresh figures alert: a stale one may be long past, and a
    calibrated one has no window to be once per.
    """
    given = set(done)
    out = []
    for account in found.accounts:
        for w in account.windows:
            if w.provenance is not Provenance.EXACT or w.stale or w.used_percent is None:
                continue
            base = f"{w.account}|{w.limit_id or ''}|{w.window}|{iso(w.resets_at) or ''}"
            levels = ([spend_warn_at] if spend_warn_at is not None else []) if w.window == SPEND else list(warn_at)
            reached = [lv for lv in sorted(levels) if w.used_percent >= lv]
            if reached:
                top = reached[-1]  # one event for the highest level reached; the lower ones count as told
                key = f"{base}|{top:g}"
                if key not in given:
                    out.append(Alert(key, w.account, f"{top:g}", _high_words(w, found.at, zone), w))
                    given.update(f"{base}|{lv:g}" for lv in reached)
            soon = w.forecast.earliest if w.forecast is not None else None
            if soon is not None and soon - found.at <= runout_within and f"{base}|runout" not in given:
                out.append(Alert(f"{base}|runout", w.account, "runout", _runout_words(w, soon, found.at, zone), w))
    return out


def _clock(at: datetime, zone: tzinfo) -> str:
    return at.astimezone(zone).strftime("%H:%M")


def _high_words(w: WindowFigure, now: datetime, zone: tzinfo) -> str:
    reset = f", resets {_clock(w.resets_at, zone)}" if w.resets_at else ""
    return f"{w.account}: {w.used_percent:g} % of the {w.label} window used ({w.provenance_words}){reset}"


def _runout_words(w: WindowFigure, soon: datetime, now: datetime, zone: tzinfo) -> str:
    minutes = max(0, round((soon - now).total_seconds() / 60))
    reset = f", resets {_clock(w.resets_at, zone)}" if w.resets_at else ""
    return (f"{w.account}: the {w.label} window runs out in about {minutes} min at the recent burn rate "
            f"({w.used_percent:g} % used, {w.provenance_words}){reset}")
