"""An agent afd has never heard of, taught by a manifest alone: adopted, walled and handed off on a real tmux server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import pytest

from daemon_harness import afd, events, run_daemon, session_for, status, wait_session, wait_state, write_config  # noqa: F401 (run_daemon is a fixture)
from harness import read_log, start_fake, wait_for

pytestmark = pytest.mark.tmux

MYCLI = r"""
# An agent only this file describes: how to know it, start it, read its screen and its wall.
name = "mycli"

[process]
executables = ["mycli"]

[launch]
command = ["mycli"]
resume_args = ["--continue"]

[accounts]
select_env = ["MYCLI_HOME"]
credential_env = ["MYCLI_API_KEY"]

[screen]
composer = '^[›▌](?:\s|$)'
transcript = '^[•■]'
chrome = ['(?:^\s*|\s{2})\? for shortcuts\b', '\d{1,3}% context left']
busy = ['^(?!.*\bretrying\b).*\besc to interrupt\b']
submitted = '^›\s*\S'

[[banner]]
kind = "quota"
regex = '^■ Mycli quota used up\. It comes back at (?P<clock>\d{1,2}:\d{2} [AP]M) \((?P<zone>[^)]+)\)\.$'

[[banner]]
kind = "quota"
regex = '^■ Mycli quota used up\. It comes back in (?P<relative>[0-9dhms ]+)\.$'

[[not_limit]]
regex = '\bretrying in \d+s\b'
"""

WALL = "■ Mycli quota used up. It comes back at 11:45 PM (UTC)."


def _next_2345(after: datetime) -> datetime:
    at = after.replace(hour=23, minute=45, second=0, microsecond=0)
    return at if at > after else at + timedelta(days=1)


def _afd_env(*args: str, path: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "afd", *args], capture_output=True, text=True, timeout=30,
        env={**os.environ, "PATH": f"{path}{os.pathsep}{os.environ.get('PATH', '')}"},
    )


def test_a_manifest_dropped_in_plugins_dir_makes_afd_adopt_wall_and_hand_off_mycli(run_daemon, tmux_server, xdg_dirs, worktree):
    plugins = xdg_dirs["XDG_CONFIG_HOME"] / "afd" / "plugins"
    plugins.mkdir(parents=True)
    (plugins / "mycli.toml").write_text(MYCLI, encoding="utf-8")
    (plugins / "broken.toml").write_text('name = "broken"\n[process]\nexecutables = "broken"\n', encoding="utf-8")
    write_config(
        xdg_dirs,
        'poll_interval = "200ms"\nhandoff_stop_timeout = "1s"\nlimit_action = "handoff"\nhandoff_order = ["codex"]\n',
    )
    started = datetime.now(timezone.utc)
    daemon = run_daemon()
    wt = worktree("feature")
    scenario = {"agents": {"mycli": {"style": "codex", "limit_after_prompts": 1, "banner_rows": [WALL]}, "codex": {}}}
    fake = start_fake(tmux_server, "mycli", cwd=wt, prompt="Fix the login test", scenario=scenario)

    s = session_for(fake.pane)
    assert s["agent"] == "mycli"
    name = s["name"]
    # Walled, then handed to codex in the same pane, automatically: mycli has no record witness to wait for.
    s = wait_session(name, lambda s: s["agent"] == "codex" and s["handoffs"] == 1, "handed to codex", timeout=60)
    assert s["pane"] == fake.pane and s["ledger"][0]["automatic"] is True
    assert s["ledger"][0]["reason"] == "usage limit"
    mycli = next(a for a in status()["agents"] if a["name"] == "mycli")
    assert mycli["state"] == "limited"
    reset = datetime.fromisoformat(mycli["reset_at"].replace("Z", "+00:00"))
    assert reset in (_next_2345(started), _next_2345(started + timedelta(minutes=5)))
    [limited] = [e for e in events("session.limited") if e["session"] == name][:1]
    assert "mycli" in limited["message"]

    codex = wait_for(lambda: [e for e in read_log(fake.log) if e["agent"] == "codex" and e["event"] == "start"], message="codex started")
    assert "Fix the login test" in codex[0]["prompt"] and "previous agent (mycli)" in codex[0]["prompt"]
    wait_state(name, "idle", "working")

    # The broken manifest is named, with its line, and skipped; the daemon runs on.
    assert daemon.proc.poll() is None
    listing = json.loads(afd("plugins", "--json").stdout)
    assert listing["agents"]["mycli"] == "mycli"
    assert next(p for p in listing["plugins"] if p["name"] == "mycli")["source"] == "manifest"
    [broken] = listing["failed"]
    assert broken["name"] == "broken" and f"{plugins / 'broken.toml'}:3: process.executables:" in broken["error"]

    doctor = json.loads(_afd_env("doctor", "--json", path=str(fake.bin_dir)).stdout)
    checks = {c["check"]: c for c in doctor}
    assert checks["agent mycli"]["status"] == "ok" and checks["agent mycli"]["detail"].endswith("/mycli")
    assert {"agent claude", "agent codex", "agent devin"} <= set(checks)
