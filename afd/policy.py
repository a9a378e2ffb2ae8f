"""Pure decisions about acting on a limit: facts in, a decision out. No I/O, no clock.

# --- handoff -------------------------------------------------------------------

Which agent a limited session is handed to, and every reason a handoff is
refused before anything is touched (seed §2, §5.2, §8). The shell gathers
the facts (`HandoffFacts`); these functions only read them, so each rule is
a row in a table test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from afd.limits import LimitFact, LimitState

# The ping-pong bound counts handoffs over this window.
HANDOFF_WINDOW = timedelta(hours=24)


@dataclass(frozen=True, slots=True)
class Candidate:
    agent: str
    unverified: bool  # its limit state is unknown: tried, never reported as available


@dataclass(frozen=True, slots=True)
class NoCandidate:
    """Every agent of the order is the outgoing one or known-limited: the loop guard's stop."""

    earliest_reset: datetime | None  # among the limited ones; None when none states a reset


def choose_target(order: Sequence[str], outgoing: str | None, facts: Mapping[str, LimitFact]) -> Candidate | NoCandidate:
    """The first agent of `order` that is not the outgoing one and not known-limited.

    One pass, no round-robin: the order is the user's ranking of who may
    edit their code, and an agent afd cannot vouch for (`unknown`) is tried
    rather than skipped, but marked unverified.
    """
    resets: list[datetime] = []
    for agent in order:
        if agent == outgoing:
            continue
        fact = facts.get(agent)
        state = fact.state if fact is not None else LimitState.UNKNOWN
        if state is LimitState.LIMITED:
            if fact.reset_at is not None:
                resets.append(fact.reset_at)
            continue
        return Candidate(agent, unverified=state is not LimitState.AVAILABLE)
    outgoing_fact = facts.get(outgoing) if outgoing else None
    if outgoing_fact is not None and outgoing_fact.state is LimitState.LIMITED and outgoing_fact.reset_at:
        resets.append(outgoing_fact.reset_at)
    return NoCandidate(min(resets) if resets else None)


@dataclass(frozen=True, slots=True)
class HandoffFacts:
    """What the shell found out about a session and a target, just before a swap."""

    session_state: str
    outgoing: str | None  # the session's agent
    identity: str  # "known" | "unknown" | "none"
    identity_source: str  # "process" | "user"
    mission: str | None
    pane_present: bool | None  # None: tmux did not answer
    action_in_progress: str | None  # the pending action's name, if any
    is_work_tree: bool
    cwd_inside_worktree: bool
    handoffs_at: tuple[datetime, ...]  # the ledger's swap instants for this session
    target_known: bool  # some plugin provides the target agent
    target_command: str | None  # None: the launch command was not found (preflight)
    target_fact: LimitFact | None
    now: datetime
    max_per_session: int
    turn_ended: bool = True  # for an outgoing agent whose work outlives its TUI (codex): is its turn over?


def _when(at: datetime | None) -> str:
    return at.strftime("%Y-%m-%d %H:%M UTC") if at else "at a time it did not state"


def handoff_refusal(f: HandoffFacts, target: str, *, brief: str | None, force: bool, automatic: bool) -> str | None:
    """Why this handoff must not start (one line), or None when it may."""
    if not f.target_known:
        return f"{target!r} is not an agent any plugin provides"
    if f.pane_present is None:
        return "tmux did not answer about the session's pane; try again"
    if not f.pane_present or f.session_state == "gone":
        return "the session's pane is gone"
    if f.action_in_progress:
        return f"the session has an action in progress ({f.action_in_progress}); wait for it to settle"
    if f.identity != "known":
        # Unknown never passes a same-agent check: it could be the target itself.
        vouched = " (its agent is only vouched for by the user)" if f.identity_source == "user" else ""
        return f"afd cannot tell which agent runs in the pane{vouched}, so it cannot rule out handing it to itself"
    if automatic and f.identity_source != "process":
        return "its agent was vouched for with `adopt --agent`, and such a pane is never handed off automatically"
    if f.outgoing == target:
        return f"{target} is the agent running there now"
    if not (brief or "").strip() and not (f.mission or "").strip():
        if automatic:
            return "the session has no mission, and a new agent sent nowhere with no goal has nothing to go on"
        return "the session has no mission; give the new agent its goal with --brief TEXT"
    if not f.is_work_tree:
        return "the session's worktree is not a git work tree"
    if not f.cwd_inside_worktree:
        return "the pane's working directory is not inside the session's worktree"
    if f.target_command is None:
        return f"{target}'s command was not found on the pane's PATH"
    fact = f.target_fact
    if fact is not None and fact.state is LimitState.LIMITED and not force:
        hint = "" if automatic else "; --force hands off anyway"
        return f"{target} is at its usage limit until {_when(fact.reset_at)}{hint}"
    recent = [at for at in f.handoffs_at if f.now - at < HANDOFF_WINDOW]
    if len(recent) >= f.max_per_session:
        return (
            f"the session was handed off {len(recent)} times in the last 24 hours "
            f"(handoff_max_per_session = {f.max_per_session})"
        )
    if not f.turn_ended:
        return f"{f.outgoing} is still in a turn (its work would go on after its window closes); hand off when it has ended"
    return None
