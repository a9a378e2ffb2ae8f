"""`afd detect` over every screen captured from the real Claude Code and Codex CLIs.

Each case under ``data/real/<agent>/<case>/`` holds the captures of one
pane, oldest first, and what afd must say about its last poll.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from afd.cli.main import main

REAL = Path(__file__).parent.parent / "data" / "real"
CASES = sorted(p for p in REAL.glob("*/*") if (p / "expect.json").exists())


def run_detect(capsys, *args: str) -> dict:
    assert main(["detect", *args]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("case", CASES, ids=[f"{c.parent.name}/{c.name}" for c in CASES])
def test_real_screen_gives_the_expected_answer(case, xdg_dirs, monkeypatch, capsys):
    monkeypatch.setenv("TZ", "UTC")
    expect = json.loads((case / "expect.json").read_text())
    captures = sorted(case.glob("*.txt"), key=lambda p: int(p.stem))
    result = run_detect(capsys, "--agent", expect["agent"], "--now", expect["now"], "--json", *map(str, captures))
    assert (result["limited"], result["reset_at"]) == (expect["limited"], expect["reset_at"]), result["reason"]
    assert result["needs_human"] is expect.get("needs_human", False), result["reason"]


def test_real_screens_cover_both_clis():
    assert {c.parent.name for c in CASES} >= {"claude", "codex"}


def test_a_footer_notice_that_comes_and_goes_does_not_hide_a_wall(xdg_dirs, monkeypatch, capsys):
    """Real Claude Code at its wall draws tmux's focus-events notice on one capture and not on the next."""
    case = REAL / "claude" / "five-hour-footer-notice-pair"
    first, second = ((case / f"{n}.txt").read_text(encoding="utf-8").splitlines() for n in (1, 2))
    changed = [(a, b) for a, b in zip(first, second, strict=False) if a.rstrip() != b.rstrip()]
    # Only transient rows differ: the notice above the composer, and the footer's passing hint.
    assert any("focus-events off" in a and not b.strip() for a, b in changed)
    assert all("focus-events off" in a or "for agents" in a for a, _ in changed), changed
    monkeypatch.setenv("TZ", "UTC")
    expect = json.loads((case / "expect.json").read_text())
    result = run_detect(capsys, "--agent", "claude", "--now", expect["now"], "--json",
                        str(case / "1.txt"), str(case / "2.txt"))
    assert (result["limited"], result["reset_at"]) == (True, expect["reset_at"]), result["reason"]
