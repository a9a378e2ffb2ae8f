"""Real Claude Code, signed in to a plan (or with an API key), driven through the mock API.

Each test asserts what afd says live (its supervisor watching the pane) and
offline (`afd detect` on captures taken then).
"""

from __future__ import annotations

import json
import time

import pytest
import shapes
from verdicts import detect_now, iso, minutes_ahead

from afd.act.deliver import DEFAULT_MESSAGE
from harness import wait_for

# Fewer retries than the CLI's ten: the same screens in seconds, not minutes.
FEW_RETRIES = {"CLAUDE_CODE_MAX_RETRIES": "3"}


def start(rig, shop, **kwargs):
    pane = rig.start_claude(shop, **kwargs)
    pane.wait_for_screen(lambda s: "Claude Code v" in s and "\n❯" in s, message="the composer")
    return pane


def test_streaming_answer_is_working_and_then_idle_as_a_known_claude(rig, shop, afd, tmp_path):
    pane = start(rig, shop)
    rig.answer("claude", shapes.claude_answer(" ".join(f"step{i}" for i in range(80)), chunks=40, delay=0.3))
    pane.type("write the checkout module")
    pane.wait_for_screen(lambda s: "esc to interrupt" in s, message="the spinner")
    working = afd.session(pane.pane, "working", timeout=15)
    assert (working["agent"], working["identity"]) == ("claude", "known")

    pane.wait_for_screen(lambda s: "step79" in s and "esc to interrupt" not in s, timeout=60, message="the answer")
    idle = afd.session(pane.pane, "idle")
    assert (idle["agent"], idle["identity"], idle["reset_at"]) == ("claude", "known", None)
    verdict = detect_now(pane, tmp_path, "idle")
    assert not verdict["hit"] and not verdict["limited"]


def test_five_hour_wall_with_auto_continue_armed_is_limited_until_its_reset(rig, shop, afd, tmp_path):
    pane = start(rig, shop)
    reset = minutes_ahead(150)
    rig.answer("claude", shapes.claude_limit(reset, "five_hour"))
    pane.type("fix the login redirect")
    pane.wait_for_text("Continuing automatically at")
    seen = afd.session(pane.pane, "limited")
    assert (seen["agent"], seen["reset_at"]) == ("claude", iso(reset))
    # Claude's own transcript records the same wall (`quotaLimits.resetsAt`): the two witnesses agree.
    seen = afd.agreed(pane.pane)
    assert seen["reset_at"] == iso(reset)
    verdict = detect_now(pane, tmp_path, "armed")
    assert verdict["limited"] and verdict["reset_at"] == iso(reset) and not verdict.get("needs_human")

    # Esc cancels the CLI's own auto-continue; the plan is still walled.
    pane.key("Escape")
    pane.wait_for_text("Automatic continue cancelled")
    verdict = detect_now(pane, tmp_path, "cancelled")
    assert verdict["limited"] and verdict["reset_at"] == iso(reset)
    assert afd.session(pane.pane, "limited")["reset_at"] == iso(reset)


def test_far_weekly_wall_that_opens_its_own_menu_is_limited_until_the_date(rig, shop, afd, tmp_path):
    pane = start(rig, shop)
    reset = minutes_ahead(3 * 24 * 60 + 7)
    rig.answer("claude", shapes.claude_limit(reset, "seven_day"))
    pane.type("refactor the billing module")
    pane.wait_for_text("Stop and wait for limit to reset")
    assert afd.session(pane.pane, "limited")["reset_at"] == iso(reset)
    verdict = detect_now(pane, tmp_path, "menu")
    assert verdict["limited"] and verdict["reset_at"] == iso(reset)


@pytest.mark.slow
def test_approaching_notice_and_a_throttle_that_is_not_the_plan_are_not_walls(rig, shop, afd, tmp_path):
    pane = start(rig, shop, env=FEW_RETRIES)
    rig.answer("claude", shapes.claude_warning(minutes_ahead(120), "five_hour", 0.92))
    pane.type("add a test for the cart")
    pane.wait_for_text("of your 5-hour limit")
    verdict = detect_now(pane, tmp_path, "approaching")
    assert not verdict["limited"]
    assert afd.session(pane.pane, "idle")["reset_at"] is None

    rig.answer("claude", shapes.claude_throttle())
    pane.type("and one for checkout")
    pane.wait_for_text("retrying in")
    assert not detect_now(pane, tmp_path, "retrying")["limited"]
    pane.wait_for_text("not your usage limit", timeout=120)
    verdict = detect_now(pane, tmp_path, "throttled")
    assert not verdict["hit"] and not verdict["limited"]
    assert afd.session(pane.pane, "idle")["reset_at"] is None


@pytest.mark.slow
def test_api_key_429_is_a_generic_error_not_a_plan_wall(rig, shop, afd, tmp_path):
    pane = start(rig, shop, subscriber=False, env=FEW_RETRIES)
    rig.answer("claude", shapes.claude_limit(minutes_ahead(120), "five_hour"))
    pane.type("fix the login redirect")
    pane.wait_for_text("limit reached · retrying in")
    assert not detect_now(pane, tmp_path, "retrying")["limited"]
    pane.wait_for_text("API Error", timeout=120)
    verdict = detect_now(pane, tmp_path, "error")
    assert not verdict["limited"]
    seen = afd.session(pane.pane, "idle")
    assert (seen["agent"], seen["identity"], seen["reset_at"]) == ("claude", "known", None)


@pytest.mark.slow
def test_resumed_with_a_slow_first_answer_it_is_not_limited_again_before_that_answer(rig, shop, afd_resumes):
    afd = afd_resumes
    pane = start(rig, shop)
    reset = int(time.time()) + 25
    rig.answer("claude", shapes.claude_limit(reset, "five_hour"))
    pane.type("fix the login redirect")
    pane.wait_for_text("Continuing automatically at")
    pane.key("Escape")  # Claude's own auto-continue cancelled: afd resumes it at the reset
    pane.wait_for_text("Automatic continue cancelled")
    afd.agreed(pane.pane)  # its banner and its transcript's rejection record agree
    walled = len(rig.requests("claude"))
    # The plan is open again; the first answer completes its content block only after about 20 s.
    rig.answer("claude", shapes.claude_answer("Fixed the redirect.", chunks=1, delay=7.0))

    wait_for(lambda: afd.events("resume.confirmed"), timeout=120, interval=1, message="afd to confirm its resume")
    pane.wait_for_text("Fixed the redirect.", timeout=90)
    afd.session(pane.pane, "idle", timeout=60)
    done = afd.command("events", "--json")
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    story = "\n".join(f"{e['at']} {e['kind']}: {e['message']}" for e in events)
    confirmed = max(i for i, e in enumerate(events) if e["kind"] == "resume.confirmed")
    after = [e["kind"] for e in events[confirmed + 1:]]
    assert "session.limited" not in after, story
    assert [k for k in after if k.startswith("agent.")] in ([], ["agent.available"]), story
    turns = [r for r in rig.requests("claude")[walled:] if any(DEFAULT_MESSAGE in t for t in r["prompts"][-1:])]
    assert len(turns) == 1, story
