"""Real OpenCode on the mock's OpenAI-compatible chat endpoint, known to afd only through its shipped manifest.

Each test asserts what afd says live (its supervisor watching the pane) and
offline (`afd detect` on captures taken then). OpenCode retries a rejected
request by itself and shows when in its status row, below the input box,
beside a spinner that never stops: a retry a minute or more away is its
wall, one seconds away a throttle.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
import shapes
from verdicts import detect_now

HOME_HINT = "ctrl+p commands"  # its footer once the TUI is up (it draws nothing while it boots)


def start(rig, shop):
    pane = rig.start_opencode(shop)
    pane.wait_for_text(HOME_HINT, timeout=90)
    return pane


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_opencode_is_known_working_then_idle_and_a_throttle_it_retries_is_no_wall(rig, shop, afd, tmp_path):
    pane = start(rig, shop)
    assert rig.tmux.pane_field(pane.pane, "#{pane_current_command}") == "opencode"
    rig.answer("chat", shapes.chat_answer(" ".join(f"step{i}" for i in range(60)), chunks=30, delay=0.3))
    pane.type("write the checkout module")
    pane.wait_for_text("step1 ")
    working = afd.session(pane.pane, "working", timeout=15)
    assert (working["agent"], working["identity"]) == ("opencode", "known")

    pane.wait_for_screen(lambda s: "step59" in s and "esc interrupt" not in s, timeout=60, message="the whole reply")
    idle = afd.session(pane.pane, "idle")
    assert (idle["agent"], idle["reset_at"]) == ("opencode", None)
    assert not detect_now(pane, tmp_path, "idle")["hit"]

    # 429s it retries seconds apart (`[retrying in 3s attempt #4]`): working, never limited.
    rig.answer("chat", shapes.chat_rate_limit(4))
    pane.type("add a test for checkout")
    pane.wait_for_text("[retrying in")
    assert [r for r in rig.requests("chat") if r["status"] == 429]
    verdict = detect_now(pane, tmp_path, "retrying")
    assert not verdict["limited"] and verdict["reset_at"] is None, verdict["reason"]
    assert afd.session(pane.pane, "working")["reset_at"] is None

    rig.answer("chat", shapes.chat_answer("Added the checkout test.", delay=0.2))
    pane.wait_for_text("Added the checkout test.", timeout=60)
    assert afd.session(pane.pane, "idle")["reset_at"] is None


# A retry a minute or more away is its wall; seconds away, a throttle. Little more than a minute keeps the
# test short: the countdown reads `1m …` long enough for afd to see the wall, then waits out the rest.
RETRY_AFTER = 72


@pytest.mark.slow
def test_its_own_retry_is_a_wall_with_its_reset_that_afd_waits_out_and_never_types_into(rig, shop, afd_resumes, tmp_path):
    pane = start(rig, shop)
    rig.answer("chat", shapes.chat_rate_limit(RETRY_AFTER))
    pane.type("fix the login test")
    pane.wait_for_text("[retrying in 1m")
    verdict = detect_now(pane, tmp_path, "retrying")
    assert verdict["limited"] and verdict["kind"] == "opencode.rate-limited" and not verdict["needs_human"], verdict["reason"]
    # It waits `retry-after` from the 429 of the turn itself (its title request is another call), and
    # draws the countdown to the second under an hour.
    [rejected] = [r for r in rig.requests("chat") if r["prompts"] == ["fix the login test"]]
    due = datetime.fromtimestamp(rejected["at"] + RETRY_AFTER, timezone.utc)
    assert due - timedelta(seconds=5) <= _at(verdict["reset_at"]) <= due + timedelta(seconds=5)
    live = afd_resumes.session(pane.pane, "limited", timeout=30)
    assert abs(_at(live["reset_at"]) - _at(verdict["reset_at"])) <= timedelta(seconds=10)

    # OpenCode sends the request again at its reset by itself; afd, set to resume, leaves it alone.
    rig.answer("chat", shapes.chat_answer("I fixed the login test.", delay=0.2))
    pane.wait_for_text("I fixed the login test.", timeout=150)
    assert afd_resumes.session(pane.pane, "idle")["reset_at"] is None
    assert [e["kind"] for e in afd_resumes.events("resume.sent")] == []
    prompts = {p for r in rig.requests("chat") for p in r["prompts"]}
    assert not any("continue" in p.lower() for p in prompts), prompts
