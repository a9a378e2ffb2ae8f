"""`sessions create` as a journaled action the poll loop advances.

`git worktree add` can take up to two minutes (a big checkout, a slow
`post-checkout` hook), far longer than a poll or the watchdog allow, so it
runs on a worker thread that only runs git and never touches the store. The
loop advances the action one short step at a time, writing each step to the
journal before its effect:

    worktree  (worker: git worktree add)
    session   (tmux new-session; the session record is written with the next step)
    awaiting  (afd started the agent and waits to see it run; the supervisor
               settles the entry when it does, see afd/sessions.py)

A crash at any step leaves the entry pending, and `recover` looks at what
exists (pane, agent, worktree, branch) and settles it or cleans up
(afd/recovery.py decides which).
"""

from __future__ import annotations

import logging
import shlex
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from afd.world import git, tmux

from afd.observe import identity

from afd.act import recovery
from afd.observe.identity import IdentityKind
from afd.model import IdentitySource, SessionState
from afd.record.store import JournalEntry, JournalState, SessionRecord

log = logging.getLogger("afd.create")

ACTION = "create"
STEP_WORKTREE, STEP_SESSION, STEP_AWAITING = "worktree", "session", "awaiting"


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

    def intent(self) -> dict:
        return {
            "repo": self.repo, "base": self.base, "branch": self.branch, "worktree": self.worktree,
            "agent": self.agent, "argv": list(self.argv), "tmux_session": self.tmux_session,
            "mission": self.prompt, "typed_prompt": self.typed_prompt, "server_socket": self.server_socket,
        }


@dataclass
class _Job:
    """One blocking call on a worker thread; the loop reads `result`/`error` once `done` is set."""

    entry_id: int
    then: Callable[[_Job], None]
    done: threading.Event = field(default_factory=threading.Event)
    result: object = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Answer:
    """How a create ended, for the client that asked: a result, or an error and its exit code."""

    result: dict | None = None
    error: str | None = None


class CreateRunner:
    """The creates in flight on one supervisor."""

    def __init__(self, supervisor):
        self.sup = supervisor
        self._jobs: list[_Job] = []
        self._answers: dict[int, Answer] = {}
        self.wake: Callable[[], None] = lambda: None  # the daemon's loop wake-up, set when it runs

    # --- the normal path --------------------------------------------------

    def begin(self, plan: CreatePlan) -> int:
        store = self.sup.store
        with store.transaction():
            entry_id = store.journal_begin(plan.name, ACTION, plan.intent())
            store.journal_step(entry_id, STEP_WORKTREE)
        repo, branch, path, base = Path(plan.repo), plan.branch, Path(plan.worktree), plan.base
        self._spawn(entry_id, lambda: git.add_worktree(repo, branch, path, base), self._worktree_added)
        return entry_id

    def advance(self) -> None:
        """Carry every create whose worker finished one step further (short, non-blocking steps)."""
        finished = [job for job in self._jobs if job.done.is_set()]
        for job in finished:
            self._jobs.remove(job)
            try:
                job.then(job)
            except Exception:
                log.exception("create (journal entry %s) failed", job.entry_id)
                self._finish(job.entry_id, JournalState.ROLLED_BACK, "afd failed while creating the session; see the log")

    def answer(self, entry_id: int) -> Answer | None:
        """How the create ended, or None while it runs."""
        self.advance()
        if entry_id in self._answers:
            return self._answers[entry_id]
        entry = self.sup.store.journal_entry(entry_id)
        if entry is None or entry.action != ACTION:
            return Answer(error=f"no create with id {entry_id}")
        if entry.state is JournalState.PENDING and entry.intent.get("step") != STEP_AWAITING:
            return None
        if entry.state is JournalState.ROLLED_BACK:
            return Answer(error=entry.outcome or "the create was rolled back")
        return Answer(result=_result(entry))

    def _spawn(self, entry_id: int, work: Callable[[], object], then: Callable[[_Job], None]) -> None:
        job = _Job(entry_id, then)

        def run() -> None:
            try:
                job.result = work()
            except git.GitError as exc:
                job.error = str(exc)
            except Exception as exc:  # reported by the loop, which owns the journal
                job.error = f"{type(exc).__name__}: {exc}"
            finally:
                job.done.set()
                self.wake()

        self._jobs.append(job)
        threading.Thread(target=run, name=f"afd-create-{entry_id}", daemon=True).start()

    def _finish(self, entry_id: int, state: JournalState, outcome: str) -> None:
        entry = self.sup.store.journal_entry(entry_id)
        if entry is not None and entry.state is JournalState.PENDING:
            self.sup.store.journal_finish(entry_id, state, outcome)
        if state is JournalState.ROLLED_BACK:
            self._answers[entry_id] = Answer(error=outcome)
            self.sup.event("session.create-failed", outcome, entry.session if entry else None)

    def _worktree_added(self, job: _Job) -> None:
        entry = self.sup.store.journal_entry(job.entry_id)
        if job.error is not None:
            self._finish(job.entry_id, JournalState.ROLLED_BACK, job.error)
            return
        tree: git.Worktree = job.result
        intent = {**entry.intent, "base_sha": tree.base_sha}
        self.sup.store.journal_step(job.entry_id, STEP_SESSION, base_sha=tree.base_sha)
        server = self.sup.server
        started = tmux.new_session(server, intent["tmux_session"], intent["worktree"], intent["argv"])
        if started.outcome is tmux.Outcome.UNKNOWN or (started.ok and not started.value):
            # The agent may have started all the same: look before undoing anything.
            inv = tmux.list_panes(server)
            pane = next((p for p in inv.panes if p.session_name == intent["tmux_session"]), None) if inv.answered else None
            if pane is None and not inv.answered:
                self._finish(job.entry_id, JournalState.ROLLED_BACK,
                             f"tmux did not answer while starting the agent ({started.error}); kept worktree "
                             f"{intent['worktree']} and branch {intent['branch']}: check `tmux ls` before removing them")
                return
            if pane is not None:
                started = tmux.ActionResult(tmux.Outcome.DONE, pane.pane_id)
        if not started.ok or not started.value:
            why = f"tmux could not start the agent: {started.error or started.outcome.value}"
            repo, path, branch = Path(intent["repo"]), Path(intent["worktree"]), intent["branch"]
            # A failed first start leaves nothing worth keeping in the new worktree.
            self._spawn(job.entry_id, lambda: git.remove_new_worktree(repo, path, branch),
                        lambda j: self._finish(j.entry_id, JournalState.ROLLED_BACK, f"{why}; {j.result or j.error}"))
            return
        pane = started.value
        if intent.get("typed_prompt"):
            tmux.send_text(server, pane, intent["typed_prompt"])
        self._record(entry, {**intent, "pane": pane})
        self._answers[job.entry_id] = Answer(result=_result(self.sup.store.journal_entry(job.entry_id)))
        self.sup.event(
            "session.created",
            f"created {intent['branch']} at {tree.base_sha[:12]} in {intent['worktree']}; "
            f"started {shlex.join(intent['argv'][:1])} in pane {pane}",
            entry.session,
        )

    def _record(self, entry: JournalEntry, intent: dict) -> None:
        """Write the session and move the entry to `awaiting`, together: from here the supervisor waits for the agent."""
        inv = tmux.list_panes(self.sup.server)
        info = next((p for p in inv.panes if p.pane_id == intent["pane"]), None) if inv.answered else None
        now = datetime.now(timezone.utc)
        rec = SessionRecord(
            name=entry.session,
            pane_id=intent["pane"],
            server_socket=(inv.socket_path if inv.answered and inv.socket_path else intent["server_socket"]),
            server_pid=inv.server_pid if inv.answered else None,
            agent=intent["agent"],
            identity=IdentityKind.UNKNOWN,  # until the supervisor sees the agent run
            identity_source=IdentitySource.PROCESS,
            state=SessionState.IDLE,
            created_at=now,
            updated_at=now,
            mission=intent.get("mission"),
            worktree=intent["worktree"],
            branch=intent["branch"],
            # Where tmux put it (base-index and pane-base-index are the user's).
            location=info.location if info is not None else None,
        )
        with self.sup.store.transaction():
            self.sup.store.upsert_session(rec)
            self.sup.store.journal_step(entry.id, STEP_AWAITING, pane=intent["pane"])

    # --- recovery at start --------------------------------------------------

    def recover(self, entry: JournalEntry) -> recovery.Step:
        """Look at what the interrupted create left, and settle it or clean up; returns what was decided."""
        facts = self._facts(entry)
        step = recovery.decide_at_start(entry, facts)
        intent = entry.intent
        if step.write_record and facts.pane is not None:
            self._record(entry, {**intent, "pane": facts.pane})
        if step.kill_pane and facts.pane is not None:
            tmux.kill_pane(self.sup.server, facts.pane)
        outcome = step.outcome
        if step.remove_worktree or step.delete_branch:
            removed = git.remove_new_worktree(
                Path(intent["repo"]),
                Path(intent["worktree"]) if step.remove_worktree else None,
                intent["branch"] if step.delete_branch else None,
            )
            outcome = f"{outcome} ({removed})"
        if step.next is recovery.Resolution.SETTLE:
            self.sup.store.journal_finish(entry.id, JournalState.DONE, outcome)
        elif step.next is recovery.Resolution.ROLL_BACK:
            self.sup.store.journal_finish(entry.id, JournalState.ROLLED_BACK, outcome)
        return recovery.Step(step.next, outcome)

    def _facts(self, entry: JournalEntry) -> recovery.CreateFacts:
        intent = entry.intent
        inv = tmux.list_panes(self.sup.server)
        pane = None
        if inv.answered:
            # By id once it was written down; before that, by the tmux session name it was given.
            wanted = intent.get("pane")
            pane = next((p for p in inv.panes if (p.pane_id == wanted if wanted else
                                                  p.session_name == intent.get("tmux_session"))), None)
        kind = None
        if pane is not None and not pane.dead:
            overrides = {n: o.command for n, o in self.sup.config.agents.items() if o.command}
            kind = identity.identify(identity.pane_processes(pane.pane_pid), self.sup.plugins.agents, overrides).kind
        repo, path, branch = Path(intent.get("repo", ".")), Path(intent.get("worktree", "/nonexistent")), intent.get("branch", "")
        try:
            branch_there = bool(branch) and git.branch_exists(repo, branch)
        except git.GitError:
            branch_there = False
        there = path.exists()
        return recovery.CreateFacts(
            tmux_answered=inv.answered,
            pane=pane.pane_id if pane is not None else None,
            pane_dead=bool(pane and pane.dead),
            identity=kind,
            record_exists=self.sup.store.get_session(entry.session) is not None,
            worktree_exists=there,
            branch_exists=branch_there,
            untouched=(there or branch_there) and git.is_untouched(repo, path, branch, intent.get("base_sha") or _base_of(repo, intent)),
        )


def _base_of(repo: Path, intent: dict) -> str | None:
    """The base commit a create planned from, when it crashed before writing it down."""
    try:
        return git.commit_of(repo, intent.get("base") or "HEAD")
    except git.GitError:
        return None


def _result(entry: JournalEntry) -> dict:
    intent = entry.intent
    return {"name": entry.session, "pane": intent.get("pane"), "branch": intent.get("branch"),
            "worktree": intent.get("worktree"), "tmux_session": intent.get("tmux_session")}
