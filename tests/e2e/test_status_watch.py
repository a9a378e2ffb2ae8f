"""`afd status --watch` in a real tmux pane: the tables, a countdown that moves, Ctrl-C."""

from __future__ import annotations

import os
import re
import shlex
import sys

import pytest

from daemon_harness import afd, run_daemon, status, write_config  # noqa: F401
from harness import start_fake, wait_for

pytestmark = pytest.mark.tmux

COUNTDOWN = re.compile(r"\(in (\d+)s\)")


def watch_pane(tmux_server, xdg_dirs, width: int) -> str:
    """A pane running `afd status --watch` as the user would, in bash, printing its exit status after."""
    env = {k: str(v) for k, v in xdg_dirs.items()} | {"TZ": "UTC", "TERM": "tmux-256color", "LANG": "C.UTF-8", "COLUMNS": "", "LINES": "",
                                                      "PYTHONPATH": os.pathsep.join(sys.path)}
    command = f"{shlex.quote(sys.executable)} -m afd status --watch; echo watch-exit=$?; sleep 600"
    return tmux_server.new_pane(f"bash --noprofile --norc -c {shlex.quote(command)}", cwd=tmux_server.scratch,
                                env=env, width=width, height=40)


def test_the_live_view_counts_down_and_ctrl_c_leaves_cleanly(tmux_server, run_daemon, xdg_dirs):
    write_config(xdg_dirs, 'poll_interval = "200ms"\n')
    fake = start_fake(tmux_server, "codex", cwd=tmux_server.scratch, scenario={
        "limit_now": True, "banner": "codex.usage-limit", "banner_params": {"reset": "1 minute"}})
    fake.wait_ready()
    run_daemon()
    wait_for(lambda: status()["sessions"] and status()["sessions"][0]["state"] == "limited", timeout=30, message="limited")
    # The status-bar segment of the same moment: one limited session, its reset under a minute away, and, as
    # auto-resume is off by default, waiting for you.
    segment = afd("status", "--tmux")
    assert segment.returncode == 0 and re.fullmatch(r"afd ⏳1 (\d+s|1m) ❗1\n", segment.stdout), segment.stdout

    pane = watch_pane(tmux_server, xdg_dirs, width=150)
    # A capture can land mid-redraw: wait for a whole frame (its last table drawn) with a countdown in it.
    first = wait_for(lambda: (s := tmux_server.capture(pane)) and COUNTDOWN.search(s) and "recent events" in s and s,
                     timeout=30, message="a whole frame with a countdown")
    assert "sessions" in first and "accounts" in first and "recent events" in first and "Ctrl-C leaves" in first
    assert "worktree" in first and "next action" in first  # a wide terminal gets every column
    assert "resume with: afd resume" in first and re.search(r"limited .* \d\d:\d\d \(in \d+s\)", first), first
    before = COUNTDOWN.search(first).group(1)
    wait_for(lambda: (m := COUNTDOWN.search(tmux_server.capture(pane))) and m.group(1) != before, timeout=30,
             message="the countdown moving")

    tmux_server.send_keys(pane, "C-c")
    after = wait_for(lambda: (s := tmux_server.capture(pane)) and "watch-exit=" in s and s, timeout=30, message="the exit")
    assert "watch-exit=0" in after and "Traceback" not in after
    assert "Ctrl-C leaves" not in after  # the alternate screen is gone: the terminal is as it was


def test_a_narrow_terminal_gets_the_essential_columns(tmux_server, run_daemon, xdg_dirs):
    write_config(xdg_dirs, 'poll_interval = "200ms"\n')
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, prompt="fix the login redirect")
    fake.wait_ready()
    run_daemon()
    wait_for(lambda: status()["sessions"], timeout=30, message="adoption")
    pane = watch_pane(tmux_server, xdg_dirs, width=80)
    screen = wait_for(lambda: (s := tmux_server.capture(pane)) and "next action" in s and s, timeout=30, message="the table")
    assert "state" in screen and "worktree" not in screen and "witnesses" not in screen
    tmux_server.send_keys(pane, "C-c")
    wait_for(lambda: "watch-exit=0" in tmux_server.capture(pane), timeout=30, message="the exit")


def test_a_pause_shows_in_the_live_view_and_goes_when_unpaused(tmux_server, run_daemon, xdg_dirs):
    from daemon_harness import afd

    write_config(xdg_dirs, 'poll_interval = "200ms"\n')
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, prompt="fix the login redirect")
    fake.wait_ready()
    run_daemon()
    name = wait_for(lambda: status()["sessions"] and status()["sessions"][0]["name"], timeout=30, message="adoption")
    assert afd("sessions", "pause", name).returncode == 0
    pane = watch_pane(tmux_server, xdg_dirs, width=150)
    wait_for(lambda: re.search(r"(idle|working) · paused", tmux_server.capture(pane)), timeout=30, message="paused in the view")
    assert afd("sessions", "unpause", name).returncode == 0
    wait_for(lambda: (s := tmux_server.capture(pane)) and "recent events" in s and "· paused" not in s, timeout=30,
             message="the pause gone from the view")
    tmux_server.send_keys(pane, "C-c")
    wait_for(lambda: "watch-exit=0" in tmux_server.capture(pane), timeout=30, message="the exit")


def test_the_live_view_has_the_usage_panel_once_an_account_has_figures(tmux_server, run_daemon, xdg_dirs):
    import json
    import subprocess
    from datetime import datetime, timedelta, timezone
    from pathlib import Path

    write_config(xdg_dirs, 'poll_interval = "200ms"\n')
    run_daemon()
    reset = int((datetime.now(timezone.utc) + timedelta(hours=2)).timestamp())
    payload = json.dumps({"session_id": "s", "rate_limits": {"five_hour": {"used_percentage": 83.5, "resets_at": reset}}})
    env = {**os.environ, **{k: str(v) for k, v in xdg_dirs.items()}}
    subprocess.run([str(Path(sys.executable).with_name("afd")), "statusline"], input=payload.encode(), env=env,
                   capture_output=True, check=True, timeout=30)
    wait_for(lambda: status()["usage"]["accounts"][0]["windows"], timeout=30, message="the figure kept")
    pane = watch_pane(tmux_server, xdg_dirs, width=150)
    frame = wait_for(lambda: (s := tmux_server.capture(pane)) and "recent events" in s and "usage" in s and s,
                     timeout=30, message="a frame with the usage panel")
    row = next(line for line in frame.splitlines() if "83.5 %" in line)
    assert "claude" in row and "5-hour" in row and "exact" in row
    tmux_server.send_keys(pane, "C-c")
