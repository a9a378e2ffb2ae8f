"""One poll of one tmux server: inventory, identity, capture, gates, limit map, events.

The supervisor decides nothing itself that a pure module can decide: it
gathers facts (tmux, psutil), hands them to the gates and the limit map, and
writes what changed to the store. Data moves down DESIGN.md's data flow and
never back up.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone

from afd import git, identity, limits, tmux, witness
from afd.config import Config, compiled_limit_patterns
from afd.gates import judge
from afd.identity import Identity, IdentityKind
from afd.loader import PluginSet
from afd.model import AgentProcess, Clock, Detection, Event, WitnessState, WitnessVerdict
from afd.naming import is_ignored, unique_name
from afd.resettime import local_zone
from afd.store import SessionRecord, Store
from afd.text import capture_rows
from afd.watch import PaneWatch, occurrence_key

log = logging.getLogger("afd.supervisor")

# "Available" is evidence that an agent ran without a banner *recently*;
# older than this, it is no longer evidence of anything.
AVAILABLE_FOR = timedelta(hours=1)

# Events a person should notice in the journal.
_WARNING_KINDS = frozenset({"invalid", "unanswered", "corrupt", "partial", "rolled-back", "limited", "disputed"})

WORKING, IDLE, LIMITED, EXITED, GONE, UNKNOWN = "working", "idle", "limited", "exited", "gone", "unknown"


@dataclass(frozen=True, slots=True)
class PollSummary:
    server_running: bool
    answered: bool
    panes: int
    sessions: int
    captured: int
    limited: tuple[str, ...]
    error: str | None = None

    def line(self) -> str:
        if not self.answered:
            return f"tmux did not answer: {self.error}"
        if not self.server_running:
            return "no tmux server running; nothing to watch yet"
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
    clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc)
    watches: dict[str, PaneWatch] = field(default_factory=dict)
    _server_state: str | None = None  # "running" | "down" | "unanswered", for events on change
    # Sessions whose next agent in their pane is theirs: seen exiting in this run, or just created.
    _awaiting_agent: set[str] = field(default_factory=set)
    _socket_path: str | None = None  # as the server last reported it
    # (agent, directory) pairs that more than one live session shares this poll.
    _crowded: frozenset[tuple[str | None, str]] = frozenset()

    # --- events -----------------------------------------------------------

    def event(self, kind: str, message: str, session: str | None = None, **data) -> None:
        event = Event(at=self.clock(), kind=kind, message=message, session=session, data=data)
        event_id = self.store.add_event(event)
        level = logging.WARNING if kind.split(".")[-1] in _WARNING_KINDS else logging.INFO
        log.log(level, "%s%s: %s", f"[{session}] " if session else "", kind, message)
        self.plugins.emit(event)
        self.emit(event, event_id)

    def _save(self, old: SessionRecord | None, new: SessionRecord) -> SessionRecord:
        if old is not None and replace(old, updated_at=new.updated_at) == new:
            return old
        self.store.upsert_session(new)
        return new

    # --- the poll -----------------------------------------------------------

    def poll(self) -> PollSummary:
        now = self.clock()
        self._expire_limits(now)
        inv = tmux.list_panes(self.server)
        if not inv.answered:
            self._server_unanswered(inv.error)
            return PollSummary(False, False, 0, 0, 0, (), inv.error)
        if not inv.server_running:
            self._server_down()
            return PollSummary(False, True, 0, 0, 0, ())
        self._socket_path = inv.socket_path
        if self._server_state != "running":
            self._server_state = "running"
            self.event("tmux.up", f"watching tmux server {inv.socket_path} (pid {inv.server_pid})")
        if inv.error:
            self.event("tmux.partial", f"tmux listed panes with problems: {inv.error}")

        live = self._bind_panes(inv, now)
        captured = self._capture_and_judge(live, inv, now)
        limited = tuple(sorted(name for name, (rec, _, _) in live.items() if rec.state == LIMITED))
        return PollSummary(True, True, len(inv.panes), len(live), captured, limited)

    # --- server-level states ------------------------------------------------

    def _server_sessions(self) -> list[SessionRecord]:
        """Live sessions of this supervisor's server (the store may hold other servers' too)."""
        socket = self._socket_path or expected_socket_path(self.server)
        return [r for r in self.store.list_sessions() if r.state != GONE and (socket is None or r.server_socket == socket)]

    def _server_unanswered(self, error: str | None) -> None:
        # Unanswered is not gone: sessions become unknown, and are kept bound.
        if self._server_state != "unanswered":
            self._server_state = "unanswered"
            self.event("tmux.unanswered", f"tmux did not answer: {error}; sessions are unknown until it does")
        self.watches.clear()  # nothing captured before the outage proves anything after it
        now = self.clock()
        for rec in self._server_sessions():
            if rec.state != UNKNOWN:
                self._save(rec, replace(rec, state=UNKNOWN, updated_at=now))

    def _server_down(self) -> None:
        if self._server_state != "down":
            first = self._server_state is None
            self._server_state = "down"
            self.event("tmux.down", "no tmux server is running; nothing to watch" + (" yet" if first else " now"))
        now = self.clock()
        for rec in self._server_sessions():
            self._mark_gone(rec, "its tmux server is not running", now)
        self.watches.clear()

    def _mark_gone(self, rec: SessionRecord, why: str, now: datetime, message: str | None = None) -> None:
        self._save(rec, replace(rec, state=GONE, agent_pid=None, updated_at=now))
        self.watches.pop(rec.name, None)
        self._awaiting_agent.discard(rec.name)
        self.store.clear_banner(rec.name)
        self.event("session.gone", message or f"pane {rec.pane_id} is gone: {why}", rec.name)

    # --- binding panes to sessions ------------------------------------------

    def _bind_panes(self, inv: tmux.Inventory, now: datetime) -> dict[str, tuple[SessionRecord, tmux.PaneInfo, Identity]]:
        records = {r.name: r for r in self.store.list_sessions()}
        bound = {r.pane_id: r for r in records.values() if r.state != GONE and r.server_socket == inv.socket_path}
        overrides = {n: o.command for n, o in self.config.agents.items() if o.command}
        live: dict[str, tuple[SessionRecord, tmux.PaneInfo, Identity]] = {}

        tree = identity.process_tree()
        for pane in inv.panes:
            procs = [] if pane.dead else identity.pane_processes(pane.pane_pid, tree)
            ident = identity.identify(procs, self.plugins.agents, overrides)
            rec = bound.pop(pane.pane_id, None)
            if rec is not None and rec.server_pid != inv.server_pid:
                # Pane ids restart at %0 on a new server: same id, unrelated pane.
                self._mark_gone(rec, f"the tmux server restarted (pid {rec.server_pid} → {inv.server_pid})", now)
                rec = None
            if rec is not None:
                rec = self._follow(rec, pane, ident, procs, now)
                if rec is None:
                    continue
                if rec.location != pane.location:
                    rec = self._save(rec, replace(rec, location=pane.location, updated_at=now))
            elif self._should_adopt(pane, ident):
                rec = self._adopt(pane, ident, inv, records, now)
                records[rec.name] = rec
            if rec is not None:
                live[rec.name] = (rec, pane, ident)

        for rec in bound.values():
            self._mark_gone(rec, "the pane was closed", now)
        return live

    def _should_adopt(self, pane: tmux.PaneInfo, ident: Identity) -> bool:
        return (
            self.config.watch_all_panes
            and ident.kind is IdentityKind.KNOWN
            and not is_ignored(pane.location, self.config.watch_ignore)
        )

    def _adopt(self, pane, ident: Identity, inv, records, now) -> SessionRecord:
        spec = self.plugins.agents[ident.agent]
        mission = identity.mission_from_argv(ident.argv, spec) or identity.mission_from_start_command(
            pane.start_command, spec
        )
        rec = SessionRecord(
            name=unique_name(pane.location, records),
            pane_id=pane.pane_id,
            server_socket=inv.socket_path,
            server_pid=inv.server_pid,
            agent=ident.agent,
            identity=IdentityKind.KNOWN.value,
            identity_source="process",
            state=IDLE,
            created_at=now,
            updated_at=now,
            mission=mission,
            worktree=pane.cwd or None,
            branch=git.branch_of(pane.cwd),
            agent_pid=ident.pid,
            agent_started_at=ident.create_time,
            location=pane.location,
        )
        self.store.upsert_session(rec)
        self.event(
            "session.adopted",
            f"adopted {ident.agent} in pane {pane.pane_id} ({pane.location})"
            + (f" with mission {mission!r}" if mission else " with no mission (none in its command line)"),
            rec.name,
        )
        return rec

    def _follow(self, rec: SessionRecord, pane, ident: Identity, procs, now) -> SessionRecord | None:
        """Keep a bound session on its pane; None when it had to be let go."""
        own_pid_alive = rec.agent_pid is not None and any(
            p.pid == rec.agent_pid and p.create_time == rec.agent_started_at and p.alive for p in procs
        )
        if own_pid_alive:
            # Same agent process as before (even if a child tool is in front of it now).
            return rec
        if (
            rec.identity_source == "user"
            and ident.kind is not IdentityKind.NONE
            and rec.agent_pid is None
            and rec.name in self._awaiting_agent
        ):
            # The user vouched for this pane's agent, and we saw it go: its successor is theirs too.
            self._awaiting_agent.discard(rec.name)
            return self._save(rec, replace(rec, agent_pid=ident.pid, agent_started_at=ident.create_time, state=IDLE, updated_at=now))
        if ident.kind is IdentityKind.NONE and rec.agent_pid is None and rec.name in self._awaiting_agent and not pane.dead:
            return rec  # created a moment ago; its agent has not started yet
        if ident.kind is IdentityKind.NONE or pane.dead:
            if rec.state != EXITED:
                self._awaiting_agent.add(rec.name)
                self.watches.pop(rec.name, None)
                self.store.clear_banner(rec.name)
                self.event("session.exited", f"the {rec.agent or 'agent'} process in pane {rec.pane_id} has exited", rec.name)
                return self._save(rec, replace(rec, state=EXITED, agent_pid=None, last_banner=None, updated_at=now))
            return rec
        if rec.agent_pid is None and rec.name in self._awaiting_agent and ident.kind is IdentityKind.KNOWN:
            # We saw the agent exit in this run (or created the session) and the pane runs one now.
            self._awaiting_agent.discard(rec.name)
            again = " again" if rec.state == EXITED else ""
            self.event("session.started", f"{ident.agent} started{again} in pane {rec.pane_id} (pid {ident.pid})", rec.name)
            return self._save(
                rec,
                replace(
                    rec,
                    agent=ident.agent,
                    identity=IdentityKind.KNOWN.value,
                    identity_source="process",
                    agent_pid=ident.pid,
                    agent_started_at=ident.create_time,
                    state=IDLE,
                    updated_at=now,
                ),
            )
        # A different process than the one this session was bound to: after a
        # restart of afd that is not provably the same agent, so let it go; a
        # known agent there is adopted afresh by the caller on the next poll.
        self._mark_gone(
            rec, "", now,
            message=f"let go of pane {rec.pane_id}: a different process now runs there, not provably this session's agent",
        )
        return None

    # --- capture, gates, limit map ----------------------------------------

    def _capture_and_judge(self, live, inv, now: datetime) -> int:
        self._crowded = crowded_dirs(
            (rec.agent, _process_cwd(rec.agent_pid) or rec.worktree) for rec, _, _ in live.values() if rec.state not in (EXITED, GONE)
        )
        mono = time.monotonic()
        wanted = []
        for name, (rec, pane, _ident) in live.items():
            if rec.state in (EXITED, GONE) or rec.agent not in self.plugins.agents:
                continue
            watch = self.watches.setdefault(name, PaneWatch(keep=self.config.stability_polls))
            watch.keep = self.config.stability_polls
            if watch.needs_capture(pane.fingerprint, mono):
                wanted.append(name)
        if not wanted:
            return 0
        results = tmux.capture_panes(self.server, [live[n][1].pane_id for n in wanted])
        patterns = compiled_limit_patterns(self.config)
        clock = Clock(now=now, local_zone=local_zone())
        for name in wanted:
            rec, pane, _ident = live[name]
            result = results.get(pane.pane_id)
            if result is None or result.presence is tmux.Presence.UNKNOWN:
                if rec.state != UNKNOWN:
                    self.event("pane.unanswered", f"capture of pane {pane.pane_id} got no answer: {result and result.error}", name)
                    live[name] = (self._save(rec, replace(rec, state=UNKNOWN, updated_at=now)), pane, _ident)
                continue
            if result.presence is tmux.Presence.GONE:
                self._mark_gone(rec, "the pane vanished during the poll", now)
                del live[name]
                continue
            if result.server_pid is not None and result.server_pid != inv.server_pid:
                continue  # the server restarted between list and capture: judge nothing
            rows = capture_rows(result.text or "")
            spec = self.plugins.agents[rec.agent]
            found = self.plugins.detect(rec.agent, rows, clock, patterns.get(rec.agent))
            idle = self.watches[name].record(rows, found, pane.fingerprint, mono, spec.chrome)
            live[name] = (self._judge(rec, name, idle, found, rows, spec, now), pane, _ident)
        return len(wanted)

    def _judge(self, rec: SessionRecord, name: str, idle: bool | None, found: Detection | None, rows, spec, now: datetime) -> SessionRecord:
        if found is None and rec.last_banner is not None:
            self.store.clear_banner(name)
        reset_at, first_seen_at = None, None
        if found is not None:
            key = occurrence_key(rows, found, spec.chrome)
            sighting = self.store.banner_first_seen(name, key)
            if sighting is None:
                # Parsed once, against the instant it was first seen; re-parsing a
                # static "in 3 hours" every poll would push the reset away forever.
                self.store.record_banner(name, key, now, found.reset_at)
                reset_at, first_seen_at = found.reset_at, now
            else:
                reset_at, first_seen_at = sighting.reset_at, sighting.first_seen_at

        if idle is None:
            return rec  # first look since afd started or the pane changed hands: nothing to compare yet
        if not idle:
            if found is None:
                self._observe_working(rec.agent, name, now)
            new = replace(rec, state=WORKING, last_banner=None if found is None else rec.last_banner, updated_at=now)
            if rec.state == LIMITED:
                self.event("session.working", "the pane is working again", name)
            return self._save(rec, new)

        watch = self.watches[name]
        verdict = judge(
            rec.agent,
            list(watch.captures),
            list(watch.detections),
            spec.chrome,
            tail_lines=self.config.tail_lines,
            stability_polls=self.config.stability_polls,
            contents=list(watch.contents),
        )
        record = self._ask_witness(rec, first_seen_at, now)
        combined = witness.combine(verdict.limited, reset_at, record, pane_idle=True)
        if combined.witnesses is witness.Witnesses.DISPUTED:
            return self._disputed(rec, name, found, first_seen_at, combined, now)
        if not combined.limited:
            new = replace(rec, state=IDLE, last_banner=None, reset_at=None, banner_first_seen_at=None, witnesses=None, updated_at=now)
            if rec.state == LIMITED:
                self.event("session.idle", f"no longer at a usage limit: {verdict.reason}", name)
            return self._save(rec, new)
        if combined.witnesses is witness.Witnesses.RECORD:
            # The records alone, on an idle pane: whatever text is on screen was
            # not judged a wall, and the wall's own instant marks the appearance.
            found, first_seen_at = None, record.at or rec.banner_first_seen_at or now
        reset_at = combined.reset_at
        banner = found.banner if found is not None else f"(no banner; {rec.agent}'s own records: {record.why})"

        # A limit is a new observation once per appearance of a banner, not once per poll.
        first_judged = rec.banner_first_seen_at != first_seen_at
        self._observe_limited(rec.agent, name, banner, reset_at, now, first_judged)
        new = replace(
            rec,
            state=LIMITED,
            last_banner=found.banner if found is not None else None,
            banner_first_seen_at=first_seen_at,
            reset_at=reset_at,
            witnesses=combined.witnesses.value,
            updated_at=now,
        )
        if first_judged:
            when = reset_at.strftime("%Y-%m-%dT%H:%M:%SZ") if reset_at else "no reset time stated"
            self.event(
                "session.limited", f"{rec.agent} is at its usage limit ({when}; witnessed by {combined.witnesses.value}): {banner}",
                name, witnesses=combined.witnesses.value,
            )
        elif rec.witnesses != new.witnesses:
            self.event("session.witnessed", f"{rec.agent}'s limit is now witnessed by {new.witnesses}", name, witnesses=new.witnesses)
        return self._save(rec, new)

    # --- the second witness: the agent's own records ------------------------

    def _ask_witness(self, rec: SessionRecord, banner_seen_at: datetime | None, now: datetime) -> WitnessVerdict | None:
        """The agent's own records' verdict for an idle pane, or None when no plugin reads them.

        Asked at most once a poll; the plugins re-read a file only when its
        size or mtime changed.
        """
        if rec.agent is None or not self.plugins.has_witness(rec.agent):
            return None
        start = datetime.fromtimestamp(rec.agent_started_at, timezone.utc) if rec.agent_started_at else None
        process = AgentProcess(pid=rec.agent_pid, cwd=_process_cwd(rec.agent_pid) or rec.worktree, start_time=start)
        if (rec.agent, process.cwd) in self._crowded:
            # Records are found by directory and recency: with two of them at
            # work in one directory, the newest file may be the other one's.
            return WitnessVerdict(WitnessState.UNKNOWN, f"another {rec.agent} session works in {process.cwd}; whose records are whose is unknown")
        since = start
        if since is None:
            # Whose process this is was the user's word: only what it wrote
            # since the banner appeared (a poll before it was first seen) counts.
            since = (banner_seen_at or now) - timedelta(seconds=self.config.poll_interval + 1)
        return self.plugins.witness(rec.agent, process, since, now)

    def _disputed(self, rec, name, found, first_seen_at, combined, now) -> SessionRecord:
        new = replace(
            rec, state=IDLE, last_banner=found.banner, reset_at=None, banner_first_seen_at=first_seen_at,
            witnesses=witness.Witnesses.DISPUTED.value, updated_at=now,
        )
        if rec.witnesses != new.witnesses or rec.banner_first_seen_at != first_seen_at:
            self.event("session.disputed", f"not limited: {combined.why}", name, banner=found.banner)
            fact = self._fact(rec.agent)
            if fact.state is limits.LimitState.LIMITED and fact.source_session == name:
                # The limit every session was told of came from this banner.
                self.store.save_limit(limits.unknown_fact(rec.agent))
                self.event("agent.unknown", f"{rec.agent} is unknown again: the limit seen in {name} is disputed by its own records", name)
        return self._save(rec, new)

    def _fact(self, agent: str) -> limits.LimitFact:
        return self.store.load_limits().get(agent) or limits.unknown_fact(agent)

    def _store_fact(self, old: limits.LimitFact, new: limits.LimitFact, session: str | None) -> None:
        if new == old:
            return
        self.store.save_limit(new)
        if new.state != old.state:
            if new.state is limits.LimitState.LIMITED:
                when = new.reset_at.strftime("%Y-%m-%dT%H:%M:%SZ") if new.reset_at else "no reset time stated"
                msg = f"{new.agent} is limited for every session ({when}), seen in {new.source_session}"
            elif new.state is limits.LimitState.AVAILABLE:
                msg = f"{new.agent} is available: seen working without a banner in {new.source_session}"
            elif old.state is limits.LimitState.AVAILABLE:
                msg = f"{new.agent} is unknown again: not seen working for {AVAILABLE_FOR}"
            else:
                msg = f"{new.agent} is unknown again: its limit's reset time has passed"
            self.event(f"agent.{new.state.value}", msg, session)

    def _observe_working(self, agent: str, session: str, now: datetime) -> None:
        old = self._fact(agent)
        self._store_fact(old, limits.observe_working(old, at=now, session=session), session)

    def _observe_limited(self, agent, session, banner, reset_at, now, first_seen) -> None:
        old = self._fact(agent)
        new = limits.observe_limited(old, reset_at=reset_at, at=now, session=session, banner=banner, first_seen=first_seen)
        self._store_fact(old, new, session)

    def _expire_limits(self, now: datetime) -> None:
        for fact in self.store.load_limits().values():
            self._store_fact(fact, limits.expire(fact, now, available_for=AVAILABLE_FOR), fact.source_session)


def crowded_dirs(pairs) -> frozenset[tuple[str | None, str]]:
    """The (agent, directory) pairs given more than once."""
    seen: set = set()
    crowded = set()
    for pair in pairs:
        if pair[1]:
            (crowded if pair in seen else seen).add(pair)
    return frozenset(crowded)


def _process_cwd(pid: int | None) -> str | None:
    """The agent's own working directory (where its records are filed), or None when it cannot be read."""
    if pid is None:
        return None
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None


def expected_socket_path(server: tmux.ServerRef) -> str | None:
    """Where tmux puts this server's socket, for when the server cannot be asked."""
    if server.socket_path:
        return os.path.abspath(server.socket_path)
    base = os.environ.get("TMUX_TMPDIR") or "/tmp"
    return os.path.join(base, f"tmux-{os.getuid()}", server.socket_name or "default")
