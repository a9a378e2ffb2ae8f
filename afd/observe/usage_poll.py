"""The usage stage of the poll: what the agents report of their accounts' usage, kept, counted and told early.

The status-line files and the agents' records are read by
afd/observe/usage.py; what is kept of them is afd/record/usage_book.py's;
calibration's working time per account (afd/judge/calibration.py) is counted
here, poll by poll, and saved at most once a minute; a window about to run
out is told once (`usage.high`, afd/judge/usage.py's alerts).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from afd.config.settings import Config
from afd.judge import calibration, usage
from afd.kit.resettime import local_zone
from afd.model import AgentProcess, AgentSpec
from afd.observe.usage import UsageWatch
from afd.record.types import LimitFact, SessionRecord
from afd.record.usage_book import PromptCache, UsageBook

# How far ahead a window's run-out is told (`usage.high`), once per window.
RUNOUT_WITHIN = timedelta(minutes=30)
# Calibration's working time is saved at most this often (a crash loses at most this much of it).
BUSY_SAVE_EVERY = 60.0
USAGE_PRUNE_EVERY = 3600.0

Say = Callable[..., None]  # (kind, message, session, **data): the supervisor's event


@dataclass
class UsagePoll:
    """The usage stage's state: the watch over the files, the book, each account's calibration period."""

    book: UsageBook
    watch: UsageWatch = field(default_factory=UsageWatch.for_runtime_dir)
    periods: dict = field(default_factory=dict)  # account -> calibration.Period
    saved: dict = field(default_factory=dict)  # account -> (Period, monotonic seconds) as last saved
    polled_at: datetime | None = None
    pruned_at: float = float("-inf")

    def resume(self, now: datetime) -> None:
        """The periods read back at start, carried to `now` (a period the gap ended is closed)."""
        for account, (agent, busy, whole, saved_at) in self.book.busy().items():
            period = calibration.resumed(calibration.Period(agent, busy, whole), saved_at, now)
            self.periods[account] = period
            self.saved[account] = (period, float("-inf"))

    def look(self, live: Iterable[SessionRecord], *, process_of: Callable[[SessionRecord], AgentProcess | None],
             agents: dict[str, AgentSpec], plugins, config: Config, limits: Callable[[], dict[str, LimitFact]],
             say: Say, now: datetime, mono: Callable[[], float]) -> None:
        """One poll's readings kept, working time counted for calibration, a high window told."""
        seen = self.watch.look(
            list(live),
            process_of=process_of,
            status_line=next((spec for spec in agents.values() if spec.status_line), None),
            configured=config.accounts.values(),
            read_usage=plugins.usage,
            has_usage=plugins.has_usage,
            now=now,
            mono=mono(),
        )
        changed = False
        book = self.book
        with book.store.transaction():  # one commit for what this poll read, not one per file
            for account, reading in seen.readings:
                changed |= book.record(account, reading)
            for c in seen.caches:
                book.save_prompt_cache(PromptCache(c.account, c.session_id, c.cwd, c.transcript_path, c.warm, c.expires_at,
                                                   c.recache_tokens, c.at))
            self._count_working_time(seen.working, config, limits(), now, mono())
        if changed:
            self._tell_high_usage(config, say, now)
        if (at := mono()) - self.pruned_at >= USAGE_PRUNE_EVERY:
            self.pruned_at = at
            book.prune(now)

    def figures(self, config: Config, now: datetime, owners=()) -> usage.UsageFigures:
        """Every account's figures now (`owners`: (name, agent) listed even with none), working time as it stands."""
        inputs = self.book.inputs(now)
        busy = {a: p.busy for a, p in self.periods.items() if p.whole}
        owners = [*owners, *((a.name, a.agent) for a in config.accounts.values())]
        return usage.figures(usage.UsageInputs(inputs.samples, inputs.stops, busy), owners, now,
                             stale_after=config.usage_stale_after)

    def _tell_high_usage(self, config: Config, say: Say, now: datetime) -> None:
        due = usage.alerts_due(
            self.figures(config, now), warn_at=config.usage_warn_at, spend_warn_at=config.spend_warn_at,
            runout_within=RUNOUT_WITHIN, done=self.book.alerts_given(), zone=local_zone(),
        )
        for alert in due:
            w = alert.figure
            say("usage.high", alert.message, None, account=alert.account, agent=w.agent, window=w.window,
                limit_id=w.limit_id, level=alert.level, used_percent=w.used_percent, resets_at=usage.iso(w.resets_at),
                runs_out_at=usage.iso(w.forecast.earliest) if w.forecast is not None else None)
        if due:
            self.book.mark_alerts([a.key for a in due], now)

    def _count_working_time(self, working, config: Config, limits: dict[str, LimitFact], now: datetime, mono: float) -> None:
        last, self.polled_at = self.polled_at, now
        # A poll long after the last (a suspended machine, a stuck tmux) is not time spent working.
        elapsed = 0.0 if last is None else min(max(0.0, (now - last).total_seconds()), 2 * config.poll_interval + 5)
        self.periods, stops = calibration.step(self.periods, working=working, limits=limits, now=now, elapsed=elapsed)
        for stop in stops:
            self.book.add_stop(stop)
        for account, period in self.periods.items():
            saved, saved_mono = self.saved.get(account, (None, float("-inf")))
            if period == saved:
                continue
            if saved is not None and period.busy.since == saved.busy.since and period.whole == saved.whole \
                    and mono - saved_mono < BUSY_SAVE_EVERY:
                continue  # only more working time: saved once a minute
            self.book.save_busy(period.agent, period.busy, period.whole, now)
            self.saved[account] = (period, mono)
