"""What to do with a pending action: decided from its journal entry and what exists now.

Pure: a pending journal entry and the facts gathered about it in, the next
step out. Two kinds of action live here:

* actions driven step by step by the poll loop (`resume`): `next_move`
  answers every poll, whether the entry was begun a second ago or found
  pending after a crash — one path, no separate recovery code; each has one
  function in `DECIDERS`;
* actions inspected once at start (`create`): the daemon asks
  `inspects_at_start`; the action's own executor gathers the facts, calls
  `decide_at_start`, and carries the step out. One function per action in
  `_AT_START`.

Actions with neither are left to the daemon's fallback (rolled back, and said).
"""


from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

from afd.act import Finish, Move, PaneView, Result, resume
from afd.observe.identity import IdentityKind
from afd.record.store import JournalEntry

# --- actions advanced by the poll loop ------------------------------------------------

Decider = Callable[[dict, PaneView, datetime, Mapping], Move]

DECIDERS: dict[str, Decider] = {
    "resume": resume.decide,
}


def has_executor(action: str) -> bool:
    """Whether the poll loop drives `action` step by step (then a restart leaves it to its executor)."""
    return action in DECIDERS


def next_move(entry: JournalEntry, view: PaneView, now: datetime, settings: Mapping) -> Move:
    decide = DECIDERS.get(entry.action)
    if decide is None:
        return Finish(Result.ABANDONED, f"afd stopped before finishing {entry.action}; nothing more was done")
    return decide(entry.intent, view, now, settings)


# --- actions inspected once at start --------------------------------------------------


class Resolution(enum.Enum):
    SETTLE = "settle"  # the action had finished its effects: mark it done
    AWAIT = "await"  # keep it pending at its awaiting step; the loop carries on from there
    ROLL_BACK = "roll_back"  # undo what it left (as far as the step says) and mark it rolled back
    LEAVE = "leave"  # nothing can be checked now: leave it pending for the next start


@dataclass(frozen=True, slots=True)
class Step:
    next: Resolution
    outcome: str  # one line for the journal and the event, saying what was found and done
    write_record: bool = False  # the session record is missing and must be written from the intent
    kill_pane: bool = False
    remove_worktree: bool = False
    delete_branch: bool = False


@dataclass(frozen=True, slots=True)
class CreateFacts:
    """What exists now of a `sessions create` that did not finish."""

    tmux_answered: bool
    pane: str | None  # the created pane (by id from the intent, else by its tmux session name), if it exists
    pane_dead: bool
    identity: IdentityKind | None  # what runs in that pane
    record_exists: bool
    worktree_exists: bool
    branch_exists: bool
    untouched: bool  # the worktree is clean and its branch still at the base commit: nothing to lose


def inspects_at_start(action: str) -> bool:
    """Whether a pending `action` found at start is decided here (else the daemon's fallback takes it)."""
    return action in _AT_START


def decide_at_start(entry: JournalEntry, facts: object) -> Step:
    """The next step for one pending journal entry found at start, given what its executor found."""
    return _AT_START[entry.action](entry, facts)


def _create(entry: JournalEntry, facts: CreateFacts) -> Step:
    intent = entry.intent
    worktree, branch = intent.get("worktree", "?"), intent.get("branch", "?")
    if not facts.tmux_answered:
        return Step(Resolution.LEAVE, "tmux did not answer, so what the interrupted create left cannot be checked; "
                                "it stays pending until the next start")

    if facts.pane is not None and not facts.pane_dead:
        if facts.identity is IdentityKind.KNOWN:
            return Step(Resolution.SETTLE, f"found its agent running in pane {facts.pane}; the session is kept"
                                     + (" and recorded now" if not facts.record_exists else ""),
                        write_record=not facts.record_exists)
        return Step(Resolution.AWAIT, f"found pane {facts.pane} with its agent not started yet; afd waits for it"
                                + (" (session recorded now)" if not facts.record_exists else ""),
                    write_record=not facts.record_exists)

    made = [what for what, there in (("worktree " + worktree, facts.worktree_exists),
                                      ("branch " + branch, facts.branch_exists)) if there]
    kill = facts.pane is not None  # a dead pane kept by remain-on-exit
    if facts.record_exists:
        return Step(Resolution.SETTLE, "its session was recorded and its pane is gone since; "
                                 f"{', '.join(made) or 'nothing'} kept for you to inspect", kill_pane=kill)
    if not made:
        return Step(Resolution.ROLL_BACK, "nothing had been made yet (no branch, worktree or tmux session); "
                                    "nothing to undo", kill_pane=kill)
    if not facts.untouched:
        return Step(Resolution.ROLL_BACK, f"no agent was started; kept {' and '.join(made)}: it has changes of its own",
                    kill_pane=kill)
    return Step(Resolution.ROLL_BACK, f"no agent was started; removed {' and '.join(made)} that the interrupted create left",
                kill_pane=kill, remove_worktree=facts.worktree_exists, delete_branch=facts.branch_exists)


_AT_START: dict[str, Callable[[JournalEntry, object], Step]] = {
    "create": _create,
}


# --- handoff (and its pending brief) ------------------------------------------------
#
# A swap's executor (afd.act.handoff) performs its own steps; at a
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
