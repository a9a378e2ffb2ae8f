"""The outbox: jobs' statuses from what the poll saw, and whom each pending envelope goes to.

    pending ──▶ attempting ──▶ sent ──▶ consumed
       ▲   (a delivery row      (Enter     (seen taken)
       │    is begun)            pressed)
       └── released: nothing of it went in, routed again

This module picks: for each pending envelope, a live, idle recipient (its
fixed session, or the first live master of its job) with no action of afd
in progress, and begins a delivery on it (afd/jobs/delivery.py), which the
one engine carries through like any other action. Everything that happens
to the envelope from there is in its journal row and its outbox row, so a
restart carries on where the last run stopped.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from afd.act import create
from afd.act.context import ActionContext
from afd.decide import policy
from afd.jobs import delivery
from afd.jobs import rules as jobs
from afd.jobs.book import JobBook
from afd.model import SessionState
from afd.record.types import Envelope, EnvelopeState, JobStatus

LIVE_STATES = delivery.LIVE_STATES


def creating_sessions(store) -> set[str]:
    """Sessions a `create` is still making (no record yet, or the agent not seen): their jobs are not gone."""
    return {e.session for e in store.pending_journal() if e.action == create.ACTION}


def held_because(recipient: str | None, state: str | None, held: str | None) -> str:
    if recipient is None:
        return "no recipient is live (its supervisors are closed, limited or not answering)"
    if state != SessionState.IDLE:
        return f"{recipient} is {state}"
    return f"{recipient}: {held}"


class Outbox:
    """Job statuses and envelope routing, once a poll; what a delivery does is its journal row's."""

    def __init__(self) -> None:
        self._held: dict[int, str] = {}  # envelope id → why it last waited, said once per reason

    # --- job status from what the loop saw ---------------------------------

    def observe_jobs(self, ctx: ActionContext, now: datetime) -> None:
        """Running / limited / gone from the sessions' states; a job that hits its limit sends an envelope."""
        book = JobBook(ctx.store)
        records = {r.name: r for r in ctx.store.list_sessions()}
        creating = creating_sessions(ctx.store)
        for job in book.jobs().values():
            rec = records.get(job.name)
            new = jobs.observed_status(job.status, rec.state if rec else None, job.name in creating)
            if new is job.status:
                continue
            with ctx.store.transaction():
                book.set_status(job.name, new, at=now)
                if new is JobStatus.LIMITED:
                    reset = rec.reset_at if rec else None
                    episode = reset.isoformat() if reset else now.isoformat()
                    book.enqueue(f"limited:{job.name}:{episode}", "limited", jobs.limited_text(job, reset), job=job.name)
            ctx.event("job.status", f"job {job.name} is {new.value}", job.name)

    # --- routing --------------------------------------------------------------

    def route(self, ctx: ActionContext, live: Mapping[str, tuple]) -> set[str]:
        """Begin a delivery for each envelope a recipient can take now; returns the working recipients
        an envelope waits on (the poll looks at them again soon, to see them idle as soon as they are)."""
        book = JobBook(ctx.store)
        envelopes = book.open_envelopes()
        if not envelopes:
            return set()
        records = {r.name: r for r in ctx.store.list_sessions()}
        online = {n for n, r in records.items() if r.state in LIVE_STATES and n in live}
        pending = ctx.store.pending_journal()
        # A resume or a swap typing into the same pane would interleave with us: one action a session.
        acting = {e.session for e in pending}
        receiving = {e.session for e in pending if e.action == delivery.ACTION}
        delivering = {e.intent.get("envelope") for e in pending if e.action == delivery.ACTION}
        # A session the person paused takes nothing typed by afd by itself until the pause ends.
        now = ctx.clock()
        paused = {n for n, p in ctx.store.pauses().items() if policy.pause_in_force(p.until, now)}
        look_again: set[str] = set()
        for env in envelopes:
            if env.id in delivering:
                continue
            if env.state is not EnvelopeState.PENDING:
                continue  # attempting (its delivery's row carries it) or sent (Enter went in): never typed again
            who = self._recipient(book, env, online)
            rec = records.get(who) if who else None
            state = rec.state if rec else None
            held = None
            if who in paused:
                held = f"paused by you (afd sessions unpause {who})"
            elif who in receiving:
                held = "another envelope is on its way into this pane"
            elif who in acting:
                held = "an action of afd is in progress on this session"
            if who is None or state != SessionState.IDLE or held:
                self._say_held(ctx, env, held_because(who, state, held))
                if who is not None and state == SessionState.WORKING:
                    look_again.add(who)
                continue
            self._held.pop(env.id, None)
            delivery.begin(ctx, env, who, live[who][1].pane_id)
            acting.add(who)
            receiving.add(who)
        return look_again

    def _say_held(self, ctx: ActionContext, env: Envelope, why: str) -> None:
        """An event when an envelope starts waiting, or waits for another reason: why a result has not arrived."""
        if self._held.get(env.id) != why:
            self._held[env.id] = why
            ctx.event("job.envelope-held", f"{env.kind} envelope {env.nonce} waits: {why}", env.job or env.to_session)

    def _recipient(self, book: JobBook, env: Envelope, online: set[str]) -> str | None:
        if env.to_session is not None:
            return env.to_session if env.to_session in online else None
        return jobs.recipient(book.masters(env.job), online) if env.job else None
