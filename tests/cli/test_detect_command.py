"""`afd detect` end to end: every corpus case, the JSON contract, and bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CORPUS = Path(__file__).parent.parent / "data" / "corpus"
CASES = sorted(p for p in CORPUS.glob("*/*") if (p / "expect.json").exists())


def detect(*args: str, tz: str = "UTC") -> subprocess.CompletedProcess:
    env = {**os.environ, "TZ": tz}
    return subprocess.run([sys.executable, "-m", "afd", "detect", *args], capture_output=True, text=True, env=env, timeout=60)


@pytest.mark.parametrize("case", CASES, ids=[f"{c.parent.name}/{c.name}" for c in CASES])
def test_corpus_case_gives_the_expected_answer(case, xdg_dirs):
    expect = json.loads((case / "expect.json").read_text())
    captures = sorted(case.glob("*.txt"), key=lambda p: int(p.stem))
    done = detect("--agent", expect["agent"], "--now", expect["now"], "--json", *map(str, captures))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["limited"], result["reset_at"]) == (expect["limited"], expect["reset_at"]), result["reason"]
    assert result["has_reset_time"] is (result["reset_at"] is not None)
    assert result["limited"] == (result["hit"] and result["anchored"] and result["stable"])
    assert set(result) >= {"agent", "hit", "anchored", "stable", "limited", "reset_at", "has_reset_time", "banner", "reason"}


def test_corpus_covers_every_builtin_agent():
    assert {c.parent.name for c in CASES} == {"claude", "codex", "devin"}


def test_a_single_capture_is_a_hit_but_not_stable(xdg_dirs):
    case = CORPUS / "codex" / "relative-days-no-upgrade"
    done = detect("--agent", "codex", "--now", "2026-07-13T09:00:00Z", "--json", str(case / "2.txt"))
    result = json.loads(done.stdout)
    assert result["hit"] and result["anchored"] and not result["stable"] and not result["limited"]


def test_zone_less_banner_is_read_in_the_process_local_zone(xdg_dirs, tmp_path):
    screen = "● Working.\n\n  ⎿  Session limit reached ∙ resets 8pm\n\n" + "─" * 20 + "\n❯ \n" + "─" * 20 + "\n"
    f = tmp_path / "1.txt"
    f.write_text(screen)
    utc = json.loads(detect("--agent", "claude", "--now", "2026-07-13T09:00:00Z", "--json", str(f), str(f)).stdout)
    tokyo = json.loads(detect("--agent", "claude", "--now", "2026-07-13T09:00:00Z", "--json", str(f), str(f), tz="Asia/Tokyo").stdout)
    assert utc["reset_at"] == "2026-07-13T20:00:00Z"
    assert tokyo["reset_at"] == "2026-07-13T11:00:00Z"  # 8pm in Tokyo is 11:00 UTC


def test_human_output_says_limited_and_why(xdg_dirs):
    case = CORPUS / "claude" / "legacy-new-york"
    done = detect("--agent", "claude", "--now", "2026-07-13T09:00:00Z", str(case / "1.txt"), str(case / "2.txt"))
    assert done.returncode == 0
    # In the reader's zone (UTC here), counted from --now; --json keeps the ISO instant.
    assert "limited" in done.stdout and "reset:  18:00 (in 9h00m)" in done.stdout and "2026-07-13T18" not in done.stdout


@pytest.mark.parametrize(
    "args,message",
    [
        pytest.param(["--agent", "claude", "/nonexistent/capture.txt"], "no such capture file", id="missing-file"),
        pytest.param(["--agent", "gemni", "{capture}"], "not an agent any plugin provides (known: claude, codex, copilot, devin, gemini, opencode)", id="unknown-agent"),
        pytest.param(["--agent", "claude", "--now", "yesterday", "{capture}"], "--now", id="bad-now"),
        pytest.param(["--agent", "claude", "--now", "", "{capture}"], "--now", id="empty-now"),
        pytest.param(["--agent", "claude", "--now", "9999-12-31T23:59:59-12:00", "{capture}"], "--now", id="now-beyond-utc"),
        pytest.param(["--agent", "claude", "--now", "0001-01-01T00:00:00+14:00", "{capture}"], "--now", id="now-before-utc"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message, xdg_dirs, tmp_path):
    capture = tmp_path / "c.txt"
    capture.write_text("hello\n")
    done = detect(*[a.replace("{capture}", str(capture)) for a in args])
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_user_limit_pattern_replaces_the_builtin_regex(xdg_dirs, tmp_path):
    config = xdg_dirs["XDG_CONFIG_HOME"] / "afd" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[limit_patterns]\ncodex = "Plan exhausted"\n')
    screen = tmp_path / "s.txt"
    screen.write_text("• Edited a.py (+1 -0)\n\n■ Plan exhausted. Try again in 2 hours.\n\n› Ask Codex to do anything\n")
    result = json.loads(detect("--agent", "codex", "--now", "2026-07-13T09:00:00Z", "--json", str(screen), str(screen)).stdout)
    assert result["limited"] and result["reset_at"] == "2026-07-13T11:00:00Z"
    builtin = tmp_path / "b.txt"
    builtin.write_text("■ You've hit your usage limit. Try again later.\n\n› Ask Codex to do anything\n")
    assert not json.loads(detect("--agent", "codex", "--json", str(builtin), str(builtin)).stdout)["hit"]


def test_an_endless_input_is_refused_without_filling_memory(xdg_dirs):
    # /dev/zero never ends: afd reads a bounded amount, keeping only a screen's tail, and says why it stopped.
    done = detect("--agent", "claude", "/dev/zero")
    assert done.returncode == 2 and "not a pane capture" in done.stderr


def test_a_huge_capture_file_is_judged_by_its_tail(xdg_dirs, tmp_path):
    from afd.cli.detect import MAX_CAPTURE_BYTES

    case = CORPUS / "codex" / "relative-days-no-upgrade"
    screen = sorted(case.glob("*.txt"), key=lambda p: int(p.stem))[-1].read_bytes()
    big = tmp_path / "big.txt"
    big.write_bytes(b"scrollback row\n" * (2 * MAX_CAPTURE_BYTES // 15) + screen)
    small = detect("--agent", "codex", "--json", str(sorted(case.glob("*.txt"), key=lambda p: int(p.stem))[-1]))
    done = detect("--agent", "codex", "--json", str(big))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["hit"] is True and json.loads(small.stdout)["hit"] is True
