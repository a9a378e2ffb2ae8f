"""The usage record book: each account's windows, their samples, the alerts given, calibration's walls and working time.

Written by the daemon only (the status line writes its own files, which the
daemon ingests; `afd.observe.statusline`). Read by the daemon and, with the
daemon down, by `afd usage` and `afd status` through a read-only connection
(`read_inputs`, which takes any sqlite3 connection).

A sample is kept only when a window's figure or reset changes; the window's
row keeps when its agent last reported it (refreshed at most every
`REFRESH`, so an agent refreshing its status line every second is not a
write a second). Samples, alerts and windows older than `KEEP` are pruned:
the longest window is seven days.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from afd.judge.usage import RECENT, RESET_SLACK, Busy, Sample, Stop, UsageInputs
from afd.model import UsageReading

if TYPE_CHECKING:
    from afd.record.store import Store

REFRESH = timedelta(minutes=1)
# A window's figure moving (Claude Code's status line refreshes every few seconds while it works) is kept
# as a sample at most this often; the window's row always has the latest.
SAMPLE_EVERY = timedelta(minutes=1)
KEEP = timedelta(days=8)
MAX_STOPS = 10
CACHE_KEEP = timedelta(days=1)


def _iso(value: datetime | None) -> str | None:
    return value.astimezone(timezone.utc).isoformat(timespec="microseconds") if value is not None else None


def _dt(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


@dataclass(frozen=True, slots=True)
class PromptCache:
    """One Claude Code session's prompt cache, as its status line last said."""

    account: str
    session_id: str
    cwd: str | None
    transcript_path: str | None
    warm: bool | None
    expires_at: datetime | None
    recache_tokens: int | None  # what caching the context again would cost, when cold
    observed_at: datetime


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


class UsageBook:
    """The daemon's writes (and its own reads) of the usage tables of one store."""

    def __init__(self, store: Store):
        self.store = store
        self._windows: dict[tuple[str, str, str], tuple[float | None, str | None, datetime]] | None = None
        self._sampled: dict[tuple[str, str, str], tuple[str | None, datetime]] = {}  # key -> reset and instant of its last sample
        self._caches: dict[tuple[str, str], tuple] = {}
        self._inputs: tuple[tuple[int, int], UsageInputs] | None = None
        self._given: set[str] | None = None  # only this book writes the marks: read once

    def inputs(self, now: datetime | None = None) -> UsageInputs:
        """What the figures are made of, read again only after anyone wrote to the store (most polls: no one)."""
        marker = self.store.change_marker()
        if self._inputs is None or self._inputs[0] != marker:
            with self.store.transaction():  # one consistent read
                self._inputs = (marker, read_inputs(self.store.query, now))
        return self._inputs[1]

    def _known(self) -> dict[tuple[str, str, str], tuple[float | None, str | None, datetime]]:
        if self._windows is None:
            self._windows = {
                (r["account"], r["limit_id"], r["window"]): (r["used_percent"], r["resets_at"],
                                                              _dt(r["observed_at"]) or datetime.now(timezone.utc))
                for r in self.store.query("SELECT account, limit_id, window, used_percent, resets_at, observed_at"
                                          " FROM usage_windows")
            }
        return self._windows

    def record(self, account: str, reading: UsageReading) -> bool:
        """Keep a reading for `account`; True when a figure or reset changed (a sample was added)."""
        known = self._known()
        changed = False
        with self.store.transaction():
            for w in reading.windows:
                at = w.observed_at or reading.at
                key = (account, w.limit_id or "", w.window)
                resets = _iso(w.resets_at)
                was = known.get(key)
                if was is not None and was[2] is not None and at <= was[2]:
                    continue  # an older report than the one kept (another session's older records)
                if was is None or was[0] != w.used_percent or was[1] != resets:
                    changed = True
                    last = self._sampled.get(key)
                    if last is None or last[0] != resets or at - last[1] >= SAMPLE_EVERY:
                        self.store.execute(
                            "INSERT INTO usage_samples (account, limit_id, window, at, used_percent, resets_at)"
                            " VALUES (?, ?, ?, ?, ?, ?)", (account, key[1], w.window, _iso(at), w.used_percent, resets))
                        self._sampled[key] = (resets, at)
                elif at - was[2] < REFRESH:
                    continue
                self.store.execute(
                    "INSERT INTO usage_windows (account, limit_id, window, agent, used_percent, resets_at, window_minutes,"
                    " observed_at, source, plan_type) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT (account, limit_id, window) DO UPDATE SET agent = excluded.agent,"
                    " used_percent = excluded.used_percent, resets_at = excluded.resets_at,"
                    " window_minutes = excluded.window_minutes, observed_at = excluded.observed_at,"
                    " source = excluded.source, plan_type = excluded.plan_type",
                    (account, key[1], w.window, reading.agent, w.used_percent, resets, w.window_minutes, _iso(at),
                     reading.source, reading.plan_type))
                known[key] = (w.used_percent, resets, at)
        return changed

    # --- usage.high, once per window ------------------------------------------------

    def alerts_given(self) -> set[str]:
        """The once-per-window marks given (usage.high levels, handoffs before the wall); read once, then kept."""
        if self._given is None:
            self._given = {r["key"] for r in self.store.query("SELECT key FROM usage_alerts")}
        return set(self._given)

    def mark_alerts(self, keys: list[str], at: datetime) -> None:
        given = self.alerts_given()
        with self.store.transaction():
            for key in keys:
                self.store.execute("INSERT OR IGNORE INTO usage_alerts (key, at) VALUES (?, ?)", (key, _iso(at)))
        self._given = given | set(keys)

    # --- calibration: walls and working time ----------------------------------------

    def stops(self) -> dict[str, list[Stop]]:
        out: dict[str, list[Stop]] = {}
        for r in self.store.query("SELECT account, agent, at, busy_seconds FROM usage_stops ORDER BY id"):
            out.setdefault(r["account"], []).append(Stop(r["account"], r["agent"], _dt(r["at"]) or datetime.now(timezone.utc),
                                                         r["busy_seconds"]))
        return out

    def add_stop(self, stop: Stop) -> None:
        with self.store.transaction():
            self.store.execute("INSERT INTO usage_stops (account, agent, at, busy_seconds) VALUES (?, ?, ?, ?)",
                               (stop.account, stop.agent, _iso(stop.at), stop.busy_seconds))
            self.store.execute("DELETE FROM usage_stops WHERE account = ? AND id NOT IN (SELECT id FROM usage_stops"
                               " WHERE account = ? ORDER BY id DESC LIMIT ?)", (stop.account, stop.account, MAX_STOPS))

    def busy(self) -> dict[str, tuple[str, Busy, bool, datetime]]:
        """account -> (agent, its working time, whether it counts from a reset afd saw, when it was last saved)."""
        return {
            r["account"]: (r["agent"], Busy(r["account"], _dt(r["since"]) or datetime.now(timezone.utc), r["seconds"]),
                           bool(r["whole"]), _dt(r["updated_at"]) or datetime.now(timezone.utc))
            for r in self.store.query("SELECT * FROM usage_busy")
        }

    def save_busy(self, agent: str, busy: Busy, whole: bool, at: datetime) -> None:
        self.store.execute(
            "INSERT INTO usage_busy (account, agent, since, seconds, whole, updated_at) VALUES (?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (account) DO UPDATE SET agent = excluded.agent, since = excluded.since,"
            " seconds = excluded.seconds, whole = excluded.whole, updated_at = excluded.updated_at",
            (busy.account, agent, _iso(busy.since), busy.seconds, int(whole), _iso(at)))

    # --- prompt caches ------------------------------------------------------------

    def save_prompt_cache(self, cache: PromptCache) -> None:
        key = (cache.account, cache.session_id)
        value = (cache.cwd, cache.transcript_path, cache.warm, cache.expires_at, cache.recache_tokens)
        if self._caches.get(key) == value:
            return
        self.store.execute(
            "INSERT INTO prompt_caches (account, session_id, cwd, transcript_path, warm, expires_at, recache_tokens,"
            " observed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (account, session_id) DO UPDATE SET"
            " cwd = excluded.cwd, transcript_path = excluded.transcript_path, warm = excluded.warm,"
            " expires_at = excluded.expires_at, recache_tokens = excluded.recache_tokens,"
            " observed_at = excluded.observed_at",
            (cache.account, cache.session_id, cache.cwd, cache.transcript_path,
             None if cache.warm is None else int(cache.warm), _iso(cache.expires_at), cache.recache_tokens,
             _iso(cache.observed_at)))
        self._caches[key] = value

    def prompt_caches(self, account: str) -> list[PromptCache]:
        """The account's sessions' prompt caches, the newest report first."""
        return [
            PromptCache(r["account"], r["session_id"], r["cwd"], r["transcript_path"],
                        None if r["warm"] is None else bool(r["warm"]), _dt(r["expires_at"]), r["recache_tokens"],
                        _dt(r["observed_at"]) or datetime.now(timezone.utc))
            for r in self.store.query("SELECT * FROM prompt_caches WHERE account = ? ORDER BY observed_at DESC",
                                      (account,))
        ]

    # --- keeping it small ---------------------------------------------------------

    def prune(self, now: datetime) -> None:
        old = _iso(now - KEEP)
        with self.store.transaction():
            self.store.execute("DELETE FROM usage_samples WHERE at < ?", (old,))
            self.store.execute("DELETE FROM usage_windows WHERE observed_at < ?", (old,))
            self.store.execute("DELETE FROM usage_alerts WHERE at < ?", (old,))
            self.store.execute("DELETE FROM prompt_caches WHERE observed_at < ?", (_iso(now - CACHE_KEEP),))
        self._windows = None
        self._caches.clear()
        self._sampled.clear()
        self._given = None
