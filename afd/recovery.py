"""The next move of a pending action, from its journal entry and what the pane shows now.

Pure, and the only path: the runner asks it every poll, whether the entry
was begun a second ago or found pending after a crash. Each action kind has
one function here; an action without one is rolled back, as before.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

from afd.actions import Finish, Move, PaneView, Result
from afd.actions import resume
from afd.store import JournalEntry

Decider = Callable[[dict, PaneView, datetime, Mapping], Move]

DECIDERS: dict[str, Decider] = {
    "resume": resume.decide,
}


def has_executor(action: str) -> bool:
    return action in DECIDERS


def next_move(entry: JournalEntry, view: PaneView, now: datetime, settings: Mapping) -> Move:
    decide = DECIDERS.get(entry.action)
    if decide is None:
        return Finish(Result.ABANDONED, f"afd stopped before finishing {entry.action}; nothing more was done")
    return decide(entry.intent, view, now, settings)


# --- handoff (and its pending brief) ------------------------------------------------
#
# A swap's executor (afd.actions.handoff) performs its own steps; at a
# restart the question is only whether to carry it on from its journaled
# step or to roll it back. Every handoff step is safe to carry on: a stop
# re-checks the tree before the launch, a launch looks at the pane before
# respawning, a start waits for the target's screen, and a typed brief is
# looked for on screen before it is typed (so never twice).



class Next(enum.Enum):
    CARRY_ON = "carry_on"
    ROLL_BACK = "roll_back"


@dataclass(frozen=True, slots=True)
class Seen:
    """What a restarted afd finds for one pending entry."""

    pane_present: bool | None  # None: tmux did not answer
    session_known: bool


@dataclass(frozen=True, slots=True)
class Recovery:
    next: Next
    why: str


def _recover_handoff(entry: JournalEntry, seen: Seen) -> Recovery:
    if not seen.session_known:
        return Recovery(Next.ROLL_BACK, "its session is no longer known")
    if seen.pane_present is False:
        return Recovery(Next.ROLL_BACK, "its pane is gone")
    return Recovery(Next.CARRY_ON, f"afd restarted at step {entry.intent.get('step')!r}; carried on from there")


def _recover_brief(entry: JournalEntry, seen: Seen) -> Recovery:
    if not seen.session_known or seen.pane_present is False:
        return Recovery(Next.ROLL_BACK, "its session or pane is gone; the brief was not delivered")
    return Recovery(Next.CARRY_ON, "the brief is still pending; it is delivered once the agent can take it")


SELF_DRIVEN = {"handoff": _recover_handoff, "brief": _recover_brief}


def recover_self_driven(entry: JournalEntry, seen: Seen) -> Recovery | None:
    """For an action whose executor drives itself: carry on or roll back; None for other actions."""
    rule = SELF_DRIVEN.get(entry.action)
    return rule(entry, seen) if rule else None
