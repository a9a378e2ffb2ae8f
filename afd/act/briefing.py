"""A brief that waits: typed into the swapped-in agent once it can take it (idle, not limited).

A swap settles even when its brief cannot go in yet (the new agent is at
its own wall, or typing failed): the brief then waits in a journal row of
its own, which this executor delivers — once, and looked for on screen
first when an earlier run may have typed it already.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from afd.act import Finish, Follow, Go, Move, Observe, Record, Result, Submit, Tell, Wait
from afd.act.context import ActionContext
from afd.act.intent import from_row, stored, to_row
from afd.judge import sessions
from afd.model import SessionState
from afd.record.types import JournalEntry
from afd.world import tmux

ACTION = "brief"


class BriefStep(enum.StrEnum):
    WAITING = "waiting"  # the swap settled; the brief waits for the new agent to be idle
    DELIVERING = "delivering"  # typed (or being typed) into the pane


@dataclass(frozen=True, slots=True)
class BriefIntent:
    pane: str = ""
    brief: str = ""
    target: str = ""
    handoff: int | None = None  # the swap's journal row
    step: BriefStep = BriefStep.WAITING
    step_at: datetime | None = None
    run: str | None = None
    effect_error: str | None = None
    delivering: bool = False


@dataclass(frozen=True, slots=True)
class BriefFacts:
    session_state: SessionState | None  # None: the session is gone from the store
    pane_present: bool | None  # None: tmux did not answer
    earlier: bool
    on_screen: str = ""


def follow(*, pane: str, brief: str, target: str, handoff: int) -> Follow:
    """A brief that waits, begun in the commit that settles its swap (`handoff`: the swap's journal row)."""
    return Follow(ACTION, to_row(BriefIntent(pane=pane, brief=brief, target=target, handoff=handoff)))


def step(row: Mapping | BriefIntent, f: BriefFacts) -> Move:
    i = row if isinstance(row, BriefIntent) else from_row(BriefIntent, row)
    if f.session_state is None or f.session_state == SessionState.GONE or f.pane_present is False:
        return Finish(Result.ROLLED_BACK, "the session is gone; the brief was not delivered")
    first = i.brief.splitlines()[0] if i.brief else ""
    if i.delivering and not i.effect_error:
        if not f.earlier:
            return Finish(Result.DONE, "the pending brief was delivered")
        if first and first in f.on_screen:
            return Finish(Result.DONE, "the brief was already in the pane")
    if f.pane_present is None:
        return Wait("tmux did not answer about the pane; the brief waits")
    if f.session_state != SessionState.IDLE:
        return Wait(f"the session is {f.session_state}; the brief waits until it is idle")
    # A failed try is tried again on a later turn; a landed one was looked for above.
    return Go(BriefStep.DELIVERING, Submit(i.brief), stored(delivering=True))


class BriefExecutor:
    action = ACTION
    chain = 2
    owns_pane = False

    def facts(self, ctx: ActionContext, entry: JournalEntry, bound) -> BriefFacts:
        i = from_row(BriefIntent, entry.intent)
        rec = ctx.store.get_session(entry.session)
        present = tmux.pane_exists(ctx.server, i.pane, rec.server_pid) if rec is not None else tmux.Presence.GONE
        known = {tmux.Presence.PRESENT: True, tmux.Presence.GONE: False}.get(present)
        earlier = i.run != ctx.run
        text = ""
        if known and i.delivering and earlier:
            capture = tmux.capture_panes(ctx.server, [i.pane]).get(i.pane)
            text = capture.text or "" if capture else ""
        return BriefFacts(rec.state if rec is not None else None, known, earlier, text)

    def step(self, intent: Mapping, facts: BriefFacts) -> Move:
        return step(intent, facts)

    def progress(self, ctx: ActionContext, entry: JournalEntry, move: Move) -> tuple[Record, ...]:
        return ()

    def finished(self, ctx: ActionContext, entry: JournalEntry, end: Finish) -> tuple[Record, ...]:
        i = from_row(BriefIntent, entry.intent)
        if end.result is not Result.DONE:
            return ()
        return (Observe(sessions.Planned(None)), Tell("handoff.brief", f"{end.outcome} to {i.target}", data={"journal": entry.id}))
