"""`sessions create` as a journaled action the engine advances.

`git worktree add` can take up to two minutes (a big checkout, a slow
`post-checkout` hook), far longer than a poll or the watchdog allow, so it
runs on a worker thread that only runs git and never touches the store
(`Work`, which the engine starts like any other effect). The engine advances
the action one short step at a time, writing each step to the journal before
its effect:

    planned   (the intent is committed; nothing exists yet)
    worktree  (worker: git worktree add)
    session   (tmux new-session; the session record is written with the next step)
    awaiting  (afd started the agent and waits to see it run: the poll records
               the agent in the session once it sees it — past a launcher, see
               afd/judge/sessions.py — or the pane ending first; this step then
               settles the row from that record)

A row an earlier run left has no worker of this run: its step then looks at
what exists (pane, agent, worktree, branch) and settles it, waits on, or
cleans up (`recover`) — the same step function, no separate recovery table.
"""

from __future__ import annotations

import enum
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import cast

from afd.act import Adopt, Cleanup, Finish, Go, KillPane, Move, NewSession, NoEffect, Record, Result, Tell, Wait, Work
from afd.act.context import ActionContext
from afd.act.intent import from_row, stored, to_row
from afd.act.launch import bare
from afd.judge import sessions
from afd.model import IdentityKind, SessionState
from afd.observe import identity
from afd.record.types import JournalEntry, JournalState
from afd.world import git, tmux

ACTION = "create"


class CreateStep(enum.StrEnum):
    PLANNED = "planned"
    WORKTREE = "worktree"
    SESSION = "session"
    AWAITING = "awaiting"


STEP_WORKTREE, STEP_SESSION, STEP_AWAITING = CreateStep.WORKTREE, CreateStep.SESSION, CreateStep.AWAITING


@dataclass(frozen=True, slots=True)
class CreatePlan:
    """Everything a create needs, checked by the request handler before anything changes."""

    name: str
    agent: str
    repo: str
    base: str | None
    branch: str
    worktree: str
    tmux_session: str
    argv: tuple[str, ...]
    prompt: str
    typed_prompt: str | None  # pasted into the agent's composer after it starts (PromptDelivery.TYPED)
    server_socket: str  # as tmux reported it before the create: never left empty
    account: str | None = None  # the account it starts on (None: the agent names no account variables)
    routed: str | None = None  # why that account, when route_new_sessions chose it

    def intent(self) -> CreateIntent:
        return CreateIntent(
            repo=self.repo, base=self.base, branch=self.branch, worktree=self.worktree, agent=self.agent,
            argv=self.argv, tmux_session=self.tmux_session, mission=self.prompt, typed_prompt=self.typed_prompt,
            server_socket=self.server_socket, account=self.account, routed=self.routed,
        )


@dataclass(frozen=True, slots=True)
class CreateIntent:
    """A create's journal row, typed."""

    repo: str = "."
    base: str | None = None
    branch: str = ""
    worktree: str = "/nonexistent"
    agent: str | None = None
    argv: tuple[str, ...] = ()
    tmux_session: str = ""
    mission: str | None = None
    typed_prompt: str | None = None
    server_socket: str = ""
    account: str | None = None
    routed: str | None = None
    base_sha: str | None = None
    pane: str | None = None
    # A row 0.1.0 wrote starts at `worktree` (its worker started beside the engine): it has no `step` default of its own.
    step: CreateStep = CreateStep.WORKTREE
    step_at: datetime | None = None
    run: str | None = None
    effect_error: str | None = None


@dataclass(frozen=True, slots=True)
class Worker:
    """This run's worker for the row: still running, or its outcome."""

    done: bool
    error: str | None = None
    base_sha: str | None = None


@dataclass(frozen=True, slots=True)
class CreateFacts:
    """What exists now of a create."""

    tmux_answered: bool
    pane: str | None  # the created pane (by id from the intent, else by its tmux session name), if it exists
    pane_dead: bool
    identity: IdentityKind | None  # what runs in that pane
    record_exists: bool
    worktree_exists: bool = False
    branch_exists: bool = False
    untouched: bool = False  # the worktree is clean and its branch still at the base commit: nothing to lose
    worker: Worker | None = None  # None: no worker of this run (the row is an earlier run's)
    # What the poll recorded in the session since: the agent it saw running there (its pid),
    # and the session's state (exited or gone: the pane ended before an agent was seen).
    agent_pid: int | None = None
    session_state: SessionState | None = None


# --- deciding -----------------------------------------------------------------------


def step(row: Mapping | CreateIntent, f: CreateFacts) -> Move:
    i = row if isinstance(row, CreateIntent) else from_row(CreateIntent, row)
    if i.step is CreateStep.PLANNED:
        # Nothing was made before this step is on record, whichever run recorded it: make the worktree.
        repo, branch, path, base = Path(i.repo), i.branch, Path(i.worktree), i.base
        return Go(CreateStep.WORKTREE, Work("worktree", lambda: git.add_worktree(repo, branch, path, base).base_sha))
    if i.step is CreateStep.WORKTREE:
        if f.worker is None:
            return recover(i, f)
        if not f.worker.done:
            return Wait("git is adding the worktree")
        if f.worker.error is not None:
            return Finish(Result.FAILED, f.worker.error)
        return Go(CreateStep.SESSION, NewSession(i.tmux_session, i.worktree, i.argv, i.typed_prompt), stored(base_sha=f.worker.base_sha))
    if i.step is CreateStep.SESSION:
        if f.worker is None:
            return recover(i, f)
        if f.pane is not None:
            return Go(CreateStep.AWAITING, NoEffect(), stored(pane=f.pane))
        if not f.tmux_answered:
            return Finish(Result.FAILED, f"tmux did not answer while starting the agent ({i.effect_error}); kept worktree "
                                         f"{i.worktree} and branch {i.branch}: check `tmux ls` before removing them")
        # A failed first start leaves nothing worth keeping in the new worktree.
        return Finish(Result.FAILED, f"tmux could not start the agent: {i.effect_error or 'no pane was made'}",
                      effects=(Cleanup(i.repo, i.worktree, i.branch),))
    # Awaiting: settled from what the poll recorded of the session since.
    if f.pane is not None and not f.record_exists:
        return Go(CreateStep.AWAITING, NoEffect(), stored(pane=f.pane))  # the record is written with this step
    if f.pane is None and not f.record_exists:
        return recover(i, f)
    if f.agent_pid is not None:
        return Finish(Result.DONE, f"{i.agent} seen running in pane {i.pane} (pid {f.agent_pid})")
    if f.session_state is SessionState.GONE:
        return Finish(Result.DONE, f"pane {i.pane} closed before its agent was seen running")
    if f.session_state is SessionState.EXITED:
        return Finish(Result.DONE, f"no agent was seen running in pane {i.pane}; the session is exited (its events say why)")
    return Wait("waiting to see the agent run")


def recover(i: CreateIntent, f: CreateFacts) -> Move:
    """A row an earlier run left: settle it, wait on, or undo what it made — from what exists now."""
    worktree, branch = i.worktree, i.branch
    if not f.tmux_answered:
        return Wait("tmux did not answer, so what the interrupted create left cannot be checked; "
                    "it stays pending until tmux answers")
    if f.pane is not None and not f.pane_dead:
        if f.identity is IdentityKind.KNOWN:
            return Finish(Result.DONE, f"found its agent running in pane {f.pane}; the session is kept"
                          + (" and recorded now" if not f.record_exists else ""),
                          detail=None if f.record_exists else f.pane)  # the pane to record the session in
        return Go(CreateStep.AWAITING, NoEffect(), stored(pane=f.pane))
    made = [what for what, there in (("worktree " + worktree, f.worktree_exists), ("branch " + branch, f.branch_exists)) if there]
    kill = (KillPane(f.pane),) if f.pane is not None else ()  # a dead pane kept by remain-on-exit
    if f.record_exists:
        return Finish(Result.DONE, "its session was recorded and its pane is gone since; "
                      f"{', '.join(made) or 'nothing'} kept for you to inspect", effects=kill)
    if not made:
        return Finish(Result.ROLLED_BACK, "nothing had been made yet (no branch, worktree or tmux session); nothing to undo",
                      effects=kill)
    if not f.untouched:
        return Finish(Result.ROLLED_BACK, f"no agent was started; kept {' and '.join(made)}: it has changes of its own",
                      effects=kill)
    return Finish(Result.ROLLED_BACK, f"no agent was started; removed {' and '.join(made)} that the interrupted create left",
                  effects=kill + (Cleanup(i.repo, worktree if f.worktree_exists else None, branch if f.branch_exists else None),))


# --- the executor ------------------------------------------------------------------------


class CreateExecutor:
    action = ACTION
    chain = 3
    owns_pane = False

    def begin(self, ctx: ActionContext, plan: CreatePlan) -> int:
        """Commit the create's intent; the engine's next turn starts its worktree on a worker. Returns the row's id."""
        from afd.act import runner

        intent = replace(plan.intent(), step=CreateStep.PLANNED, step_at=ctx.clock())
        return runner.begin(ctx, plan.name, ACTION, to_row(intent))

    def facts(self, ctx: ActionContext, entry: JournalEntry, bound) -> CreateFacts:
        i = from_row(CreateIntent, entry.intent)
        job = ctx.workers.get(entry.id, "worktree") if i.run == ctx.run else None
        worker = None
        if job is not None:
            base_sha = cast("str | None", job.result) if job.done.is_set() else None  # what the worktree worker returns
            worker = Worker(job.done.is_set(), job.error, base_sha)
        elif i.run == ctx.run and i.step is not CreateStep.WORKTREE:
            worker = Worker(True, None, i.base_sha)  # the worktree was made by this run
        inv = tmux.list_panes(ctx.server)
        pane = None
        if inv.answered:
            # By id once it was written down; before that, by the tmux session name it was given.
            pane = next((p for p in inv.panes if (p.pane_id == i.pane if i.pane else p.session_name == i.tmux_session)), None)
        kind = None
        if pane is not None and not pane.dead:
            kind = identity.identify(identity.pane_processes(pane.pane_pid), ctx.plugins.agents, ctx.overrides()).kind
        rec = ctx.store.get_session(entry.session)
        facts = CreateFacts(
            tmux_answered=inv.answered,
            pane=pane.pane_id if pane is not None else None,
            pane_dead=bool(pane and pane.dead),
            identity=kind,
            record_exists=rec is not None,
            worker=worker,
            agent_pid=rec.agent_pid if rec is not None else None,
            session_state=rec.state if rec is not None else None,
        )
        if worker is None and inv.answered:
            return replace(facts, **self._left(i))
        return facts

    def _left(self, i: CreateIntent) -> dict:
        """What an interrupted create left in git (looked at only when recovering: these are git calls)."""
        repo, path, branch = Path(i.repo), Path(i.worktree), i.branch
        try:
            branch_there = bool(branch) and git.branch_exists(repo, branch)
        except git.GitError:
            branch_there = False
        there = path.exists()
        base = i.base_sha or _base_of(repo, i)
        return {"worktree_exists": there, "branch_exists": branch_there,
                "untouched": (there or branch_there) and git.is_untouched(repo, path, branch, base)}

    def step(self, intent: Mapping, facts: CreateFacts) -> Move:
        return step(intent, facts)

    def progress(self, ctx: ActionContext, entry: JournalEntry, move: Move) -> tuple[Record, ...]:
        if not isinstance(move, Go) or move.step != CreateStep.AWAITING:
            return ()
        i = from_row(CreateIntent, entry.intent)
        if ctx.store.get_session(entry.session) is not None or not i.pane:
            return ()
        on = f" on account {i.account}" if i.account and i.account != i.agent else ""
        if i.routed:
            on += f" ({i.routed})"
        said = Tell("session.created", f"created {i.branch} at {(i.base_sha or '')[:12]} in {i.worktree}; "
                                       f"started {shlex.join(bare(i.argv)[:1])}{on} in pane {i.pane}")
        return (_record(ctx, entry.session, i), said)

    def finished(self, ctx: ActionContext, entry: JournalEntry, end: Finish) -> tuple[Record, ...]:
        i = from_row(CreateIntent, entry.intent)
        records: list[Record] = []
        if end.result is Result.DONE and isinstance(end.detail, str) and ctx.store.get_session(entry.session) is None:
            records.append(_record(ctx, entry.session, replace(i, pane=end.detail)))
        if end.result not in (Result.DONE,):
            records.append(Tell("session.create-failed", end.outcome))
        return tuple(records)

    def answer(self, store, entry_id: int) -> dict | None:
        """How a create ended, for the client that asked: None while it runs; raises ValueError with the error."""
        entry = store.journal_entry(entry_id)
        if entry is None or entry.action != ACTION:
            raise ValueError(f"no create with id {entry_id}")
        if entry.state is JournalState.PENDING and store.get_session(entry.session) is None:
            return None  # no session yet: the worktree or the tmux session is still being made
        if entry.state is JournalState.ROLLED_BACK:
            raise ValueError(_reason(entry.outcome) or "the create was rolled back")
        i = from_row(CreateIntent, entry.intent)
        return {"name": entry.session, "pane": i.pane, "branch": i.branch, "worktree": i.worktree, "tmux_session": i.tmux_session,
                "agent": i.agent, "account": i.account, "routed": i.routed}


def _reason(outcome: str | None) -> str | None:
    """The outcome without the result word the journal puts before it."""
    if outcome and outcome.startswith(f"{Result.FAILED.value}: "):
        return outcome[len(Result.FAILED.value) + 2:]
    return outcome


def _record(ctx: ActionContext, name: str, i: CreateIntent) -> Adopt:
    """The session of a created pane, as the rulebook makes it: from here the poll watches for its agent."""
    inv = tmux.list_panes(ctx.server)
    info = inv.pane(i.pane) if i.pane else None
    assert i.pane is not None  # recorded once the pane was made
    return Adopt(sessions.created(
        name=name,
        pane_id=i.pane,
        server_socket=(inv.socket_path if inv.answered and inv.socket_path else i.server_socket),
        server_pid=inv.server_pid if inv.answered else None,
        agent=i.agent,
        mission=i.mission,
        worktree=i.worktree,
        branch=i.branch,
        # Where tmux put it (base-index and pane-base-index are the user's).
        location=info.location if info is not None else None,
        now=ctx.clock(),
    ))


def _base_of(repo: Path, i: CreateIntent) -> str | None:
    """The base commit a create planned from, when it crashed before writing it down."""
    try:
        return git.commit_of(repo, i.base or "HEAD")
    except git.GitError:
        return None
