"""Delivering the prompts held with `afd queue add`: the shell around `afd.decide.queue`, once a poll.

Each waiting prompt that is due goes to one delivery, in one commit with
that delivery's first row: an outbox envelope (the envelope executor types
it into an idle session), or a resume's journal row whose continuation
carries it (a session still at its wall; with the resume's own text when
the wait path would resume it now too: one paste, never two). What happens
next is that delivery's, journaled and recovered like any other; this
module only reads back how it ended. A prompt handed to a delivery is never
handed to another, unless that one ended with nothing typed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta

from afd.act import deliver, planner, resume
from afd.act.context import ActionContext
from afd.decide import policy
from afd.decide import queue as rules
from afd.decide.queue import AsEnvelope, AsResume, Hold
from afd.jobs import delivery
from afd.jobs.book import JobBook
from afd.model import SessionState
from afd.record.queue_book import QueueBook
from afd.record.types import QueuedPrompt, QueueState, SessionRecord

KIND = "queued"
RETRY_AFTER_FAILURE = 1800.0  # seconds, when a resume that was to carry a prompt sent nothing and no retry interval is set


def key_of(item: QueuedPrompt) -> str:
    return f"queue:{item.id}"


def hand_over(ctx: ActionContext, book: QueueBook, records: Mapping[str, SessionRecord], busy: set[str], *, watches: Mapping,
              said: dict, now: datetime) -> bool:
    """The plan stage's first step (afd.act.planner.plan_turn): held prompts handed over, before the wait path.

    Returns whether any prompt is held (then the plan reads the store again: a delivery may have begun).
    A paused session gets none; a wall the agent's own auto-continue is armed at gets its prompt after it.
    """
    if not book.open():
        return False
    advance(ctx, book, records, busy, paused=lambda rec: planner.pause_of(ctx, rec.name, now) is not None, said=said,
            armed=lambda rec: planner.native_armed(ctx, rec, watches.get(rec.name), now))
    return True


def advance(ctx: ActionContext, book: QueueBook, records: Mapping[str, SessionRecord], busy: set[str],
            paused: Callable[[SessionRecord], bool] = lambda rec: False, said: dict | None = None,
            armed: Callable[[SessionRecord], bool] = lambda rec: False) -> None:
    """One poll of the held prompts: read back how each delivery ended, then hand over what is due."""
    items = book.open()
    if not items:
        return
    now = ctx.clock()
    said = {} if said is None else said
    for item in items:
        if item.state is QueueState.DELIVERING:
            _settle(ctx, book, item, now)
    facts = ctx.store.limit_map()
    waiting: dict[str, list[QueuedPrompt]] = {}
    for item in book.open():
        if item.state is QueueState.WAITING:
            waiting.setdefault(item.session, []).append(item)
    for session, its in waiting.items():
        rec = records.get(session)
        account = (rec.account or rec.agent) if rec is not None else None
        fact = facts.get(account) if account else None
        history = ctx.store.resume_history(session)
        resume_path = ctx.config.limit_auto_resume and rec is not None and policy.limit_path(
            limit_action=ctx.config.limit_action, handoff_order=ctx.config.handoff_order, state=rec.state,
            tried=policy.tried_for(history, policy.wall_key(rec.banner_first_seen_at, rec.witnesses)),
        ) is policy.Path.WAIT
        first = its[0]
        move = rules.next_move(first, state=rec.state if rec else None, fact=fact, busy=session in busy,
                               paused=rec is not None and paused(rec), resume_path=resume_path,
                               grace=ctx.config.resume_grace, now=now,
                               armed=rec is not None and rec.state is SessionState.LIMITED and armed(rec))
        if isinstance(move, Hold):
            if now >= first.due_at and said.get(first.id) != move.why:
                said[first.id] = move.why
                ctx.event("queue.held", f"queued prompt {first.id} waits: {move.why}", session, queued=first.id)
            continue
        assert rec is not None
        if isinstance(move, AsEnvelope):
            with ctx.store.transaction():
                JobBook(ctx.store).enqueue(key_of(first), KIND, first.text, to_session=session, at=now)
                outbox = ctx.store.query("SELECT id FROM outbox WHERE key = ?", (key_of(first),))[0]["id"]
                book.move(first.id, QueueState.DELIVERING, now, route="envelope", ref=outbox)
            ctx.event("queue.delivering", f"queued prompt {first.id} goes in as the agent waits at its prompt", session,
                      queued=first.id)
        elif isinstance(move, AsResume):
            due = [i for i in its if i.due_at <= now]
            override = ctx.config.agents.get(rec.agent) if rec.agent else None
            continuation = deliver.continuation_text(override.resume_message if override else None, rec.mission) \
                if move.with_continuation else None
            text = rules.resume_text(continuation, [i.text for i in due])
            why = "queued prompt at its reset" + (" with the resume's continuation" if move.with_continuation else "")
            with ctx.store.transaction():
                entry = resume.begin(ctx, rec, attempt=history.attempts + 1, why=why, episode=history.episode, text=text)
                for i in due:
                    book.move(i.id, QueueState.DELIVERING, now, route="resume", ref=entry)
            busy.add(session)
            ctx.event("queue.delivering", f"queued prompt{'s' if len(due) > 1 else ''} {', '.join(str(i.id) for i in due)} "
                                          f"go{'' if len(due) > 1 else 'es'} in with a resume ({why})", session,
                      queued=[i.id for i in due], journal=entry)


def _settle(ctx: ActionContext, book: QueueBook, item: QueuedPrompt, now: datetime) -> None:
    """How the delivery a prompt was handed to ended, read from its own rows."""
    if item.route == "envelope":
        rows = ctx.store.query("SELECT state FROM outbox WHERE id = ?", (item.ref,))
        state = rows[0]["state"] if rows else None
        pending = any(e.action == delivery.ACTION and e.intent.get("envelope") == item.ref for e in ctx.store.pending_journal())
        if state == "consumed":
            _end(ctx, book, item, QueueState.DELIVERED, "taken: the agent answered it", now)
        elif state == "sent" and not pending:
            _end(ctx, book, item, QueueState.UNCONFIRMED, "submitted, not seen taken in time; not sent again", now)
        return
    entry = ctx.store.journal_entry(item.ref) if item.ref is not None else None
    if entry is None or entry.state.value == "pending":
        return
    outcome = entry.outcome or ""
    if outcome.startswith("confirmed"):
        _end(ctx, book, item, QueueState.DELIVERED, outcome, now)
    elif outcome.startswith(("unconfirmed", "abandoned")):
        _end(ctx, book, item, QueueState.UNCONFIRMED, outcome, now)
    else:
        # Nothing was sent (a failed or rolled-back resume, a dialog for a person): held again, later.
        retry = ctx.config.limit_retry_interval or RETRY_AFTER_FAILURE
        with ctx.store.transaction():
            book.move(item.id, QueueState.WAITING, now, outcome=outcome)
            book.postpone(item.id, now + timedelta(seconds=retry), now)
        ctx.event("queue.held", f"queued prompt {item.id} was not sent ({outcome}); tried again at "
                                f"{(now + timedelta(seconds=retry)):%Y-%m-%dT%H:%M:%SZ}", item.session, queued=item.id)


def _end(ctx: ActionContext, book: QueueBook, item: QueuedPrompt, state: QueueState, outcome: str, now: datetime) -> None:
    book.move(item.id, state, now, route=item.route, ref=item.ref, outcome=outcome)
    kind = "queue.delivered" if state is QueueState.DELIVERED else "queue.unconfirmed"
    ctx.event(kind, f"queued prompt {item.id}: {outcome}", item.session, queued=item.id)

