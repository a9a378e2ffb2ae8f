"""What afd leaves to a person, and the person's own holds (pause, cancel), as tables: facts in, one decision out."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from afd.decide import nextaction, plan, policy
from afd.decide.policy import HandoffTry, Held, Limit, LimitAction, NeedsHuman, Nothing, Path, ResumeAt, ResumeNow
from afd.record.types import Pause, ResumeHistory

NOW = datetime(2026, 7, 13, 12, 0, tzinfo=timezone.utc)
MIN = timedelta(minutes=1)


def _plan(decision, *, max_attempts: int) -> dict | None:
    """The next action a decision shows, as status --json prints it."""
    shown = plan.of(decision, max_attempts=max_attempts)
    return shown.as_json() if shown is not None else None


def limit(episode="b@1", reset=NOW + 60 * MIN, on_screen=True, kind="claude.weekly", unstated=True):
    return Limit(kind=kind, episode=episode, first_seen_at=NOW - 10 * MIN, reset_at=reset, reset_unstated=unstated,
                 on_screen=on_screen)


HISTORY = ResumeHistory(episode="b@1")


def decide(lim, history=HISTORY, *, auto=True, retry=1800.0):
    return policy.decide_wait("work", lim, history, auto_resume=auto, resume_grace=120.0, retry_interval=retry,
                              max_attempts=5, now=NOW)


RECORDS_ONLY = ("the wall is in the agent's own records, not on screen, and afd does not type into a pane that shows none; "
                "look at the pane, then resume with: afd resume work")
CANCELLED = "you cancelled afd's resume for this wall; resume with: afd resume work"

WAIT = [
    ("a records-only wall is reported with its reason, auto-resume on", limit(on_screen=False), ResumeHistory(), {},
     Nothing(RECORDS_ONLY, at=NOW + 60 * MIN, why="records-only")),
    ("a records-only wall is reported with its reason, auto-resume off", limit(on_screen=False), ResumeHistory(), {"auto": False},
     Nothing(RECORDS_ONLY, at=NOW + 60 * MIN, why="records-only")),
    ("a records-only wall with no reset is never a call for credits", limit(on_screen=False, reset=None, unstated=False),
     ResumeHistory(), {}, Nothing(RECORDS_ONLY, why="records-only")),
    ("a records-only wall is reported even past a reset (nothing is typed into a pane that shows none)",
     limit(on_screen=False, reset=NOW - 30 * MIN), ResumeHistory(), {}, Nothing(RECORDS_ONLY, at=NOW - 30 * MIN, why="records-only")),
    ("a cancelled wall is not planned again", limit(), ResumeHistory(episode="b@1", cancelled="b@1"), {},
     Nothing(CANCELLED, at=NOW + 60 * MIN, why="cancelled")),
    ("a cancelled wall past its reset is not resumed", limit(reset=NOW - 30 * MIN), ResumeHistory(episode="b@1", cancelled="b@1"), {},
     Nothing(CANCELLED, at=NOW - 30 * MIN, why="cancelled")),
    ("a cancel is for its wall: a new one is planned as ever", limit(episode="b@2"), ResumeHistory(episode="b@2", cancelled="b@1"), {},
     ResumeAt(NOW + 62 * MIN, 1, "reset")),
    ("a cancel does not hide a wall that needs a person", limit(kind="codex.spend-cap", reset=None, unstated=False),
     ResumeHistory(episode="b@1", cancelled="b@1"), {}, NeedsHuman("add credits (spend cap)")),
    ("with auto-resume off a wall is left to the person", limit(), ResumeHistory(), {"auto": False},
     Nothing("resume with: afd resume work", at=NOW + 60 * MIN, why="report")),
]


@pytest.mark.parametrize(("lim", "history", "kw", "expected"), [c[1:] for c in WAIT], ids=[c[0] for c in WAIT])
def test_the_wait_policy_for_records_only_walls_and_cancels(lim, history, kw, expected):
    assert decide(lim, history, **kw) == expected


WAITS_FOR_YOU = [
    ("auto-resume off", decide(limit(), auto=False), True),
    ("no reset and no retry", decide(limit(reset=None), retry=None), True),
    ("another model, nothing to wait for", decide(Limit(kind="claude.model-cap", episode="b@1", first_seen_at=NOW, reset_at=None,
                                                       offers_other_model=True)), True),
    ("records only", decide(limit(on_screen=False)), True),
    ("neither path takes the wall", policy.unplanned("work", HandoffTry.STARTED, None), True),
    ("the person cancelled it", decide(limit(), ResumeHistory(episode="b@1", cancelled="b@1")), False),
    ("the agent continues by itself", Nothing("waiting for the agent's own auto-continue", why="auto-continue"), False),
    ("a resume is planned", decide(limit()), False),
]


@pytest.mark.parametrize(("decision", "waits"), [c[1:] for c in WAITS_FOR_YOU], ids=[c[0] for c in WAITS_FOR_YOU])
def test_which_reports_leave_the_wall_to_a_person(decision, waits):
    assert (isinstance(decision, Nothing) and decision.why in policy.WAITS_FOR_YOU) is waits


PATHS = [
    ("handoff configured, nothing tried: hand off", dict(tried=None), Path.HANDOFF),
    ("handoff configured, the person cancelled: the wait path reports it", dict(tried=None, cancelled=True), Path.WAIT),
    ("handoff tried and rolled back: neither path", dict(tried=HandoffTry.STARTED), Path.NONE),
    ("handoff declined: wait", dict(tried=HandoffTry.DECLINED), Path.WAIT),
]


@pytest.mark.parametrize(("kw", "path"), [c[1:] for c in PATHS], ids=[c[0] for c in PATHS])
def test_a_cancelled_wall_takes_the_wait_path(kw, path):
    assert policy.limit_path(limit_action=LimitAction.HANDOFF, handoff_order=["codex"], state="limited", **kw) is path


UNPLANNED = [
    ("after a handoff that did not go through", HandoffTry.STARTED,
     "the automatic handoff for this wall did not go through, and afd tries one once a wall; resume with: afd resume work, "
     "or hand off with: afd handoff work --to AGENT"),
    ("an agent that is not at its wall in its pane", None,
     "afd hands off by itself only an agent that stands at its wall in its pane; resume with: afd resume work, "
     "or hand off with: afd handoff work --to AGENT"),
]


@pytest.mark.parametrize(("tried", "words"), [c[1:] for c in UNPLANNED], ids=[c[0] for c in UNPLANNED])
def test_a_wall_neither_path_takes_gets_a_reason_and_what_to_run(tried, words):
    assert policy.unplanned("work", tried, NOW) == Nothing(words, at=NOW, why="unplanned")


def test_a_cancel_is_kept_with_its_wall_while_the_history_moves_on():
    cancelled = policy.cancel(ResumeHistory(episode="b@1", attempts=2))
    assert cancelled.cancelled == "b@1"
    # A new appearance of the banner is a new episode: the cancel stays recorded, but for the old wall only.
    moved = policy.observe(cancelled, limit(episode="b@2"), now=NOW)
    assert (moved.episode, moved.cancelled, moved.attempts) == ("b@2", "b@1", 0)
    assert not policy.is_cancelled(moved, limit(episode="b@2"))
    # The wall gone for a poll, then back: still cancelled.
    gone = policy.observe(cancelled, None, now=NOW)
    assert gone.cancelled == "b@1" and policy.is_cancelled(policy.observe(gone, limit(episode="b@1"), now=NOW), limit(episode="b@1"))


PAUSES = [
    ("until unpaused", None, True),
    ("ends later", NOW + MIN, True),
    ("ended now", NOW, False),
    ("ended before", NOW - MIN, False),
]


@pytest.mark.parametrize(("until", "holds"), [c[1:] for c in PAUSES], ids=[c[0] for c in PAUSES])
def test_a_pause_holds_until_its_end(until, holds):
    assert policy.pause_in_force(until, NOW) is holds


HELD = [
    ("a planned resume is held", ResumeAt(NOW + MIN, 1, "reset"), True),
    ("a resume due now is held", ResumeNow(2, "retry"), True),
    ("a report stands", Nothing("resume with: afd resume work", why="report"), False),
    ("a call for a person stands", NeedsHuman("add credits (spend cap)"), False),
    ("nothing to say stands", Nothing(None), False),
]


@pytest.mark.parametrize(("decision", "held"), [c[1:] for c in HELD], ids=[c[0] for c in HELD])
def test_a_pause_holds_what_afd_would_type_and_nothing_else(decision, held):
    out = policy.held_by_pause(decision, "work", NOW + 60 * MIN)
    if held:
        assert out == Held(decision, NOW + 60 * MIN, "afd holds its resume; let it act again with: afd sessions unpause work")
    else:
        assert out is decision


def test_a_held_plan_says_what_is_held_and_until_when():
    plan = _plan(policy.held_by_pause(ResumeAt(NOW + 30 * MIN, 1, "reset"), "work", NOW + 60 * MIN), max_attempts=5)
    assert plan == {
        "action": "paused", "at": "2026-07-13T13:00:00Z", "attempt": None, "of": None,
        "why": "afd holds its resume; let it act again with: afd sessions unpause work",
        "held": {"action": "resume", "at": "2026-07-13T12:30:00Z", "attempt": 1, "of": 5, "why": "reset"},
    }
    assert nextaction.words(plan, now=NOW, zone=timezone.utc) == (
        "paused by you until 13:00 (in 1h00m): resume at 12:30 (in 30m) is held; "
        "let it act again with: afd sessions unpause work")
    handoff = _plan(policy.handoff_held("work", None), max_attempts=5)
    assert handoff is not None and handoff["at"] is None and handoff["held"]["action"] == "handoff"
    assert nextaction.words(handoff) == "paused by you: automatic handoff is held; let it act again with: afd sessions unpause work"


@pytest.mark.parametrize("why", ["report", "records-only", "unplanned", "cancelled", "other-model"])
def test_a_report_plan_carries_its_reason_as_a_code(why):
    plan = _plan(Nothing("words", why=why), max_attempts=5)
    assert plan is not None and plan["action"] == "report" and plan["reason"] == why


AFTER_FAILURE = [
    ("auto-resume retries", ResumeHistory(attempts=1), True, "afd tries again in 30 s at the earliest (attempt 2 of 5)"),
    ("auto-resume off: the person resumes", ResumeHistory(attempts=1), False,
     "afd does not resume by itself (limit_auto_resume is off); resume again with: afd resume work"),
    ("the last attempt: afd stops", ResumeHistory(attempts=5), True,
     "afd stops after 5 attempts; look at the pane, then resume with: afd resume work"),
]


@pytest.mark.parametrize(("history", "auto", "words"), [c[1:] for c in AFTER_FAILURE], ids=[c[0] for c in AFTER_FAILURE])
def test_what_comes_after_a_failed_resume(history, auto, words):
    assert policy.after_failure("work", history, auto_resume=auto, max_attempts=5) == words


@pytest.mark.parametrize(("auto", "words"), [
    (True, "afd falls back to waiting, and resumes it when its limit resets"),
    (False, "afd falls back to waiting and does not resume by itself (limit_auto_resume is off); resume with: afd resume work"),
], ids=["auto-resume", "report-only"])
def test_what_comes_after_a_refused_automatic_handoff(auto, words):
    assert policy.after_declined("work", auto_resume=auto) == words


# --- every wall gets a next action, or a reason ------------------------------------------

RESETS = {
    "future reset": dict(reset=NOW + 60 * MIN),
    "reset passed": dict(reset=NOW - 30 * MIN),
    "no reset stated": dict(reset=None),
    "a spend cap": dict(reset=None, unstated=False, kind="codex.spend-cap"),
}


@pytest.mark.parametrize("action", ["wait", "handoff"])
@pytest.mark.parametrize("tried", [None, HandoffTry.STARTED, HandoffTry.DECLINED], ids=["untried", "started", "declined"])
@pytest.mark.parametrize("cancel", [False, True], ids=["", "cancelled"])
@pytest.mark.parametrize("paused", [False, True], ids=["", "paused"])
@pytest.mark.parametrize("on_screen", [True, False], ids=["pane", "records-only"])
@pytest.mark.parametrize("auto", [True, False], ids=["auto", "report"])
@pytest.mark.parametrize("retry", [1800.0, None], ids=["retry", "no-retry"])
@pytest.mark.parametrize("reset", list(RESETS), ids=list(RESETS))
def test_every_limited_session_gets_a_next_action_or_a_reason(action, tried, cancel, paused, on_screen, auto, retry, reset):
    lim = limit(on_screen=on_screen, **RESETS[reset])
    history = ResumeHistory(episode="b@1", cancelled="b@1" if cancel else None)
    path = policy.limit_path(limit_action=LimitAction(action), handoff_order=["codex"], state="limited", tried=tried,
                             cancelled=policy.is_cancelled(history, lim))
    pause = Pause("work", NOW - MIN, None) if paused else None
    decision = policy.decide_limit("work", lim, history, path, tried=tried, pause=pause, auto_resume=auto,
                                   resume_grace=120.0, retry_interval=retry, max_attempts=5, now=NOW)
    if path is Path.HANDOFF and not paused:
        assert decision is None  # tried right after the poll, which gives the session its next action
        return
    plan = _plan(decision, max_attempts=5)
    assert plan is not None and plan["why"], decision
    if paused:
        assert plan["action"] in ("paused", "report", "needs-human")
    if not on_screen:
        assert plan["action"] in ("report", "paused") and (plan["action"] == "paused" or plan["reason"] == "records-only")
    if plan["action"] == "report":
        assert plan["reason"] in ("report", "other-model", "records-only", "unplanned", "cancelled")
