"""The records afd keeps, as values: what a row of the store is, apart from how it is stored.

Pure: this module imports only the value types of afd.model and the
standard library, so the judging and deciding code can speak of sessions,
journal entries and ledger entries without importing the SQLite module.
The store (afd/record/store.py) turns these into rows and back; states,
identities and identity sources are enums here and plain strings on disk.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime

from afd.model import Event, IdentityKind, IdentitySource, SessionState

# --- sessions ---------------------------------------------------------------


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
    next_action: str | None = None
    location: str | None = None  # tmux "session:window.pane" as last seen; moves when windows do
    # Who says the session is limited: "pane", "record", "pane+record", or
    # "disputed" (a banner the agent's records contradict); None otherwise.
    witnesses: str | None = None
    # The account the agent runs on (`claude`, `claude-work`, `claude@/home/u/.claude-x`,
    # or `unknown`: its environment could not be read, or a credential chose it); None without an agent.
    account: str | None = None


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
