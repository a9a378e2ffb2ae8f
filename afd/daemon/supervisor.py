"""One poll of one tmux server: inventory, identity, capture, gates, limit map, events.

The supervisor decides nothing itself that a pure module can decide: it
gathers facts (tmux, psutil), hands them to the gates, the session rules
(`afd/judge/sessions.py`) and the limit map, and writes what changed to the store. Data moves down DESIGN.md's data flow and
never back up.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone

import psutil

from afd.act import briefing, create, planner, queue, resume, runner, swap
from afd.act.context import ActionContext, Advanced, Workers
from afd.config.settings import Config, compiled_limit_patterns
from afd.jobs import delivery
from afd.jobs.book import supervised_lines
from afd.jobs.outbox import Outbox
from afd.judge import accounts, calibration, limits, sessions, usage
from afd.judge.gates import chrome_of, judge
from afd.kit.resettime import local_zone
from afd.kit.text import capture_rows
from afd.model import (
    AgentProcess,
    Clock,
    Event,
    Identity,
    IdentityKind,
    Notice,
    SessionState,
    WitnessState,
    WitnessVerdict,
)
from afd.observe import account_env, identity
from afd.observe.identity_cache import IdentityCache, rules_key
from afd.observe.usage import UsageWatch
from afd.observe.watch import PaneWatch, occurrence_key
from afd.pluginset import PluginSet
from afd.record.naming import is_ignored, unique_name
from afd.record.queue_book import QueueBook
from afd.record.store import Store
from afd.record.types import NO_HISTORY, LimitFact, LimitState, SessionRecord
from afd.record.usage_book import PromptCache, UsageBook
from afd.world import git, tmux

log = logging.getLogger("afd.supervisor")

AVAILABLE_FOR = limits.AVAILABLE_FOR
# How stale that working sighting may get before it is written again:
# refreshing it every poll would write to the store every poll for each
# working pane, and "available" then ends at most this much early.
AVAILABLE_REFRESH = timedelta(minutes=1)

# How far ahead a window's run-out is told (`usage.high`), once per window.
RUNOUT_WITHIN = timedelta(minutes=30)
# Calibration's working time is saved at most this often (a crash loses at most this much of it).
BUSY_SAVE_EVERY = 60.0
USAGE_PRUNE_EVERY = 3600.0

# Events a person should notice in the journal.
_WARNING_KINDS = frozenset({"invalid", "unanswered", "corrupt", "partial", "rolled-back", "limited", "unchecked", "create-failed", "disputed", "failed"})

WORKING, IDLE, LIMITED, EXITED, GONE, UNKNOWN = (
    SessionState.WORKING, SessionState.IDLE, SessionState.LIMITED,
    SessionState.EXITED, SessionState.GONE, SessionState.UNKNOWN,
)


@dataclass(frozen=True, slots=True)
class PollSummary:
    server_running: bool
    answered: bool
    panes: int
    sessions: int
    captured: int
    limited: tuple[str, ...]
    error: str | None = None
    socket: str | None = None  # the server's socket, said when it is not running

    def line(self) -> str:
        if not self.answered:
            return f"tmux did not answer: {self.error}"
        if not self.server_running:
            return f"no tmux server is running at {self.socket or 'its socket'}; nothing to watch yet"
        text = f"{self.sessions} session{'s' if self.sessions != 1 else ''} in {self.panes} pane{'s' if self.panes != 1 else ''}"
        if self.limited:
            text += f"; limited: {', '.join(self.limited)}"
        return text


@dataclass
class Supervisor:
    """The poll loop's state for one tmux server."""

    config: Config
    plugins: PluginSet
    store: Store
    server: tmux.ServerRef
    emit: Callable[[Event, int], None] = lambda event, event_id: None
    # Hands each event and its notice to the notifier worker (`afd_event` runs there, never here).
    announce: Callable[[Event, Notice], None] | None = None
    # Told when an action's row closes (a client may wait on it).
    settled: Callable[[int, object], None] = lambda entry_id, entry: None
    clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc)
    watches: dict[str, PaneWatch] = field(default_factory=dict)
    _server_state: str | None = None  # "running" | "down" | "unanswered", for events on change
    _socket_path: str | None = None  # as the server last reported it
    # Identity is re-walked only when a pane's probe changes; see identity_cache.
    identities: IdentityCache = field(default_factory=IdentityCache)
    monotonic: Callable[[], float] = time.monotonic  # for the capture cadence and the engine's; tests step it
    # The clock tmux stamps `window_activity` with (epoch seconds): the real one, whatever `clock` is,
    # unless a test's simulated tmux keeps the simulated time.
    tmux_time: Callable[[], float] = time.time
    # Reads an agent process's environment when its identity is established (None: unreadable).
    read_env: account_env.EnvReader = account_env.process_environ
    # Accounts told this poll and the last, by what they were told from: telling resolves paths.
    # Good for one config and one set of plugins (`_told_under`): a reload tells every account again.
    _accounts_told: dict = field(default_factory=dict)
    _told_under: tuple = ()
    _listed_at: float = 0.0  # epoch seconds the poll's listing was asked for
    # (agent, directory) pairs that more than one live session shares this poll.
    _crowded: frozenset[tuple[object, str]] | None = None
    _crowd_of: dict = field(default_factory=dict)
    outbox: Outbox = field(default_factory=Outbox)
    # The one engine that drives every journaled action (afd.act.runner).
    engine: runner.Engine = field(init=False)
    workers: Workers = field(default_factory=Workers)
    run: str = field(default_factory=runner.new_run)
    # Sessions whose pane an action (a handoff) owns this poll, read from the journal:
    # the poll neither follows nor judges them until the action settles.
    acting: frozenset[str] = frozenset()
    # Usage before the wall: the status-line files and the agents' records read (afd/observe/usage.py),
    # what is kept of them (afd/record/usage_book.py), and calibration's working time per account.
    usage_watch: UsageWatch = field(default_factory=UsageWatch.for_runtime_dir)
    usage_book: UsageBook = field(init=False)
    _periods: dict = field(default_factory=dict)  # account -> calibration.Period
    _periods_saved: dict = field(default_factory=dict)  # account -> (Period, monotonic seconds) as last saved
    _usage_polled_at: datetime | None = None
    _usage_pruned_at: float = float("-inf")
    queue_book: QueueBook = field(init=False)  # the prompts held with `afd queue add`
    _queue_said: dict = field(default_factory=dict)  # queued prompt id → the hold last said in an event

    def __post_init__(self) -> None:
        self.usage_book = UsageBook(self.store)
        self.queue_book = QueueBook(self.store)
        now = self.clock()
        for account, (agent, busy, whole, saved_at) in self.usage_book.busy().items():
            period = calibration.resumed(calibration.Period(agent, busy, whole), saved_at, now)
            self._periods[account] = period
            self._periods_saved[account] = (period, float("-inf"))
        self._creates = create.CreateExecutor()
        self.engine = runner.Engine(
            [resume.ResumeExecutor(), swap.SwapExecutor(), briefing.BriefExecutor(), self._creates,
             delivery.EnvelopeExecutor()],
            self.workers,
            monotonic=self.monotonic,
        )

    # --- what actions may use --------------------------------------------------

    def context(self) -> ActionContext:
        """What an executor may read and do this turn (never the supervisor itself)."""
        return ActionContext(self.store, self.server, self.config, self.plugins, self.clock, self.run, self.event, self.workers)

    def advance_actions(self, live=None, *, actions=None) -> Advanced:
        """One engine turn over the pending journal rows; what it means for the poll is applied here."""
        report = self.engine.advance(self.context(), live or {}, actions=actions)
        for name in report.forget_watch:
            self.watches.pop(name, None)
        for entry_id, entry in report.settled.items():
            self.settled(entry_id, entry)
        self.acting = frozenset(self.engine.owning(self.store))
        return report

    def begin_create(self, plan: create.CreatePlan) -> int:
        entry_id = self._creates.begin(self.context(), plan)
        self.advance_actions(actions={create.ACTION})  # its first step starts the worktree's worker at once
        return entry_id

    def create_result(self, entry_id: int) -> dict | None:
        """How a create stands: None while it runs; ValueError with the reason when it failed."""
        self.advance_actions(actions={create.ACTION})
        return self._creates.answer(self.store, entry_id)

    def start_handoffs(self) -> None:
        """Automatic handoffs policy asks for (the daemon calls this after a poll; `run --once` does not)."""
        figures = self.usage_figures()
        pending = set(self.engine.pending(self.store))
        planner.start_handoffs(self.context(), pending, lambda name: supervised_lines(self.store, name), figures)
        if self.config.handoff_before is not None:
            book = self.usage_book
            planner.start_handoffs_before_the_wall(self.context(), set(self.engine.pending(self.store)), figures,
                                                   book.alerts_given(), lambda key: book.mark_alerts([key], self.clock()),
                                                   self.watches)
        self.acting = frozenset(self.engine.owning(self.store))

    def busy(self) -> bool:
        return self.engine.busy(self.store)

    # --- events -----------------------------------------------------------

    def event(self, kind: str, message: str, session: str | None = None, **data) -> None:
        # The store row and the log line are afd's own record, and the socket
        # publish feeds `afd events --follow`: they stay here, in order, so no
        # notifier can delay them. Telling people (every `afd_event` plugin)
        # happens on the notifier worker.
        event = Event(at=self.clock(), kind=kind, message=message, session=session, data=data)
        event_id = self.store.add_event(event)
        level = logging.WARNING if kind.split(".")[-1] in _WARNING_KINDS else logging.INFO
        log.log(level, "%s%s: %s", f"[{session}] " if session else "", kind, message)
        if self.announce is not None and self.plugins.manager.hook.afd_event.get_hookimpls():
            self.announce(event, self._notice(event, event_id))
        self.emit(event, event_id)

    def _notice(self, event: Event, event_id: int):
        """The event told for a person, from the session's record as it stands now, in the user's zone."""
        from afd.notifiers.message import About, compose

        rec = self.store.get_session(event.session) if event.session else None
        about = None if rec is None else About(
            agent=rec.agent, location=rec.location, pane=rec.pane_id, worktree=rec.worktree, branch=rec.branch,
            reset_at=rec.reset_at, account=rec.account,
        )
        return compose(event, about, now=event.at, zone=local_zone(), host=socket.gethostname(), event_id=event_id)

    def _save(self, old: SessionRecord | None, new: SessionRecord) -> SessionRecord:
        if new is old:
            return old  # the rules changed nothing (most panes, most polls)
        if old is not None and replace(old, updated_at=new.updated_at) == new:
            return old
        self.store.upsert_session(new)
        return new

    # --- the poll -----------------------------------------------------------

    def poll(self) -> PollSummary:
        self.acting = frozenset(self.engine.owning(self.store))  # a handoff begun between polls owns its pane now
        now = self.clock()
        self._expire_limits(now)
        planner.end_pauses(self.context(), now)
        # No paths or start commands: only adoption reads them, and it asks for its own pane.
        # tmux's clock, not the injected one: tmux stamps window_activity with it.
        self._listed_at = self.tmux_time()
        inv = tmux.list_panes(self.server, details=False)
        if not inv.answered:
            self._server_unanswered(inv.error)
            return PollSummary(False, False, 0, 0, 0, (), inv.error)
        if not inv.server_running:
            self._server_down()
            return PollSummary(False, True, 0, 0, 0, (), socket=self.socket)
        self._socket_path = inv.socket_path
        if self._server_state != "running":
            self._server_state = "running"
            self.event("tmux.up", f"watching tmux server {inv.socket_path} (pid {inv.server_pid})")
        if inv.error:
            self.event("tmux.partial", f"tmux listed panes with problems: {inv.error}")

        live = self._bind_panes(inv, now)
        captured = self._capture_and_judge(live, inv, now)
        self._observe_usage(live, now)
        # Jobs first: a delivery begun for an idle recipient takes its first step in this poll's turn.
        self._advance_jobs(live, now)
        self._advance_actions(live, now)
        limited = tuple(sorted(name for name, (rec, _, _) in live.items() if rec.state == LIMITED))
        return PollSummary(True, True, len(inv.panes), len(live), captured, limited)

    def _advance_jobs(self, live, now: datetime) -> None:
        """Jobs' statuses from what this poll saw, then a delivery begun for each envelope a recipient can take."""
        ctx = self.context()
        self.outbox.observe_jobs(ctx, now)
        for name in self.outbox.route(ctx, live):
            if (watch := self.watches.get(name)) is not None:
                # Seen idle within a poll or two of settling, not only when an unchanged
                # fingerprint's capture is next refreshed.
                watch.look_again()

    # --- acting (afd.act) ------------------------------------------------------

    def _advance_actions(self, live, now: datetime) -> None:
        """One short, non-blocking move of each pending action, then the resumes policy asks for.

        The plan reads one view of the store taken after the engine's turn, never the records
        bound before it: a continuation the engine saw the agent take this turn has ended its
        episode, whatever the poll's earlier look at the pane said (DESIGN "Acting on a limit").
        """
        if self.store.pending_journal():
            self.advance_actions(live)
        busy = {e.session for e in self.store.pending_journal()}
        ctx = self.context()
        # Each plan writes only its own session's record and history, so this view stays current for each.
        records = {r.name: r for r in self.store.list_sessions()}
        if self.queue_book.open():
            # Held prompts first: one due at this reset goes in with the resume, in one paste.
            queue.advance(ctx, self.queue_book, {n: records[n] for n in live if n in records}, busy,
                          paused=lambda rec: planner.pause_of(ctx, rec.name, now) is not None, said=self._queue_said,
                          armed=lambda rec: self._native_armed(ctx, rec, now))
            busy = {e.session for e in self.store.pending_journal()}
            records = {r.name: r for r in self.store.list_sessions()}
        histories = self.store.resume_histories()
        for name in list(live):
            rec = records.get(name)
            if rec is not None and name not in busy:
                stored = histories.get(name, NO_HISTORY)
                planner.plan_wait(ctx, rec, self.watches.get(name), now, stored=stored)

    # --- usage before the wall (afd.judge.usage) ---------------------------------

    def _observe_usage(self, live, now: datetime) -> None:
        """What the agents report of their accounts' usage: kept, counted for calibration, told early when high."""
        status_line = next((spec for spec in self.plugins.agents.values() if spec.status_line), None)
        idents = {name: ident for name, (_rec, _pane, ident) in live.items()}
        seen = self.usage_watch.look(
            [rec for rec, _pane, _ident in live.values()],
            process_of=lambda rec: self._agent_process(rec, idents.get(rec.name)),
            status_line=status_line,
            configured=self.config.accounts.values(),
            read_usage=self.plugins.usage,
            has_usage=self.plugins.has_usage,
            now=now,
            mono=self.monotonic(),
        )
        changed = False
        with self.store.transaction():  # one commit for what this poll read, not one per file
            for account, reading in seen.readings:
                changed |= self.usage_book.record(account, reading)
            for cache in seen.caches:
                self.usage_book.save_prompt_cache(PromptCache(cache.account, cache.session_id, cache.cwd,
                                                              cache.transcript_path, cache.warm, cache.expires_at,
                                                              cache.recache_tokens, cache.at))
            self._count_working_time(seen.working, now)
        if changed:
            self._tell_high_usage(now)
        mono = self.monotonic()
        if mono - self._usage_pruned_at >= USAGE_PRUNE_EVERY:
            self._usage_pruned_at = mono
            self.usage_book.prune(now)

    def usage_figures(self, now: datetime | None = None, owners=()) -> usage.UsageFigures:
        """Every account's figures now (`owners`: (name, agent) listed even with none), working time as it stands."""
        now = now or self.clock()
        inputs = self.usage_book.inputs(now)
        busy = {a: p.busy for a, p in self._periods.items() if p.whole}
        owners = [*owners, *((a.name, a.agent) for a in self.config.accounts.values())]
        return usage.figures(usage.UsageInputs(inputs.samples, inputs.stops, busy), owners, now,
                             stale_after=self.config.usage_stale_after)

    def _tell_high_usage(self, now: datetime) -> None:
        due = usage.alerts_due(
            self.usage_figures(now), warn_at=self.config.usage_warn_at, spend_warn_at=self.config.spend_warn_at,
            runout_within=RUNOUT_WITHIN, done=self.usage_book.alerts_given(), zone=local_zone(),
        )
        for alert in due:
            w = alert.figure
            self.event("usage.high", alert.message, None, account=alert.account, agent=w.agent, window=w.window,
                       limit_id=w.limit_id, level=alert.level, used_percent=w.used_percent,
                       resets_at=usage.iso(w.resets_at),
                       runs_out_at=usage.iso(w.forecast.earliest) if w.forecast is not None else None)
        if due:
            self.usage_book.mark_alerts([a.key for a in due], now)

    def _count_working_time(self, working, now: datetime) -> None:
        last, self._usage_polled_at = self._usage_polled_at, now
        # A poll long after the last (a suspended machine, a stuck tmux) is not time spent working.
        elapsed = 0.0 if last is None else min(max(0.0, (now - last).total_seconds()), 2 * self.config.poll_interval + 5)
        self._periods, stops = calibration.step(self._periods, working=working, limits=self.store.load_limits(), now=now,
                                                elapsed=elapsed)
        for stop in stops:
            self.usage_book.add_stop(stop)
        mono = self.monotonic()
        for account, period in self._periods.items():
            saved, saved_mono = self._periods_saved.get(account, (None, float("-inf")))
            if period == saved:
                continue
            if saved is not None and period.busy.since == saved.busy.since and period.whole == saved.whole \
                    and mono - saved_mono < BUSY_SAVE_EVERY:
                continue  # only more working time: saved once a minute
            self.usage_book.save_busy(period.agent, period.busy, period.whole, now)
            self._periods_saved[account] = (period, mono)

    def _native_armed(self, ctx: ActionContext, rec: SessionRecord, now: datetime) -> bool:
        """Whether the agent's own auto-continue is armed at the wall it stands at (Claude Code's)."""
        from afd.decide.policy import Native

        limit = planner.limit_of(ctx, rec, self.watches.get(rec.name), now)
        return limit is not None and limit.native is Native.ARMED

    def _agent_process(self, rec: SessionRecord, ident: Identity | None) -> AgentProcess | None:
        """The session's agent process as a plugin reading its records sees it; None when whose it is cannot be said."""
        env = ident.env if ident is not None and ident.pid is not None and ident.pid == rec.agent_pid else None
        if env is None and rec.account == accounts.UNKNOWN:
            return None
        start = datetime.fromtimestamp(rec.agent_started_at, timezone.utc) if rec.agent_started_at else None
        shown = None if env is None else (*env.selecting, *((("HOME", env.home),) if env.home else ()))
        return AgentProcess(pid=rec.agent_pid, cwd=_process_cwd(rec.agent_pid) or rec.worktree, start_time=start,
                            account_env=shown)

    # --- server-level states ------------------------------------------------

    @property
    def socket(self) -> str:
        """The socket of the tmux server watched: as the server last reported it, else where tmux puts it."""
        return self._socket_path or expected_socket_path(self.server)

    def _server_sessions(self) -> list[SessionRecord]:
        """Live sessions of this supervisor's server (the store may hold other servers' too)."""
        socket = self.socket
        return [r for r in self.store.list_sessions() if r.state != GONE and (socket is None or r.server_socket == socket)]

    def _server_unanswered(self, error: str | None) -> None:
        if self._server_state != "unanswered":
            self._server_state = "unanswered"
            self.event("tmux.unanswered", f"tmux did not answer: {error}; sessions are unknown until it does")
        self.watches.clear()  # nothing captured before the outage proves anything after it
        now = self.clock()
        for rec in self._server_sessions():
            self._apply(rec, sessions.transition(rec, sessions.ServerUnanswered(), now))

    def _server_down(self) -> None:
        if self._server_state != "down":
            first = self._server_state is None
            self._server_state = "down"
            self.event("tmux.down", f"no tmux server is running at {self.socket}; nothing to watch" + (" yet" if first else " now"))
        now = self.clock()
        closed = sessions.PaneClosed("its tmux server is not running")
        for rec in self._server_sessions():
            self._apply(rec, sessions.transition(rec, closed, now))
        self.watches.clear()

    # --- writing what the rules decided -------------------------------------

    def _apply(self, old: SessionRecord, t: sessions.Transition) -> SessionRecord:
        """Write one transition: the record, the banner and watch housekeeping, the limit map, the events."""
        name = t.record.name
        new = self._save(old, t.record)
        if t.clear_banner:
            self.store.clear_banner(name)
        if t.forget_watch:
            self.watches.pop(name, None)
        for sighting in t.sightings:
            self._observe(sighting, self.clock())
        for note in t.notes:
            self.event(note.kind, note.message, name)
        return new

    def _observe(self, sighting: sessions.Sighting, now: datetime) -> None:
        if isinstance(sighting, sessions.SeenWorking):
            self._observe_working(sighting.agent, sighting.account, sighting.session, now)
        elif isinstance(sighting, sessions.SeenDisputed):
            fact = self._fact(sighting.agent, sighting.account)
            if fact.state is LimitState.LIMITED and fact.source_session == sighting.session:
                # The limit every session was told of came from the banner now disputed.
                self.store.save_limit(limits.unknown_fact(sighting.agent, sighting.account))
                self.event("agent.unknown", f"{sighting.account} is unknown again: the limit seen in {sighting.session} "
                           "is disputed by its own records", sighting.session)
        else:
            self._observe_limited(sighting, now)

    def _observe_working(self, agent: str, account: str, session: str, now: datetime) -> None:
        old = self._fact(agent, account)
        if old.state is LimitState.AVAILABLE and old.observed_at and timedelta(0) <= now - old.observed_at < AVAILABLE_REFRESH:
            return
        self._store_fact(old, limits.observe_working(old, at=now, session=session), session)

    def _observe_limited(self, seen: sessions.SeenLimited, now: datetime) -> None:
        old = self._fact(seen.agent, seen.account)
        new = limits.observe_limited(old, reset_at=seen.reset_at, at=now, session=seen.session, banner=seen.banner,
                                     first_seen=seen.first_seen, evidence_at=seen.seen_at)
        why = None
        if old.state is LimitState.AVAILABLE and new.state is LimitState.UNKNOWN:
            why = f"a usage limit whose reset had already passed was seen in {seen.session}"
        self._store_fact(old, new, seen.session, why)

    # --- binding panes to sessions ------------------------------------------

    def _bind_panes(self, inv: tmux.Inventory, now: datetime) -> dict[str, tuple[SessionRecord, tmux.PaneInfo, Identity]]:
        records = {r.name: r for r in self.store.list_sessions()}
        bound = {r.pane_id: r for r in records.values() if r.state != GONE and r.server_socket == inv.socket_path}
        overrides = {n: o.command for n, o in self.config.agents.items() if o.command}
        live: dict[str, tuple[SessionRecord, tmux.PaneInfo, Identity]] = {}

        self.identities.begin_poll(rules_key(self.plugins.agents, overrides))
        told, self._accounts_told = self._accounts_told, {}
        if len(self._told_under) != 2 or self._told_under[0] is not self.config or self._told_under[1] is not self.plugins:
            told, self._told_under = {}, (self.config, self.plugins)
        for pane in inv.panes:
            held = bound.get(pane.pane_id)
            procs, ident = self.identities.lookup(
                pane,
                # The account is read with the identity, not every poll.
                lambda ps: account_env.with_account_env(
                    identity.identify(ps, self.plugins.agents, overrides), self.plugins.agents, self.read_env
                ),
                (held.agent_pid, held.agent_started_at) if held is not None else None,
            )
            rec = bound.pop(pane.pane_id, None)
            if rec is not None and rec.server_pid is None:
                # Created while tmux could not say which server pid it was: this is the first answer.
                rec = self._apply(rec, sessions.transition(rec, sessions.ServerNamed(inv.server_pid), now))
            if rec is not None and rec.server_pid != inv.server_pid:
                # Pane ids restart at %0 on a new server: same id, unrelated pane.
                self._apply(rec, sessions.transition(rec, sessions.ServerReplaced(rec.server_pid, inv.server_pid), now))
                rec = None
            if rec is not None and rec.name in self.acting:
                live[rec.name] = (rec, pane, ident)  # a handoff owns this pane until it settles
                continue
            if rec is not None:
                own_alive = rec.agent_pid is not None and any(
                    p.pid == rec.agent_pid and p.create_time == rec.agent_started_at and p.alive for p in procs
                )
                agent = ident.agent if ident.kind is IdentityKind.KNOWN else rec.agent
                seen = sessions.PaneSeen(ident, own_alive, pane.dead, pane.location, self._account(agent, ident, told))
                rec = self._apply(rec, sessions.transition(rec, seen, now))
            elif self._should_adopt(pane, ident):
                rec = self._adopt(pane, ident, inv, records, now)
                records[rec.name] = rec
            if rec is not None:
                live[rec.name] = (rec, pane, ident)

        for rec in bound.values():
            self._apply(rec, sessions.transition(rec, sessions.PaneClosed("the pane was closed"), now))
        self.identities.retain(p.pane_id for p in inv.panes)
        return live

    def _should_adopt(self, pane: tmux.PaneInfo, ident: Identity) -> bool:
        return (
            self.config.watch_all_panes
            and ident.kind is IdentityKind.KNOWN
            and not is_ignored(pane.location, self.config.watch_ignore)
        )

    def _account(self, agent: str | None, ident: Identity, told: dict) -> str | None:
        """The account `agent` runs on in this pane, from the environment read with its identity."""
        if agent is None or ident.pid is None:
            return None
        spec = self.plugins.agents.get(agent)
        key = (agent, ident.pid, ident.create_time, ident.env)
        if key in told:
            name = told[key]
        elif spec is None:
            name = accounts.UNKNOWN
        else:
            variables = accounts.vars_of(spec)
            name = accounts.account_of(agent, variables, ident.env, self.config.accounts.values(),
                                       home=os.path.expanduser("~"), resolve=os.path.realpath)
        self._accounts_told[key] = name
        return name

    def _adopt(self, pane, ident: Identity, inv, records, now) -> SessionRecord:
        return self.adopt(pane, ident, inv, set(records), now)

    def adopt(self, pane: tmux.PaneInfo, ident: Identity, inv: tmux.Inventory, taken, now: datetime, *,
              name: str | None = None, mission: str | None = None, vouched_agent: str | None = None) -> SessionRecord:
        """Make a session of a pane: found by the poll (`watch_all_panes`) or asked for (`sessions adopt`)."""
        agent = ident.agent if ident.kind is IdentityKind.KNOWN else vouched_agent
        if agent is None:
            raise ValueError(f"pane {pane.pane_id}: no agent to adopt it as (none identified, none vouched for)")
        spec = self.plugins.agents[agent]
        if pane.cwd is None or pane.start_command is None:
            # Gone since the listing: adopted without a mission or worktree, as a pane tmux said nothing about.
            pane = tmux.pane_details(self.server, pane) or replace(pane, start_command="", cwd="")
        start_command, cwd = pane.start_command or "", pane.cwd or ""
        if mission is None and ident.argv:
            mission = identity.mission_from_argv(ident.argv, spec) or identity.mission_from_start_command(start_command, spec)
        elif mission is None:
            mission = identity.mission_from_start_command(start_command, spec) if ident.kind is IdentityKind.KNOWN else None
        t = sessions.adopted(
            name=name or unique_name(pane.location, taken),
            pane_id=pane.pane_id,
            server_socket=inv.socket_path or "",  # an answered listing always names its socket
            server_pid=inv.server_pid,
            identity=ident,
            mission=(mission or "").strip() or None,
            worktree=cwd or None,
            branch=git.branch_of(cwd),
            location=pane.location,
            now=now,
            vouched_agent=vouched_agent,
            account=self._account(agent, ident, {}),
        )
        self.store.upsert_session(t.record)
        for note in t.notes:
            self.event(note.kind, note.message, t.record.name)
        return t.record

    # --- capture, gates, limit map ----------------------------------------

    def _capture_and_judge(self, live, inv, now: datetime) -> int:
        # Which directories hold two sessions of one agent is worked out only
        # if a witness is asked this poll: an idle poll reads no /proc cwd links.
        self._crowded = None
        self._crowd_of = live
        mono = self.monotonic()
        wanted = []
        for name, (rec, pane, _ident) in live.items():
            if rec.state in (EXITED, GONE) or rec.awaiting_since is not None or rec.agent not in self.plugins.agents or name in self.acting:
                continue  # no agent of its own runs there (yet) to capture
            watch = self.watches.setdefault(name, PaneWatch(keep=self.config.stability_polls))
            watch.keep = self.config.stability_polls
            # Looked at afresh, whatever the fingerprint says: a state tmux left unknown (it did not
            # answer), and a pane last judged under another config or other plugins (a reload).
            under = watch.detected_under
            stale = rec.state == UNKNOWN or (
                watch.text is not None and not (isinstance(under, tuple) and under[0] is self.config and under[1] is self.plugins)
            )
            if stale or watch.needs_capture(pane.fingerprint, mono, settled=rec.state == LIMITED):
                wanted.append(name)
        if not wanted:
            return 0
        results = tmux.capture_panes(self.server, [live[n][1].pane_id for n in wanted])
        patterns = compiled_limit_patterns(self.config)
        clock = Clock(now=now, local_zone=local_zone())
        for name in wanted:
            rec, pane, _ident = live[name]
            result = results.get(pane.pane_id)
            seen: sessions.Observation
            if result is None or result.presence is tmux.Presence.UNKNOWN:
                seen = sessions.CaptureUnanswered(result.error if result is not None else None)
            elif result.presence is tmux.Presence.GONE:
                seen = sessions.PaneClosed("the pane vanished during the poll")
            elif result.server_pid is not None and result.server_pid != inv.server_pid:
                continue  # the server restarted between list and capture: judge nothing
            elif self.watches[name].settled_on(result.text or "", (self.config, self.plugins)) and not (
                # The agent's records can go on while its screen stands still:
                # a limited pane with a witness is looked at on each safety capture.
                rec.state == LIMITED and self.plugins.has_witness(rec.agent)
            ):
                self.watches[name].refresh(pane.fingerprint, mono, self._listed_at)
                continue
            else:
                seen = self._look(name, rec, pane, _ident, result.text or "", clock, patterns, mono)
            rec = self._apply(rec, sessions.transition(rec, seen, now))
            if rec.state == GONE:
                del live[name]
            else:
                live[name] = (rec, pane, _ident)
        return len(wanted)

    def _look(
        self, name: str, rec: SessionRecord, pane, ident: Identity, text: str, clock: Clock, patterns, mono: float
    ) -> sessions.Looked:
        """The facts of one fresh capture: detection, banner sighting, idle gate, verdict, busy marker."""
        now = clock.now
        rows = capture_rows(text)
        agent = rec.agent
        assert agent is not None  # only a session of an agent some plugin knows is captured
        spec = self.plugins.agents[agent]
        watch, rules = self.watches[name], (self.config, self.plugins)
        if watch.repeats(rows, rules):
            found = watch.detections[-1]
        else:
            found = self.plugins.detect(agent, rows, clock, patterns.get(agent))
        watch.detected_under, watch.text = rules, text
        chrome = chrome_of(spec, rows)
        idle = watch.record(rows, found, pane.fingerprint, mono, chrome, spec.volatile, self._listed_at)
        sighting = None
        if found is not None:
            key = occurrence_key(rows, found, chrome)
            stored = self.store.banner_first_seen(name, key)
            if stored is None:
                # Parsed once, against the instant it was first seen; re-parsing a
                # static "in 3 hours" every poll would push the reset away forever.
                self.store.record_banner(name, key, now, found.reset_at)
                sighting = sessions.BannerSighting(now, found.reset_at)
            else:
                sighting = sessions.BannerSighting(stored.first_seen_at, stored.reset_at)
        verdict = None
        if idle:
            verdict = judge(
                agent,
                list(watch.captures),
                list(watch.detections),
                chrome,
                tail_lines=self.config.tail_lines,
                stability_polls=self.config.stability_polls,
                contents=list(watch.contents),
            )
        busy = sessions.seen_busy(rows, spec.busy, chrome, self.config.tail_lines)
        record = self._ask_witness(rec, ident, sighting.first_seen_at if sighting else None, now) if idle else None
        return sessions.Looked(idle, found, sighting, verdict, busy, record)

    # --- the second witness: the agent's own records ------------------------

    def _ask_witness(
        self, rec: SessionRecord, ident: Identity, banner_seen_at: datetime | None, now: datetime
    ) -> WitnessVerdict | None:
        """The agent's own records' verdict for an idle pane, or None when no plugin reads them.

        Asked at most once a poll; the plugins re-read a file only when its
        size or mtime changed. The records read are the session's account's
        (the transcript under its CLAUDE_CONFIG_DIR), as afd read its
        environment when it named the agent.
        """
        if rec.agent is None or not self.plugins.has_witness(rec.agent):
            return None
        env = ident.env if ident.pid is not None and ident.pid == rec.agent_pid else None
        if env is None and rec.account == accounts.UNKNOWN:
            # Its environment could not be read: the default account's records may be another's.
            return WitnessVerdict(WitnessState.UNKNOWN, "its environment could not be read, so which account's records "
                                                        "are its own is unknown")
        start = datetime.fromtimestamp(rec.agent_started_at, timezone.utc) if rec.agent_started_at else None
        shown = None if env is None else (*env.selecting, *((("HOME", env.home),) if env.home else ()))
        process = AgentProcess(pid=rec.agent_pid, cwd=_process_cwd(rec.agent_pid) or rec.worktree, start_time=start,
                               account_env=shown)
        if self._crowded is None:
            # Two sessions of one account in one directory: records are found by both.
            self._crowded = crowded_dirs(
                ((r.agent, r.account), _process_cwd(r.agent_pid) or r.worktree)
                for r, _, _ in self._crowd_of.values()
                if r.state not in (EXITED, GONE)
            )
        if ((rec.agent, rec.account), process.cwd) in self._crowded:
            # Records are found by directory and recency: with two of them at
            # work in one directory, the newest file may be the other one's.
            return WitnessVerdict(WitnessState.UNKNOWN, f"another {rec.agent} session works in {process.cwd}; whose records are whose is unknown")
        since = start
        if since is None:
            # Whose process this is was the user's word: only what it wrote
            # since the banner appeared (a poll before it was first seen) counts.
            since = (banner_seen_at or now) - timedelta(seconds=self.config.poll_interval + 1)
        return self.plugins.witness(rec.agent, process, since, now)

    def _fact(self, agent: str, account: str) -> LimitFact:
        return self.store.load_limits().get(account) or limits.unknown_fact(agent, account)

    def _store_fact(self, old: LimitFact, new: LimitFact, session: str | None, why: str | None = None) -> None:
        """Save a changed fact; a change of state is an event that says what happened (`why`, for unknown)."""
        if new == old:
            return
        self.store.save_limit(new)
        if new.state != old.state:
            if new.state is LimitState.LIMITED:
                when = new.reset_at.strftime("%Y-%m-%dT%H:%M:%SZ") if new.reset_at else "no reset time stated"
                msg = f"{new.account_name} is limited for every session ({when}), seen in {new.source_session}"
            elif new.state is LimitState.AVAILABLE:
                msg = f"{new.account_name} is available: seen working without a banner in {new.source_session}"
            else:
                reason = why or "its limit's reset time has passed"
                msg = f"{new.account_name} is unknown again: {reason}"
            self.event(f"agent.{new.state.value}", msg, session, agent=new.agent, account=new.account_name)

    def _expire_limits(self, now: datetime) -> None:
        for fact in self.store.load_limits().values():
            why = None
            if fact.state is LimitState.AVAILABLE and fact.observed_at is not None:
                # Said only when it is so: the last working sighting is that old.
                why = f"last seen working at {fact.observed_at:%Y-%m-%dT%H:%M:%SZ}, over {AVAILABLE_FOR} ago"
            self._store_fact(fact, limits.expire(fact, now, available_for=AVAILABLE_FOR), fact.source_session, why)


def crowded_dirs(pairs) -> frozenset[tuple[object, str]]:
    """The (agent, directory) pairs given more than once."""
    seen: set[tuple[str | None, str]] = set()
    crowded: set[tuple[str | None, str]] = set()
    for pair in pairs:
        if pair[1]:
            (crowded if pair in seen else seen).add(pair)
    return frozenset(crowded)


def _process_cwd(pid: int | None) -> str | None:
    """The agent's own working directory (where its records are filed), or None when it cannot be read."""
    if pid is None:
        return None
    try:
        return psutil.Process(pid).cwd()
    except psutil.Error:
        return None


def expected_socket_path(server: tmux.ServerRef) -> str:
    """Where tmux puts this server's socket, for when the server cannot be asked."""
    return server.socket()
