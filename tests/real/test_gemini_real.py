"""Real Gemini CLI with an API key on the mock API, known to afd only through its shipped manifest.

Each test asserts what afd says live (its supervisor watching the pane) and
offline (`afd detect` on captures taken then). The quota dialog takes keys
as choices, so no test types while it is up.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import shapes
from verdicts import detect_now

COMPOSER = "Type your message or @path/to/file"


def start(rig, shop):
    pane = rig.start_gemini(shop)
    pane.wait_for_text(COMPOSER, timeout=60)
    return pane


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_gemini_under_node_is_known_working_then_idle(rig, shop, afd, tmp_path):
    pane = start(rig, shop)
    assert rig.tmux.pane_field(pane.pane, "#{pane_current_command}") == "node"
    rig.answer("gemini", shapes.gemini_answer(" ".join(f"step{i}" for i in range(60)), chunks=30, delay=0.3))
    pane.type("write the checkout module")
    pane.wait_for_text("esc to cancel")
    working = afd.session(pane.pane, "working", timeout=15)
    assert (working["agent"], working["identity"]) == ("gemini", "known")

    pane.wait_for_screen(lambda s: "step59" in s and "esc to cancel" not in s, timeout=60, message="the whole reply")
    idle = afd.session(pane.pane, "idle")
    assert (idle["agent"], idle["reset_at"]) == ("gemini", None)
    assert not detect_now(pane, tmp_path, "idle")["hit"]


def test_the_quota_dialog_is_a_wall_with_its_reset_and_so_is_the_error_it_leaves(rig, shop, afd, tmp_path):
    pane = start(rig, shop)
    rig.answer("gemini", shapes.gemini_limit(7200))
    asked = time.time()
    pane.type("fix the login redirect")
    pane.wait_for_text("Access resets at")
    # The dialog shows the reset to the minute, in the pane's zone (UTC here).
    due = datetime.fromtimestamp(asked + 7200, timezone.utc)
    verdict = detect_now(pane, tmp_path, "dialog")
    assert verdict["limited"] and not verdict["needs_human"], verdict["reason"]
    assert due - timedelta(minutes=1) <= _at(verdict["reset_at"]) <= due + timedelta(minutes=1)
    live = afd.session(pane.pane, "limited")
    assert _at(live["reset_at"]) == _at(verdict["reset_at"]) and live["witnesses"] == "pane"

    # Stop: the dialog goes, its error stays as the last message, and Gemini's records now say so too.
    pane.key("Down")
    pane.wait_for_text("● 2. Stop")
    pane.key("Enter")
    pane.wait_for_text("Please retry in 7200s")
    verdict = detect_now(pane, tmp_path, "stopped")
    assert verdict["limited"] and verdict["kind"] == "gemini.usage-limit"
    assert due - timedelta(minutes=2) <= _at(verdict["reset_at"]) <= due + timedelta(minutes=2)
    assert afd.agreed(pane.pane)["agent"] == "gemini"


def test_a_per_day_quota_is_a_wall_with_no_reset_that_a_person_must_lift(rig, shop, afd, tmp_path):
    pane = start(rig, shop)
    rig.answer("gemini", shapes.gemini_daily_quota())
    pane.type("fix the flaky test")
    pane.wait_for_text("Usage limit reached")
    # Its options are `Keep trying` and `Stop`: no other model, no reset.
    verdict = detect_now(pane, tmp_path, "daily")
    assert verdict["limited"] and verdict["reset_at"] is None and verdict["needs_human"], verdict["reason"]
    assert afd.session(pane.pane, "needs_human")["reset_at"] is None


def test_a_throttle_it_retries_is_not_a_wall(rig, shop, afd, tmp_path):
    pane = start(rig, shop)
    rig.answer("gemini", shapes.gemini_throttle(2))
    pane.type("add a test for checkout")
    pane.wait_for_text("esc to cancel")
    time.sleep(3)  # at least one 429 answered and retried
    assert len([r for r in rig.requests("gemini") if r["status"] == 429]) >= 1
    verdict = detect_now(pane, tmp_path, "retrying")
    assert not verdict["hit"] and not verdict["limited"]
    assert afd.session(pane.pane, "working")["reset_at"] is None

    rig.answer("gemini", shapes.gemini_answer("Added the checkout test.", delay=0.2))
    pane.wait_for_text("Added the checkout test.", timeout=90)
    assert afd.session(pane.pane, "idle")["reset_at"] is None
