"""Real Codex drawing the workspace walls its binary holds, on the mock API's headers, also during a compaction.

Each test waits for the CLI's own words, then asserts afd's verdict live and
from captures by the one rule (see test_claude_walls_real.py). With
``AFD_REAL_CAPTURES=DIR`` the captures are kept in ``DIR/<case>/``.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
import shapes
from test_claude_walls_real import keep, steady
from verdicts import detect, iso, minutes_ahead

COMPOSER = "Ask Codex to do anything"

# family → (the words the CLI draws, the header value that selects them, the kind afd names).
# An owner gets the generic "Usage limit reached. … Increase your limits" wall: a billing wall.
WORKSPACE = {
    "owner-credits": ("■ ", "workspace_owner_credits_depleted", "codex.billing"),
    "member-credits": ("■ ", "workspace_member_credits_depleted", "codex.spend-cap"),
    "owner-spend-cap": ("■ ", "workspace_owner_usage_limit_reached", "codex.billing"),
    "member-spend-cap": ("■ ", "workspace_member_usage_limit_reached", "codex.spend-cap"),
}


def start(rig, shop):
    pane = rig.start_codex(shop)
    pane.wait_for_text(COMPOSER)
    return pane


def judge(pane, family: str, source: str, tmp_path) -> dict:
    shots = steady(pane)
    now = datetime.now(timezone.utc)
    expect = {"agent": "codex", "limited": True, "reset_at": None, "needs_human": True,
              "source": f"real Codex 0.171.0 on the mock API: {source}", "now": now.strftime("%Y-%m-%dT%H:%M:%SZ")}
    keep(family, shots, expect, source)
    return detect("codex", shots, now, tmp_path / family)


@pytest.mark.parametrize("family", sorted(WORKSPACE))
def test_codex_workspace_wall_needs_a_person(family, rig, shop, afd, tmp_path):
    words, reached, kind = WORKSPACE[family]
    pane = start(rig, shop)
    rig.answer("codex", shapes.codex_workspace(reached))
    pane.type("check the invoices")
    pane.wait_for_text(words, timeout=60)
    verdict = judge(pane, f"workspace-{family}", f"x-codex-rate-limit-reached-type: {reached}", tmp_path)
    assert verdict["limited"] and verdict["reset_at"] is None and verdict["needs_human"] is True, verdict["reason"]
    assert verdict["kind"] == kind
    assert afd.session(pane.pane, "needs_human")["reset_at"] is None


def test_codex_workspace_wall_during_a_compaction_needs_a_person(rig, shop, afd, tmp_path):
    pane = start(rig, shop)
    rig.answer("codex", shapes.codex_answer("All tests pass now.", delay=0.2))
    pane.type("run the tests")
    pane.wait_for_text("Worked for", timeout=60)
    rig.answer("codex", shapes.codex_workspace("workspace_member_credits_depleted"))
    pane.type("/compact", submits=False)
    pane.wait_for_text("refill in order to continue", timeout=60)
    verdict = judge(pane, "workspace-credits-during-compact", "/compact while the workspace is out of credits", tmp_path)
    assert verdict["limited"] and verdict["reset_at"] is None and verdict["needs_human"] is True, verdict["reason"]
    assert afd.session(pane.pane, "needs_human")["reset_at"] is None


def test_codex_wall_of_one_models_limit_is_limited_until_its_reset(rig, shop, afd, tmp_path):
    pane = start(rig, shop)
    reset = minutes_ahead(150)
    rig.answer("codex", shapes.codex_model_limit(reset))
    pane.type("fix the login redirect")
    pane.wait_for_text("■ ", timeout=60)
    shots = steady(pane)
    now = datetime.now(timezone.utc)
    expect = {"agent": "codex", "limited": True, "reset_at": iso(reset), "needs_human": False,
              "source": "real Codex 0.171.0 on the mock API: one model's own limit (x-codex-active-limit)",
              "now": now.strftime("%Y-%m-%dT%H:%M:%SZ")}
    keep("model-limit", shots, expect, "model-limit")
    verdict = detect("codex", shots, now, tmp_path / "model-limit")
    assert verdict["limited"] and verdict["reset_at"] == iso(reset) and not verdict["needs_human"], verdict["reason"]
    assert afd.session(pane.pane, "limited")["reset_at"] == iso(reset)
