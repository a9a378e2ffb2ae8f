"""What to do about a session at its limit: pure, decided from facts handed in.

`decide_wait` answers for `limit_action = "wait"`: resume at a time, resume
now, nothing (report only), or a human is needed. The handoff decisions
(`Handoff`, `Park`) are types here so every action speaks one language;
their logic lives with the handoff policy. Nothing in this module touches
tmux, the store or the clock: the caller hands in `now`.

Why `limit_action` and `limit_auto_resume` are two keys: one says what to
do, the other whether to do it unattended; "wait, but only when I am
watching" must stay expressible (seed §2.1).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from afd.judge.accounts import UNKNOWN as UNKNOWN_ACCOUNT
from afd.judge.screen import Native
from afd.model import IdentityKind, IdentitySource, SessionState, person_must_act
from afd.record.types import LimitFact, LimitState, Pause, ResumeHistory

# A limit seen again within this long after a continuation was not lifted
# by it: the continuation counts against the same episode and backs off.
RELIMIT_WINDOW = timedelta(minutes=1)
BACKOFF_FIRST = timedelta(seconds=30)
BACKOFF_CAP = timedelta(minutes=30)
# Claude's own auto-continue fires 30–90 s after the reset it shows.
NATIVE_JITTER = timedelta(seconds=90)


@dataclass(frozen=True, slots=True)
class Limit:
    """The limit a session stands at, as the gates and the store know it."""

    kind: str  # the detection's family, e.g. "claude.session-limit", "codex.spend-cap"
    episode: str  # the banner's occurrence key: one appearance of one banner
    first_seen_at: datetime
    reset_at: datetime | None
    native: Native = Native.NONE
    native_at: datetime | None = None  # when the agent's own auto-continue fires
    # What the wall said beside its reset, as the detection read it (`afd.model.Detection`).
    reset_unstated: bool = False
    offers_other_model: bool = False
    # False: the agent's own records say it is walled, but the pane shows no wall (it is unclear).
    on_screen: bool = True

    @property
    def needs_human(self) -> bool:
        """The same rule as the detection's: only a wall with no reset and no other model waits for a person."""
        return person_must_act(self.reset_at, reset_unstated=self.reset_unstated, offers_other_model=self.offers_other_model)

    @property
    def nothing_to_wait_for(self) -> bool:
        """A wall with no reset that offers another model: waiting lifts nothing, switching is the user's call."""
        return self.offers_other_model and self.reset_at is None and not self.reset_unstated


# --- decisions ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ResumeAt:
    at: datetime
    attempt: int
    why: str  # "reset" | "retry" | "backoff" | "auto-continue"


@dataclass(frozen=True, slots=True)
class ResumeNow:
    attempt: int
    why: str


@dataclass(frozen=True, slots=True)
class Nothing:
    """Report only: `next_action` is what a person can do (or None when there is nothing to say).

    `why` is the reason as a code (`WAITS_FOR_YOU` holds those that leave the wall to a person).
    """

    next_action: str | None
    at: datetime | None = None  # the reset to show beside it
    why: str = ""


# Reasons afd reports a wall and does nothing about it, leaving the next step to a person
# (`session.waiting`). Not among them: the agent's own auto-continue (it acts), a cancel (the
# person's own act).
WAITS_FOR_YOU = frozenset({"report", "other-model", "records-only", "unplanned"})


@dataclass(frozen=True, slots=True)
class NeedsHuman:
    why: str  # short, after "needs you: "


@dataclass(frozen=True, slots=True)
class Refuse:
    why: str  # one sentence for the user


@dataclass(frozen=True, slots=True)
class Handoff:
    to: str
    unverified: bool  # the target's limit is unknown, not known available
    why: str = ""


@dataclass(frozen=True, slots=True)
class Park:
    all_limited: bool
    until: datetime | None
    why: str = ""


@dataclass(frozen=True, slots=True)
class Held:
    """An automatic action a pause holds back: what afd would do (`held`), and until when the pause lasts."""

    held: ResumeAt | ResumeNow | Handoff | None  # None: the automatic handoff not yet chosen
    until: datetime | None  # None: until the person unpauses it
    why: str


Decision = ResumeAt | ResumeNow | Nothing | NeedsHuman | Refuse | Handoff | Park | Held


# Words for status only; whether a person is needed is `Limit.needs_human`, never the kind.
_HUMAN_WHY = (
    (".spend-cap", "add credits (spend cap)"),
    (".billing", "settle billing (billing wall)"),
    (".org-cap", "ask your organisation's admin for more usage (org cap)"),
    (".admin-cap", "ask an admin for more usage (admin limit)"),
    (".extra-usage", "add extra usage (the extra usage is spent)"),
    (".credits", "add usage credits (none are left)"),
    (".model-cap", "add usage credits or switch models (model cap)"),
)


def human_wall_why(kind: str) -> str:
    for suffix, why in _HUMAN_WHY:
        if kind.endswith(suffix):
            return why
    return "raise the limit or add credits (the wall names no reset)"


def backoff(level: int) -> timedelta:
    """The wait after `level` immediate re-limits in a row: 30 s doubling, capped at 30 min."""
    if level <= 0:
        return timedelta(0)
    return min(BACKOFF_CAP, BACKOFF_FIRST * (2 ** min(level - 1, 16)))


# --- history ------------------------------------------------------------------


def _keeping_tries(old: ResumeHistory, new: ResumeHistory) -> ResumeHistory:
    """A new history keeps what was tried for a wall and what the person cancelled: each is keyed by
    its wall, which tells whether it still applies (a wall that blinks off for a poll keeps both)."""
    return replace(new, handoff_wall=old.handoff_wall, handoff_tried=old.handoff_tried, cancelled=old.cancelled)


def observe(history: ResumeHistory, limit: Limit | None, *, now: datetime) -> ResumeHistory:
    """The history after this poll's look at the session (`limit` None: no limit on screen).

    A banner that appears within RELIMIT_WINDOW of a continuation is the same
    wall again: the episode goes on and the backoff grows. A pane free of
    banners a while after a continuation did real work: everything resets.
    """
    if limit is None:
        if history.episode is None and history.attempts == 0 and history.backoff_level == 0:
            return history
        if history.last_sent_at is not None and now - history.last_sent_at < RELIMIT_WINDOW:
            return history  # too early to call it real work
        return _keeping_tries(history, ResumeHistory())
    if limit.episode == history.episode:
        return history
    sent = history.last_sent_at
    if sent is not None and timedelta(0) <= limit.first_seen_at - sent <= RELIMIT_WINDOW:
        return replace(
            history,
            episode=limit.episode,
            first_seen_at=limit.first_seen_at,
            reset_at=limit.reset_at,
            backoff_level=history.backoff_level + 1,
            relimited_at=limit.first_seen_at,
            unconfirmed=False,
        )
    return _keeping_tries(history, ResumeHistory(episode=limit.episode, first_seen_at=limit.first_seen_at, reset_at=limit.reset_at))


def sent(history: ResumeHistory, *, at: datetime, confirmed: bool) -> ResumeHistory:
    """The history after a continuation went into the pane at `at`."""
    return replace(history, attempts=history.attempts + 1, last_sent_at=at, unconfirmed=not confirmed, retry_after=None)


def failed(history: ResumeHistory, *, at: datetime) -> ResumeHistory:
    """The history after an attempt that sent nothing: it counts, and the next waits a little."""
    return replace(history, attempts=history.attempts + 1, retry_after=at + BACKOFF_FIRST)


def stopped_for_human(history: ResumeHistory, why: str) -> ResumeHistory:
    return replace(history, needs_human=why)


# --- which path a limit takes ----------------------------------------------------------


class HandoffTry(enum.StrEnum):
    """How the automatic handoff tried for one wall went."""

    STARTED = "started"  # a swap began: it owns the session until it settles
    DECLINED = "declined"  # refused, or every agent is limited: the wait path applies to this wall


class LimitAction(enum.StrEnum):
    """`limit_action`: what afd does at a limit when the config asks it to act."""

    WAIT = "wait"  # resume the same agent when its window resets
    HANDOFF = "handoff"  # hand the work to the next account of handoff_order, once per wall


class Path(enum.Enum):
    WAIT = "wait"  # the wait policy decides (resume at the reset, report, needs a person)
    HANDOFF = "handoff"  # try an automatic handoff, once for this wall
    NONE = "none"  # nothing this poll: a handoff was started for this wall, or the config acts on limits neither way


def wall_key(banner_first_seen_at: datetime | None, witnesses: str | None) -> str:
    """What an automatic handoff is tried once for: a banner's appearance and the witnesses' verdict on it.

    Records that confirm the wall a poll after the pane did make a new key,
    so a handoff refused for want of them may go ahead then.
    """
    seen = banner_first_seen_at.isoformat() if banner_first_seen_at else "-"
    return f"{seen}|{witnesses or '-'}"


def tried_for(history: ResumeHistory, wall: str) -> HandoffTry | None:
    """What the stored history says was tried for this wall; None when nothing was."""
    if history.handoff_wall != wall or history.handoff_tried is None:
        return None
    return HandoffTry(history.handoff_tried)


def tried(history: ResumeHistory, wall: str, how: HandoffTry) -> ResumeHistory:
    return replace(history, handoff_wall=wall, handoff_tried=how.value)


def limit_path(
    *, limit_action: LimitAction, handoff_order: Sequence[str], state: str, tried: HandoffTry | None, cancelled: bool = False
) -> Path:
    """Wait or hand off, for a session at `state`, from the config and what was tried for its wall.

    An automatic handoff is tried once per wall, only from `limited`; once
    it declined (refused, all agents limited) the wait path takes the wall.
    A wall whose planned action the person cancelled goes to the wait path,
    which reports the cancel.
    """
    if tried is HandoffTry.DECLINED or cancelled:
        return Path.WAIT
    if limit_action is LimitAction.WAIT:
        return Path.WAIT
    if limit_action is LimitAction.HANDOFF and handoff_order and state == "limited" and tried is None:
        return Path.HANDOFF
    return Path.NONE


# --- the wait policy ------------------------------------------------------------


def decide_wait(
    name: str,
    limit: Limit | None,
    history: ResumeHistory,
    *,
    auto_resume: bool,
    resume_grace: float,
    retry_interval: float | None,
    max_attempts: int,
    now: datetime,
) -> Decision:
    """What `limit_action = "wait"` does about session `name` at `now`."""
    by_hand = f"resume with: afd resume {name}"
    if limit is None:
        return Nothing(None)
    if not limit.on_screen:
        return records_only(name, limit.reset_at)
    if limit.needs_human:
        return NeedsHuman(human_wall_why(limit.kind))
    if limit.nothing_to_wait_for:
        # No reset will come and no person is needed: resuming would only
        # hit the same wall. Report it and stop; a handoff may still take it.
        return Nothing(f"the wall names no reset and offers another model: switch models, or hand off with afd handoff {name} --to AGENT", why="other-model")
    if history.needs_human:
        return NeedsHuman(history.needs_human)
    if is_cancelled(history, limit):
        return cancelled(name, limit.reset_at)
    if history.attempts >= max_attempts:
        return NeedsHuman(f"{history.attempts} resumes did not get past this limit (resume_max_attempts = {max_attempts})")
    attempt = history.attempts + 1
    grace = timedelta(seconds=resume_grace)

    if limit.native is Native.ARMED:
        # The agent continues by itself; afd only checks afterwards that it did.
        fires = limit.native_at or limit.reset_at
        if fires is None:
            return Nothing("waiting for the agent's own auto-continue", why="auto-continue")
        if not auto_resume:
            return Nothing("waiting for the agent's own auto-continue", at=fires, why="auto-continue")
        at, why = fires + NATIVE_JITTER + grace, "auto-continue"
    elif not auto_resume:
        return Nothing(by_hand, at=limit.reset_at, why="report")
    elif limit.reset_at is not None:
        past_when_seen = limit.reset_at <= limit.first_seen_at
        at, why = (now if past_when_seen else limit.reset_at + grace), "reset"
    elif retry_interval is None:
        return Nothing(f"no reset time stated and limit_retry_interval is off; {by_hand}", why="report")
    else:
        at, why = limit.first_seen_at + timedelta(seconds=retry_interval), "retry"

    if history.backoff_level > 0 and history.relimited_at is not None:
        until = history.relimited_at + backoff(history.backoff_level)
        if until > at:
            at, why = until, "backoff"
    if history.retry_after is not None and history.retry_after > at:
        at = history.retry_after
    if at <= now:
        return ResumeNow(attempt, why)
    return ResumeAt(at, attempt, why)


def records_only(name: str, reset_at: datetime | None) -> Nothing:
    """A wall only the agent's own records show: afd types nothing into a pane that shows no wall."""
    return Nothing(
        "the wall is in the agent's own records, not on screen, and afd does not type into a pane that shows none; "
        f"look at the pane, then resume with: afd resume {name}",
        at=reset_at, why="records-only",
    )


def unplanned(name: str, tried: HandoffTry | None, reset_at: datetime | None) -> Nothing:
    """A wall neither path acts on (`Path.NONE` once no action of afd holds the session): the reason, and what to run."""
    yours = f"resume with: afd resume {name}, or hand off with: afd handoff {name} --to AGENT"
    if tried is HandoffTry.STARTED:
        why = "the automatic handoff for this wall did not go through, and afd tries one once a wall"
    else:
        why = "afd hands off by itself only an agent that stands at its wall in its pane"
    return Nothing(f"{why}; {yours}", at=reset_at, why="unplanned")


# --- the person's holds: a cancel for one wall, a pause for a while ------------------


def cancel(history: ResumeHistory) -> ResumeHistory:
    """The history once the person cancelled what afd planned for the present wall (its episode)."""
    return replace(history, cancelled=history.episode)


def is_cancelled(history: ResumeHistory, limit: Limit | None) -> bool:
    return limit is not None and history.cancelled is not None and history.cancelled == limit.episode


def cancelled(name: str, reset_at: datetime | None) -> Nothing:
    return Nothing(f"you cancelled afd's resume for this wall; resume with: afd resume {name}", at=reset_at, why="cancelled")


def pause_in_force(until: datetime | None, now: datetime) -> bool:
    """A pause holds until its end (None: until the person unpauses the session)."""
    return until is None or until > now


def held_by_pause(decision: Decision, name: str, until: datetime | None) -> Decision:
    """What a pause makes of a decision: an automatic resume is held; reports and calls for a person stand."""
    if isinstance(decision, ResumeAt | ResumeNow):
        return Held(decision, until, f"afd holds its resume; let it act again with: afd sessions unpause {name}")
    return decision


def handoff_held(name: str, until: datetime | None) -> Held:
    """The automatic handoff a paused session would get: held, not tried, so it is tried once the pause ends."""
    return Held(None, until, f"afd holds its automatic handoff; let it act again with: afd sessions unpause {name}")


# --- what comes next, in the words a person is told ---------------------------------


def after_failure(name: str, history: ResumeHistory, *, auto_resume: bool, max_attempts: int) -> str:
    """What happens after a resume that failed (`history` already counts it)."""
    if history.attempts >= max_attempts:
        return f"afd stops after {history.attempts} attempts; look at the pane, then resume with: afd resume {name}"
    if auto_resume:
        return (f"afd tries again in {int(BACKOFF_FIRST.total_seconds())} s at the earliest "
                f"(attempt {history.attempts + 1} of {max_attempts})")
    return f"afd does not resume by itself (limit_auto_resume is off); resume again with: afd resume {name}"


def after_declined(name: str, *, auto_resume: bool) -> str:
    """What happens to a wall whose automatic handoff was refused: the wait path takes it."""
    if auto_resume:
        return "afd falls back to waiting, and resumes it when its limit resets"
    return f"afd falls back to waiting and does not resume by itself (limit_auto_resume is off); resume with: afd resume {name}"


def after_rollback(name: str) -> str:
    """What happens after a handoff that was rolled back: the session is as it was, and afd does not try again."""
    return (f"the session is as it was; afd tries an automatic handoff once a wall, so resume with: afd resume {name}, "
            f"or hand off with: afd handoff {name} --to AGENT")


def decide_limit(
    name: str,
    limit: Limit | None,
    history: ResumeHistory,
    path: Path,
    *,
    tried: HandoffTry | None,
    pause: Pause | None,
    auto_resume: bool,
    resume_grace: float,
    retry_interval: float | None,
    max_attempts: int,
    now: datetime,
) -> Decision | None:
    """What session `name` gets this poll on the path its wall takes (`limit_path`), held by a `pause` in force.

    None: nothing to plan now, because the handoff path has the wall (it is tried right after
    the poll) or neither path has one. Any wall otherwise gets a decision: a limited session
    always has a next action, or a reason why none.
    """
    if path is Path.HANDOFF:
        return handoff_held(name, pause.until) if pause is not None else None
    if path is Path.NONE:
        # No action of afd holds the session (those are not planned), and neither path takes the wall.
        if limit is None:
            return None
        return unplanned(name, tried, limit.reset_at) if limit.on_screen else records_only(name, limit.reset_at)
    decision = decide_wait(name, limit, history, auto_resume=auto_resume, resume_grace=resume_grace,
                           retry_interval=retry_interval, max_attempts=max_attempts, now=now)
    return held_by_pause(decision, name, pause.until) if pause is not None else decision


def decide_manual(
    *, state: str, limited: bool, pane_known: bool, pane_present: bool, in_progress: str | None
) -> Decision:
    """`afd resume NAME`: the user says now, whatever limit_auto_resume says; refusals are one sentence."""
    if in_progress:
        return Refuse(f"an action is already in progress on this session ({in_progress})")
    if not pane_known:
        return Refuse("tmux did not answer about the session's pane; try again when it does")
    if not pane_present or state == "gone":
        return Refuse("the session's pane is gone")
    if state == "unknown":
        return Refuse("the session's state is unknown (tmux did not answer the last poll)")
    if not limited:
        return Refuse(f"the session is not at a usage limit (it is {state})")
    return ResumeNow(1, "manual")


# --- handoff -------------------------------------------------------------------
#
# Which agent a limited session is handed to, and every reason a handoff is
# refused before anything is touched (seed §2, §5.2, §8). The shell gathers
# the facts (`HandoffFacts`); these functions only read them, so each rule is
# a row in a table test.

# The ping-pong bound counts handoffs over this window.
HANDOFF_WINDOW = timedelta(hours=24)


def choose_target(order: Sequence[str], outgoing: str | None, facts: Mapping[str, LimitFact]) -> Handoff | Park:
    """The first account of `order` that is not the outgoing one and not known-limited.

    `order` names accounts (an agent's name is its default account) and
    `outgoing` is the account the session runs on: a walled `claude` may go
    to `claude-work`. `facts` is the limit map, keyed by account. One pass,
    no round-robin: the order is the user's ranking of who may edit their
    code, and an account afd cannot vouch for (`unknown`) is tried rather
    than skipped, but marked unverified.
    """
    resets: list[datetime] = []
    for account in order:
        if account == outgoing:
            continue
        fact = facts.get(account)
        state = fact.state if fact is not None else LimitState.UNKNOWN
        if state is LimitState.LIMITED:
            if fact is not None and fact.reset_at is not None:
                resets.append(fact.reset_at)
            continue
        return Handoff(account, unverified=state is not LimitState.AVAILABLE, why=f"first in handoff_order not limited ({state.value})")
    outgoing_fact = facts.get(outgoing) if outgoing else None
    if outgoing_fact is not None and outgoing_fact.state is LimitState.LIMITED and outgoing_fact.reset_at:
        resets.append(outgoing_fact.reset_at)
    # The loop guard: one full pass with no candidate stops here; no round-robin.
    return Park(all_limited=True, until=min(resets) if resets else None, why="all agents limited")


@dataclass(frozen=True, slots=True)
class HandoffFacts:
    """What the shell found out about a session and a target, just before a swap."""

    session_state: SessionState
    outgoing: str | None  # the session's agent
    identity: IdentityKind
    identity_source: IdentitySource
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
    # Whether the limit is witnessed well enough for an unattended swap
    # (`handoff_requires_witness`: pane and the agent's own records agree).
    witnessed: bool = True
    # The account the outgoing agent runs on; "unknown" (an environment afd could
    # not read, a credential in it) never authorises an unattended swap.
    account: str | None = None
    # The agent the target account runs (None: the target is named by its agent, its default account).
    target_agent: str | None = None


def _when(at: datetime | None) -> str:
    # ISO UTC, as every instant in afd's words: each surface shows it in its reader's zone (afd.display).
    return at.strftime("%Y-%m-%dT%H:%M:%SZ") if at else "at a time it did not state"


def handoff_refusal(f: HandoffFacts, target: str, *, brief: str | None, force: bool, automatic: bool) -> str | None:
    """Why this handoff must not start (one line), or None when it may."""
    if not f.target_known:
        return f"{target!r} is not an agent any plugin provides, nor an account of the config"
    if f.pane_present is None:
        return "tmux did not answer about the session's pane; try again"
    if not f.pane_present or f.session_state == SessionState.GONE:
        return "the session's pane is gone"
    if f.action_in_progress:
        return f"the session has an action in progress ({f.action_in_progress}); wait for it to settle"
    if f.identity != IdentityKind.KNOWN:
        # Unknown never passes a same-agent check: it could be the target itself.
        vouched = " (its agent is only vouched for by the user)" if f.identity_source == IdentitySource.USER else ""
        return f"afd cannot tell which agent runs in the pane{vouched}, so it cannot rule out handing it to itself"
    if automatic and f.identity_source != IdentitySource.PROCESS:
        return "its agent was vouched for with `adopt --agent`, and such a pane is never handed off automatically"
    if automatic and f.account == UNKNOWN_ACCOUNT:
        return ("afd cannot tell which account its agent runs on (its environment could not be read, or a "
                "credential in it chooses), and such a pane is never handed off automatically")
    target_agent = f.target_agent or target
    if f.outgoing == target_agent:
        here = f.account or target_agent  # a record from before accounts: the default's
        if here == target:
            return f"{target} is the {'agent' if target == target_agent else 'account'} running there now"
        if here == UNKNOWN_ACCOUNT:
            return f"afd cannot tell which account {target_agent} runs on there, so it cannot rule out handing it to itself"
    if not (brief or "").strip() and not (f.mission or "").strip():
        if automatic:
            return "the session has no mission, and a new agent sent nowhere with no goal has nothing to go on"
        return "the session has no mission; give the new agent its goal with --brief TEXT"
    if not f.is_work_tree:
        return "the session's worktree is not a git work tree"
    if not f.cwd_inside_worktree:
        return "the pane's working directory is not inside the session's worktree"
    if f.target_command is None:
        return f"{target_agent}'s command was not found on the pane's PATH"
    fact = f.target_fact
    if fact is not None and fact.state is LimitState.LIMITED and not force:
        hint = "" if automatic else "; --force hands off anyway"
        seen = f" (seen on {fact.source_host})" if fact.source_host else ""
        return f"{target} is at its usage limit until {_when(fact.reset_at)}{seen}{hint}"
    recent = [at for at in f.handoffs_at if f.now - at < HANDOFF_WINDOW]
    if len(recent) >= f.max_per_session:
        return (
            f"the session was handed off {len(recent)} times in the last 24 hours "
            f"(handoff_max_per_session = {f.max_per_session})"
        )
    if automatic and not f.witnessed:
        return (
            f"{f.outgoing}'s own records do not confirm the limit the pane shows, and handoff_requires_witness "
            "asks for both before an unattended swap"
        )
    if not f.turn_ended:
        return f"{f.outgoing} is still in a turn (its work would go on after its window closes); hand off when it has ended"
    return None


# --- which account a new session starts on ------------------------------------------


def route_account(candidates: Sequence[str], facts: Mapping[str, LimitFact]) -> tuple[str, str]:
    """`route_new_sessions = "least-limited"`: the account a new session of an agent starts on, and why.

    `candidates` are the agent's accounts, its default first. One not known
    limited, preferring one seen working, then one never seen limited, then
    the one whose last limit lies furthest back; the order breaks ties. When
    every one is limited, the one whose reset comes first (the session then
    waits for it like any other).
    """
    assert candidates, "an agent always has its default account"

    def rank(item: tuple[int, str]) -> tuple[int, float, int]:
        index, name = item
        fact = facts.get(name)
        if fact is None or (fact.state is LimitState.UNKNOWN and fact.banner is None):
            return (1, 0.0, index)
        if fact.state is LimitState.AVAILABLE:
            return (0, 0.0, index)
        last = fact.observed_at.timestamp() if fact.observed_at else 0.0
        if fact.state is LimitState.UNKNOWN:  # a limit whose reset has passed
            return (2, last, index)
        reset = fact.reset_at.timestamp() if fact.reset_at else float("inf")
        return (3, reset, index)

    index, name = min(enumerate(candidates), key=rank)
    level = rank((index, name))[0]
    if len(candidates) == 1:
        return name, "its only account"
    words = {0: "seen working, not limited", 1: "never seen limited", 2: "the least recently limited",
             3: "every account is limited; its reset comes first"}
    return name, words[level]
