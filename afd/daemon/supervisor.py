"""One poll of one tmux server: the stages of the data flow, threaded, and the state they keep between polls.

inventory (afd/world/tmux.py) → bind (afd/observe/bind.py) → look (afd/observe/look.py: capture,
detectors, banner memory, the gates and the witness) → transition (afd/judge/sessions.py) → limit map
(afd/judge/limits.py's rules, afd/record/limit_map.py's writer) → usage (afd/observe/usage_poll.py) →
the engine's turn (afd/act/runner.py) → plan (afd/act/planner.py: the wait path and the handoffs, from
one read of the store after the engine's turn). Each stage takes values and returns values; this
module decides nothing, and writes only what the rules decided (`_apply`). See docs/development.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import partial

from afd.act import briefing, create, planner, resume, runner, swap
from afd.act.context import ActionContext, Advanced, Workers
from afd.config.settings import Config
from afd.daemon import telling
from afd.daemon.summary import PollSummary
from afd.jobs import delivery, held
from afd.jobs.book import supervised_lines
from afd.jobs.outbox import Outbox
from afd.judge import limits, sessions, usage
from afd.model import Event, Identity, Notice, SessionState
from afd.observe import account_env, bind, look
from afd.observe.identity_cache import IdentityCache
from afd.observe.server import seen as server_seen
from afd.observe.usage_poll import UsagePoll
from afd.observe.watch import PaneWatch
from afd.pluginset import PluginSet
from afd.record import limit_map
from afd.record.queue_book import QueueBook
from afd.record.store import Store
from afd.record.types import SessionRecord
from afd.record.usage_book import UsageBook
from afd.world import tmux

__all__ = ["GONE", "UNKNOWN", "PollSummary", "Supervisor", "expected_socket_path"]
LIMITED, GONE, UNKNOWN = SessionState.LIMITED, SessionState.GONE, SessionState.UNKNOWN


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
    identities: IdentityCache = field(default_factory=IdentityCache)  # re-walked only when a pane's probe changes
    monotonic: Callable[[], float] = time.monotonic  # for the capture cadence and the engine's; tests step it
    # The clock tmux stamps `window_activity` with (epoch seconds): the real one, whatever `clock` is,
    # unless a test's simulated tmux keeps the simulated time.
    tmux_time: Callable[[], float] = time.time
    # Reads an agent process's environment when its identity is established (None: unreadable).
    read_env: account_env.EnvReader = account_env.process_environ
    accounts_told: bind.AccountsTold = field(default_factory=bind.AccountsTold)
    outbox: Outbox = field(default_factory=Outbox)
    engine: runner.Engine = field(init=False)  # the one engine that drives every journaled action
    workers: Workers = field(default_factory=Workers)
    run: str = field(default_factory=runner.new_run)
    # Sessions whose pane an action (a handoff) owns, read from the journal: the poll neither follows nor
    # judges them until the action settles.
    acting: frozenset[str] = frozenset()
    usage_poll: UsagePoll = field(init=False)  # the usage stage's state (the files watched, the book, calibration)
    queue_book: QueueBook = field(init=False)  # the prompts held with `afd queue add`
    _queue_said: dict = field(default_factory=dict)  # queued prompt id → the hold last said in an event

    def __post_init__(self) -> None:
        self.usage_poll = UsagePoll(UsageBook(self.store))
        self.usage_poll.resume(self.clock())
        self.queue_book = QueueBook(self.store)
        self._creates = create.CreateExecutor()
        self.engine = runner.Engine([resume.ResumeExecutor(), swap.SwapExecutor(), briefing.BriefExecutor(), self._creates,
                                     delivery.EnvelopeExecutor()], self.workers, monotonic=self.monotonic)

    # --- what actions and requests may use ------------------------------------------

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

    def busy(self) -> bool:
        return self.engine.busy(self.store)

    def usage_figures(self, now: datetime | None = None, owners=()) -> usage.UsageFigures:
        return self.usage_poll.figures(self.config, now or self.clock(), owners)

    def adopt(self, pane: tmux.PaneInfo, ident: Identity, inv: tmux.Inventory, taken, now: datetime, **asked) -> SessionRecord:
        """Make a session of a pane `sessions adopt` names (`name`, `mission`, `vouched_agent`: the user's word)."""
        agents = self.plugins.agents
        made = bind.adoption(pane, ident, inv, taken, now, agents=agents, server=self.server, **asked,
                             account_of=lambda agent: self.accounts_told.account(agent, ident, agents, self.config))
        return self._apply(None, made)

    def event(self, kind: str, message: str, session: str | None = None, **data) -> None:
        hooked = self.announce is not None and self.plugins.manager.hook.afd_event.get_hookimpls()
        telling.record(self.store, Event(at=self.clock(), kind=kind, message=message, session=session, data=data),
                       emit=self.emit, announce=self.announce if hooked else None)

    @property
    def socket(self) -> str:
        """The socket of the tmux server watched: as the server last reported it, else where tmux puts it."""
        return self._socket_path or expected_socket_path(self.server)

    # --- the poll -----------------------------------------------------------

    def poll(self, *, handoffs: bool = False) -> PollSummary:
        """One poll, the stages in order; `handoffs`: a turn of `afd run` (`run --once` starts none: none could end)."""
        self.acting = frozenset(self.engine.owning(self.store))  # a handoff begun between polls owns its pane now
        now = self.clock()
        limit_map.write(self.store, limits.expiries(self.store.load_limits().values(), now), self.event)
        planner.end_pauses(self.context(), now)
        listed_at = self.tmux_time()  # tmux's clock, not the injected one: tmux stamps window_activity with it
        inv = tmux.list_panes(self.server, details=False)  # only adoption reads paths, and asks for its own pane
        if not self._server_runs(inv):
            return PollSummary(False, inv.answered, 0, 0, 0, (), None if inv.answered else inv.error,
                               socket=self.socket if inv.answered else None)
        found = bind.bind(inv, self.store.list_sessions(), identities=self.identities, agents=self.plugins.agents,
                          config=self.config, told=self.accounts_told, acting=self.acting, read_env=self.read_env,
                          server=self.server, now=now)
        live = found.live
        for old, t in found.steps:
            self._apply(old, t)
        captured = self._look(live, inv, listed_at, now)
        self.usage_poll.look([rec for rec, _, _ in live.values()], process_of=look.live_processes(live), agents=self.plugins.agents,
                             plugins=self.plugins, config=self.config, limits=self.store.load_limits, say=self.event, now=now,
                             mono=self.monotonic)
        # Jobs first: a delivery begun for an idle recipient takes its first step in this turn's engine.
        ctx = self.context()
        self.outbox.observe_jobs(ctx, now)
        for name in self.outbox.route(ctx, live):
            if (watch := self.watches.get(name)) is not None:
                watch.look_again()  # seen idle within a poll or two of settling, not at the next backstop
        if self.store.pending_journal():
            self.advance_actions(live)
        ctx = self.context()
        hold = partial(held.hand_over, ctx, self.queue_book, watches=self.watches, said=self._queue_said, now=now)
        planner.plan_turn(ctx, live, self.watches, now, hold=hold, handoffs=self._handoffs() if handoffs else None)
        if handoffs:
            self.acting = frozenset(self.engine.owning(self.store))
        limited = tuple(sorted(name for name, (rec, _, _) in live.items() if rec.state == LIMITED))
        return PollSummary(True, True, len(inv.panes), len(live), captured, limited)

    def _server_runs(self, inv: tmux.Inventory) -> bool:
        """Whether the listing found the server running; its change of state told, and what it means for the sessions."""
        if inv.answered and inv.server_running:
            self._socket_path = inv.socket_path
        up = server_seen(self._server_state, inv, self.socket)
        self._server_state = up.state
        for kind, message in up.told:
            self.event(kind, message)
        if up.sessions_see is None:
            return True
        self.watches.clear()  # nothing captured before the outage proves anything after it
        for rec in [r for r in self.store.list_sessions() if r.state != GONE and r.server_socket == self.socket]:
            self._apply(rec, sessions.transition(rec, up.sessions_see, self.clock()))
        return False

    def _look(self, live: bind.Live, inv: tmux.Inventory, listed_at: float, now: datetime) -> int:
        """Look at the panes due a look; each observation through the rulebook, written before the next is looked at."""
        mono = self.monotonic()
        wanted = look.due(live, self.watches, acting=self.acting, config=self.config, plugins=self.plugins, mono=mono)
        for name, seen in look.look(wanted, live, self.watches, server=self.server, server_pid=inv.server_pid, store=self.store,
                                    config=self.config, plugins=self.plugins, mono=mono, listed_at=listed_at, now=now) if wanted else ():
            rec = self._apply(live[name][0], sessions.transition(live[name][0], seen, now))
            if rec.state == GONE:
                del live[name]
            else:
                live[name] = (rec, *live[name][1:])
        return len(wanted)

    def _handoffs(self) -> planner.Handoffs:
        book = self.usage_poll.book
        return planner.Handoffs(self.usage_figures(), lambda name: supervised_lines(self.store, name), book.alerts_given(),
                                lambda key: book.mark_alerts([key], self.clock()))

    def _apply(self, old: SessionRecord | None, t: sessions.Transition) -> SessionRecord:
        """Write one transition: the record and its banner, the watch forgotten, the limit map, then its events."""
        told = runner.write_transition(self.store, old, t)
        if t.forget_watch:
            self.watches.pop(t.record.name, None)
        now = self.clock()
        for s in t.sightings:  # the limit map: its rules in afd/judge/limits.py, its one writer in afd/record/limit_map.py
            limit_map.write(self.store, [limits.after_sighting(limit_map.fact(self.store, s.agent, s.account), s, now)], self.event)
        for note in told:
            self.event(note.kind, note.message, note.session)
        return t.record


def expected_socket_path(server: tmux.ServerRef) -> str:
    """Where tmux puts this server's socket, for when the server cannot be asked."""
    return server.socket()
