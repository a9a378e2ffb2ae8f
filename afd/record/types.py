"""The records afd keeps, as values: what a row of the store is, apart from how it is stored.

Pure: this module imports only the value types of afd.model and the
standard library, so the judging and deciding code can speak of sessions,
journal entries and ledger entries without importing the SQLite module.
The store (afd/record/store.py) turns these into rows and back; states,
identities and identity sources are enums here and plain strings on disk.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from datetime import datetime, timezone

from afd.model import Event, IdentityKind, IdentitySource, SessionState

# --- sessions ---------------------------------------------------------------


class Witnesses(enum.StrEnum):
    """Who says a session is limited, as `afd status` shows it (afd.judge.witness combines them)."""

    PANE = "pane"
    RECORD = "record"
    BOTH = "pane+record"
    DISPUTED = "disputed"  # the pane shows a wall; the agent's records say it went on


class PlanKind(enum.StrEnum):
    """What a session's next action is; the values are what `status --json` shows in `next.action`."""

    RESUME = "resume"  # afd resumes it, at `at` (None: now)
    AUTO_CONTINUE = "auto-continue"  # the agent continues by itself; afd checks afterwards
    REPORT = "report"  # nothing afd does by itself: `why` says what a person can do
    NEEDS_HUMAN = "needs-human"  # only a person gets it past this
    HANDOFF = "handoff"  # a swap to another agent is under way
    PARK = "park"  # every account of handoff_order is limited: it waits for a reset
    RESUMING = "resuming"  # a resume is under way
    BRIEF_PENDING = "brief-pending"  # a handoff's brief waits for the new agent to take it
    PAUSED = "paused"  # the person paused the session: `held` is what afd would do, `at` when the pause ends


@dataclass(frozen=True, slots=True)
class NextAction:
    """A session's next action: what status shows, in words made when it is read (afd.decide.nextaction)."""

    action: PlanKind
    why: str = ""
    at: datetime | None = None  # when, for a plan with a time
    attempt: int | None = None
    of: int | None = None  # resume_max_attempts when the plan counts attempts
    agent: str | None = None  # whose own auto-continue, when the words name it
    # Why afd only reports, as a code a script can test: "report" (limit_auto_resume is off),
    # "other-model", "records-only", "unplanned", "cancelled".
    reason: str | None = None
    held: NextAction | None = None  # for PAUSED: what afd would do were the session not paused

    def as_json(self) -> dict:
        """Its stored form, which `status --json` prints as `next` (schema 1: these keys; `agent`, `reason`, `held` when set)."""
        at = self.at.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if self.at is not None else None
        out: dict = {"action": self.action.value, "at": at, "attempt": self.attempt, "of": self.of, "why": self.why}
        if self.agent:
            out["agent"] = self.agent
        if self.reason:
            out["reason"] = self.reason
        if self.held is not None:
            out["held"] = self.held.as_json()
        return out

    def dumps(self) -> str:
        return json.dumps(self.as_json(), sort_keys=True)

    @classmethod
    def loads(cls, text: str | None) -> NextAction | None:
        """The stored form read back; None for none. Text that is not a plan is kept as the words of a report."""
        if not text:
            return None
        try:
            return cls._of_json(json.loads(text))
        except (ValueError, TypeError, KeyError, AttributeError):
            return cls(PlanKind.REPORT, text)

    @classmethod
    def _of_json(cls, value: dict) -> NextAction:
        kind = PlanKind(value["action"])
        at = datetime.fromisoformat(value["at"].replace("Z", "+00:00")) if value.get("at") else None
        held = cls._of_json(value["held"]) if isinstance(value.get("held"), dict) else None
        return cls(kind, value.get("why") or "", at, value.get("attempt"), value.get("of"), value.get("agent"),
                   value.get("reason"), held)


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """One session as stored: where it runs, what runs in it, what afd last saw."""

    name: str
    pane_id: str  # "%3"; only meaningful together with the server below
    server_socket: str
    server_pid: int | None
    agent: str | None
    identity: IdentityKind
    identity_source: IdentitySource  # PROCESS: seen in the process tree; USER: vouched for by adopt --agent
    state: SessionState
    created_at: datetime
    updated_at: datetime
    mission: str | None = None
    worktree: str | None = None
    branch: str | None = None
    agent_pid: int | None = None
    # psutil's create_time() of agent_pid, kept as the float it is so a
    # rebind can compare it exactly: a reused pid has a different start.
    agent_started_at: float | None = None
    last_banner: str | None = None
    banner_first_seen_at: datetime | None = None
    reset_at: datetime | None = None
    next_action: NextAction | None = None
    location: str | None = None  # tmux "session:window.pane" as last seen; moves when windows do
    # Who says the session is limited, or that a banner is disputed; None otherwise.
    witnesses: Witnesses | None = None
    # The account the agent runs on (`claude`, `claude-work`, `claude@/home/u/.claude-x`,
    # or `unknown`: its environment could not be read, or a credential chose it); None without an agent.
    account: str | None = None
    # When the agent last took a continuation afd typed (a confirmed resume): a banner first seen,
    # a rejection recorded or a screen captured before it is history, not a wall now.
    continued_at: datetime | None = None
    # afd started this session's agent at this instant (a create, a resume that
    # started it again, a handoff rolled back onto it) and has not seen it run
    # yet: a launcher in front of it is waited for, not taken for its exit.
    awaiting_since: datetime | None = None


@dataclass(frozen=True, slots=True)
class BannerSighting:
    """When this appearance of a banner was first seen, and the reset read then."""

    first_seen_at: datetime
    reset_at: datetime | None


@dataclass(frozen=True, slots=True)
class ResumeHistory:
    """What afd did about a session's limits so far; persisted, so backoff survives a restart."""

    episode: str | None = None  # the banner the current episode stands at
    # That banner's first sighting and reset, kept for when the pane no longer shows it (its agent exited).
    first_seen_at: datetime | None = None
    reset_at: datetime | None = None
    attempts: int = 0  # continuations sent in this episode
    last_sent_at: datetime | None = None
    backoff_level: int = 0  # immediate re-limits in a row
    relimited_at: datetime | None = None  # when the last immediate re-limit was first seen
    unconfirmed: bool = False  # the last continuation was not seen to land
    retry_after: datetime | None = None  # an attempt failed before sending: not again before this
    needs_human: str | None = None  # this episode stopped for a person, and why
    # The wall an automatic handoff was last tried for (`wall_key`), and how that went
    # (`HandoffTry`): stored, so a restart between trying and deciding does not try again.
    handoff_wall: str | None = None
    handoff_tried: str | None = None
    # The episode whose planned resume the person cancelled (`afd sessions cancel`): stored, so the
    # next poll does not plan it again; a new wall is a new episode, planned as ever.
    cancelled: str | None = None


NO_HISTORY = ResumeHistory()  # a session afd never acted on


@dataclass(frozen=True, slots=True)
class GitFacts:
    """Where the branch stands at the moment of a swap: what the ledger is anchored on and the brief says."""

    branch: str | None  # None when HEAD is detached
    head_sha: str
    base_sha: str  # where the branch left its default branch, or the session's recorded base
    base_label: str  # how to name the base to a person: "main", or a short SHA
    commits: int  # commits in base..HEAD
    dirty_files: int  # files with uncommitted changes (tracked or not)



# --- the limit map (rules: afd/judge/limits.py) ---------------------------


class LimitState(enum.Enum):
    LIMITED = "limited"
    AVAILABLE = "available"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class LimitFact:
    """One account's entry in the limit map."""

    agent: str
    state: LimitState
    reset_at: datetime | None
    observed_at: datetime | None
    source_session: str | None
    banner: str | None = None
    # The account, when it is not the agent's default one (which is named after the agent).
    account: str | None = None
    # The host of the fleet whose afd saw it (`afd hosts add NAME`); None: seen here (afd.judge.fleet).
    source_host: str | None = None

    @property
    def account_name(self) -> str:
        """The key of this fact in the map: the account's name."""
        return self.account or self.agent


def unknown_fact(agent: str, account: str | None = None) -> LimitFact:
    """The fact for an account never observed (or one no detector can observe); `account` None: the default one."""
    return LimitFact(agent=agent, state=LimitState.UNKNOWN, reset_at=None, observed_at=None, source_session=None,
                     account=account if account != agent else None)


@dataclass(frozen=True, slots=True)
class LimitChange:
    """One account's fact before and after a sighting or an expiry, for the limit map's writer (afd/record/limit_map.py)."""

    old: LimitFact
    new: LimitFact
    session: str | None  # where the evidence was seen
    why: str | None = None  # for a fact that turns unknown: what made it so
class Contact(enum.StrEnum):
    """How the last ask of a host of the fleet went."""

    ANSWERED = "answered"  # it answered, and the answer was read
    UNREACHABLE = "unreachable"  # ssh could not reach it, or it did not answer in time
    REFUSED = "refused"  # it was reached, but its sshd or its `afd remote` refused the ask
    INVALID = "invalid"  # it answered what afd does not read (too big, not JSON, wrong types or schema): nothing used
    HOST_KEY_CHANGED = "host-key-changed"  # its host key is not the one accepted at first contact


@dataclass(frozen=True, slots=True)
class Host:
    """A host of the fleet (`afd hosts add NAME DEST`), and how the last ask of it went."""

    name: str
    dest: str  # what `ssh` takes: an alias of ~/.ssh/config, `user@host`
    port: int | None
    added_at: datetime
    contact: Contact | None = None  # None: not asked yet
    asked_at: datetime | None = None  # when the last ask that ended began
    answered_at: datetime | None = None  # when it last answered well
    failing_since: datetime | None = None  # the first ask that failed since it last answered; None while it answers
    error: str | None = None  # why the last ask failed, in one line
    skew: float | None = None  # seconds its clock runs ahead of ours, as last measured
    version: str | None = None  # its afd's, as it last said
    host_key: str | None = None  # the fingerprint of its host key, as accepted at first contact
    answer: str | None = None  # its last answer as read (JSON; afd.judge.peer_answer), for `afd fleet`


@dataclass(frozen=True, slots=True)
class Pause:
    """The person's hold on one session (`afd sessions pause`): afd types nothing into its pane by itself.

    The session is still watched and reported; a manual `afd resume` or `afd handoff` still acts.
    """

    session: str
    since: datetime
    until: datetime | None  # None: until the person unpauses it


# --- events, the journal, the ledger ---------------------------------------


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """An event with its store id, the cursor for `afd events --follow`."""

    id: int
    event: Event


class JournalState(enum.Enum):
    PENDING = "pending"
    DONE = "done"
    ROLLED_BACK = "rolled_back"


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """An action's intent, committed before the action touches a pane."""

    id: int
    at: datetime
    session: str
    action: str
    intent: dict
    state: JournalState
    outcome: str | None = None
    finished_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One handoff of a session, anchored on the branch HEAD at swap time."""

    session: str
    at: datetime
    from_agent: str
    to_agent: str
    head_sha: str
    reason: str
    automatic: bool
    id: int | None = None  # assigned by the store
    from_conversation: str | None = None  # the outgoing agent's conversation id, when known
    base_sha: str | None = None  # where the branch's range starts (the first agent's commits are base..)
    journal_id: int | None = None  # the swap that wrote it: a recovered swap writes its entry once
    from_account: str | None = None  # the accounts on each side (None: written before afd knew accounts)
    to_account: str | None = None


# --- jobs and their envelopes (afd/jobs) ------------------------------------


class JobStatus(enum.Enum):
    RUNNING = "running"
    LIMITED = "limited"
    DONE = "done"
    FAILED = "failed"
    GONE = "gone"


class EnvelopeState(enum.Enum):
    PENDING = "pending"  # written, not yet typed
    ATTEMPTING = "attempting"  # written before the keys went in; its nonce tells whether they did
    SENT = "sent"  # pasted and submitted
    CONSUMED = "consumed"  # seen taken by the agent: never delivered again


@dataclass(frozen=True, slots=True)
class Job:
    name: str
    title: str
    owner: str
    parent: str | None
    agent: str
    status: JobStatus
    summary: str | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class Envelope:
    id: int
    key: str  # stable identity: the same fact is never queued twice
    job: str | None
    to_session: str | None  # fixed recipient (handoff messages); None: routed through the job's masters
    kind: str
    text: str
    nonce: str
    state: EnvelopeState
    recipient: str | None  # who it went to once attempting
    attempts: int


class QueueState(enum.StrEnum):
    WAITING = "waiting"  # held until it is due and the session can take it
    DELIVERING = "delivering"  # handed to a delivery (its outbox envelope or resume row): never handed again
    DELIVERED = "delivered"  # the agent took it
    UNCONFIRMED = "unconfirmed"  # submitted, not seen taken in time; never sent again
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class QueuedPrompt:
    """One held prompt, as stored (`afd queue add`; its rules in afd/decide/queue.py)."""

    id: int
    session: str
    text: str
    at_kind: str  # "reset" or "time"
    due_at: datetime  # aware UTC: the reset plus grace, or the time given
    state: QueueState
    created_at: datetime
    route: str | None = None  # "envelope" or "resume", once handed to a delivery
    ref: int | None = None  # the outbox row or the resume's journal row it was handed to
    outcome: str | None = None

    def to_json(self) -> dict:
        def iso(v: datetime | None) -> str | None:
            return v.strftime("%Y-%m-%dT%H:%M:%SZ") if v is not None else None

        return {"id": self.id, "session": self.session, "text": self.text, "at": self.at_kind, "due_at": iso(self.due_at),
                "state": self.state.value, "created_at": iso(self.created_at), "route": self.route, "outcome": self.outcome}
