"""`afd status --tmux`: one short line for tmux's status-right, a mark when the daemon is down, never an error."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import pytest

from afd.cli.status_bar import segment

NOW = datetime(2026, 12, 4, 9, 0, tzinfo=timezone.utc)


def session(state: str, reset: timedelta | None = None, action: str | None = None) -> dict:
    return {"name": "s", "state": state, "reset_at": (NOW + reset).strftime("%Y-%m-%dT%H:%M:%SZ") if reset else None,
            "next": {"action": action} if action else None}


@pytest.mark.parametrize(
    ("sessions", "line"),
    [
        pytest.param([], "🟢afd", id="nothing-to-say"),
        pytest.param([session("idle"), session("gone")], "🟢afd", id="idle-and-gone-are-quiet"),
        pytest.param([session("working"), session("working"), session("resuming")], "afd 🟢3", id="working"),
        pytest.param([session("working"), session("limited", timedelta(hours=1, minutes=30), "resume"),
                      session("limited", timedelta(hours=4), "resume")], "afd 🟢1 ⏳2 1h30m", id="next-reset-first"),
        pytest.param([session("limited", None, "handoff")], "afd ⏳1", id="limited-no-reset"),
        pytest.param([session("needs_human", None, "needs-human")], "afd ❗1", id="needs-you"),
        pytest.param([session("limited", timedelta(days=4, hours=2), "report")], "afd ⏳1 4d2h ❗1",
                     id="a-wall-afd-leaves-to-you-counts-twice"),
        pytest.param([session("all_limited", timedelta(minutes=-5), "resume")], "afd ⏳1 now", id="reset-passed"),
    ],
)
def test_the_segment_says_working_limited_needing_you_and_the_next_reset(sessions, line):
    assert segment({"sessions": sessions}, NOW) == line


def afd(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "afd", *args], capture_output=True, text=True, timeout=30,
                          env=dict(os.environ))


def test_with_the_daemon_down_it_prints_a_mark_and_exits_0(xdg_dirs):
    done = afd("status", "--tmux")
    assert (done.returncode, done.stdout, done.stderr) == (0, "afd down\n", "")
    (xdg_dirs["XDG_RUNTIME_DIR"] / "afd").mkdir(mode=0o700)
    (xdg_dirs["XDG_RUNTIME_DIR"] / "afd" / "control.sock").touch()  # left behind by a daemon that died
    done = afd("status", "--tmux")
    assert (done.returncode, done.stdout, done.stderr) == (0, "afd down\n", "")


@pytest.mark.parametrize("other", ["--json", "--watch", "--wide"])
def test_it_takes_no_json_watch_or_wide(xdg_dirs, other):
    done = afd("status", "--tmux", other)
    assert done.returncode == 2 and done.stdout == "" and "--tmux" in done.stderr and "\n" == done.stderr[-1]
