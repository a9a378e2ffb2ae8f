"""The one engine: every pending action, one short step per poll, the same way before and after a restart.

For each pending journal row the engine asks the row's executor for the
facts (what the pane, its processes, git or a worker show now), asks its
pure `step` for the move, and then:

* `Wait` — shows why in the session's status, and leaves the row as it is;
* `Go` — writes the step (and its data) to the row, *then* performs the
  effect; a failed effect is written to the row (`effect_error`) for the
  next step to judge;
* `Finish` — performs the last effects, then closes the row.

Whatever a step or an ending changes besides the row (the executor's
`progress` and `finished` return it as `Record`s: the session's state by
the sessions rulebook, the resume history, the ledger, an envelope, an
action that follows) is committed here, in one transaction with the row;
its events are told once that commit is made. No executor writes the store.

A row written by an earlier run of afd (its `run` differs) is driven by the
same steps: each step looks at the world to see whether its effect happened,
so nothing is done twice and nothing is left half done (DESIGN rule 5). The
first time a run meets such a row it says so in an event.

Nothing here blocks: a slow call (git worktree add) runs on a worker thread
(`Work`) whose outcome is a fact of a later turn.
"""

from __future__ import annotations

import logging
import os
import secrets
import signal
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from afd.act import (
    DONE_RESULTS,
    AddLedger,
    Adopt,
    Cleanup,
    Finish,
    Follow,
    Go,
    Key,
    KillPane,
    NewSession,
    NoEffect,
    Observe,
    PaneOption,
    Paste,
    Record,
    Respawn,
    Result,
    SaveHistory,
    Signal,
    Submit,
    Tell,
    Wait,
    Work,
    deliver,
)
from afd.act.context import ActionContext, Advanced, Executor, Workers
from afd.judge import sessions
from afd.record.types import JournalEntry, JournalState
from afd.world import git, teardown, tmux

log = logging.getLogger("afd.actions")

CRASH_ENV = "AFD_TEST_CRASH_AT_STEP"
# A crash point past every action's steps: right after a row is closed, before the poll plans again.
AFTER_FINISH = "finished"


def new_run() -> str:
    """A token naming one run of the daemon in the steps it records."""
    return secrets.token_hex(6)


def _crash_point(step: str) -> None:
    # Fault injection for the recovery tests: die as `kill -9` would, right
    # after this step is on disk and before its effect.
    if os.environ.get(CRASH_ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)


# --- beginning an action ------------------------------------------------------------


def begin(ctx: ActionContext, session: str, action: str, intent: Mapping, *, at: datetime | None = None,
          records: Sequence[Record] = ()) -> int:
    """Commit an action's intent (its first step in it) before anything touches the world; returns the row's id.

    `records` are what else the action's start changes (the session's state,
    an envelope turning attempting), committed with the row.
    """
    row = {**intent, "run": ctx.run}
    with ctx.store.transaction():
        entry_id = ctx.store.journal_begin(session, action, row, at=at or ctx.clock())
        told = commit(ctx, session, records)
    tell(ctx, session, told)
    if "step" in row:
        _crash_point(str(row["step"]))
    return entry_id


# --- committing what an action changes ----------------------------------------------------


def commit(ctx: ActionContext, session: str, records: Sequence[Record], report: Advanced | None = None) -> list[Tell]:
    """Write `records` for `session` (inside the caller's transaction); returns the events to tell once it is made."""
    store, now = ctx.store, ctx.clock()
    told: list[Tell] = []
    for record in records:
        if isinstance(record, Tell):
            told.append(record)
        elif isinstance(record, Observe):
            old = store.get_session(session)
            if old is None:
                continue  # forgotten meanwhile: nothing of it to change
            told += write_transition(store, old, sessions.transition(old, record.what, now), report)
        elif isinstance(record, Adopt):
            told += write_transition(store, None, record.made, report)
        elif isinstance(record, SaveHistory):
            store.save_resume_history(session, record.history)
        elif isinstance(record, AddLedger):
            if record.entry.journal_id is None or store.ledger_for_journal(record.entry.journal_id) is None:
                store.add_ledger(record.entry)
        elif isinstance(record, Follow):
            store.journal_begin(session, record.action, {**record.intent, "run": ctx.run}, at=now)
        else:
            record.write(store)
    return told


def write_transition(store, old, t: sessions.Transition, report: Advanced | None = None) -> list[Tell]:
    """Write what the sessions rulebook decided: the record (when it changed), the banner; its notes to tell."""
    new = t.record
    if old is None or (new is not old and replace(old, updated_at=new.updated_at) != new):
        store.upsert_session(new)
    if t.clear_banner:
        store.clear_banner(new.name)
    if t.forget_watch and report is not None:
        report.forget_watch.add(new.name)
    return [Tell(n.kind, n.message, new.name) for n in t.notes]


def tell(ctx: ActionContext, session: str, told: Sequence[Tell]) -> None:
    for t in told:
        ctx.event(t.kind, t.message, t.session or session, **t.data)


# --- the engine --------------------------------------------------------------------------


class Engine:
    """The executors of one supervisor, and the one loop that drives their rows."""

    def __init__(self, executors: Iterable[Executor], workers: Workers, *, monotonic: Callable[[], float] = time.monotonic):
        self.executors: dict[str, Executor] = {e.action: e for e in executors}
        self.workers = workers
        self.monotonic = monotonic  # the loop's clock: tests drive the engine with a simulated one
        self._met: set[int] = set()  # rows of an earlier run this run has said it carries on
        self.stepped_at: float | None = None  # `monotonic` time of the last step with an effect (a paste, an Enter)

    def executor(self, action: str) -> Executor | None:
        return self.executors.get(action)

    def pending(self, store) -> dict[str, JournalEntry]:
        """The pending row of each session (one action per session at most; the oldest first)."""
        found: dict[str, JournalEntry] = {}
        for entry in store.pending_journal():
            found.setdefault(entry.session, entry)
        return found

    def owning(self, store) -> set[str]:
        """Sessions whose pane a pending action owns: the poll neither follows nor judges them meanwhile."""
        return {e.session for e in store.pending_journal() if (x := self.executors.get(e.action)) is not None and x.owns_pane}

    def busy(self, store) -> bool:
        """Whether an action that waits on processes or a screen is in progress (the loop then turns faster).

        That is: one owns its pane, or a worker has finished. How long the loop also turns quickly
        after a step's effect (`stepped_at`) is the loop's setting (afd.daemon.loop.Tempo).
        """
        return bool(self.owning(store)) or self.workers.finished()

    def stepped_within(self, seconds: float) -> bool:
        """Whether a step's effect was performed less than `seconds` ago."""
        return self.stepped_at is not None and self.monotonic() - self.stepped_at < seconds

    def advance(self, ctx: ActionContext, live: Mapping[str, tuple], *, actions: Iterable[str] | None = None) -> Advanced:
        """One turn: each pending row (of `actions`, or all) one step further, or a few quick ones."""
        report = Advanced()
        wanted = set(actions) if actions is not None else None
        for entry in ctx.store.pending_journal():
            if wanted is not None and entry.action not in wanted:
                continue
            executor = self.executors.get(entry.action)
            if executor is None:
                self._unknown(ctx, entry, report)
                continue
            try:
                self._drive(ctx, executor, entry, live.get(entry.session), report)
            except Exception as exc:  # a bug must not leave the pane with nobody in charge
                log.exception("%s of %s failed at step %s", entry.action, entry.session, entry.intent.get("step"))
                self._crashed(ctx, executor, entry, exc, report)
        return report

    def _drive(self, ctx: ActionContext, executor: Executor, entry: JournalEntry, bound, report: Advanced) -> None:
        for _ in range(max(1, executor.chain)):
            facts = executor.facts(ctx, entry, bound)
            move = executor.step(entry.intent, facts)
            earlier = entry.intent.get("run") != ctx.run and entry.id not in self._met
            if isinstance(move, Finish):
                self._met.add(entry.id)
                self._finish(ctx, executor, entry, move, report, earlier=earlier)
                return
            if earlier:
                self._met.add(entry.id)
                ctx.event("journal.recovered",
                          f"{entry.action} of {entry.session}: afd restarted at step {entry.intent.get('step')!r}; "
                          "carried on from there", entry.session, journal=entry.id)
            if isinstance(move, Wait):
                records = executor.progress(ctx, entry, move)
                if records:
                    with ctx.store.transaction():
                        told = commit(ctx, entry.session, records, report)
                    tell(ctx, entry.session, told)
                return
            stepped = self._go(ctx, executor, entry, move, bound, report)
            if stepped is None or stepped.state is not JournalState.PENDING:
                return
            entry = stepped

    def _go(self, ctx: ActionContext, executor: Executor, entry: JournalEntry, move: Go, bound, report: Advanced) -> JournalEntry | None:
        row = {**entry.intent, **move.data, "step": str(move.step), "step_at": ctx.clock().isoformat(), "run": ctx.run,
               "effect_error": None}
        ctx.store.journal_set_intent(entry.id, row)
        if move.step != entry.intent.get("step"):
            _crash_point(str(move.step))
        entry = JournalEntry(entry.id, entry.at, entry.session, entry.action, row, entry.state)
        pane_id = _pane_of(row)
        effects = move.effect if isinstance(move.effect, tuple) else (move.effect,)
        for work in (e for e in effects if isinstance(e, Work)):
            self.workers.start(entry.id, work.name, work.call, (git.GitError,))
        rest = tuple(e for e in effects if not isinstance(e, Work))
        result = _perform(ctx, pane_id, Go(move.step, rest, move.data)) if rest else tmux.ActionResult(tmux.Outcome.DONE)
        if any(not isinstance(e, NoEffect) for e in rest):
            self.stepped_at = self.monotonic()
        if not result.ok:
            error = result.error or result.outcome.value
            log.warning("[%s] %s at %s: %s", entry.session, entry.action, move.step, error)
            row = {**row, "effect_error": error, "effect_outcome": result.outcome.value}
            entry = JournalEntry(entry.id, entry.at, entry.session, entry.action, row, entry.state)
        records = executor.progress(ctx, entry, move)
        if records or not result.ok:
            with ctx.store.transaction():
                if not result.ok:
                    ctx.store.journal_set_intent(entry.id, row)
                told = commit(ctx, entry.session, records, report)
            tell(ctx, entry.session, told)
        if not result.ok and executor.chain <= 1:
            return None
        return entry

    def _finish(self, ctx: ActionContext, executor: Executor, entry: JournalEntry, end: Finish, report: Advanced, *, earlier: bool) -> None:
        pane_id = _pane_of(entry.intent)
        notes = []
        for effect in end.effects:
            done = _perform(ctx, pane_id, Go(str(entry.intent.get("step")), effect))
            if not done.ok:
                log.warning("[%s] %s ending: %s", entry.session, entry.action, done.error or done.outcome.value)
            elif done.value and not isinstance(effect, NewSession):
                notes.append(done.value)  # what a cleanup removed, said in the outcome
        if notes:
            end = replace(end, outcome=f"{end.outcome} ({'; '.join(notes)})")
        records = executor.finished(ctx, entry, end)
        # The row's end and what the ending changes are one commit: a crash between them cannot redo either.
        with ctx.store.transaction():
            ctx.store.journal_finish(entry.id, *closing(end), at=ctx.clock())
            told = commit(ctx, entry.session, records, report)
        tell(ctx, entry.session, told)
        _crash_point(AFTER_FINISH)
        fresh = ctx.store.journal_entry(entry.id)
        self.workers.drop(entry.id)
        if fresh is not None:
            report.settled[entry.id] = fresh
        if earlier:
            kind = "journal.settled" if end.result in DONE_RESULTS else "journal.rolled-back"
            ctx.event(kind, f"{entry.action} of {entry.session}, interrupted by a stop of afd: {end.outcome}",
                      entry.session, journal=entry.id)

    def _unknown(self, ctx: ActionContext, entry: JournalEntry, report: Advanced) -> None:
        outcome = (f"afd stopped before finishing {entry.action}; nothing more was done. "
                   "Check the session's pane and worktree before retrying.")
        ctx.store.journal_finish(entry.id, JournalState.ROLLED_BACK, outcome)
        ctx.event("journal.rolled-back", f"{entry.action} of {entry.session}: {outcome}", entry.session)
        if (fresh := ctx.store.journal_entry(entry.id)) is not None:
            report.settled[entry.id] = fresh

    def _crashed(self, ctx: ActionContext, executor: Executor, entry: JournalEntry, exc: Exception, report: Advanced) -> None:
        fresh = ctx.store.journal_entry(entry.id)
        if fresh is None or fresh.state is not JournalState.PENDING:
            return
        end = Finish(Result.ROLLED_BACK, f"afd hit an internal error at step {fresh.intent.get('step')}: {exc}")
        try:
            self._finish(ctx, executor, fresh, end, report, earlier=False)
        except Exception:
            log.exception("rolling back %s of %s failed too", entry.action, entry.session)
            if (last := ctx.store.journal_entry(entry.id)) is not None and last.state is JournalState.PENDING:
                ctx.store.journal_finish(entry.id, JournalState.ROLLED_BACK, end.outcome)


def closing(end: Finish) -> tuple[JournalState, str]:
    """How a row is closed for an ending: its state, and its outcome with the result word where it adds one."""
    state = JournalState.DONE if end.result in DONE_RESULTS else JournalState.ROLLED_BACK
    if end.result in (Result.DONE, Result.ROLLED_BACK):
        return state, end.outcome
    return state, f"{end.result.value}: {end.outcome}"


def _pane_of(row: Mapping) -> str | None:
    return row.get("pane") or row.get("pane_id")


# --- performing effects ----------------------------------------------------------------


def _perform(ctx: ActionContext, pane_id: str | None, move: Go) -> tmux.ActionResult:
    """Carry out a move's effect (each of them, in order, stopping at the first that fails)."""
    effects = move.effect if isinstance(move.effect, tuple) else (move.effect,)
    result = tmux.ActionResult(tmux.Outcome.DONE)
    for effect in effects:
        result = _perform_one(ctx, pane_id, effect)
        if not result.ok:
            break
    return result


def _perform_one(ctx: ActionContext, pane_id: str | None, effect) -> tmux.ActionResult:
    server = ctx.server
    if isinstance(effect, NoEffect):
        return tmux.ActionResult(tmux.Outcome.DONE)
    if isinstance(effect, Paste | Key | Submit | Respawn | PaneOption):
        if pane_id is None:
            return tmux.ActionResult(tmux.Outcome.FAILED, error="the action's journal row names no pane")
        return _perform_in_pane(server, pane_id, effect)
    if isinstance(effect, Signal):
        teardown.signal_group(effect.pgid, effect.signum)
        return tmux.ActionResult(tmux.Outcome.DONE)  # an empty group is no failure: what is gone is confirmed later
    if isinstance(effect, KillPane):
        return tmux.kill_pane(server, effect.pane)
    if isinstance(effect, NewSession):
        started = tmux.new_session(server, effect.name, effect.cwd, list(effect.argv))
        if started.ok and started.value and effect.typed:
            tmux.send_text(server, started.value, effect.typed)
        return started
    if isinstance(effect, Cleanup):
        removed = git.remove_new_worktree(Path(effect.repo), Path(effect.worktree) if effect.worktree else None, effect.branch)
        return tmux.ActionResult(tmux.Outcome.DONE, value=removed)
    raise TypeError(f"no way to perform {effect!r}")


def _perform_in_pane(server: tmux.ServerRef, pane_id: str, effect: Paste | Key | Submit | Respawn | PaneOption) -> tmux.ActionResult:
    if isinstance(effect, Paste):
        return deliver.paste(server, pane_id, effect.text)
    if isinstance(effect, Key):
        return deliver.press(server, pane_id, effect.name)
    if isinstance(effect, Submit):
        pasted = deliver.paste(server, pane_id, effect.text)
        return deliver.press(server, pane_id, "Enter") if pasted.ok else pasted
    if isinstance(effect, Respawn):
        if effect.client_path is not None:
            return tmux.respawn_pane_from(server, pane_id, effect.cwd, list(effect.argv), effect.client_path, kill=effect.kill)
        return tmux.respawn_pane(server, pane_id, effect.cwd, list(effect.argv), kill=effect.kill)
    if effect.restore or effect.value is None:  # None: back to what the window says
        return tmux.restore_pane_option(server, pane_id, effect.name, effect.value)
    return tmux.set_pane_option(server, pane_id, effect.name, effect.value)
