"""What an executor may read and do, and the shape every executor has.

An executor never reaches into the supervisor: the store, the tmux server,
the config, the plugins, the clock and a way to say what happened arrive in
an `ActionContext`; the pane's facts arrive with each step. What an action
means for the poll (a watch to forget, a row that closed) comes back to the
supervisor in `Advanced`, not by writing its state from outside; what it
changes in the store comes back to the engine as `Record`s, which the engine
commits with the action's journal row.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from afd.act import Finish, Move, Record
from afd.record.store import Store
from afd.record.types import JournalEntry
from afd.world import tmux

if TYPE_CHECKING:
    from afd.config.settings import Config
    from afd.pluginset import PluginSet

EventSink = Callable[..., None]  # (kind, message, session=None, **data)


@dataclass
class Job:
    """One slow call on a worker thread; the engine reads `result`/`error` once `done` is set."""

    done: threading.Event = field(default_factory=threading.Event)
    result: object = None
    error: str | None = None


class Workers:
    """The worker threads of this run, by (journal row, name). A new run has none: its rows see no job."""

    def __init__(self) -> None:
        self._jobs: dict[tuple[int, str], Job] = {}
        self.wake: Callable[[], None] = lambda: None  # the daemon's loop wake-up, set when it runs

    def start(self, entry_id: int, name: str, call: Callable[[], object], errors: tuple[type[Exception], ...] = ()) -> None:
        job = Job()

        def run() -> None:
            try:
                job.result = call()
            except errors as exc:
                job.error = str(exc)
            except Exception as exc:  # reported by the engine, which owns the journal
                job.error = f"{type(exc).__name__}: {exc}"
            finally:
                job.done.set()
                self.wake()

        self._jobs[(entry_id, name)] = job
        threading.Thread(target=run, name=f"afd-{name}-{entry_id}", daemon=True).start()

    def get(self, entry_id: int, name: str) -> Job | None:
        return self._jobs.get((entry_id, name))

    def drop(self, entry_id: int) -> None:
        for key in [k for k in self._jobs if k[0] == entry_id]:
            del self._jobs[key]

    def finished(self) -> bool:
        return any(job.done.is_set() for job in self._jobs.values())


@dataclass(frozen=True, slots=True)
class ActionContext:
    """One engine turn's view of the world an executor may use."""

    store: Store
    server: tmux.ServerRef
    config: Config
    plugins: PluginSet
    clock: Callable[[], datetime]
    run: str  # names this run of afd in the steps it records: a later run knows a step is not its own
    event: EventSink
    workers: Workers  # this run's worker threads (a slow git call), by journal row

    def overrides(self) -> dict[str, tuple[str, ...]]:
        """The users' `[agents.NAME] command`s, for identifying a pane's agent."""
        return {n: o.command for n, o in self.config.agents.items() if o.command}


@dataclass
class Advanced:
    """What one engine turn means for the poll loop's own state."""

    # Sessions whose screen an action changed wholesale: what the poll watched there proves nothing now.
    forget_watch: set[str] = field(default_factory=set)
    # Rows closed this turn (id → row), for a client waiting on one.
    settled: dict[int, JournalEntry] = field(default_factory=dict)

    def merge(self, other: Advanced) -> None:
        self.forget_watch |= other.forget_watch
        self.settled.update(other.settled)


class Executor(Protocol):
    """One action's state machine. `facts` reads, `step` decides (pure); `progress` and `finished` say what a step
    or an ending changes besides the row, which the engine commits with it."""

    action: str
    chain: int  # quick steps one turn may take in a row (a step that waits ends the turn's chain)
    owns_pane: bool  # while pending, the poll neither follows nor judges the session's pane

    def facts(self, ctx: ActionContext, entry: JournalEntry, bound: tuple | None) -> Any: ...

    def step(self, intent: Mapping, facts: Any) -> Move: ...

    def finished(self, ctx: ActionContext, entry: JournalEntry, end: Finish) -> Sequence[Record]: ...

    def progress(self, ctx: ActionContext, entry: JournalEntry, move: Move) -> Sequence[Record]:
        """What a step taken (after its effect) or a wait changes: the plan status shows, an event."""
        ...
