"""The next move of a pending action, from its journal entry and what the pane shows now.

Pure, and the only path: the runner asks it every poll, whether the entry
was begun a second ago or found pending after a crash. Each action kind has
one function here; an action without one is rolled back, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
