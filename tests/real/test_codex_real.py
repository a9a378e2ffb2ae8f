"""Real Codex on a mock provider, driven through the mock API.

Each test asserts what afd says live (its supervisor watching the pane) and
offline (`afd detect` on captures taken then). A modal takes keystrokes as
choices, so no test types while one is up: Esc closes it first.
"""

from __future__ import annotations

import re
import time
from datetime import datetime

import pytest
import shapes
from verdicts import detect_now, iso, minutes_ahead

from afd.act.deliver import DEFAULT_MESSAGE
from harness import wait_for

COMPOSER = "Ask Codex to do anything"


def start(rig, shop, **kwargs):
    pane = rig.start_codex(shop, **kwargs)
    pane.wait_for_text(COMPOSER)
    return pane


def test_codex_under_node_is_known_working_then_idle(rig, shop, afd, tmp_path):
    pane = start(rig, shop)
    assert rig.tmux.pane_field(pane.pane, "#{pane_current_command}") == "node"
    rig.answer("codex", shapes.codex_answer(" ".join(f"step{i}" for i in range(80)), chunks=40, delay=0.3))
    pane.type("write the checkout module")
    pane.wait_for_text("step1 ")
    working = afd.session(pane.pane, "working", timeout=15)
    assert (working["agent"], working["identity"]) == ("codex", "known")

    pane.wait_for_text("Worked for", timeout=60)
    idle = afd.session(pane.pane, "idle")
    assert (idle["agent"], idle["identity"], idle["reset_at"]) == ("codex", "known", None)
    assert not detect_now(pane, tmp_path, "idle")["hit"]


def test_plan_wall_then_its_modal_then_a_new_thread_under_the_sticky_row(rig, shop, afd, tmp_path):
    pane = start(rig, shop)
    reset = minutes_ahead(2 * 24 * 60 + 5)
    rig.answer("codex", shapes.codex_limit("plus", reset, shapes.codex_usage_headers(100, reset)))
    pane.type("fix the login redirect")
    pane.wait_for_text("Keep current model")
    verdict = detect_now(pane, tmp_path, "modal")
    assert verdict["limited"] and verdict["reset_at"] == iso(reset) and not verdict.get("needs_human")
    assert afd.session(pane.pane, "limited")["reset_at"] == iso(reset)

    pane.key("Escape")
    pane.wait_for_text("5h limit:")
    verdict = detect_now(pane, tmp_path, "sticky")
    assert verdict["limited"] and verdict["reset_at"] == iso(reset)

    # The status row stays for the life of the process, also in a new thread
    # that works: chrome, never a wall and never output.
    rig.answer("codex", shapes.codex_answer("All tests pass now.", delay=0.2))
    pane.type("/new", submits=False)
    # In a git repository Codex first asks where the thread should run: choose
    # by text (the highlighted row must be the current worktree), never by number.
    screen = pane.wait_for_screen(lambda s: "Where should the new conversation run?" in s or "fix the login" not in s,
                                  message="the new thread or its question")
    if "Where should the new conversation run?" in screen:
        assert re.search(r"^› \d\. Use current Git worktree", screen, re.MULTILINE), screen
        pane.key("Enter")
    pane.wait_for_screen(lambda s: "fix the login redirect" not in s and COMPOSER in s, message="a new thread")
    pane.type("run the tests")
    pane.wait_for_text("Worked for", timeout=30)
    assert "5h limit:" in pane.capture()
    verdict = detect_now(pane, tmp_path, "new-thread")
    assert not verdict["hit"] and not verdict["limited"]
    assert afd.session(pane.pane, "idle")["reset_at"] is None


def test_a_plan_wall_without_a_reset_is_limited_with_no_reset_time(rig, shop, afd, tmp_path):
    pane = start(rig, shop)
    rig.answer("codex", shapes.codex_limit("plus", None))
    pane.type("fix the flaky test")
    pane.wait_for_text("try again later")
    verdict = detect_now(pane, tmp_path, "later")
    assert verdict["limited"] and verdict["reset_at"] is None and not verdict.get("needs_human")
    assert afd.session(pane.pane, "limited")["reset_at"] is None

    # A billing wall: no reset will end it, a person has to.
    rig.answer("codex", shapes.codex_billing("insufficient_quota"))
    pane.type("check the invoices")
    pane.wait_for_text("Quota exceeded")
    verdict = detect_now(pane, tmp_path, "quota")
    assert verdict["limited"] and verdict["reset_at"] is None and verdict.get("needs_human") is True


def test_modal_after_a_successful_answer_and_a_throttle_are_not_walls(rig, shop, afd, tmp_path):
    pane = start(rig, shop)
    rig.answer("codex", shapes.codex_answer("Refactored.", delay=0.2, headers=shapes.codex_usage_headers(93, minutes_ahead(180))))
    pane.type("refactor the cart")
    pane.wait_for_text("Keep current model")
    assert not detect_now(pane, tmp_path, "approaching")["limited"]
    assert afd.session(pane.pane, "idle")["reset_at"] is None
    pane.key("Escape")
    pane.wait_for_text(COMPOSER)

    rig.answer("codex", shapes.codex_throttle(retry_after=4))
    pane.type("add a test for checkout")
    pane.wait_for_text("reconnecting")
    assert not detect_now(pane, tmp_path, "reconnecting")["limited"]
    pane.wait_for_text("exceeded retry limit", timeout=90)
    verdict = detect_now(pane, tmp_path, "gave-up")
    assert not verdict["limited"]
    assert afd.session(pane.pane, "idle")["reset_at"] is None


@pytest.mark.slow
def test_plan_wall_is_resumed_once_after_its_reset_past_the_switch_model_modal(rig, shop, afd_resumes):
    afd = afd_resumes
    pane = start(rig, shop)
    reset = int(time.time()) + 20
    rig.answer("codex", shapes.codex_limit("plus", reset, shapes.codex_usage_headers(100, reset)))
    pane.type("fix the login redirect")
    pane.wait_for_text("Keep current model")
    walled = len(rig.requests("codex"))
    # The plan is open again before afd could act: whenever it resumes, the answer is a normal one.
    rig.answer("codex", shapes.codex_answer("Fixed the redirect.", delay=0.2))

    confirmed = wait_for(lambda: afd.events("resume.confirmed"), timeout=90, interval=1,
                         message="afd to confirm its resume")
    pane.wait_for_text("Fixed the redirect.", timeout=30)
    afd.session(pane.pane, "idle")
    turns = [r for r in rig.requests("codex")[walled:] if any(DEFAULT_MESSAGE in text for text in r["prompts"][-1:])]
    assert len(turns) == 1, rig.requests("codex")[walled:]
    # "Keep current model", not a switch: the continuation goes to the model the wall was on.
    assert turns[0]["at"] >= reset and turns[0]["model"] == rig.requests("codex")[0]["model"]
    assert len(confirmed) == 1 and len(afd.events("resume.sent")) == 1
    assert datetime.fromisoformat(afd.events("resume.sent")[0]["at"].replace("Z", "+00:00")).timestamp() >= reset
