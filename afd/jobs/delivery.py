"""Delivering one envelope into its recipient's pane: an executor the one engine drives.

    routed ──▶ pasted ──▶ entered ──▶ taken (consumed) | sent, not seen taken in time
       └─────────┴──▶ released: nothing of it went in, back to the outbox to be routed again

The outbox (afd/jobs/outbox.py) picks the recipient of a pending envelope
and begins a journal row on that session; the envelope turns `attempting`,
for that recipient, in the same commit. From there the row is an action like
any other: `step` is pure, each step is written before its effect (the
paste, the Enter), and a row an earlier run of afd left is driven by the
same steps. The envelope's tag (`[afd NONCE]`) on screen is what makes a
kill -9 at any step deliver it exactly once: followed by the agent's own
output it was taken; alone above the agent's chrome it sits in the input
row and gets its Enter; nowhere, it is pasted into an idle pane (again,
when the first paste never showed), or released when the recipient is no
longer there to take it. Once Enter is on record it is never pasted again.

Typing follows afd/act/deliver.py: only into a live, idle session, never
over a person (copy mode, a client that typed within `typing_guard`,
someone's text in the input row) and never into an agent showing its
spinner.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from afd.act import Finish, Go, Key, Move, Paste, Record, Result, Tell, Wait, deliver
from afd.act.context import ActionContext
from afd.act.intent import from_row, stored, to_row
from afd.jobs import rules as jobs
from afd.jobs.book import JobBook
from afd.judge import sessions
from afd.judge.gates import chrome_of
from afd.model import SessionState
from afd.record.types import Envelope, EnvelopeState, JournalEntry
from afd.world import tmux

ACTION = "envelope"

# How long a paste may take to show on screen before afd concludes it did not land.
PASTE_GRACE = timedelta(seconds=3)
# An Enter an earlier run recorded is pressed again only for text still in the input row this long after.
ENTER_SETTLE = timedelta(seconds=1)
MAX_ENTERS = 2
LIVE_STATES = frozenset({SessionState.WORKING, SessionState.IDLE})


class EnvelopeStep(enum.StrEnum):
    ROUTED = "routed"  # the recipient is chosen (the envelope is attempting); nothing typed yet
    PASTED = "pasted"  # the stamped text is pasted into the input row, no Enter yet
    ENTERED = "entered"  # Enter is pressed on it: from here it is never pasted again


@dataclass(frozen=True, slots=True)
class EnvelopeIntent:
    """A delivery's journal row, typed."""

    envelope: int = 0  # the outbox row
    nonce: str = ""
    text: str = ""  # as typed: one line, the tag first (`jobs.stamp`)
    kind: str = ""
    job: str | None = None
    pane: str = ""
    step: EnvelopeStep = EnvelopeStep.ROUTED
    step_at: datetime | None = None
    run: str | None = None  # the run of afd that recorded the step
    effect_error: str | None = None
    effect_outcome: str | None = None
    entered_at: datetime | None = None  # when the first Enter was recorded
    enters: int = 0


@dataclass(frozen=True, slots=True)
class Seen:
    """What the recipient's pane shows of one envelope."""

    in_input: bool  # the tag is on screen with nothing but the agent's chrome below it: its input row
    in_transcript: bool  # the agent's own output follows the tag: it took the text and went to work


def seen(nonce: str, rows: Sequence[str], chrome: Sequence) -> Seen:
    """Where the envelope's tag is. Told apart by what follows, not by the row's look: codex and devin
    draw a submitted prompt with the same glyph as their input row."""
    tag = f"[afd {nonce}]"
    in_input = in_transcript = False
    for i, row in enumerate(rows):
        if tag not in row:
            continue
        answered = any(r.strip() and not any(p.search(r) for p in chrome) for r in rows[i + 1:])
        in_transcript |= answered
        in_input |= not answered
    return Seen(in_input, in_transcript)


@dataclass(frozen=True, slots=True)
class EnvelopeFacts:
    """What the recipient's pane and session show now."""

    now: datetime
    run: str  # this run of afd: a step another run recorded may have stopped before its effect
    state: str | None  # the recipient session's state; None: it is gone from the store
    look: Seen | None  # where the tag shows; None: the pane was not captured
    pane_gone: bool  # the pane is known to be gone (not merely unanswered)
    held: str | None = None  # why typing now would be over a person, or into a busy agent
    timeout: timedelta = timedelta(seconds=30)  # deliver_timeout: how long a submitted envelope may take to be seen taken


# --- deciding ------------------------------------------------------------------------


def step(row: Mapping | EnvelopeIntent, f: EnvelopeFacts) -> Move:
    """The next move of one delivery: its journal row (stored or typed) and what the recipient shows now."""
    i = row if isinstance(row, EnvelopeIntent) else from_row(EnvelopeIntent, row)
    entered = i.step is EnvelopeStep.ENTERED
    if f.look is None:
        if not (f.pane_gone or f.state in (None, SessionState.GONE, SessionState.EXITED)):
            return Wait("the recipient's pane could not be looked at")
        if entered:
            # Enter may have gone in: the agent may have it. Sent is never sent again.
            return Finish(Result.ABANDONED, "the recipient's pane went away after Enter; it is not sent again")
        return Finish(Result.ROLLED_BACK, "the recipient's pane went away before the envelope was submitted; back in the outbox")
    if f.look.in_transcript:
        return Finish(Result.CONFIRMED, "taken: the agent answered it")
    step_at = i.step_at or f.now
    earlier = i.run != f.run
    if entered:
        return _after_enter(i, f, step_at, earlier)
    if f.look.in_input:
        # Ours, in the input row (pasted by this step or by a run that stopped after pasting).
        return Go(EnvelopeStep.ENTERED, Key("Enter"), stored(entered_at=f.now, enters=1))
    if i.step is EnvelopeStep.ROUTED:
        if f.state != SessionState.IDLE:
            return Finish(Result.ROLLED_BACK, f"the recipient is {f.state} now; nothing was typed, back in the outbox")
        if f.held:
            return Wait(hold=f.held)
        return Go(EnvelopeStep.PASTED, Paste(i.text))
    # Pasted, and not on screen.
    if f.now - step_at < PASTE_GRACE and not earlier:
        return Wait("waiting for the pasted envelope to show")
    if f.state not in LIVE_STATES:
        return Finish(Result.ROLLED_BACK, f"the paste never showed and the recipient is {f.state}; back in the outbox")
    if f.state != SessionState.IDLE or f.held:
        return Wait(hold=f.held) if f.held else Wait(f"the recipient is {f.state}")
    return Go(EnvelopeStep.PASTED, Paste(i.text))  # it never arrived (or a restart lost it): paste it again


def _after_enter(i: EnvelopeIntent, f: EnvelopeFacts, step_at: datetime, earlier: bool) -> Move:
    assert f.look is not None
    sent_at = i.entered_at or step_at
    if f.look.in_input:
        # Enter is never pressed twice by one run: a prompt the agent has not answered yet looks the
        # same as one still in its input row. A run that recorded it and stopped may not have pressed it.
        if (earlier or i.effect_error) and f.now - step_at >= ENTER_SETTLE and i.enters < MAX_ENTERS:
            return Go(EnvelopeStep.ENTERED, Key("Enter"), stored(entered_at=sent_at, enters=i.enters + 1))
        if f.now - sent_at > f.timeout:
            return Finish(Result.UNCONFIRMED, "it stayed in the agent's input row after Enter; not sent again")
        return Wait("waiting for the agent to take the envelope")
    if f.now - sent_at > f.timeout:
        return Finish(Result.UNCONFIRMED, "submitted, but not seen taken in time; not sent again", sent_at=sent_at)
    return Wait("waiting for the agent to take the envelope")


# --- the executor: gathering the facts, recording the endings ----------------------------------


@dataclass(frozen=True, slots=True)
class MoveEnvelope:
    """An envelope's new state, written in the commit of its delivery's row (so a crash cannot route it twice)."""

    envelope: int
    state: EnvelopeState
    at: datetime
    recipient: str | None = None
    attempt: bool = False

    def write(self, store) -> None:
        JobBook(store).move(self.envelope, self.state, recipient=self.recipient, attempt=self.attempt, at=self.at)


@dataclass(frozen=True, slots=True)
class ReleaseEnvelope:
    """Nothing of the envelope went in: back to the outbox, to be routed again."""

    envelope: int

    def write(self, store) -> None:
        JobBook(store).release(self.envelope)


def begin(ctx: ActionContext, env: Envelope, recipient: str, pane: str) -> int:
    """Commit a delivery (its row, and the envelope attempting for `recipient`) before anything is typed."""
    from afd.act import runner

    now = ctx.clock()
    intent = EnvelopeIntent(envelope=env.id, nonce=env.nonce, text=jobs.stamp(env.nonce, env.text), kind=env.kind,
                            job=env.job, pane=pane, step_at=now)
    attempting = MoveEnvelope(env.id, EnvelopeState.ATTEMPTING, now, recipient=recipient, attempt=True)
    return runner.begin(ctx, recipient, ACTION, to_row(intent), at=now, records=(attempting,))


class EnvelopeExecutor:
    """Envelope delivery as the engine drives it: one move per poll (a paste needs a poll to show)."""

    action = ACTION
    chain = 1
    owns_pane = False

    def __init__(self) -> None:
        self._said: dict[int, str] = {}  # row id → the hold last said in an event (said once per reason)

    def facts(self, ctx: ActionContext, entry: JournalEntry, bound) -> EnvelopeFacts:
        from afd.act.view import view_of

        i = from_row(EnvelopeIntent, entry.intent)
        now = ctx.clock()
        rec = bound[0] if bound is not None else ctx.store.get_session(entry.session)
        facts = EnvelopeFacts(now=now, run=ctx.run, state=rec.state if rec is not None else None, look=None, pane_gone=False,
                              timeout=timedelta(seconds=ctx.config.deliver_timeout))
        if bound is None:
            # Not among the panes this turn was given: gone, or not listed this time.
            there = tmux.pane_exists(ctx.server, i.pane, rec.server_pid) if rec is not None else tmux.Presence.GONE
            return replace(facts, pane_gone=there is tmux.Presence.GONE)
        rec, pane, ident = bound
        spec = ctx.plugins.agents.get(rec.agent) if rec.agent else None
        view = view_of(ctx.server, rec, pane, ident, now, spec)
        if view.presence is not tmux.Presence.PRESENT:
            return replace(facts, pane_gone=view.presence is tmux.Presence.GONE)
        held = "the pane is not open" if view.dead else deliver.typing_hold(view, now, ctx.config.typing_guard, ours=i.text)
        chrome = chrome_of(spec, view.rows) if spec is not None else ()
        if held is None and spec is not None and sessions.seen_busy(view.rows, spec.busy, chrome, ctx.config.tail_lines):
            # The idle gate can call a working agent idle between two ticks of its spinner.
            held = "the agent shows its spinner"
        return replace(facts, look=seen(i.nonce, view.rows, chrome), held=held)

    def step(self, intent: Mapping, facts: EnvelopeFacts) -> Move:
        return step(intent, facts)

    def progress(self, ctx: ActionContext, entry: JournalEntry, move: Move) -> tuple[Record, ...]:
        i = from_row(EnvelopeIntent, entry.intent)
        about = i.job or entry.session
        if isinstance(move, Go) and move.step == EnvelopeStep.ENTERED and not i.effect_error and i.enters == 1:
            return (MoveEnvelope(i.envelope, EnvelopeState.SENT, ctx.clock()),
                    Tell("job.envelope-sent", f"{i.kind} envelope {i.nonce} typed into {entry.session}'s pane", about))
        if isinstance(move, Wait) and move.hold and self._said.get(entry.id) != move.hold:
            self._said[entry.id] = move.hold
            return (Tell("job.envelope-held", f"{i.kind} envelope {i.nonce} waits: {entry.session}: {move.hold}", about),)
        return ()

    def finished(self, ctx: ActionContext, entry: JournalEntry, end: Finish) -> tuple[Record, ...]:
        i = from_row(EnvelopeIntent, entry.intent)
        now = ctx.clock()
        self._said.pop(entry.id, None)
        # The envelope's state and the row's end are one commit (the engine's): a crash between them cannot route it twice.
        about = i.job or entry.session
        if end.result is Result.CONFIRMED:
            return (MoveEnvelope(i.envelope, EnvelopeState.CONSUMED, now),
                    Tell("job.envelope-consumed", f"{i.kind} envelope {i.nonce} taken by {entry.session}", about))
        if end.result in (Result.UNCONFIRMED, Result.ABANDONED):
            return (MoveEnvelope(i.envelope, EnvelopeState.SENT, now),
                    Tell("job.envelope-unconfirmed", f"{i.kind} envelope {i.nonce} for {entry.session}: {end.outcome}", about))
        said = () if end.result is Result.ROLLED_BACK else (
            Tell("job.envelope-unconfirmed", f"{i.kind} envelope {i.nonce} for {entry.session}: {end.outcome}", about),)
        return (ReleaseEnvelope(i.envelope), *said)
