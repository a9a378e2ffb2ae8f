"""Deciding with usage figures (tables): headroom routing and ranking, the handoff before the wall, the costly wake,
and when a held prompt goes in."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from afd.decide import before_wall, headroom, queue
from afd.decide.before_wall import PromptCacheState
from afd.decide.queue import AsEnvelope, AsResume, Hold, QueuedPrompt, QueueState
from afd.judge import usage
from afd.judge.limits import LimitFact, LimitState
from afd.judge.usage import Sample, UsageInputs
from afd.model import SessionState

T0 = datetime(2026, 7, 13, 12, 0, tzinfo=timezone.utc)
UTC = timezone.utc


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def figures(*rows, now=T0, stale_after=900.0):
    """rows: (account, used, reset minutes, age minutes[, window])."""
    by_key: dict = {}
    for account, used, reset, age, *rest in rows:
        window = rest[0] if rest else "five_hour"
        s = Sample(account, account.partition("-")[0], window, used, at(reset), now - timedelta(minutes=age), "statusline",
                   window_minutes=300 if window == "five_hour" else None)
        by_key.setdefault(s.key, []).append(s)
    return usage.figures(UsageInputs(samples=by_key), [], now, stale_after=stale_after)


def limited(account: str, reset: float | None = 60) -> LimitFact:
    return LimitFact(agent=account.partition("-")[0], state=LimitState.LIMITED, reset_at=at(reset) if reset else None,
                     observed_at=at(-1), source_session="s", account=account)


# --- headroom ------------------------------------------------------------------------------

FIG = figures(("claude", 90.0, 100, 1), ("claude-work", 30.0, 100, 1), ("codex", 60.0, 100, 1), ("claude-old", 5.0, 100, 30),
              ("claude-full", 100.0, 100, 1))


@pytest.mark.parametrize(
    ("order", "outgoing", "facts", "rank", "expected"),
    [
        pytest.param(["codex", "claude-work"], "claude", {}, "order", ["codex", "claude-work"], id="order-is-the-ranking"),
        pytest.param(["codex", "claude-work"], "claude", {}, "headroom", ["claude-work", "codex"], id="most-headroom-first"),
        pytest.param(["gemini", "codex"], "claude", {}, "headroom", ["codex", "gemini"],
                     id="no-figures-never-above-figures"),
        pytest.param(["claude-old", "codex"], "claude", {}, "headroom", ["codex", "claude-old"],
                     id="a-stale-figure-is-no-figure"),
        pytest.param(["claude-full", "codex"], "claude", {}, "order", ["codex"], id="a-used-up-window-counts-as-limited"),
        pytest.param(["codex", "claude-work"], "claude", {"claude-work": limited("claude-work")}, "headroom", ["codex"],
                     id="limited-is-skipped"),
        pytest.param(["gemini", "devin"], "claude", {}, "headroom", ["gemini", "devin"], id="no-figures-the-order-ties"),
    ],
)
def test_handoff_targets_ranked(order, outgoing, facts, rank, expected):
    assert [a for a, _ in headroom.rank_targets(order, outgoing, facts, FIG, rank)] == expected


def test_routing_new_sessions_to_the_most_headroom():
    assert headroom.route_most_headroom(["claude", "claude-work"], {}, FIG) == (
        "claude-work", "the most headroom: 70 % left in its fullest window")
    assert headroom.route_most_headroom(["gemini", "gemini-2"], {}, FIG)[0] == "gemini"
    assert headroom.route_most_headroom(["claude"], {}, FIG) == ("claude", "its only account")
    assert headroom.route_most_headroom(["claude", "claude-work"], {"claude": limited("claude"),
                                                                    "claude-work": limited("claude-work")}, FIG)[1] \
        == "every account is limited"


# --- the handoff before the wall ------------------------------------------------------------


def due(state=SessionState.IDLE, account="claude", fig=None, threshold=95.0, min_wait=1800.0, done=(), turn_ended=True):
    return before_wall.handoff_before(state=state, turn_ended=turn_ended, account=account, figures=fig or figures(("claude", 96.0, 180, 1)),
                                      threshold=threshold, min_wait=min_wait, now=T0, done=done, zone=UTC)


def test_a_turn_ended_at_the_threshold_hands_off_with_its_reason():
    found = due()
    assert found is not None and found.account == "claude"
    assert found.reason == "approaching limit (96 % of the 5-hour window, resets 15:00)"
    assert found.key == "handoff-before|claude||five_hour|2026-07-13T15:00:00Z"


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"state": SessionState.WORKING}, id="never-mid-turn"),
        pytest.param({"turn_ended": False}, id="idle-with-its-spinner-is-mid-turn"),
        pytest.param({"state": SessionState.LIMITED}, id="at-the-wall-its-own-path"),
        pytest.param({"threshold": None}, id="off"),
        pytest.param({"fig": figures(("claude", 94.0, 180, 1))}, id="below-the-threshold"),
        pytest.param({"fig": figures(("claude", 99.0, 20, 1))}, id="its-reset-is-sooner-than-the-wait"),
        pytest.param({"fig": figures(("claude", 99.0, 180, 20))}, id="a-stale-figure-is-no-evidence"),
        pytest.param({"account": "unknown"}, id="an-unknown-account"),
        pytest.param({"done": ["handoff-before|claude||five_hour|2026-07-13T15:00:00Z"]}, id="once-per-window"),
        pytest.param({"fig": figures(("claude", 99.0, 600, 1, "spend_limit"))}, id="not-the-spend-window"),
    ],
)
def test_no_handoff_before_the_wall(kwargs):
    assert due(**kwargs) is None


def test_the_next_window_is_another_window():
    done = [due().key]
    later = figures(("claude", 97.0, 480, 1))
    assert due(fig=later, done=done) is not None


# --- the costly wake ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cache", "tokens", "spend", "fig", "expected"),
    [
        pytest.param(PromptCacheState(False, None, 90_000), 50_000, None, None,
                     "its prompt cache is cold: going on would cache 90,000 tokens again (cold_cache_tokens = 50,000)",
                     id="cold-and-costly"),
        pytest.param(PromptCacheState(True, at(-1), 90_000), 50_000, None, None, "cold", id="warm-but-expired-is-cold"),
        pytest.param(PromptCacheState(True, at(5), 90_000), 50_000, None, None, None, id="warm"),
        pytest.param(PromptCacheState(False, None, 20_000), 50_000, None, None, None, id="cold-but-cheap"),
        pytest.param(PromptCacheState(False, None, 90_000), 0, None, None, None, id="off"),
        pytest.param(None, 50_000, None, None, None, id="no-word-on-the-cache-asks-nothing"),
        pytest.param(None, 0, 90.0, figures(("claude", 95.0, 600, 1, "spend_limit")),
                     "its account's spend window is 95 % used (spend_warn_at = 90 %)", id="spend-past-its-share"),
        pytest.param(None, 0, 90.0, figures(("claude", 80.0, 600, 1, "spend_limit")), None, id="spend-below"),
    ],
)
def test_a_wake_that_costs_more_than_it_is_worth(cache, tokens, spend, fig, expected):
    why = before_wall.wake_cost(cache=cache, cold_cache_tokens=tokens, figures=fig, account="claude", spend_warn_at=spend,
                                now=T0)
    if expected is None or expected == "cold":
        assert (why is None) == (expected is None) and (expected is None or why.startswith("its prompt cache is cold"))
    else:
        assert why == expected


# --- held prompts --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [("reset", ("reset", None)), ("13:30", ("time", at(90))), ("11:00", ("time", at(23 * 60))),
     ("2026-07-14T08:00:00Z", ("time", datetime(2026, 7, 14, 8, 0, tzinfo=UTC)))],
    ids=["reset", "later-today", "tomorrow", "iso"],
)
def test_at_reads_reset_a_clock_time_in_your_zone_or_an_instant(text, expected):
    assert queue.parse_at(text, T0, UTC) == expected


def test_at_refuses_anything_else():
    with pytest.raises(ValueError, match='--at takes "reset", HH:MM'):
        queue.parse_at("tomorrow", T0, UTC)


def test_the_reset_a_prompt_waits_for():
    assert queue.reset_due(limited("claude", 60), None, "claude", 120, T0) == at(62)
    assert queue.reset_due(None, FIG, "claude", 120, T0) == at(102)
    assert queue.reset_due(None, FIG, "gemini", 120, T0) is None


def item(due_minutes=0.0) -> QueuedPrompt:
    return QueuedPrompt(1, "shop", "run the tests", "reset", at(due_minutes), QueueState.WAITING, at(-60))


@pytest.mark.parametrize(
    ("due_at", "state", "fact", "busy", "paused", "resume_path", "expected"),
    [
        pytest.param(5, SessionState.IDLE, None, False, False, False, Hold("due at 2026-07-13T12:05:00Z"), id="not-due"),
        pytest.param(0, SessionState.IDLE, None, False, False, False, AsEnvelope(), id="idle-an-envelope"),
        pytest.param(0, SessionState.LIMITED, None, False, False, True, AsResume(True), id="at-the-wall-one-paste"),
        pytest.param(0, SessionState.LIMITED, None, False, False, False, AsResume(False), id="at-the-wall-alone"),
        pytest.param(0, SessionState.LIMITED, limited("claude", 30), False, False, True,
                     Hold("its account is limited until 2026-07-13T12:30:00Z"), id="limited-until-later"),
        pytest.param(0, SessionState.WORKING, None, False, False, False,
                     Hold("the agent is working; it goes in at its next prompt"), id="working"),
        pytest.param(0, SessionState.IDLE, None, True, False, False, Hold("an action of afd is in progress on the session"),
                     id="busy"),
        pytest.param(0, SessionState.IDLE, None, False, True, False, Hold("the session is paused"), id="paused"),
        pytest.param(0, SessionState.EXITED, None, False, False, False, Hold("the agent is not running in the pane"),
                     id="exited"),
    ],
)
def test_when_a_held_prompt_goes_in(due_at, state, fact, busy, paused, resume_path, expected):
    assert queue.next_move(item(due_at), state=state, fact=fact, busy=busy, paused=paused, resume_path=resume_path,
                           grace=120, now=T0) == expected


def test_one_paste_carries_the_continuation_and_the_prompt():
    assert queue.resume_text("Your usage limit has reset.", ["run the tests"]) == "Your usage limit has reset.\n\nrun the tests"
    assert queue.resume_text(None, ["run the tests "]) == "run the tests"


def test_an_agent_that_continues_by_itself_gets_the_prompt_at_its_next_prompt():
    assert queue.next_move(item(0), state=SessionState.LIMITED, fact=None, busy=False, paused=False, resume_path=True,
                           grace=120, now=T0, armed=True) == Hold(
        "the agent continues by itself at its reset; the prompt goes in at its next prompt")
