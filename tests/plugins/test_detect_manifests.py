"""The shipped manifests' walls and look-alikes, as users reported them (the real-agent tier checks the real CLIs)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from afd.judge.gates import is_anchored
from afd.model import Clock
from afd.pluginset import load_plugins

NOW = datetime(2026, 7, 13, 9, 0, tzinfo=timezone.utc)
CLOCK = Clock(NOW, timezone.utc)


@pytest.fixture(scope="module")
def plugins():
    return load_plugins(None, entry_points=False)


GEMINI_TAIL = [  # as Gemini CLI 0.61.0 draws it
    "                                                                                                        ? for shortcuts",
    "─" * 120,
    " Shift+Tab to accept edits",
    " >   Type your message or @path/to/file",
    " workspace (/directory)                                    sandbox                                               /model",
    " ~/src/app                                                 no sandbox                                    gemini-2.5-pro",
]
OPENCODE_TAIL = [  # as OpenCode 1.18.33 draws it; the status row comes last
    "  ┃",
    "  ┃  Build · Mock Model Mock",
    "  ╹▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀",
]
COPILOT_TAIL = [  # as Copilot CLI 1.0.102 draws it below its history
    " ~/src/app [⎇ main]",
    "─" * 60,
    "❯",
    "─" * 60,
    " ← open sidebar · Interactive · Manual Approval · / commands · ? help · tab next tab       Auto → gpt-4.1",
]

CASES = [
    # Gemini CLI
    ("gemini", [" > fix the test", "", "✦ On it.", "", "✕ Usage limit reached for gemini-2.5-pro. Access resets at 10:57 PM GMT-3.", *GEMINI_TAIL],
     "gemini.usage-limit", datetime(2026, 7, 14, 1, 57, tzinfo=timezone.utc)),
    ("gemini", [" > fix the test", "", "✕ Usage limit reached for gemini-2.5-pro. Access resets at 2:05 AM", "  UTC. /stats for details.", *GEMINI_TAIL],
     "gemini.usage-limit", datetime(2026, 7, 14, 2, 5, tzinfo=timezone.utc)),
    ("gemini", [" > fix the test", "", "⚡ You have reached your daily gemini-2.5-pro quota limit.", "⚡ You can choose to authenticate with a paid API key or continue with the fallback model.", *GEMINI_TAIL],
     "gemini.daily-quota", None),
    ("gemini", [" > fix the test", "", "ℹ Your quota will reset after 5s.", *GEMINI_TAIL], None, None),
    ("gemini", [" > fix the test", "", "✕ No capacity available for model gemini-2.5-pro on the server", *GEMINI_TAIL], None, None),
    ("gemini", [" > show the docs", "", "✦ The docs say:", "  Usage limit reached for gemini-2.5-pro. Access resets at 10:57 PM GMT-3.", "", "✦ That is all.", *GEMINI_TAIL], None, None),
    # OpenCode
    ("opencode", ["  ┃  fix the test", "", "     ▣  Build · Mock Model", *OPENCODE_TAIL,
                  "   ■■■⬝⬝⬝⬝⬝ Rate Limited [retrying in 2h5m attempt #4]                    esc interrupt"],
     "opencode.rate-limited", NOW + timedelta(hours=2, minutes=5)),
    ("opencode", ["  ┃  fix the test", "", *OPENCODE_TAIL,
                  "   ⬝⬝⬝⬝⬝⬝⬝⬝ Rate limit reached for requests [retrying in 1d 3h attempt #2]   esc interrupt"],
     "opencode.rate-limited", NOW + timedelta(days=1, hours=3)),
    ("opencode", ["  ┃  fix the test", "", *OPENCODE_TAIL,
                  "   ⬝⬝⬝⬝⬝■■■ Rate limit reached for requests [retrying in 4s attempt #1]      esc interrupt"], None, None),
    ("opencode", ["  ┃  fix the test", "", *OPENCODE_TAIL,
                  "   ⬝⬝⬝⬝⬝■■■ Rate limit reached for requests [retrying attempt #1]             esc interrupt"], None, None),
    # GitHub Copilot CLI: its own sentences (1.0.102), then the wording users report
    ("copilot", [" ❯ fix the test                      08:35", " ✗ You've hit your session rate limit. Please wait for your limit to reset in 2 hours. Learn More",
                 "   (https://docs.github.com/copilot/concepts/rate-limits).", *COPILOT_TAIL],
     "copilot.rate-limit", NOW + timedelta(hours=2)),
    ("copilot", [" ❯ fix the test", " ✗ You've reached your weekly rate limit. Please wait for your limit to reset on December 5, 2026 at 4:08 PM. Learn Mo",
                 "   (https://docs.github.com/copilot/concepts/rate-limits).", *COPILOT_TAIL],
     "copilot.rate-limit", datetime(2026, 12, 5, 16, 8, tzinfo=timezone.utc)),
    ("copilot", [" ❯ fix the test", " ✗ You've hit the rate limit for this model. Please switch models or wait for your limit to reset in 1 hour 30 minutes",
                 "   Learn More (https://docs.github.com/copilot/concepts/rate-limits).", *COPILOT_TAIL],
     "copilot.model-rate-limit", NOW + timedelta(hours=1, minutes=30)),
    ("copilot", [" ❯ fix the test", "", "✗ Sorry, you've hit a rate limit that restricts the number of Copilot model requests you can make",
                 "  within a specific time period. Please try again in 2 hours.", *COPILOT_TAIL],
     "copilot.rate-limit", NOW + timedelta(hours=2)),
    ("copilot", [" ❯ fix the test", "", "✗ You've reached your monthly limit of premium requests. Switch to an included model with /model.", *COPILOT_TAIL],
     "copilot.premium-requests", None),
    ("copilot", [" ❯ cat notes.md", "", " ● Read notes.md", "   ✗ Sorry, you've hit a rate limit. Please try again in 2 hours.", "", " ● Done.", *COPILOT_TAIL], None, None),
    ("copilot", [" ❯ fix the test", " ✗ 429 Rate limit reached for requests", *COPILOT_TAIL], None, None),
]


@pytest.mark.parametrize(("agent", "rows", "kind", "reset"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_shipped_manifest_walls(plugins, agent, rows, kind, reset):
    found = plugins.detect(agent, rows, CLOCK)
    if kind is None:
        # Quoted in a reply or tool output, a wall may be found, but it never ends the pane.
        assert found is None or not is_anchored(rows, found, plugins.agents[agent].chrome, 3)
        return
    assert found is not None and found.kind == kind and found.reset_at == reset
    # OpenCode draws its wall in the status row below its input box: it names no composer.
    assert (found.chrome_row is None) is (agent == "opencode") and (found.chrome_row is None or found.last_row < found.chrome_row)
    assert is_anchored(rows, found, plugins.agents[agent].chrome, 3)


def test_opencodes_retry_is_waited_out_never_typed_into(plugins):
    assert plugins.agents["opencode"].self_continuing_kinds == ("opencode.go-limit", "opencode.free-limit",
                                                                "opencode.rate-limited")
    assert plugins.agents["gemini"].self_continuing_kinds == ()


@pytest.mark.parametrize(
    ("agent", "row", "busy"),
    [
        ("gemini", "⠏ Counting electrons... (esc to cancel, 5s)", True),
        ("gemini", "⠏ Trying to reach gemini-2.5-pro (Attempt 3/10) (esc to cancel, 45s)", False),
        ("copilot", "◎ Thinking (Esc to cancel)", True),
        ("copilot", " ◎ Working esc esc interrupt                                  Auto → gpt-4.1", True),
        ("copilot", " ← open sidebar · Interactive · Manual Approval · / commands · ? help", False),
    ],
)
def test_busy_markers(plugins, agent, row, busy):
    assert any(p.search(row) for p in plugins.agents[agent].busy) is busy


def test_opencodes_real_retry_row_is_found_with_its_reset(plugins):
    """OpenCode 1.18.33 at a 429 with retry-after 7500 s: the manifest finds the wall and its reset.

    Its spinner moves in the same status row the whole time; the manifest
    names it (and the countdown) volatile, so the banner afd compares and
    keeps is the same at every poll.
    """
    import json
    from pathlib import Path

    from afd.kit.text import capture_rows

    case = Path(__file__).parent.parent / "data" / "real" / "opencode" / "rate-limited-retrying"
    now = datetime.fromisoformat(json.loads((case / "expect.json").read_text())["now"].replace("Z", "+00:00"))
    first, rows = (capture_rows((case / f"{i}.txt").read_text(encoding="utf-8")) for i in (1, 2))
    found = plugins.detect("opencode", rows, Clock(now, timezone.utc))
    assert found.kind == "opencode.rate-limited" and found.reset_at == now + timedelta(hours=2, minutes=4)
    assert found.banner == plugins.detect("opencode", first, Clock(now, timezone.utc)).banner
    assert found.banner.startswith("… Rate limit reached for requests [retrying in … attempt #1]")
    assert is_anchored(rows, found, plugins.agents["opencode"].chrome, 3)
    assert not any(p.search(rows[-1]) for p in plugins.agents["opencode"].busy)
