"""The acting half: one engine, and one executor per action.

Every action — resume, handoff, a pending brief, `sessions create`, a job's
envelope typed into its supervisor's pane (afd/jobs/delivery.py) — is a row
in the journal and an executor of one shape (`afd.act.context.Executor`):

* `facts(ctx, row, bound)` looks at the world (the pane, its processes, git,
  a worker thread) and changes nothing;
* `step(row, facts)` is pure and returns one `Move`:

  * `Wait` — nothing to do this turn (a person is typing, a process has not
    exited yet); `hold` says why, for status;
  * `Go` — record `step` (and `data`) in the journal row, *then* perform
    `effect` (one short tmux or process call, or a few in order); the step is
    on disk before its effect, so a crash leaves the action at a known step;
  * `Finish` — close the row as done or rolled back, with the result, after
    its last effects;

* `progress(ctx, row, move)` and `finished(ctx, row, end)` say what a step
  or an ending changes besides the row (`Record`s: the session's state as
  the sessions rulebook writes it, the resume history, the ledger, an
  envelope, an action that follows, the events to tell). They read, they
  never write: the engine commits what they return in one transaction with
  the row.

`afd.act.runner` is the one engine that drives them: every poll it advances
each pending row a short step, and at start the rows an earlier run left
are driven by the same code with the facts the world shows now (DESIGN rule
5: no second path for recovery). Because a step is recorded before its
effect, each step checks the world for whether its effect happened.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from afd.judge import sessions
from afd.model import AgentSpec, Clock, SessionState
from afd.record.types import LedgerEntry, ResumeHistory
from afd.world.tmux import Presence

if TYPE_CHECKING:
    from afd.record.store import Store


class Liveness(enum.Enum):
    """Whether the session's own agent process still runs; three values."""

    ALIVE = "alive"
    GONE = "gone"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class PaneView:
    """What the pane and its processes show at one instant, for an executor to decide on."""

    presence: Presence
    rows: tuple[str, ...]
    agent: str | None
    spec: AgentSpec | None = None  # the agent's, for how it draws its input row
    in_mode: bool = False  # copy mode or any other tmux mode
    dead: bool = False  # a dead pane kept by remain-on-exit
    shell: bool = False  # the pane's own shell is in the foreground (no agent runs)
    agent_alive: Liveness = Liveness.UNKNOWN
    # Seconds since an attached client last pressed a key, as tmux's clock saw
    # it at capture time (None: no client attached).
    client_idle: float | None = None
    session_state: SessionState = SessionState.UNKNOWN
    limited: bool = False  # the gates call the session limited this poll
    clock: Clock | None = None


# --- effects (performed by the runner, one short tmux call each) ---------------


@dataclass(frozen=True, slots=True)
class Paste:
    text: str


@dataclass(frozen=True, slots=True)
class Key:
    name: str  # "Enter", "Up", "Down" — never Escape (it interrupts agents and dismisses dialogs)


@dataclass(frozen=True, slots=True)
class Respawn:
    """Start `argv` in the pane, keeping its id (`-k`: over whatever runs there, known gone)."""

    cwd: str
    argv: tuple[str, ...]
    client_path: str | None = None  # the PATH the pane's own shell had, when the command was resolved on it
    kill: bool = True


@dataclass(frozen=True, slots=True)
class PaneOption:
    """Set a pane option; `value` None unsets it (back to what the window says)."""

    name: str
    value: str | None
    restore: bool = False  # put back a value read earlier (None: it was unset)


@dataclass(frozen=True, slots=True)
class Signal:
    """A signal to a process group (never afd's own, never init's)."""

    pgid: int | None
    signum: int


@dataclass(frozen=True, slots=True)
class Submit:
    """Text as one bracketed paste, then Enter as its own key: a brief typed into an agent that just started."""

    text: str


@dataclass(frozen=True, slots=True)
class KillPane:
    """Close a pane an interrupted action left (a dead pane kept by remain-on-exit)."""

    pane: str


@dataclass(frozen=True, slots=True)
class Cleanup:
    """Remove what a create that never started an agent left: its worktree and/or its branch (says what)."""

    repo: str
    worktree: str | None
    branch: str | None


@dataclass(frozen=True, slots=True)
class NewSession:
    """A tmux session of its own for a created agent: `argv` in `cwd`; `typed` pasted once it runs."""

    name: str
    cwd: str
    argv: tuple[str, ...]
    typed: str | None = None


@dataclass(frozen=True, slots=True)
class Work:
    """A slow call (git) handed to a worker thread; its outcome is a fact of a later turn."""

    name: str  # what the executor calls it, e.g. "worktree"
    call: Callable[[], object]  # run on the worker; never touches the store

    def __eq__(self, other) -> bool:  # the call is a closure: two are the same work when named the same
        return isinstance(other, Work) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)


@dataclass(frozen=True, slots=True)
class NoEffect:
    """A step recorded for its own sake (e.g. a respawn confirmed ready)."""


Effect = Paste | Key | Respawn | PaneOption | Signal | Submit | KillPane | Cleanup | NewSession | Work | NoEffect


# --- records (what a step or an ending changes besides its row; the runner commits them with it) -----


@dataclass(frozen=True, slots=True)
class Observe:
    """The session's state after what the action did, as the sessions rulebook writes it (its events told)."""

    what: sessions.Observation


@dataclass(frozen=True, slots=True)
class Adopt:
    """A session the action brought into being, as the rulebook made it (`afd.judge.sessions.created`)."""

    made: sessions.Transition


@dataclass(frozen=True, slots=True)
class SaveHistory:
    """The session's resume history after the action (what was sent, failed, or stopped for a person)."""

    history: ResumeHistory


@dataclass(frozen=True, slots=True)
class AddLedger:
    """A handoff's entry in the session's ledger; written once for its journal row, however often it is recovered."""

    entry: LedgerEntry


@dataclass(frozen=True, slots=True)
class Follow:
    """Another action on the session, begun in the same commit (a swap's brief that waits): its intent, stored."""

    action: str
    intent: dict


@dataclass(frozen=True, slots=True)
class Tell:
    """An event, told once the commit is made; `session` None: the action's own."""

    kind: str
    message: str
    session: str | None = None
    data: dict = field(default_factory=dict)


class StoreWrite(Protocol):
    """A write of another folder's records (an envelope's state, afd/jobs), made inside the commit."""

    def write(self, store: Store) -> None: ...


Record = Observe | Adopt | SaveHistory | AddLedger | Follow | Tell | StoreWrite


# --- moves ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Wait:
    why: str | None = None
    hold: str | None = None  # waiting for a person: "you are typing in this pane"


@dataclass(frozen=True, slots=True)
class Go:
    step: str
    effect: Effect | tuple[Effect, ...]  # a tuple is performed in order, and stops at the first that fails
    # Fields of the journal row this step changes, in the row's stored form.
    data: dict = field(default_factory=dict)


class Result(enum.Enum):
    DONE = "done"  # the action did what it set out to (a swap settled, a create's agent seen)
    ROLLED_BACK = "rolled_back"  # stopped short and undone as far as it had gone; the session is as it was
    CONFIRMED = "confirmed"  # the continuation landed: the agent went to work
    UNCONFIRMED = "unconfirmed"  # sent, not seen to land in time: not failed, counted
    FAILED = "failed"  # nothing was sent, or it could not be
    NEEDS_HUMAN = "needs_human"  # a dialog or wall afd must not answer
    ABANDONED = "abandoned"  # the pane or session went away


@dataclass(frozen=True, slots=True)
class Finish:
    result: Result
    outcome: str  # one sentence, for the journal and the event
    sent_at: datetime | None = None  # when a continuation was submitted, if one was
    effects: tuple[Effect, ...] = ()  # performed before the row is closed (a restart, an option put back)
    detail: object = None  # what the executor's `finished` needs beyond the result (e.g. a detection)


Move = Wait | Go | Finish

# The results after which an action's row is closed as done; every other result closes it rolled back.
DONE_RESULTS = frozenset({Result.DONE, Result.CONFIRMED, Result.UNCONFIRMED})
