"""One clock for people: under TZ=Asia/Kathmandu (+05:45) no command shows a UTC instant outside --json.

The store is the one a daemon leaves (`seed_store`); every instant in it and in its events' words is ISO UTC.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from daemon_harness import seed_store
from harness import wait_for

pytestmark = pytest.mark.tmux

KATHMANDU = ZoneInfo("Asia/Kathmandu")
CORPUS = Path(__file__).parent.parent / "data" / "corpus"
# A UTC instant as afd writes it (ISO with Z or +00:00), or the older "… UTC" form.
UTC_INSTANT = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|\+00:00| UTC)|\d\d:\d\d(:\d\d)? ?UTC\b")


def afd(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "afd", *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "TZ": "Asia/Kathmandu"})


def kathmandu(at: datetime) -> str:
    return at.astimezone(KATHMANDU).strftime("%H:%M")


def test_no_command_shows_a_utc_instant_outside_json(xdg_dirs, tmp_path):
    now = datetime.now(timezone.utc)
    names = seed_store(now)
    soon = now + timedelta(hours=3, minutes=24)
    case = CORPUS / "claude" / "legacy-new-york"
    human = {
        "status": afd("status"),
        "status --wide": afd("status", "--wide"),
        "events": afd("events"),
        "sessions list": afd("sessions", "list"),
        "ledger": afd("ledger", names["shop"]),
        "ledger --markdown": afd("ledger", names["shop"], "--markdown"),
        "detect": afd("detect", "--agent", "claude", "--now", "2026-07-13T09:00:00Z", str(case / "1.txt"),
                      str(case / "2.txt")),
        "status --tmux": afd("status", "--tmux"),
    }
    for what, done in human.items():
        assert done.returncode in (0, 3), (what, done.stderr)
        shown = done.stdout + done.stderr
        assert not UTC_INSTANT.search(shown), (what, UTC_INSTANT.search(shown).group(), shown)
    # What they show instead: the reader's clock (Kathmandu is 5:45 ahead), with a countdown while ahead.
    assert f"resume at {kathmandu(soon)} (in 3h2" in human["status"].stdout
    assert f"until {kathmandu(soon)} (in 3h2" in human["events"].stdout
    assert re.search(r"- \d{4}-\d\d-\d\d \d\d:\d\d \+05:45: claude → codex", human["ledger --markdown"].stdout)
    assert "reset:  23:45 (in 9h00m)" in human["detect"].stdout  # 18:00 UTC, from --now 09:00 UTC, in Kathmandu
    # --json keeps ISO UTC, and an event's message as stored, with its data.
    for args in (("status", "--json"), ("events", "--json"), ("ledger", names["shop"], "--json")):
        done = afd(*args)
        assert re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", done.stdout), args
    events = [json.loads(line) for line in afd("events", "--json").stdout.splitlines()]
    assert any(e["message"].startswith("resume at ") and e["message"].endswith("Z (attempt 1 of 3)") for e in events)
    assert all(isinstance(e["data"], dict) for e in events)


def test_the_terminal_and_the_live_view_speak_the_readers_zone(tmux_server, xdg_dirs):
    now = datetime.now(timezone.utc)
    seed_store(now)
    env = {k: str(v) for k, v in xdg_dirs.items()} | {
        "TZ": "Asia/Kathmandu", "TERM": "tmux-256color", "LANG": "C.UTF-8", "PYTHONPATH": os.pathsep.join(sys.path)}
    screens = {}
    for args in ("status", "status --watch"):
        command = f"{shlex.quote(sys.executable)} -m afd {args}; echo afd-exit=$?; sleep 600"
        pane = tmux_server.new_pane(f"bash --noprofile --norc -c {shlex.quote(command)}", cwd=tmux_server.scratch,
                                    env=env, width=160, height=60)
        done = "afd-exit=" if args == "status" else "recent events"
        screens[args] = wait_for(lambda p=pane, d=done: (s := tmux_server.capture(p)) and d in s and "weekly:0.0" in s
                                 and s, timeout=30, message=f"afd {args}")
        if args == "status --watch":
            tmux_server.send_keys(pane, "C-c")
    for args, screen in screens.items():
        assert not UTC_INSTANT.search(screen), (args, screen)
        assert f"{kathmandu(now + timedelta(hours=3, minutes=24))} (in 3h2" in screen, (args, screen)
