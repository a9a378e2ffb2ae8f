"""Envelopes on their way into supervisors' panes: the outbox, advanced one short step per poll.

    pending ──▶ attempting ──▶ sent ──▶ consumed
                (written before the paste, carrying a nonce in its text)

`decide` is pure: one envelope and what the recipient's pane shows now in,
one move out. `advance` gathers the facts, writes each step before its
effect, and does it. A restart needs no second path: an envelope found in
`attempting` is judged by its nonce on screen — in the input row it is
submitted, in the transcript it was taken, nowhere it is pasted again — and
a consumed envelope is never looked at again.

Typing goes through afd/deliver.py and its rules: only into a live session
that is idle and not limited, never over a person (copy mode, a client that
typed within `typing_guard`, someone's text in the input row).
"""

from __future__ import annotations

import enum
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from afd.act import create, deliver
from afd.act.view import view_of
from afd.jobs import rules as jobs
from afd.jobs.book import JobBook
from afd.judge import sessions
from afd.record.types import Envelope, EnvelopeState, JobStatus
from afd.world import tmux

# How long a paste may take to show on screen before afd concludes it did not land.
PASTE_GRACE = 3.0
LIVE_STATES = frozenset({"working", "idle"})


class Move(enum.Enum):
    HOLD = "hold"  # nobody can take it now
    PASTE = "paste"  # write attempting (with the recipient), then paste
    ENTER = "enter"  # our text sits in the input row: submit it, then write sent
    SENT = "sent"  # it was submitted (seen taken before we wrote sent)
    CONSUMED = "consumed"
    RELEASE = "release"  # it never reached the pane and the recipient is gone: route again
    WAIT = "wait"  # just pasted: give the screen a moment


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


def decide(env: Envelope, recipient: str | None, recipient_state: str | None, held: str | None,
           look: Seen | None, since_paste: float | None) -> Move:
    """The next move for one envelope. `recipient` is who routing picks now (pending) or who it went to."""
    if env.state is EnvelopeState.PENDING:
        if recipient is None or recipient_state != "idle" or held:
            return Move.HOLD
        return Move.PASTE
    if look is None:
        # The pane could not be captured: gone, or tmux did not answer.
        if env.state is EnvelopeState.ATTEMPTING and recipient_state not in LIVE_STATES | {"limited", "unknown"}:
            return Move.RELEASE
        return Move.HOLD
    if look.in_transcript:
        return Move.CONSUMED
    if env.state is EnvelopeState.ATTEMPTING:
        if look.in_input:
            return Move.ENTER
        if since_paste is not None and since_paste < PASTE_GRACE:
            return Move.WAIT
        if recipient_state not in LIVE_STATES:
            return Move.RELEASE
        return Move.PASTE if recipient_state == "idle" and not held else Move.HOLD
    # Sent: consumed only on evidence in the pane. Enter is never pressed twice: a prompt the
    # agent has not answered yet looks the same as one still in its input row.
    return Move.HOLD


def creating_sessions(store) -> set[str]:
    """Sessions a `create` is still making (no record yet, or the agent not seen): their jobs are not gone."""
    return {e.session for e in store.pending_journal() if e.action == create.ACTION}


def spec_busy(sup, rec, rows) -> bool:
    spec = sup.plugins.agents.get(rec.agent) if rec else None
    return spec is not None and sessions.seen_busy(rows, spec.busy, spec.chrome, sup.config.tail_lines)


def held_because(recipient: str | None, state: str | None, held: str | None) -> str:
    if recipient is None:
        return "no recipient is live (its supervisors are closed, limited or not answering)"
    if state != "idle":
        return f"{recipient} is {state}"
    return f"{recipient}: {held}"


class Outbox:
    """The outbox of one supervisor: advanced by the poll loop, never blocking it."""

    def __init__(self, sup):
        self.sup = sup
        self.book = JobBook(sup.store)
        self._pasted: dict[int, float] = {}  # envelope id → monotonic time of our last paste, this run
        self._held: dict[int, str] = {}  # envelope id → why it last waited, said once per reason

    # --- job status from what the loop saw ---------------------------------

    def observe_jobs(self, now: datetime) -> None:
        """Running / limited / gone from the sessions' states; a job that hits its limit sends an envelope."""
        sessions = {r.name: r for r in self.sup.store.list_sessions()}
        creating = creating_sessions(self.sup.store)
        for job in self.book.jobs().values():
            rec = sessions.get(job.name)
            new = jobs.observed_status(job.status, rec.state if rec else None, job.name in creating)
            if new is job.status:
                continue
            with self.sup.store.transaction():
                self.book.set_status(job.name, new, at=now)
                if new is JobStatus.LIMITED:
                    reset = rec.reset_at if rec else None
                    episode = reset.isoformat() if reset else now.isoformat()
                    self.book.enqueue(f"limited:{job.name}:{episode}", "limited", jobs.limited_text(job, reset), job=job.name)
            self.sup.event("job.status", f"job {job.name} is {new.value}", job.name)

    # --- delivery ---------------------------------------------------------------

    def advance(self, live: Mapping[str, tuple], now: datetime) -> None:
        envelopes = self.book.open_envelopes()
        if not envelopes:
            return
        sessions = {r.name: r for r in self.sup.store.list_sessions()}
        online = {n for n, r in sessions.items() if r.state in LIVE_STATES and n in live}
        views: dict[str, object] = {}  # one look at each recipient's pane per poll
        busy_now: set[str] = set()  # one paste per pane per poll: the next waits for the screen
        # A resume or a swap typing into the same pane would interleave with us: they go first.
        acting = {e.session for e in self.sup.store.pending_journal()}
        guard = self.sup.config.typing_guard
        for env in envelopes:
            who = self._recipient(env, online)
            rec = sessions.get(who) if who else None
            state = rec.state if rec else None
            view = None
            if who in live and (env.state is not EnvelopeState.PENDING or state == "idle"):
                if who not in views:
                    views[who] = view_of(self.sup.server, *live[who], now)
                view = views[who]
            look = None
            if view is not None and view.presence is tmux.Presence.PRESENT:
                spec = self.sup.plugins.agents.get(rec.agent)
                look = seen(env.nonce, view.rows, spec.chrome if spec else ())
            held = "the pane is not open" if view is None or view.dead else deliver.typing_hold(
                view, now, guard, ours=jobs.stamp(env.nonce, env.text))
            if held is None and view is not None and spec_busy(self.sup, rec, view.rows):
                # The idle gate can call a working agent idle between two ticks of its spinner.
                held = "the agent shows its spinner"
            if who in busy_now:
                held = "another envelope is on its way into this pane"
            elif who in acting:
                held = "an action of afd is in progress on this session"
            pasted = self._pasted.get(env.id)
            since = time.monotonic() - pasted if pasted is not None else None
            if env.state is EnvelopeState.PENDING:
                look = None  # a pending envelope was never typed: nothing of it can be on screen
            move = decide(env, who, state, held, look, since)
            if move is Move.HOLD and env.state is EnvelopeState.PENDING:
                self._say_held(env, held_because(who, state, held))
                if state == "working" and who in self.sup.watches:
                    # Seen idle within a poll or two of settling, not only when an unchanged
                    # fingerprint's capture is next refreshed.
                    self.sup.watches[who].look_again()
            self._carry(env, move, who, live[who][1] if who in live else None, now)
            if move in (Move.PASTE, Move.ENTER, Move.WAIT):
                busy_now.add(who)

    def _say_held(self, env: Envelope, why: str) -> None:
        """An event when an envelope starts waiting, or waits for another reason: why a result has not arrived."""
        if self._held.get(env.id) != why:
            self._held[env.id] = why
            self.sup.event("job.envelope-held", f"{env.kind} envelope {env.nonce} waits: {why}", env.job or env.to_session)

    def _recipient(self, env: Envelope, online: set[str]) -> str | None:
        if env.state is not EnvelopeState.PENDING and env.recipient:
            return env.recipient  # it may be in that pane already: it stays with the pane it went to
        if env.to_session is not None:
            return env.to_session if env.to_session in online else None
        return jobs.recipient(self.book.masters(env.job), online)

    def _carry(self, env: Envelope, move: Move, who: str | None, pane, now: datetime) -> None:
        if move in (Move.HOLD, Move.WAIT):
            return
        if move is Move.RELEASE:
            self.book.release(env.id)
            self._pasted.pop(env.id, None)
            return
        if move is Move.CONSUMED:
            self.book.move(env.id, EnvelopeState.CONSUMED, at=now)
            self._pasted.pop(env.id, None)
            self.sup.event("job.envelope-consumed", f"{env.kind} envelope {env.nonce} taken by {who}", env.job or who)
            return
        if move is Move.SENT:
            self.book.move(env.id, EnvelopeState.SENT, at=now)
            return
        if move is Move.PASTE:
            # Written before the keys go in: a crash after this line is resolved by the nonce.
            self.book.move(env.id, EnvelopeState.ATTEMPTING, recipient=who, attempt=True, at=now)
            result = deliver.paste(self.sup.server, pane.pane_id, jobs.stamp(env.nonce, env.text))
            self._pasted[env.id] = time.monotonic()
            if result.outcome is tmux.Outcome.GONE:
                self.book.release(env.id)
            return
        if move is Move.ENTER:
            result = deliver.press(self.sup.server, pane.pane_id, "Enter")
            if result.ok:
                self.book.move(env.id, EnvelopeState.SENT, at=now)
                self._pasted[env.id] = time.monotonic()
                self.sup.event("job.envelope-sent", f"{env.kind} envelope {env.nonce} typed into {who}'s pane", env.job or who)
