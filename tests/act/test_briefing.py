"""A brief that waits (afd/act/briefing.py): typed once the swapped-in agent can take it, never twice."""

from __future__ import annotations

import pytest

from afd.act import Finish, Follow, Go, Observe, Result, Submit, Tell, Wait, briefing
from afd.act.briefing import BriefFacts, BriefStep
from afd.judge import sessions
from afd.model import SessionState

S = SessionState
BRIEF = "You are taking over this session from claude.\n\nThe goal: fix the login test"
ROW = {"pane": "%3", "brief": BRIEF, "target": "codex", "handoff": 7, "step": "waiting"}


def facts(state=S.IDLE, present=True, earlier=False, on_screen="") -> BriefFacts:
    return BriefFacts(state, present, earlier, on_screen)


CASES = [
    ("idle: typed and submitted", ROW, facts(), Go(BriefStep.DELIVERING, Submit(BRIEF), {"delivering": True})),
    ("still limited: waits", ROW, facts(S.LIMITED), Wait("the session is limited; the brief waits until it is idle")),
    ("working: waits", ROW, facts(S.WORKING), Wait("the session is working; the brief waits until it is idle")),
    ("tmux silent: waits", ROW, facts(present=None), Wait("tmux did not answer about the pane; the brief waits")),
    ("session gone: not delivered", ROW, facts(None), Finish(Result.ROLLED_BACK, "the session is gone; the brief was not delivered")),
    ("pane gone: not delivered", ROW, facts(present=False), Finish(Result.ROLLED_BACK, "the session is gone; the brief was not delivered")),
    ("typed by this run: done", {**ROW, "step": "delivering", "delivering": True}, facts(S.WORKING),
     Finish(Result.DONE, "the pending brief was delivered")),
    ("typed by a run that stopped, on screen: done, not typed again", {**ROW, "step": "delivering", "delivering": True},
     facts(S.WORKING, earlier=True, on_screen="> You are taking over this session from claude."),
     Finish(Result.DONE, "the brief was already in the pane")),
    ("recorded by a run that stopped, not on screen: typed", {**ROW, "step": "delivering", "delivering": True},
     facts(earlier=True), Go(BriefStep.DELIVERING, Submit(BRIEF), {"delivering": True})),
    ("typing failed: tried again when idle", {**ROW, "step": "delivering", "delivering": True, "effect_error": "no pane"},
     facts(), Go(BriefStep.DELIVERING, Submit(BRIEF), {"delivering": True})),
]


@pytest.mark.parametrize(("row", "seen", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_brief_moves(row, seen, expected):
    assert briefing.step(row, seen) == expected


def test_a_delivered_brief_clears_the_plan_through_the_rulebook_and_is_said():
    from afd.record.types import JournalEntry, JournalState

    entry = JournalEntry(9, None, "fix", briefing.ACTION, ROW, JournalState.PENDING)  # type: ignore[arg-type]
    done = briefing.BriefExecutor().finished(None, entry, Finish(Result.DONE, "the pending brief was delivered"))
    assert done == (Observe(sessions.Planned(None)),
                    Tell("handoff.brief", "the pending brief was delivered to codex", data={"journal": 9}))
    # Not delivered: the plan stays as it was (the session is gone, or the swap's row says why).
    assert briefing.BriefExecutor().finished(None, entry, Finish(Result.ROLLED_BACK, "gone")) == ()


def test_the_brief_follows_its_swap_in_one_commit():
    follow = briefing.follow(pane="%3", brief=BRIEF, target="codex", handoff=7)
    assert isinstance(follow, Follow) and follow.action == briefing.ACTION
    assert {k: follow.intent[k] for k in ("pane", "brief", "target", "handoff", "step")} == ROW
