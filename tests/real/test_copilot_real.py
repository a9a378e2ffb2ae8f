"""Real GitHub Copilot CLI signed in with a token, known to afd only through its shipped manifest.

GitHub's own walls are drawn only for GitHub's Copilot API (with a provider
of one's own, `COPILOT_OFFLINE`, a 429 is the provider's message), so the
rig serves api.github.com and api.githubcopilot.com on loopback with the
test CA, as it does Anthropic's hosts for Claude Code. Each test asserts
what afd says live (its supervisor watching the pane) and offline
(`afd detect` on captures taken then).
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import shapes
from verdicts import detect_now

HOME_HINT = "/ commands"  # its footer once the input box is up


def start(rig, shop):
    pane = rig.start_copilot(shop)
    pane.wait_for_text(HOME_HINT, timeout=60)
    return pane


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _rejected_at(rig, prompt: str) -> datetime:
    """When GitHub's API (the mock) refused the turn that carried ``prompt``."""
    at = max(r["at"] for r in rig.requests("chat") if r["status"] == 429 and any(prompt in p for p in r["prompts"]))
    return datetime.fromtimestamp(at, timezone.utc)


def test_copilot_is_known_working_then_idle_and_a_throttle_it_waits_out_is_no_wall(rig, shop, afd, tmp_path):
    pane = start(rig, shop)
    rig.answer("chat", shapes.chat_answer(" ".join(f"step{i}" for i in range(60)), chunks=30, delay=0.3))
    pane.type("write the checkout module")
    pane.wait_for_text("Working")
    working = afd.session(pane.pane, "working", timeout=15)
    assert (working["agent"], working["identity"]) == ("copilot", "known")

    pane.wait_for_screen(lambda s: "step59" in s and "Working" not in s, timeout=60, message="the whole reply")
    idle = afd.session(pane.pane, "idle")
    assert (idle["agent"], idle["reset_at"]) == ("copilot", None)
    assert not detect_now(pane, tmp_path, "idle")["hit"]

    # A short `rate_limited` 429: no message, it waits under its Working footer and sends again.
    rig.answer("chat", shapes.copilot_rate_limit("rate_limited", 10))
    pane.type("add a test for checkout")
    pane.wait_for_screen(lambda s: "Working" in s and "step59" in s, message="the Working footer")
    time.sleep(2)  # refused, and waiting to send it again
    verdict = detect_now(pane, tmp_path, "waiting")
    assert not verdict["hit"] and not verdict["limited"], verdict["reason"]

    rig.answer("chat", shapes.chat_answer("Added the checkout test.", delay=0.2))
    pane.wait_for_text("Added the checkout test.", timeout=90)
    assert afd.session(pane.pane, "idle")["reset_at"] is None


def test_its_session_and_weekly_walls_are_limits_with_their_resets(rig, shop, afd, tmp_path):
    pane = start(rig, shop)
    rig.answer("chat", shapes.copilot_rate_limit("user_global_rate_limited", 7200))
    pane.type("fix the login test")
    pane.wait_for_text("session rate limit")
    verdict = detect_now(pane, tmp_path, "session")
    assert verdict["limited"] and verdict["kind"] == "copilot.rate-limit" and not verdict["needs_human"], verdict["reason"]
    # Drawn as `in 2 hours`: read against the moment afd first sees it.
    due = _rejected_at(rig, "fix the login test") + timedelta(hours=2)
    assert due - timedelta(minutes=1) <= _at(verdict["reset_at"]) <= due + timedelta(minutes=1)
    live = afd.session(pane.pane, "limited")
    assert abs(_at(live["reset_at"]) - due) <= timedelta(minutes=1)

    # Not a modal: the next prompt goes through, and the weekly wall names its reset's date and time.
    rig.answer("chat", shapes.copilot_rate_limit("user_weekly_rate_limited", 3 * 86400))
    pane.type("and the signup test")
    pane.wait_for_text("weekly rate limit")
    verdict = detect_now(pane, tmp_path, "weekly")
    due = _rejected_at(rig, "and the signup test") + timedelta(days=3)
    assert verdict["limited"] and due - timedelta(minutes=1) <= _at(verdict["reset_at"]) <= due, verdict["reason"]
    live = afd.session(pane.pane, "limited")
    assert live["reset_at"] == verdict["reset_at"]
