"""Real Claude Code drawing each family of walls its bundle holds, on the mock API's headers.

For each family the mock answers the way the API does at that wall
(`shapes.claude_family`), the test waits for the CLI's own words, and
asserts afd's verdict live (its supervisor) and from the captures, by the
one rule: a wall that names a reset lifts at that reset; one that names
none but offers another model is the user's call; any other needs a person.
With ``AFD_REAL_CAPTURES=DIR`` the captures are kept in ``DIR/<case>/``
(the screens in ``tests/data/real/claude/`` were made so).
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

import pytest
import shapes
from verdicts import detect, iso, minutes_ahead

# family → (how the CLI's wall row starts (it wraps the rest itself), whether it names a reset, whether it offers
# another model, and how Claude Code is signed in: plan, role, a usage-based organization, an API key, the model)
FAMILIES = {
    "spend-cap": ("You've hit your monthly spend limit", False, False, {}),
    "spend-cap-with-session-reset": ("You've hit your monthly spend limit · raise it", True, False, {}),
    "out-of-credits": ("You're out of usage credits · resets", True, False, {}),
    "group-pool": ("You've hit your team's pooled group budget", True, False, {}),
    "seat-type": ("Your seat type doesn't include usage credits", False, False, {}),
    "allocation-disabled": ("Your usage allocation has been disabled by your admin", False, False, {}),
    "group-zero": ("Your group's usage limit is set to $0", False, False, {}),
    "service-disabled": ("This service is disabled for your org", False, False, {}),
    "usage-paused": ("Usage is paused for your organization", False, False, {}),
    "opus-limit": ("You've hit your Opus limit · resets", True, False, {}),
    # printed after the CLI's own throttle words, which say it is not the usage limit: it is a wall all the same
    "gateway": ("spend limit reached · resets", True, False, {}),
    # on a usage-based plan (the organization's billing type), where the org's credits are the plan
    "usage-based-out-of-credits": ("Your org is out of usage · add funds to continue", False, False, {"usage_based": True}),
    "usage-based-individual-usage-limit": ("You've hit your individual usage limit · resets", True, False,
                                           {"usage_based": True}),
    "usage-based-org-usage-limit": ("You've hit your org's monthly usage limit · resets", True, False,
                                    {"usage_based": True}),
    # a team plan: a member asks an admin, an admin raises the cap
    "team-member-spend-cap": ("You've hit your org's monthly spend limit", False, False, {"plan": "team", "role": "user"}),
    "team-member-individual-spend-cap": ("You've hit your individual spend limit", False, False,
                                         {"plan": "team", "role": "user", "shape": "individual-usage-limit"}),
    "team-admin-spend-cap": ("You've hit your org's monthly spend limit", False, False, {"plan": "team", "role": "admin"}),
    "team-member-group-pool": ("You've hit your team's pooled group budget", True, False, {"plan": "team", "role": "user"}),
    # models: a usage-credits-only model with no credits, and its own included allowance used up
    "model-requires-credits": ("You're out of usage credits. Run /usage-credits to keep using", False, True,
                               {"model": "claude-fable-5"}),
    "fable-limit": ("You've hit your Fable limit · resets", True, False, {"model": "claude-fable-5"}),
    # the server's own words, shown as an API error
    "extra-usage": ("out of extra usage", False, False, {}),
    # an API key, not a plan
    "credit-balance": ("Credit balance too low · Add funds", False, False, {"subscriber": False}),
    "workspace-api-limit": ("workspace API usage limits", True, False, {"subscriber": False}),
}


def start(rig, shop, **kwargs):
    pane = rig.start_claude(shop, **kwargs)
    pane.wait_for_screen(lambda s: "Claude Code v" in s and "\n❯" in s, message="the composer")
    return pane


def steady(pane, tries: int = 15) -> list[str]:
    """Two captures a second apart that agree (the logo animates now and then, and afd waits that out too)."""
    for _ in range(tries):
        shots = pane.captures(2, gap=1.0)
        if shots[0] == shots[1]:
            break
    return shots


def keep(case: str, shots: list[str], verdict: dict, source: str) -> None:
    """With AFD_REAL_CAPTURES set, keep the captures and the answer afd must give, in tests/data/real's format."""
    root = os.environ.get("AFD_REAL_CAPTURES")
    if not root:
        return
    folder = Path(root) / case
    folder.mkdir(parents=True, exist_ok=True)
    for n, shot in enumerate(shots, 1):
        (folder / f"{n}.txt").write_text(shot, encoding="utf-8")
    (folder / "expect.json").write_text(json.dumps(verdict, indent=1) + "\n", encoding="utf-8")


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_claude_wall_family_is_limited_with_the_one_needs_human_rule(family, rig, shop, afd, tmp_path):
    words, names_reset, offers_model, how = FAMILIES[family]
    if how.get("usage_based"):
        rig.answer("profile", shapes.claude_profile(billing_type="usage_based"))
    env = {"ANTHROPIC_MODEL": how["model"]} if "model" in how else None
    pane = start(rig, shop, plan=how.get("plan", "max"), role=how.get("role", "admin"),
                 subscriber=how.get("subscriber", True), env=env)
    reset = minutes_ahead(150)
    shape = how.get("shape") or family.removeprefix("usage-based-").removeprefix("team-member-").removeprefix("team-admin-")
    rig.answer("claude", shapes.claude_family(shape, reset))
    pane.type("fix the login redirect")
    pane.wait_for_text(words, timeout=60)
    # The logo above the transcript animates for a moment after the wall: wait for its resting frame.
    pane.wait_for_text("▐▛███▛█", timeout=30)
    shots = steady(pane)
    now = datetime.now(timezone.utc)
    verdict = detect("claude", shots, now, tmp_path / "detect")
    needs_human = not names_reset and not offers_model
    expect = {"agent": "claude", "limited": True, "reset_at": iso(reset) if names_reset else None,
              "needs_human": needs_human,
              "source": f"real Claude Code 2.1.332 on the mock API: {family} (shapes.claude_family)",
              "now": now.strftime("%Y-%m-%dT%H:%M:%SZ")}
    keep(f"wall-{family}", shots, expect, family)
    assert verdict["limited"], verdict["reason"]
    assert verdict["reset_at"] == expect["reset_at"], verdict["reason"]
    assert verdict["needs_human"] is needs_human, verdict["reason"]
    # A wall a person must lift is shown as such; the others as limited until their reset.
    seen = afd.session(pane.pane, "needs_human" if needs_human else "limited")
    assert seen["reset_at"] == expect["reset_at"]


FOCUS_NOTICE = "focus-events off"


@pytest.mark.slow
def test_wall_with_a_footer_notice_that_comes_and_goes_is_limited(rig, shop, afd, tmp_path):
    """tmux's focus-events off makes Claude Code draw a notice below its composer that shows and then goes."""
    rig.tmux.run("set-option", "-g", "focus-events", "off")
    pane = start(rig, shop)
    reset = minutes_ahead(150)
    rig.answer("claude", shapes.claude_limit(reset, "five_hour"))
    pane.type("fix the login redirect")
    pane.wait_for_text("Continuing automatically at", timeout=60)
    pane.wait_for_text("▐▛███▛█", timeout=30)
    with_notice = pane.wait_for_text(FOCUS_NOTICE, timeout=60)
    without = pane.wait_for_screen(lambda s: FOCUS_NOTICE not in s, timeout=120, message="the notice gone")
    shots = [with_notice, without]
    now = datetime.now(timezone.utc)
    expect = {"agent": "claude", "limited": True, "reset_at": iso(reset), "needs_human": False,
              "source": "real Claude Code 2.1.332 on the mock API: five-hour wall; tmux focus-events off, so a notice "
                        "shows below the composer on the first capture and is gone on the second",
              "now": now.strftime("%Y-%m-%dT%H:%M:%SZ")}
    keep("five-hour-footer-notice-pair", shots, expect, "focus-events")
    verdict = detect("claude", shots, now, tmp_path / "pair")
    assert verdict["limited"] and verdict["reset_at"] == iso(reset), verdict["reason"]
    assert afd.session(pane.pane, "limited")["reset_at"] == iso(reset)
