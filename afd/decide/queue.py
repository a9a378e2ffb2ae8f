"""Prompts held for the reset: when each is due, and how it goes in (pure).

`afd queue add SESSION TEXT [--at reset|HH:MM|ISO]` holds a prompt until
the session's account's window resets (plus `resume_grace`, as for a
resume) or until the time given. Once due:

* a session idle at its prompt gets it as an envelope, through the
  envelope executor (`afd.jobs.delivery`), exactly once;
* a session still at its wall gets it through a resume, as its
  continuation; when the resume path would resume it at this reset anyway,
  one paste carries both texts, never two;
* a session working, handing off, paused, or whose account is limited until
  later, holds it; an agent that is not running holds it too.

A reset that is passed leaves the limit map `unknown`, not `available`:
what lifts the hold is the reset's time, never a guess that the account
has room again.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from datetime import datetime, time, timedelta, tzinfo

from afd.judge.limits import LimitFact, LimitState
from afd.judge.usage import Provenance, UsageFigures
from afd.model import SessionState

RESET = "reset"
TIME = "time"
_CLOCK = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")


class QueueState(enum.StrEnum):
    WAITING = "waiting"  # held until it is due and the session can take it
    DELIVERING = "delivering"  # handed to a delivery (its outbox envelope or resume row): never handed again
    DELIVERED = "delivered"  # the agent took it
    UNCONFIRMED = "unconfirmed"  # submitted, not seen taken in time; never sent again
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class QueuedPrompt:
    """One held prompt, as stored."""

    id: int
    session: str
    text: str
    at_kind: str  # "reset" or "time"
    due_at: datetime  # aware UTC: the reset plus grace, or the time given
    state: QueueState
    created_at: datetime
    route: str | None = None  # "envelope" or "resume", once handed to a delivery
    ref: int | None = None  # the outbox row or the resume's journal row it was handed to
    outcome: str | None = None

    def to_json(self) -> dict:
        def iso(v: datetime | None) -> str | None:
            return v.strftime("%Y-%m-%dT%H:%M:%SZ") if v is not None else None

        return {"id": self.id, "session": self.session, "text": self.text, "at": self.at_kind, "due_at": iso(self.due_at),
                "state": self.state.value, "created_at": iso(self.created_at), "route": self.route, "outcome": self.outcome}


def parse_at(text: str, now: datetime, zone: tzinfo) -> tuple[str, datetime | None]:
    """`--at`: "reset", `HH:MM` in the person's zone (its next occurrence), or an ISO 8601 instant. ValueError else."""
    value = text.strip()
    if value == RESET:
        return RESET, None
    clock = _CLOCK.match(value)
    if clock:
        local_now = now.astimezone(zone)
        when = datetime.combine(local_now.date(), time(int(clock.group(1)), int(clock.group(2))), tzinfo=zone)
        if when <= local_now:
            when = datetime.combine(local_now.date() + timedelta(days=1), time(int(clock.group(1)), int(clock.group(2))),
                                    tzinfo=zone)
        return TIME, when.astimezone(now.tzinfo)
    try:
        instant = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f'--at takes "reset", HH:MM in your zone or an ISO 8601 time, got "{text}"') from None
    if instant.tzinfo is None:
        instant = instant.replace(tzinfo=zone)
    return TIME, instant.astimezone(now.tzinfo)


def reset_due(fact: LimitFact | None, figures: UsageFigures | None, account: str | None, grace: float,
              now: datetime) -> datetime | None:
    """When a prompt held for the account's reset is due: the limit's reset, else the reset of its fullest window
    by exact figures (plus grace); None when no reset is known."""
    if fact is not None and fact.state is LimitState.LIMITED and fact.reset_at is not None:
        return fact.reset_at + timedelta(seconds=grace)
    found = figures.account(account) if figures is not None and account else None
    windows = [w for w in (found.windows if found else ()) if w.provenance is Provenance.EXACT and w.resets_at is not None
               and w.resets_at > now]
    if not windows:
        return None
    fullest = max(windows, key=lambda w: (w.used_percent or 0.0, -w.resets_at.timestamp()))  # type: ignore[union-attr]
    assert fullest.resets_at is not None
    return fullest.resets_at + timedelta(seconds=grace)


@dataclass(frozen=True, slots=True)
class Hold:
    why: str


@dataclass(frozen=True, slots=True)
class AsEnvelope:
    """Hand it to the outbox for the session (idle): the envelope executor types it."""


@dataclass(frozen=True, slots=True)
class AsResume:
    """Begin a resume whose continuation carries it (the session is at its wall)."""

    with_continuation: bool  # the resume path would resume at this reset too: one paste, both texts


Move = Hold | AsEnvelope | AsResume

_WAITS = {
    SessionState.WORKING: "the agent is working; it goes in at its next prompt",
    SessionState.HANDING_OFF: "a handoff owns the pane",
    SessionState.EXITED: "the agent is not running in the pane",
    SessionState.GONE: "the session's pane is gone",
    SessionState.UNKNOWN: "tmux did not answer about the pane",
}


def next_move(
    item: QueuedPrompt,
    *,
    state: SessionState | None,
    fact: LimitFact | None,
    busy: bool,
    paused: bool,
    resume_path: bool,
    grace: float,
    now: datetime,
    armed: bool = False,
) -> Move:
    """What to do with one waiting prompt this poll. `busy`: an action of afd is in progress on the session;
    `resume_path`: the wait path would resume this session by itself (limit_auto_resume on, no handoff);
    `armed`: the agent's own auto-continue is armed at its wall (Claude Code's)."""
    if now < item.due_at:
        return Hold(f"due at {item.due_at:%Y-%m-%dT%H:%M:%SZ}")
    if state is None:
        return Hold("the session is gone from afd's records")
    if paused:
        return Hold("the session is paused")
    if busy:
        return Hold("an action of afd is in progress on the session")
    if fact is not None and fact.state is LimitState.LIMITED and fact.reset_at is not None \
            and now < fact.reset_at + timedelta(seconds=grace):
        return Hold(f"its account is limited until {fact.reset_at:%Y-%m-%dT%H:%M:%SZ}")
    if state is SessionState.IDLE:
        return AsEnvelope()
    if state in (SessionState.LIMITED, SessionState.ALL_LIMITED):
        if armed:
            # Its own auto-continue sends a prompt at the reset: ours goes in at the prompt after, not beside it.
            return Hold("the agent continues by itself at its reset; the prompt goes in at its next prompt")
        return AsResume(with_continuation=resume_path)
    return Hold(_WAITS.get(state, f"the session is {state}"))


def resume_text(continuation: str | None, queued: list[str]) -> str:
    """One paste: the resume's own continuation (when it would have been sent) and then each queued prompt."""
    parts = ([continuation] if continuation else []) + [q.strip() for q in queued if q.strip()]
    return "\n\n".join(parts)
