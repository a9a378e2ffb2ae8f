"""Executors: one per action, each a state machine whose step lives in its journal row.

An executor never blocks the poll loop. Every poll, for every pending
journal entry, `afd.recovery.next_move` reads the entry's step and what the
pane shows now and returns one `Move`:

* `Wait` — nothing to do this poll (a person is typing, the pasted text has
  not shown yet); `hold` says why, for status;
* `Go` — record `step` (and `data`) in the journal row, *then* perform
  `effect` (one short tmux call); the step is on disk before its effect, so
  a crash leaves the action at a known step;
* `Finish` — close the entry as done or rolled back, with the result.

Because a step is recorded before its effect, each step's decision checks
the pane for whether the effect happened; a restart after SIGKILL therefore
takes the same path as a normal poll (DESIGN rule 5, one recovery path).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime

from afd.model import Clock
from afd.world.tmux import Presence


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
    in_mode: bool = False  # copy mode or any other tmux mode
    dead: bool = False  # a dead pane kept by remain-on-exit
    shell: bool = False  # the pane's own shell is in the foreground (no agent runs)
    agent_alive: Liveness = Liveness.UNKNOWN
    # Seconds since an attached client last pressed a key, as tmux's clock saw
    # it at capture time (None: no client attached).
    client_idle: float | None = None
    session_state: str = "unknown"
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
    cwd: str
    argv: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class NoEffect:
    """A step recorded for its own sake (e.g. a respawn confirmed ready)."""


Effect = Paste | Key | Respawn | NoEffect


# --- moves ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Wait:
    why: str | None = None
    hold: str | None = None  # waiting for a person: "you are typing in this pane"


@dataclass(frozen=True, slots=True)
class Go:
    step: str
    effect: Effect
    data: dict = field(default_factory=dict)


class Result(enum.Enum):
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


Move = Wait | Go | Finish


def auto_key(rec) -> tuple:
    """What an automatic handoff is tried once for: a banner's appearance and the witnesses' verdict on it.

    Records that confirm the wall a poll after the pane did may let a
    handoff refused for want of them go ahead.
    """
    return (rec.name, rec.banner_first_seen_at, rec.witnesses)
