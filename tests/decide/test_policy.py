"""The wait policy, as tables: facts in, one decision out."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from afd.decide import nextaction, plan, policy
from afd.decide.policy import Limit, NeedsHuman, Nothing, Refuse, ResumeAt, ResumeNow
from afd.judge.screen import Native
from afd.record.types import NextAction, PlanKind, ResumeHistory

NOW = datetime(2026, 7, 13, 12, 0, tzinfo=timezone.utc)
MIN = timedelta(minutes=1)


def limit(kind="claude.session", reset=NOW + 60 * MIN, seen=NOW - 10 * MIN, native=Native.NONE, episode="b@1", unstated=True, other_model=False):
    """A plan window by default: one that lifts by itself, whether or not its banner said when."""
    return Limit(kind=kind, episode=episode, first_seen_at=seen, reset_at=reset, native=native, native_at=reset if native is Native.ARMED else None,
                 reset_unstated=unstated, offers_other_model=other_model)


OTHER_MODEL = "the wall names no reset and offers another model: switch models, or hand off with afd handoff work --to AGENT"


HISTORY = ResumeHistory(episode="b@1")


def decide(lim, history=HISTORY, *, auto=True, grace=120.0, retry=1800.0, cap=5):
    return policy.decide_wait("work", lim, history, auto_resume=auto, resume_grace=grace, retry_interval=retry, max_attempts=cap, now=NOW)


CASES = [
    ("no limit, nothing to say", None, ResumeHistory(), {}, Nothing(None)),
    ("auto off reports how to resume", limit(), ResumeHistory(), {"auto": False},
     Nothing("resume with: afd resume work", at=NOW + 60 * MIN, why="report")),
    ("future reset waits for reset plus grace", limit(), ResumeHistory(), {}, ResumeAt(NOW + 62 * MIN, 1, "reset")),
    ("reset past when first seen resumes now", limit(reset=NOW - 30 * MIN), ResumeHistory(), {}, ResumeNow(1, "reset")),
    ("reset passed while waiting, grace over", limit(reset=NOW - 3 * MIN), ResumeHistory(), {}, ResumeNow(1, "reset")),
    ("reset passed, inside the grace", limit(reset=NOW - 1 * MIN), ResumeHistory(), {}, ResumeAt(NOW + 1 * MIN, 1, "reset")),
    ("no reset: retry interval after first seen", limit(reset=None), ResumeHistory(), {}, ResumeAt(NOW + 20 * MIN, 1, "retry")),
    ("no reset, retry due", limit(reset=None, seen=NOW - 31 * MIN), ResumeHistory(), {}, ResumeNow(1, "retry")),
    ("no reset and retry off: report only", limit(reset=None), ResumeHistory(), {"retry": None},
     Nothing("no reset time stated and limit_retry_interval is off; resume with: afd resume work", why="report")),
    ("spend cap needs a human", limit(kind="codex.spend-cap", reset=None, unstated=False), ResumeHistory(), {}, NeedsHuman("add credits (spend cap)")),
    ("billing needs a human even with auto off", limit(kind="claude.billing", reset=None, unstated=False), ResumeHistory(), {"auto": False},
     NeedsHuman("settle billing (billing wall)")),
    ("an org cap with no reset needs a human", limit(kind="claude.org-cap", reset=None, unstated=False), ResumeHistory(), {},
     NeedsHuman("ask your organisation's admin for more usage (org cap)")),
    ("a spend cap that names a reset waits for it", limit(kind="claude.spend-cap", unstated=False), ResumeHistory(), {},
     ResumeAt(NOW + 62 * MIN, 1, "reset")),
    ("a model cap that names a reset waits for it", limit(kind="claude.model-cap", unstated=False), ResumeHistory(), {},
     ResumeAt(NOW + 62 * MIN, 1, "reset")),
    ("another model and no reset: reported, never resumed", limit(kind="claude.model-cap", reset=None, unstated=False, other_model=True),
     ResumeHistory(), {}, Nothing(OTHER_MODEL, why="other-model")),
    ("another model and no reset, even long after: never resumed",
     limit(kind="codex.usage-limit", reset=None, unstated=False, other_model=True, seen=NOW - 300 * MIN), ResumeHistory(), {},
     Nothing(OTHER_MODEL, why="other-model")),
    ("another model beside a reset: waits for the reset", limit(kind="claude.model-cap", unstated=False, other_model=True), ResumeHistory(), {},
     ResumeAt(NOW + 62 * MIN, 1, "reset")),
    ("attempt cap needs a human", limit(reset=NOW - 30 * MIN), ResumeHistory(episode="b@1", attempts=5), {},
     NeedsHuman("5 resumes did not get past this limit (resume_max_attempts = 5)")),
    ("third attempt after two re-limits backs off 60 s", limit(reset=NOW - 30 * MIN),
     ResumeHistory(episode="b@1", attempts=2, backoff_level=2, relimited_at=NOW - 10 * timedelta(seconds=1)), {},
     ResumeAt(NOW + timedelta(seconds=50), 3, "backoff")),
    ("backoff caps at 30 minutes", limit(reset=NOW - 30 * MIN),
     ResumeHistory(episode="b@1", attempts=1, backoff_level=12, relimited_at=NOW), {"cap": 20}, ResumeAt(NOW + 30 * MIN, 2, "backoff")),
    ("native auto-continue armed: checked after its time, jitter and grace", limit(native=Native.ARMED), ResumeHistory(), {},
     ResumeAt(NOW + 60 * MIN + timedelta(seconds=90) + 2 * MIN, 1, "auto-continue")),
    ("native auto-continue overdue: nudge now", limit(reset=NOW - 10 * MIN, native=Native.ARMED), ResumeHistory(), {},
     ResumeNow(1, "auto-continue")),
    ("native auto-continue cancelled: afd's own wait", limit(native=Native.CANCELLED), ResumeHistory(), {}, ResumeAt(NOW + 62 * MIN, 1, "reset")),
    ("native armed and auto off: nothing sent", limit(native=Native.ARMED), ResumeHistory(), {"auto": False},
     Nothing("waiting for the agent's own auto-continue", at=NOW + 60 * MIN, why="auto-continue")),
    ("a stop for a human holds the episode", limit(), ResumeHistory(episode="b@1", needs_human="choose in the menu"), {},
     NeedsHuman("choose in the menu")),
    ("a failed attempt waits before the next", limit(reset=NOW - 30 * MIN), ResumeHistory(attempts=1, retry_after=NOW + MIN), {},
     ResumeAt(NOW + MIN, 2, "reset")),
]


@pytest.mark.parametrize(("lim", "history", "kw", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_wait_policy(lim, history, kw, expected):
    assert decide(lim, history, **kw) == expected


OBSERVE = [
    ("new banner starts an episode", ResumeHistory(), limit(episode="x"),
     ResumeHistory(episode="x", first_seen_at=NOW - 10 * MIN, reset_at=NOW + 60 * MIN)),
    ("same banner changes nothing", ResumeHistory(episode="x", attempts=2), limit(episode="x"), ResumeHistory(episode="x", attempts=2)),
    ("new banner within a minute of a continuation backs off",
     ResumeHistory(episode="x", attempts=1, last_sent_at=NOW - 40 * timedelta(seconds=1)), limit(episode="y", seen=NOW - 10 * timedelta(seconds=1)),
     ResumeHistory(episode="y", attempts=1, last_sent_at=NOW - 40 * timedelta(seconds=1), backoff_level=1,
                   relimited_at=NOW - 10 * timedelta(seconds=1), first_seen_at=NOW - 10 * timedelta(seconds=1), reset_at=NOW + 60 * MIN)),
    ("new banner long after a continuation is a new episode",
     ResumeHistory(episode="x", attempts=3, backoff_level=2, last_sent_at=NOW - 30 * MIN), limit(episode="y", seen=NOW),
     ResumeHistory(episode="y", first_seen_at=NOW, reset_at=NOW + 60 * MIN)),
    ("no banner a while after a continuation: real work resets", ResumeHistory(episode="x", attempts=2, backoff_level=1, last_sent_at=NOW - 5 * MIN),
     None, ResumeHistory()),
    ("no banner right after a continuation: too early to tell", ResumeHistory(episode="x", attempts=1, last_sent_at=NOW - 5 * timedelta(seconds=1)),
     None, ResumeHistory(episode="x", attempts=1, last_sent_at=NOW - 5 * timedelta(seconds=1))),
]


@pytest.mark.parametrize(("before", "lim", "after"), [c[1:] for c in OBSERVE], ids=[c[0] for c in OBSERVE])
def test_history_observes_relimits_and_real_work(before, lim, after):
    assert policy.observe(before, lim, now=NOW) == after


@pytest.mark.parametrize(
    ("kw", "refused"),
    [
        (dict(state="limited", limited=True, pane_known=True, pane_present=True, in_progress=None), None),
        (dict(state="idle", limited=False, pane_known=True, pane_present=True, in_progress=None), "not at a usage limit"),
        (dict(state="limited", limited=True, pane_known=True, pane_present=False, in_progress=None), "pane is gone"),
        (dict(state="limited", limited=True, pane_known=False, pane_present=False, in_progress=None), "did not answer"),
        (dict(state="limited", limited=True, pane_known=True, pane_present=True, in_progress="resume at step submitted"), "in progress"),
    ],
    ids=["limited", "not-limited", "pane-gone", "pane-unknown", "in-progress"],
)
def test_manual_resume_refusals(kw, refused):
    decision = policy.decide_manual(**kw)
    if refused is None:
        assert isinstance(decision, ResumeNow)
    else:
        assert isinstance(decision, Refuse) and refused in decision.why


def test_backoff_doubles_from_30_seconds_to_a_30_minute_cap():
    assert [policy.backoff(n).total_seconds() for n in range(0, 8)] == [0, 30, 60, 120, 240, 480, 960, 1800]
    assert policy.backoff(100) == timedelta(minutes=30)


@pytest.mark.parametrize(
    ("decision", "words"),
    [
        (ResumeAt(NOW + 72 * MIN, 1, "reset"), "resume at 13:12 (in 1h12m)"),
        (ResumeAt(NOW + 20 * MIN, 1, "retry"), "retry at 12:20 (in 20m)"),
        (ResumeAt(NOW + MIN, 3, "backoff"), "backing off until 12:01 (in 1m) (attempt 3 of 5)"),
        (NeedsHuman("add credits (spend cap)"), "needs you: add credits (spend cap)"),
        (Nothing("waiting for the agent's own auto-continue", at=NOW + 7 * 60 * MIN, why="auto-continue"),
         "waiting for Claude's own auto-continue at 19:00 (in 7h00m)"),
    ],
    ids=["reset", "retry", "backoff", "spend-cap", "native"],
)
def test_next_action_in_words_and_machine_form(decision, words):
    shown = plan.of(decision, max_attempts=5, agent="claude")
    stored = shown.as_json()
    assert nextaction.words(stored, now=NOW, zone=timezone.utc) == words
    assert set(stored) >= {"action", "at", "attempt", "why"}
    assert NextAction.loads(shown.dumps()) == shown and nextaction.loads(shown.dumps()) == stored
    if stored["at"] is not None:
        assert stored["at"].endswith("Z")


def test_text_stored_as_a_plan_by_an_older_afd_reads_as_a_report_in_its_words():
    assert NextAction.loads("resume at 14:01") == NextAction(PlanKind.REPORT, "resume at 14:01")
    assert NextAction.loads('{"action": "no-such-action"}').action is PlanKind.REPORT


# A wall's facts decide between waiting, a person and a handoff; its kind never does.
OTHER_MODEL_WALL = limit(kind="claude.model-cap", reset=None, unstated=False, other_model=True)
HUMAN_WALL = limit(kind="claude.org-cap", reset=None, unstated=False)
CAPPED_WITH_RESET = limit(kind="claude.spend-cap", unstated=False)

WALL_PATHS = [
    ("another model, no reset: the wait path stops, a handoff takes it", OTHER_MODEL_WALL, Nothing, False),
    ("no reset, no other model: a person", HUMAN_WALL, NeedsHuman, True),
    ("a cap that names its reset: waited out", CAPPED_WITH_RESET, ResumeAt, False),
]


@pytest.mark.parametrize(("lim", "wait_decision", "needs_human"), [c[1:] for c in WALL_PATHS], ids=[c[0] for c in WALL_PATHS])
def test_what_the_wall_says_picks_the_path(lim, wait_decision, needs_human):
    from afd.record.types import LimitFact, LimitState

    assert isinstance(decide(lim, ResumeHistory()), wait_decision)
    assert lim.needs_human is needs_human
    # handoff_order = ["codex"]: the session's claude is swapped whatever its wall says.
    facts = {"claude": LimitFact("claude", LimitState.LIMITED, lim.reset_at, NOW, "work")}
    assert policy.choose_target(["codex"], "claude", facts) == policy.Handoff("codex", unverified=True, why="first in handoff_order not limited (unknown)")
