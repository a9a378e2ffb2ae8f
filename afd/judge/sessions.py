"""How a session moves between states: one pure function of what a poll saw or an action did.

`transition(record, observation, now)` is the whole rulebook, and the only
writer of a session's state: every field of its record but the mission a
person sets. The poll gathers the facts of one look (tmux, psutil, a capture
and its gates) and hands each session's share of them here as one
observation; an action says what it did (a plan shown, a swap begun or
settled, an agent started) as one too, which the engine commits with the
action's journal row. What comes out is written back: the new record, the
events to tell, the limit map sightings, and the housekeeping (forget the
banner, forget the watch). Nothing here does I/O or reads a clock, so every
rule is table-tested without tmux.

To add a state: add it to `SessionState`, add the observation that moves a
session into or out of it, and give that observation a function in `_RULES`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from afd.judge.accounts import UNKNOWN as UNKNOWN_ACCOUNT
from afd.judge.gates import Verdict, is_chrome
from afd.judge.witness import Combined, combine
from afd.model import Detection, Identity, IdentityKind, IdentitySource, SessionState, WitnessState, WitnessVerdict
from afd.record.types import BannerSighting, NextAction, SessionRecord, Witnesses

# A created session's pane may run a launcher (`env`, a pyenv shim, a
# post-checkout hook's child) for a while before the agent itself appears.
# Past this, afd stops waiting and says so.
AGENT_START_GRACE = timedelta(minutes=2)

S = SessionState


# --- what one poll saw, per session -----------------------------------------


@dataclass(frozen=True, slots=True)
class PaneSeen:
    """The session's pane is listed by its server, with the processes in it."""

    identity: Identity
    own_agent_alive: bool  # the very process the record is bound to (pid and start time) still runs there
    dead: bool  # a dead pane kept by remain-on-exit
    location: str
    # The account the identified process runs on (afd.judge.accounts), told
    # from the environment read when its identity was established.
    account: str | None = None


@dataclass(frozen=True, slots=True)
class PaneClosed:
    """The pane is not there any more: closed, vanished mid-poll, or its server stopped."""

    why: str


@dataclass(frozen=True, slots=True)
class ServerReplaced:
    """The tmux server restarted: the pane id now names an unrelated pane."""

    old_pid: int | None
    new_pid: int | None


@dataclass(frozen=True, slots=True)
class ServerNamed:
    """The server a session was recorded on while tmux could not say its pid has answered: this is its pid."""

    pid: int | None


@dataclass(frozen=True, slots=True)
class ServerUnanswered:
    """tmux did not answer at all: nothing is known about any pane."""


@dataclass(frozen=True, slots=True)
class CaptureUnanswered:
    """The pane was listed, but its capture got no answer."""

    error: str | None


@dataclass(frozen=True, slots=True)
class Looked:
    """A fresh capture of the session's pane and what the detectors and gates made of it."""

    idle: bool | None  # unchanged since the last capture; None for a first look
    found: Detection | None
    sighting: BannerSighting | None  # with `found`
    verdict: Verdict | None  # the gates' judgement, given when `idle`
    busy: bool  # a busy marker row of the agent's spec in the tail
    # The agent's own records, asked when `idle` (None: no witness plugin for the agent).
    record: WitnessVerdict | None = None


# --- what an action did, per session (committed by the engine with the action's journal row) -------


@dataclass(frozen=True, slots=True)
class Planned:
    """The session's next action, as policy decided it or as an action in progress shows it (None: none)."""

    plan: NextAction | None


@dataclass(frozen=True, slots=True)
class AgentStarted:
    """afd started the session's agent in its pane (a resume of an exited agent, a handoff rolled back onto it),
    the process it followed there confirmed gone."""


@dataclass(frozen=True, slots=True)
class ContinuationTaken:
    """The agent took afd's continuation at `at` (a confirmed resume): the wall it stood at is over."""

    at: datetime


@dataclass(frozen=True, slots=True)
class AllLimited:
    """Limited, and every account of handoff_order is too: the loop guard stops here, with this plan."""

    plan: NextAction


@dataclass(frozen=True, slots=True)
class HandoffBegun:
    """A swap owns the session's pane from now until it settles."""

    plan: NextAction


@dataclass(frozen=True, slots=True)
class HandoffSettled:
    """The swap settled: the target agent runs in the pane, on its account."""

    agent: str
    account: str
    pid: int | None
    started_at: float | None
    walled: Detection | None = None  # the target showed its own wall as it started
    brief_pending: NextAction | None = None  # the brief waits for the target to take it


@dataclass(frozen=True, slots=True)
class HandoffRolledBack:
    """The swap stopped short: the session is as it was, its old agent started again when it had stopped."""

    prior_state: SessionState
    restarted: bool


Observation = (
    PaneSeen | PaneClosed | ServerNamed | ServerReplaced | ServerUnanswered | CaptureUnanswered | Looked
    | Planned | AgentStarted | ContinuationTaken | AllLimited | HandoffBegun | HandoffSettled | HandoffRolledBack
)


# --- what comes out -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Note:
    """An event to tell, for the session the transition is about."""

    kind: str
    message: str


@dataclass(frozen=True, slots=True)
class SeenWorking:
    """Limit-map evidence: the agent was busy on a request, with no banner."""

    agent: str
    session: str
    account: str  # whose plan the evidence is about


@dataclass(frozen=True, slots=True)
class SeenLimited:
    agent: str
    session: str
    account: str
    banner: str
    reset_at: datetime | None
    first_seen: bool  # a new appearance, not the same banner still on screen
    # When the evidence appeared: the banner's first sighting, or the rejection's record (None: not known).
    seen_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class SeenDisputed:
    """The agent's own records contradict this session's banner: a limit it set no longer stands."""

    agent: str
    session: str
    account: str


Sighting = SeenWorking | SeenLimited | SeenDisputed


@dataclass(frozen=True, slots=True)
class Transition:
    record: SessionRecord
    notes: tuple[Note, ...] = ()
    sightings: tuple[Sighting, ...] = ()
    clear_banner: bool = False  # the stored first-seen of its banner no longer applies
    forget_watch: bool = False  # captures from before prove nothing after this


# --- the rules ----------------------------------------------------------------


def transition(record: SessionRecord, observation: Observation, now: datetime) -> Transition:
    """The session after `observation`, seen at `now`."""
    return _RULES[type(observation)](record, observation, now)


def adopted(
    *,
    name: str,
    pane_id: str,
    server_socket: str,
    server_pid: int | None,
    identity: Identity,
    mission: str | None,
    worktree: str | None,
    branch: str | None,
    location: str,
    now: datetime,
    vouched_agent: str | None = None,
    account: str | None = None,
) -> Transition:
    """A pane no session holds becomes a session: a known agent found in it, or one the user vouched for.

    `vouched_agent` is the user's word (`sessions adopt --agent`) for a pane
    whose agent afd could not establish: the identity then stays unknown,
    with the user as its source, never shown as afd's finding.
    """
    vouched = vouched_agent is not None and identity.kind is not IdentityKind.KNOWN
    agent = vouched_agent if vouched else identity.agent
    rec = SessionRecord(
        name=name,
        pane_id=pane_id,
        server_socket=server_socket,
        server_pid=server_pid,
        agent=agent,
        identity=IdentityKind.UNKNOWN if vouched else IdentityKind.KNOWN,
        identity_source=IdentitySource.USER if vouched else IdentitySource.PROCESS,
        state=S.IDLE,
        created_at=now,
        updated_at=now,
        mission=mission,
        worktree=worktree,
        branch=branch,
        agent_pid=identity.pid if identity.kind is not IdentityKind.NONE else None,
        agent_started_at=identity.create_time if identity.kind is not IdentityKind.NONE else None,
        location=location,
        account=account,
    )
    what = f" with mission {mission!r}" if mission else " with no mission (none in its command line)"
    word = " (identity on the user's word)" if vouched else ""
    on = f" on account {account}" if account and account != agent else ""
    return Transition(rec, (Note("session.adopted", f"adopted {agent}{on} in pane {pane_id} ({location}){what}{word}"),))


def created(
    *,
    name: str,
    pane_id: str,
    server_socket: str,
    server_pid: int | None,
    agent: str | None,
    mission: str | None,
    worktree: str,
    branch: str,
    location: str | None,
    now: datetime,
) -> Transition:
    """The session of a pane `sessions create` started: its agent is awaited from `now` (a launcher may stand in front)."""
    rec = SessionRecord(
        name=name, pane_id=pane_id, server_socket=server_socket, server_pid=server_pid, agent=agent,
        identity=IdentityKind.UNKNOWN, identity_source=IdentitySource.PROCESS, state=S.IDLE,
        created_at=now, updated_at=now, mission=mission, worktree=worktree, branch=branch, location=location,
        awaiting_since=now,
    )
    return Transition(rec)


def seen_busy(rows: Sequence[str], busy: Sequence[re.Pattern[str]], chrome: Sequence[re.Pattern[str]], tail_lines: int) -> bool:
    """Whether a busy marker shows among the last `tail_lines` printed rows.

    Only the tail: a spinner row quoted higher up in the transcript, or
    left in scrollback, is not the agent busy now.
    """
    if not busy:
        return False
    # From the bottom up, stopping at the tail: testing every row for chrome
    # was a quarter of a busy poll's CPU.
    printed: list[str] = []
    for r in reversed(rows):
        if len(printed) >= tail_lines:
            break
        if r.strip() and not is_chrome(r, chrome):
            printed.append(r)
    return any(p.search(r) for r in printed for p in busy)


def _changed(old: SessionRecord, new: SessionRecord, now: datetime) -> SessionRecord:
    """`new` stamped with `now` when it differs from `old`; `old` itself otherwise."""
    return old if new == old else replace(new, updated_at=now)


def _exited(rec: SessionRecord, now: datetime, why: str) -> Transition:
    new = replace(rec, state=S.EXITED, agent_pid=None, agent_started_at=None, last_banner=None,
                  banner_first_seen_at=None, reset_at=None, awaiting_since=None)
    # Only an agent afd was following can be said to have exited; after a
    # tmux outage an exited session is merely confirmed, not exited again.
    notes = (Note("session.exited", why),) if rec.agent_pid is not None else ()
    return Transition(_changed(rec, new, now), notes, clear_banner=True, forget_watch=True)


def _started(rec: SessionRecord, seen: PaneSeen, now: datetime, message: str) -> Transition:
    ident = seen.identity
    source = IdentitySource.PROCESS if ident.kind is IdentityKind.KNOWN else IdentitySource.USER
    new = replace(
        rec,
        account=seen.account,
        agent=ident.agent or rec.agent,
        identity=ident.kind if ident.kind is IdentityKind.KNOWN else IdentityKind.UNKNOWN,
        identity_source=source,
        agent_pid=ident.pid,
        agent_started_at=ident.create_time,
        state=S.IDLE,
        last_banner=None,
        banner_first_seen_at=None,
        reset_at=None,
        awaiting_since=None,
    )
    return Transition(replace(new, updated_at=now), (Note("session.started", message),), clear_banner=True, forget_watch=True)


def _on_pane_seen(rec: SessionRecord, seen: PaneSeen, now: datetime) -> Transition:
    if rec.location != seen.location:
        rec = replace(rec, location=seen.location, updated_at=now)
    ident = seen.identity
    if seen.own_agent_alive and not seen.dead:
        # The same agent process as before, even with a child tool in front of it.
        if ident.pid == rec.agent_pid and seen.account != rec.account:
            # Told again: a reload named its directory, or a store from before accounts.
            rec = replace(rec, account=seen.account, updated_at=now)
        if rec.awaiting_since is not None:
            rec = replace(rec, awaiting_since=None, updated_at=now)  # the agent it waited for is the one it follows
        return Transition(rec)

    if rec.awaiting_since is not None:
        if ident.kind is IdentityKind.KNOWN and not seen.dead:
            return _started(rec, seen, now, f"{ident.agent} started in pane {rec.pane_id} (pid {ident.pid})")
        if seen.dead:
            return _exited(rec, now, f"the agent afd started in pane {rec.pane_id} exited before afd saw it run")
        if now - rec.awaiting_since >= AGENT_START_GRACE:
            why = (f"no agent appeared in pane {rec.pane_id} within {AGENT_START_GRACE} of its start "
                   f"({ident.reason}); afd stopped waiting for it")
            return replace(_exited(rec, now, why), notes=(Note("session.exited", why),))
        return Transition(rec)  # a launcher (env, a shim) still stands in front of the agent

    if ident.kind is IdentityKind.NONE or seen.dead:
        if rec.state is S.EXITED:
            return Transition(rec)
        return _exited(rec, now, f"the {rec.agent or 'agent'} process in pane {rec.pane_id} has exited")

    if ident.kind is IdentityKind.KNOWN:
        # The pane is the session: whatever agent runs in it next carries on
        # its mission, worktree and branch under the same name.
        if rec.state is S.EXITED:
            message = f"{ident.agent} started again in pane {rec.pane_id} (pid {ident.pid})"
        else:
            # Its agent ended unseen (between two polls, or while afd was not running).
            message = (f"{ident.agent} started again in pane {rec.pane_id} (pid {ident.pid}); the process afd "
                       f"followed before (pid {rec.agent_pid}) is gone")
        return _started(rec, seen, now, message)

    # UNKNOWN: something that is not provably an agent (`less`, a wrapper).
    if rec.identity_source is IdentitySource.USER and rec.state is S.EXITED:
        # The user vouched for this pane's agent and afd saw it go: its successor is theirs too.
        return _started(rec, seen, now, f"{rec.agent} started again in pane {rec.pane_id} (pid {ident.pid}), "
                                         "on the user's word")
    return _exited(rec, now, f"the {rec.agent or 'agent'} process in pane {rec.pane_id} has exited; "
                             f"{ident.reason}")


def _gone(rec: SessionRecord, message: str, now: datetime) -> Transition:
    if rec.state is S.GONE:
        return Transition(rec)
    new = replace(rec, state=S.GONE, agent_pid=None, awaiting_since=None, updated_at=now)
    return Transition(new, (Note("session.gone", message),), clear_banner=True, forget_watch=True)


def _on_pane_closed(rec: SessionRecord, closed: PaneClosed, now: datetime) -> Transition:
    return _gone(rec, f"pane {rec.pane_id} is gone: {closed.why}", now)


def _on_server_replaced(rec: SessionRecord, obs: ServerReplaced, now: datetime) -> Transition:
    return _gone(rec, f"let go of pane {rec.pane_id}: the tmux server restarted (pid {obs.old_pid} → {obs.new_pid}), "
                      "so that id names another pane now", now)


def _on_server_named(rec: SessionRecord, obs: ServerNamed, now: datetime) -> Transition:
    if rec.server_pid is not None:
        return Transition(rec)  # named once; another pid is a replaced server, not a first answer
    return Transition(_changed(rec, replace(rec, server_pid=obs.pid), now))


def _on_server_unanswered(rec: SessionRecord, obs: ServerUnanswered, now: datetime) -> Transition:
    # Unanswered is not gone: the session stays bound and becomes unknown.
    if rec.state in (S.UNKNOWN, S.GONE):
        return Transition(rec)
    return Transition(replace(rec, state=S.UNKNOWN, updated_at=now), forget_watch=True)


def _on_capture_unanswered(rec: SessionRecord, obs: CaptureUnanswered, now: datetime) -> Transition:
    if rec.state is S.UNKNOWN:
        return Transition(rec)
    return Transition(replace(rec, state=S.UNKNOWN, updated_at=now),
                      (Note("pane.unanswered", f"capture of pane {rec.pane_id} got no answer: {obs.error}"),))


def after_continuation(rec: SessionRecord, at: datetime | None) -> bool:
    """Whether evidence of a wall dated `at` was drawn after the agent last took afd's continuation.

    A banner first seen, or a rejection recorded, at or before that instant is
    the wall the continuation answered: history, not a wall now (None: undated, so not after).
    """
    return rec.continued_at is None or (at is not None and at > rec.continued_at)


def _on_looked(rec: SessionRecord, look: Looked, now: datetime) -> Transition:
    clear = look.found is None and rec.last_banner is not None
    answered = look.found is not None and (look.sighting is None or not after_continuation(rec, look.sighting.first_seen_at))
    if answered:
        # The banner above the continuation the agent took: no wall now. Its stored sighting stays
        # (not cleared), so it is not taken for a new appearance on the next look either.
        look = replace(look, found=None, sighting=None, verdict=None)
    record = look.record
    if record is not None and record.state is WitnessState.LIMITED and not after_continuation(rec, record.at):
        look = replace(look, record=replace(record, state=WitnessState.UNKNOWN,
                                            why="its latest usage-limit rejection is older than the continuation it took"))
    found = look.found
    # Only a request seen going through says the plan has room: a re-wrap, a
    # child tool's output or a retrying spinner changes the screen just as well.
    # The limit map is per account: a pane whose agent or account is not named tells it nothing.
    account = _named_account(rec)
    sightings: tuple[Sighting, ...] = (
        (SeenWorking(rec.agent, rec.name, account),) if look.busy and found is None and rec.agent and account else ()
    )
    if look.idle is None:
        # First look since afd started or the pane changed hands: nothing to compare yet.
        return Transition(rec, sightings=sightings, clear_banner=clear)

    if not look.idle:
        new = replace(rec, state=S.WORKING, last_banner=None if found is None else rec.last_banner, witnesses=None)
        notes = (Note("session.working", "the pane is working again"),) if rec.state is S.LIMITED else ()
        return Transition(_changed(rec, new, now), notes, sightings, clear_banner=clear)

    verdict = look.verdict
    pane_limited = verdict is not None and verdict.limited and found is not None and look.sighting is not None
    # A busy marker in the tail of a still pane (a spinner that stands still) is the agent at work: its
    # records alone do not call it stalled.
    combined = combine(pane_limited, look.sighting.reset_at if look.sighting and pane_limited else None, look.record,
                       pane_idle=not look.busy)
    if combined.witnesses is Witnesses.DISPUTED:
        return _disputed(rec, look, combined, now, sightings)
    if not combined.limited:
        new = replace(rec, state=S.IDLE, last_banner=None, reset_at=None, banner_first_seen_at=None, witnesses=None)
        reason = verdict.reason if verdict is not None else "no verdict"
        if answered:
            reason = "the agent took afd's continuation, and no wall was drawn after it"
        notes = (Note("session.idle", f"no longer at a usage limit: {reason}"),) if rec.state is S.LIMITED else ()
        return Transition(_changed(rec, new, now), notes, sightings, clear_banner=clear)

    # combine() says limited only with a witness, and PANE or BOTH only when pane_limited (a banner and its sighting).
    assert combined.witnesses is not None
    if combined.witnesses is Witnesses.RECORD:
        assert look.record is not None
        # The records alone, on an idle pane: whatever text is on screen was
        # not judged a wall, and the wall's own instant marks the appearance.
        shown, first_seen = None, look.record.at or rec.banner_first_seen_at or now
        banner = f"(no banner; {rec.agent}'s own records: {look.record.why})"
    else:
        assert found is not None and look.sighting is not None
        shown, first_seen, banner = found.banner, look.sighting.first_seen_at, found.banner
    # A limit is a new observation once per appearance of a banner, not once per poll.
    first = rec.banner_first_seen_at != first_seen
    reset_at = combined.reset_at
    # "All agents limited" (the handoff loop guard's stop) is a kind of limited that stays until the wall goes.
    state = S.ALL_LIMITED if rec.state == S.ALL_LIMITED else S.LIMITED
    new = replace(rec, state=state, last_banner=shown, banner_first_seen_at=first_seen, reset_at=reset_at,
                  witnesses=combined.witnesses)
    notes = ()
    if first:
        when = reset_at.strftime("%Y-%m-%dT%H:%M:%SZ") if reset_at else "no reset time stated"
        notes = (Note("session.limited", f"{rec.agent} is at its usage limit ({when}; witnessed by "
                                         f"{combined.witnesses.value}): {banner}"),)
    elif rec.witnesses is not None and rec.witnesses != new.witnesses:
        notes = (Note("session.witnessed", f"{rec.agent}'s limit is now witnessed by {new.witnesses}"),)
    seen = (SeenLimited(rec.agent, rec.name, account, banner, reset_at, first, first_seen),) if rec.agent and account else ()
    return Transition(_changed(rec, new, now), notes, seen)


def _named_account(rec: SessionRecord) -> str | None:
    """The account whose limit map entry this session's sightings are about; None when it cannot be named."""
    if rec.account is None or rec.account == UNKNOWN_ACCOUNT:
        return None
    return rec.account


def _disputed(rec: SessionRecord, look: Looked, combined: Combined, now: datetime, sightings) -> Transition:
    """A banner the gates call a wall, which the agent's own records contradict: not limited."""
    assert look.found is not None and look.sighting is not None  # a dispute is about a banner on screen
    first_seen = look.sighting.first_seen_at
    new = replace(rec, state=S.IDLE, last_banner=look.found.banner, reset_at=None, banner_first_seen_at=first_seen,
                  witnesses=Witnesses.DISPUTED)
    if rec.witnesses == new.witnesses and rec.banner_first_seen_at == first_seen:
        return Transition(_changed(rec, new, now), (), sightings)
    note = Note("session.disputed", f"not limited: {combined.why}")
    account = _named_account(rec)
    disputed = (SeenDisputed(rec.agent, rec.name, account),) if rec.agent and account else ()
    return Transition(_changed(rec, new, now), (note,), (*sightings, *disputed))


def _on_planned(rec: SessionRecord, obs: Planned, now: datetime) -> Transition:
    return Transition(_changed(rec, replace(rec, next_action=obs.plan), now))


def _on_agent_started(rec: SessionRecord, obs: AgentStarted, now: datetime) -> Transition:
    new = replace(rec, agent_pid=None, agent_started_at=None, awaiting_since=now)
    return Transition(_changed(rec, new, now), forget_watch=True)


def _on_continuation_taken(rec: SessionRecord, obs: ContinuationTaken, now: datetime) -> Transition:
    # Evidence of a wall from before it (a banner above the continuation, a rejection record) is history;
    # captures from before the paste prove nothing after it.
    return Transition(_changed(rec, replace(rec, continued_at=obs.at), now), forget_watch=True)


def _on_all_limited(rec: SessionRecord, obs: AllLimited, now: datetime) -> Transition:
    return Transition(_changed(rec, replace(rec, state=S.ALL_LIMITED, next_action=obs.plan), now))


def _on_handoff_begun(rec: SessionRecord, obs: HandoffBegun, now: datetime) -> Transition:
    return Transition(_changed(rec, replace(rec, state=S.HANDING_OFF, next_action=obs.plan), now))


def _on_handoff_settled(rec: SessionRecord, obs: HandoffSettled, now: datetime) -> Transition:
    walled = obs.walled
    new = replace(
        rec, agent=obs.agent, account=obs.account, identity=IdentityKind.KNOWN, identity_source=IdentitySource.PROCESS,
        agent_pid=obs.pid, agent_started_at=obs.started_at, state=S.LIMITED if walled is not None else S.IDLE,
        next_action=obs.brief_pending, last_banner=walled.banner if walled is not None else None,
        reset_at=walled.reset_at if walled is not None else None, banner_first_seen_at=None, witnesses=None,
        awaiting_since=None,
    )
    return Transition(_changed(rec, new, now), clear_banner=True, forget_watch=True)


def _on_handoff_rolled_back(rec: SessionRecord, obs: HandoffRolledBack, now: datetime) -> Transition:
    new = replace(rec, state=obs.prior_state, next_action=None)
    if obs.restarted:
        new = replace(new, agent_pid=None, agent_started_at=None, awaiting_since=now)
    return Transition(_changed(rec, new, now), forget_watch=True)


# Any: each rule takes the one observation type it is filed under.
_RULES: dict[type, Callable[[SessionRecord, Any, datetime], Transition]] = {
    PaneSeen: _on_pane_seen,
    PaneClosed: _on_pane_closed,
    ServerNamed: _on_server_named,
    ServerReplaced: _on_server_replaced,
    ServerUnanswered: _on_server_unanswered,
    CaptureUnanswered: _on_capture_unanswered,
    Looked: _on_looked,
    Planned: _on_planned,
    AgentStarted: _on_agent_started,
    ContinuationTaken: _on_continuation_taken,
    AllLimited: _on_all_limited,
    HandoffBegun: _on_handoff_begun,
    HandoffSettled: _on_handoff_settled,
    HandoffRolledBack: _on_handoff_rolled_back,
}
