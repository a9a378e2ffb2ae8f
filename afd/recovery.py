"""What to do, after a restart, with an action the journal shows was not finished. Pure.

The journal row names the step the action had reached, written before that
step's effect; the pane and the processes say what actually happened. From
the two, each pending entry is carried on through the very executor that
started it (there is no second path through the code for recovery) or
rolled back, and the outcome is an event.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from afd.store import JournalEntry


class Next(enum.Enum):
    CARRY_ON = "carry_on"  # advance it from its journaled step, as the loop would have
    ROLL_BACK = "roll_back"  # settle it as rolled back with `why`


@dataclass(frozen=True, slots=True)
class Decision:
    next: Next
    why: str


@dataclass(frozen=True, slots=True)
class Seen:
    """What a restarted afd finds for one pending entry."""

    pane_present: bool | None  # None: tmux did not answer
    session_known: bool


def _handoff(entry: JournalEntry, seen: Seen) -> Decision:
    step = entry.intent.get("step")
    if not seen.session_known:
        return Decision(Next.ROLL_BACK, "its session is no longer known")
    if seen.pane_present is False:
        return Decision(Next.ROLL_BACK, "its pane is gone")
    # Every step is safe to carry on: a stop re-checks the tree before the
    # launch, a launch looks at the pane before respawning, a start waits for
    # the target's screen, a typed brief is looked for before it is typed.
    return Decision(Next.CARRY_ON, f"afd restarted at step {step!r}; carried on from there")


def _brief(entry: JournalEntry, seen: Seen) -> Decision:
    if not seen.session_known or seen.pane_present is False:
        return Decision(Next.ROLL_BACK, "its session or pane is gone; the brief was not delivered")
    return Decision(Next.CARRY_ON, "the brief is still pending; it is delivered once the agent can take it")


_BY_ACTION = {"handoff": _handoff, "brief": _brief}


def decide(entry: JournalEntry, seen: Seen) -> Decision | None:
    """The decision for an action this module knows; None for others (the caller's default applies)."""
    rule = _BY_ACTION.get(entry.action)
    return rule(entry, seen) if rule else None
