"""What the daemon does for `afd jobs …` requests: a group of commands in the daemon's table (afd/daemon/requests.py).

Every request that acts for "the session I run in" names its pane and is
checked against the process tree (afd/world/caller.py) before anything else.
Refusals are one line and exit 1, and come before anything is written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from afd.errors import EXIT_FAIL, EXIT_USAGE, UserError
from afd.jobs import rules as jobs
from afd.jobs.book import JobBook
from afd.jobs.outbox import LIVE_STATES, creating_sessions
from afd.jobs.rules import Rejection
from afd.record.naming import NameNotFound, is_valid_name, resolve
from afd.record.store import Store
from afd.record.types import JobStatus, SessionRecord
from afd.world import caller


class JobRequests:
    """`session` finds a session by the name a person gave; `create_session` is the daemon's `sessions.create`."""

    def __init__(self, daemon: Any, session: Callable[[str], SessionRecord], create_session: Callable[..., dict]):
        self.daemon = daemon
        self._session = session
        self.do_sessions_create = create_session

    @property
    def sup(self) -> Any:
        return self.daemon.supervisor

    @property
    def store(self) -> Store:
        return self.daemon.store

    def commands(self) -> dict[str, Callable[..., object]]:
        return {
            "jobs.create": self.do_jobs_create,
            "jobs.list": self.do_jobs_list,
            "jobs.done": self.do_jobs_done,
            "jobs.fail": self.do_jobs_fail,
            "jobs.handoff": self.do_jobs_handoff,
        }

    @property
    def book(self) -> JobBook:
        return JobBook(self.store)

    def _caller(self, pane: str | None):
        return self._verified(pane).session

    def _verified(self, pane: str | None) -> caller.Caller:
        control = getattr(self.daemon, "control", None)
        pid = getattr(control, "peer_pid", None)
        try:
            return caller.verified_session(self.daemon.server, self.store.list_sessions(), pane, pid)
        except caller.CallerError as exc:
            raise UserError(f"refused: {exc}", EXIT_FAIL) from None

    def _job_json(self, job: jobs.Job, sessions: dict, creating: set[str]) -> dict:
        rec = sessions.get(job.name)
        status = jobs.observed_status(job.status, rec.state if rec else None, job.name in creating)
        return {"name": job.name, "title": job.title, "status": status.value, "owner": job.owner,
                "parent": job.parent, "agent": job.agent, "branch": rec.branch if rec else None,
                "summary": job.summary, "masters": self.book.masters(job.name)}

    def do_jobs_create(self, name: str, agent: str, prompt: str, pane: str | None = None,
                       title: str | None = None, parent: str | None = None) -> dict:
        found = self._verified(pane)
        owner = found.session
        book = self.book
        if not is_valid_name(name):
            raise UserError(f"{name!r} is not a valid job name (letters, digits, . _ - : @ +)", EXIT_USAGE)
        if book.job(name) is not None:
            raise UserError(f"a job named {name!r} already exists", EXIT_USAGE)
        if parent is not None:
            above = book.job(parent)
            if above is None or above.owner != owner.name:
                raise UserError(f"{parent!r} is not one of {owner.name}'s jobs, so it cannot be the parent", EXIT_USAGE)
        # The session's recorded worktree, else where its pane is now (a pane adopted before its cwd showed).
        where = owner.worktree or found.pane.cwd
        if not where:
            raise UserError(f"session {owner.name} has no worktree afd knows of, so a job has no repository to branch from", EXIT_USAGE)
        brief = f"{prompt.strip()}\n\n{jobs.HELP_POINTER}" if prompt.strip() else ""
        title = (title or (prompt.strip().splitlines() or [name])[0]).strip()[:80]
        with self.store.transaction():
            book.add_job(name, title, owner.name, parent, agent)
            begun = self.do_sessions_create(name, agent, str(Path(where)), brief)
        self.sup.event("job.created", f"job {name} created for {owner.name}", name)
        return {**begun, "owner": owner.name}

    def do_jobs_list(self, pane: str | None = None) -> dict:
        sessions = {r.name: r for r in self.store.list_sessions()}
        mine = None
        if pane:
            try:
                mine = self._caller(pane).name
            except UserError:
                mine = None  # not (provably) a session: show everything, as from outside
        creating = creating_sessions(self.store)
        listed = [self._job_json(j, sessions, creating) for j in self.book.jobs().values() if mine is None or j.owner == mine]
        return {"supervisor": mine, "jobs": listed}

    def _finish_job(self, pane: str | None, status: JobStatus, text_of, summary: str | None) -> dict:
        me = self._caller(pane)
        job = self.book.job(me.name)
        if job is None:
            raise UserError(f"session {me.name} is not a job (no `afd jobs create` made it)", EXIT_FAIL)
        if job.status in jobs.FINAL:
            raise UserError(f"job {me.name} is already {job.status.value}", EXIT_FAIL)
        with self.store.transaction():
            self.book.set_status(job.name, status, summary)
            self.book.enqueue(f"{status.value}:{job.name}", status.value, text_of(job), job=job.name)
        self.sup.event(f"job.{status.value}", f"job {job.name} is {status.value}" + (f": {summary}" if summary else ""), job.name)
        return {"name": job.name, "status": status.value, "owner": job.owner}

    def do_jobs_done(self, pane: str | None = None, summary: str | None = None) -> dict:
        def text(job: jobs.Job) -> str:
            rec = self.store.get_session(job.name)
            return jobs.done_text(job, rec.branch if rec else None, summary)

        return self._finish_job(pane, JobStatus.DONE, text, summary)

    def do_jobs_fail(self, reason: str, pane: str | None = None) -> dict:
        if not reason.strip():
            raise UserError("--reason is empty: say why the job cannot finish", EXIT_USAGE)
        return self._finish_job(pane, JobStatus.FAILED, lambda job: jobs.failed_text(job, reason.strip()), reason.strip())

    def do_jobs_handoff(self, to: str, pane: str | None = None, selected: list[str] | None = None,
                        note: str | None = None) -> dict:
        return self.hand_jobs(self._caller(pane), to, selected, note)

    def hand_jobs(self, me, to: str, names: list[str] | None, note: str | None) -> dict:
        """Move `me`'s jobs to session `to`, once `me` is established (its pane, or the dashboard's word).

        `to` is any name a person types for a session (`naming.resolve`); a name that means
        none is refused below as not a live session, an ambiguous one before anything else.
        """
        try:
            target: SessionRecord | None = resolve(to, self.store.list_sessions())
        except NameNotFound:
            target = None
        if target is not None:
            to = target.name
        all_jobs = self.book.jobs()
        picked = jobs.select_handoff(
            all_jobs, me.name, to, names, note,
            target_live=target is not None and target.state in LIVE_STATES | {"limited"},
            target_agent_known=target is not None and target.agent in self.daemon.plugins.agents,
        )
        if isinstance(picked, Rejection):
            raise UserError(f"handoff refused: {picked.reason}", EXIT_FAIL)
        sessions = {r.name: r for r in self.store.list_sessions()}
        moved = [all_jobs[n] for n in picked.moved]
        masters = {n: jobs.masters_after_handoff(self.book.masters(n), me.name, to) for n in picked.moved}
        creating = creating_sessions(self.store)
        shown = [replace(j, status=jobs.observed_status(j.status, sessions[j.name].state if j.name in sessions else None,
                                                        j.name in creating))
                 for j in moved]
        with self.store.transaction():
            receipt = self.book.transfer(picked.moved, me.name, to, note, masters)
            self.book.enqueue(f"wake:{receipt}", "handoff-wake", jobs.waking_text(me.name, shown, note), to_session=to)
            self.book.enqueue(f"confirm:{receipt}", "handoff-confirm", jobs.confirmation_text(to, picked.moved), to_session=me.name)
        self.sup.event("job.handed-off", jobs.confirmation_text(to, picked.moved) + f" (receipt {receipt})", me.name)
        return {"receipt": receipt, "from": me.name, "to": to, "jobs": list(picked.moved), "top": list(picked.top)}
