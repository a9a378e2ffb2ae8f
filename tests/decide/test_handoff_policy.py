"""The handoff policy as tables: candidate choice (the loop guard), every refusal, recovery after a restart."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from afd.act import Finish, Result, Wait, briefing, swap
from afd.act.swap import SwapFacts
from afd.decide.policy import Handoff, HandoffFacts, Park, choose_target, handoff_refusal, route_account
from afd.record.types import LimitFact, LimitState
from afd.world.teardown import Gone, Tree
from afd.world.tmux import PaneInfo

NOW = datetime(2026, 7, 13, 9, 0, tzinfo=timezone.utc)
SOON, LATER = NOW + timedelta(hours=1), NOW + timedelta(hours=3)


def fact(agent: str, state: str, reset: datetime | None = None) -> LimitFact:
    return LimitFact(agent=agent, state=LimitState(state), reset_at=reset, observed_at=NOW, source_session="s", banner=None)


@pytest.mark.parametrize(
    "order, outgoing, facts, expected",
    [
        (["codex"], "claude", {}, Handoff("codex", True)),
        (["codex", "devin"], "claude", {"codex": fact("codex", "available")}, Handoff("codex", False)),
        (["codex", "devin"], "claude", {"codex": fact("codex", "limited", SOON)}, Handoff("devin", True)),
        (["claude", "codex"], "claude", {}, Handoff("codex", True)),
        (["codex"], "codex", {}, Park(True, None)),
        (
            ["codex", "claude"], "claude",
            {"codex": fact("codex", "limited", LATER), "claude": fact("claude", "limited", SOON)},
            Park(True, SOON),
        ),
        (["codex", "devin"], "claude", {"codex": fact("codex", "limited"), "devin": fact("devin", "limited", LATER)}, Park(True, LATER)),
    ],
    ids=["unknown-is-tried-unverified", "available-is-verified", "limited-is-skipped", "outgoing-is-skipped",
         "only-the-outgoing-one", "all-limited-earliest-reset", "a-reset-not-stated-is-left-out"],
)
def test_candidate_choice(order, outgoing, facts, expected):
    got = choose_target(order, outgoing, facts)
    assert type(got) is type(expected)
    if isinstance(expected, Handoff):
        assert (got.to, got.unverified) == (expected.to, expected.unverified)
    else:
        assert (got.all_limited, got.until) == (expected.all_limited, expected.until)


OK = HandoffFacts(
    session_state="limited", outgoing="claude", identity="known", identity_source="process", mission="Fix it",
    pane_present=True, action_in_progress=None, is_work_tree=True, cwd_inside_worktree=True, handoffs_at=(),
    target_known=True, target_command="/usr/bin/codex", target_fact=None, now=NOW, max_per_session=3,
)


@pytest.mark.parametrize(
    "changes, kwargs, why",
    [
        ({}, {}, None),
        ({"target_known": False}, {}, "not an agent any plugin provides"),
        ({"pane_present": None}, {}, "tmux did not answer"),
        ({"pane_present": False}, {}, "pane is gone"),
        ({"action_in_progress": "resume"}, {}, "action in progress (resume)"),
        ({"identity": "unknown"}, {}, "cannot rule out handing it to itself"),
        ({"identity": "unknown", "identity_source": "user"}, {}, "only vouched for by the user"),
        ({"identity_source": "user"}, {"automatic": True}, "never handed off automatically"),
        ({"account": "unknown"}, {"automatic": True}, "cannot tell which account its agent runs on"),
        ({"account": "unknown"}, {}, None),  # the user's own word may still hand it off
        ({"account": "claude@/home/u/.claude-x"}, {"automatic": True}, None),
        ({"outgoing": "codex"}, {}, "codex is the agent running there now"),
        ({"mission": None}, {}, "give the new agent its goal with --brief"),
        ({"mission": None}, {"brief": "Do X"}, None),
        ({"mission": None}, {"automatic": True}, "has no mission"),
        ({"is_work_tree": False}, {}, "not a git work tree"),
        ({"cwd_inside_worktree": False}, {}, "not inside the session's worktree"),
        ({"target_command": None}, {}, "not found on the pane's PATH"),
        ({"target_fact": fact("codex", "limited", SOON)}, {}, "codex is at its usage limit until 2026-07-13T10:00:00Z; --force"),
        ({"target_fact": fact("codex", "limited", SOON)}, {"force": True}, None),
        ({"target_fact": fact("codex", "unknown")}, {}, None),
        ({"handoffs_at": (NOW - timedelta(hours=1),) * 3}, {}, "3 times in the last 24 hours"),
        ({"handoffs_at": (NOW - timedelta(hours=25),) * 3}, {}, None),
        ({"turn_ended": False}, {}, "still in a turn"),
    ],
    ids=lambda v: str(v)[:40],
)
def test_handoff_refusals(changes, kwargs, why):
    args = {"brief": None, "force": False, "automatic": False, **kwargs}
    got = handoff_refusal(replace(OK, **changes), "codex", **args)
    if why is None:
        assert got is None
    else:
        assert got is not None and why in got


def swap_facts(pane_present: bool | None, session_known: bool) -> SwapFacts:
    pane = PaneInfo(pane_id="%1", pane_pid=1, current_command="sh", start_command="sh", cwd="/w", dead=False, width=80,
                    height=24, cursor_x=0, cursor_y=0, history_size=0, window_activity=0, in_mode=False,
                    session_name="s", window_index=0, pane_index=0) if pane_present else None
    return SwapFacts(now=NOW, earlier=True, session_known=session_known, stop_timeout=10.0,
                     tmux_answered=pane_present is not None, pane=pane, only_a_shell=False,
                     tree=Tree(None, ()), gone=Gone.ALIVE)


# After a restart the engine drives a swap's row through the same steps: carried on, or rolled back.
@pytest.mark.parametrize(
    "step, pane_present, session_known, expected",
    [
        ("stopping", True, True, "carry on"),
        ("starting", None, True, "carry on"),
        ("launch", False, True, "roll back"),
        ("stop", True, False, "roll back"),
    ],
    ids=["stopping-carries-on", "unanswered-tmux-carries-on", "pane-gone-rolls-back", "session-gone-rolls-back"],
)
def test_recovery_of_a_handoff_after_a_restart(step, pane_present, session_known, expected):
    row = {"step": step, "pane": "%1", "target": "codex", "outgoing": "claude", "run": "an-earlier-run",
           "term_at": NOW.isoformat(), "remain_saved": True}
    move = swap.step(row, swap_facts(pane_present, session_known))
    rolled_back = isinstance(move, Finish) and move.result is Result.ROLLED_BACK
    assert rolled_back is (expected == "roll back"), move


@pytest.mark.parametrize(
    "pane_present, expected",
    [(True, "carry on"), (False, "roll back")],
    ids=["brief-waits", "brief-pane-gone"],
)
def test_recovery_of_a_pending_brief_after_a_restart(pane_present, expected):
    row = {"pane": "%1", "brief": "Take over.", "target": "codex", "run": "an-earlier-run"}
    move = briefing.step(row, briefing.BriefFacts("limited", pane_present, earlier=True))
    rolled_back = isinstance(move, Finish) and move.result is Result.ROLLED_BACK
    assert rolled_back is (expected == "roll back"), move
    if expected == "carry on":
        assert isinstance(move, Wait)


# --- accounts ------------------------------------------------------------------------------


def account_fact(account: str, agent: str, state: str, reset: datetime | None = None) -> LimitFact:
    return replace(fact(agent, state, reset), account=None if account == agent else account)


def test_the_walled_account_goes_to_another_account_of_the_same_agent():
    facts = {"claude": account_fact("claude", "claude", "limited", SOON),
             "claude-work": account_fact("claude-work", "claude", "available")}
    assert choose_target(["claude-work", "codex"], "claude", facts) == Handoff(
        "claude-work", unverified=False, why="first in handoff_order not limited (available)")
    # From the work account, its agent's default is another account too.
    facts["claude"] = account_fact("claude", "claude", "unknown")
    assert choose_target(["claude-work", "claude"], "claude-work", facts).to == "claude"


def test_all_limited_is_about_accounts_with_the_earliest_reset():
    later = SOON + timedelta(hours=2)
    facts = {"claude": account_fact("claude", "claude", "limited", later),
             "claude-work": account_fact("claude-work", "claude", "limited", SOON),
             "codex": account_fact("codex", "codex", "limited", later + timedelta(hours=1))}
    assert choose_target(["claude-work", "codex"], "claude", facts) == Park(all_limited=True, until=SOON, why="all agents limited")
    facts["codex"] = account_fact("codex", "codex", "available")
    assert choose_target(["claude-work", "codex"], "claude", facts).to == "codex"


@pytest.mark.parametrize(
    "account, target, why",
    [
        ("claude", "claude-work", None),
        ("claude-work", "claude", None),
        ("claude-work", "claude-work", "claude-work is the account running there now"),
        ("claude", "claude", "claude is the agent running there now"),
        (None, "claude", "claude is the agent running there now"),  # a record from before accounts: its default
        (None, "claude-work", None),
        ("unknown", "claude-work", "cannot tell which account claude runs on there"),
        ("claude@/home/u/.claude-x", "claude-work", None),
    ],
)
def test_a_handoff_within_one_agent_is_refused_only_to_the_account_running_there(account, target, why):
    facts = replace(OK, account=account, target_agent="claude", target_command="/usr/bin/claude")
    got = handoff_refusal(facts, target, brief=None, force=False, automatic=False)
    assert got == why if why is None else (got is not None and why in got)


def test_an_unknown_target_names_agents_and_accounts():
    got = handoff_refusal(replace(OK, target_known=False, target_agent=None), "claude-wrok", brief=None, force=False,
                          automatic=False)
    assert got == "'claude-wrok' is not an agent any plugin provides, nor an account of the config"


@pytest.mark.parametrize(
    "facts, chosen, why",
    [
        ({}, "claude", "never seen limited"),
        ({"claude": ("limited", SOON)}, "claude-work", "never seen limited"),
        ({"claude-work": ("available", None)}, "claude-work", "seen working, not limited"),
        # Both limits have lapsed: the one whose limit lies further back.
        ({"claude": ("unknown-lapsed", NOW - timedelta(hours=1)), "claude-work": ("unknown-lapsed", NOW - timedelta(hours=5))},
         "claude-work", "the least recently limited"),
        ({"claude": ("limited", SOON + timedelta(hours=1)), "claude-work": ("limited", SOON)},
         "claude-work", "every account is limited; its reset comes first"),
    ],
    ids=["nothing-known", "default-limited", "one-seen-working", "least-recently-limited", "all-limited"],
)
def test_a_new_session_is_routed_to_the_least_limited_account(facts, chosen, why):
    made = {}
    for account, (state, at) in facts.items():
        if state == "unknown-lapsed":
            made[account] = replace(account_fact(account, "claude", "unknown"), observed_at=at, banner="You've hit your limit")
        else:
            made[account] = account_fact(account, "claude", state, at)
    assert route_account(["claude", "claude-work"], made) == (chosen, why)
    assert route_account(["claude"], made)[0] == "claude"
