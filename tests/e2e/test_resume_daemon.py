"""`afd resume` through a running daemon, and a daemon killed with SIGKILL in the middle of a resume."""

from __future__ import annotations

import json
import os
import signal

import pytest

from afd.record.store import Store
from daemon_harness import afd, run_daemon, status, write_config  # noqa: F401
from harness import start_fake, wait_for

pytestmark = pytest.mark.tmux

MESSAGE = "Limit over: carry on with the task."
CONFIG = f'poll_interval = "200ms"\nlimit_auto_resume = false\n[agents.claude]\nresume_message = "{MESSAGE}"\n'


def continuations(fake) -> list[dict]:
    return [e for e in fake.events("input") if MESSAGE in e["text"]]


def session_row(pane: str) -> dict | None:
    return next((s for s in status()["sessions"] if s["pane"] == pane), None)


def limited_session(tmux_server, run_daemon, xdg_dirs):
    write_config(xdg_dirs, CONFIG)
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, scenario={"limit_now": True, "limit_lasts_seconds": 1})
    fake.wait_ready()
    daemon = run_daemon()
    row = wait_for(lambda: (s := session_row(fake.pane)) and s["state"] == "limited" and s, timeout=20, message="limited")
    assert row["next_action"] == f"resume with: afd resume {row['name']} (limit resets {row['reset_at']})"
    return fake, daemon, row["name"]


def journal_steps(xdg_dirs) -> list[str]:
    store = Store.open_readonly(xdg_dirs["XDG_STATE_HOME"] / "afd" / "state.db")
    try:
        return [e.intent.get("step") for e in store.pending_journal()]
    finally:
        store.close()


def test_afd_resume_resumes_now_and_refuses_what_it_cannot(tmux_server, run_daemon, xdg_dirs):
    fake, _daemon, name = limited_session(tmux_server, run_daemon, xdg_dirs)
    wait_for(lambda: fake.events("limit") and __import__("time").time() - fake.events("limit")[0]["t"] > 1.2, message="the wall to lift")
    assert continuations(fake) == []
    done = afd("resume", name, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["name"] == name
    wait_for(lambda: continuations(fake), timeout=20, message="the continuation")
    wait_for(lambda: any(e["kind"] == "resume.confirmed" for e in status()["events"]), timeout=20, message="confirmed")
    fake.wait_idle(works=1)
    wait_for(lambda: session_row(fake.pane)["state"] in ("idle", "working"), message="working again")

    again = afd("resume", name)
    assert again.returncode == 1 and again.stderr.count("\n") == 1 and "not at a usage limit" in again.stderr
    assert "Traceback" not in again.stderr
    missing = afd("resume", "no-such-session")
    assert missing.returncode == 2 and "no session named" in missing.stderr
    assert len(continuations(fake)) == 1


@pytest.mark.parametrize("where", ["held-at-scheduled", "text-pasted"])
def test_sigkill_mid_resume_then_restart_sends_exactly_one_continuation(tmux_server, run_daemon, xdg_dirs, where):
    fake, daemon, name = limited_session(tmux_server, run_daemon, xdg_dirs)
    wait_for(lambda: __import__("time").time() - fake.events("limit")[0]["t"] > 1.2, message="the wall to lift")
    if where == "held-at-scheduled":
        tmux_server.run("copy-mode", "-t", fake.pane)
    else:
        os.kill(fake.pid, signal.SIGSTOP)  # the paste reaches the pane but is not drawn yet
    try:
        assert afd("resume", name).returncode == 0
        step = "scheduled" if where == "held-at-scheduled" else "text_pasted"
        wait_for(lambda: journal_steps(xdg_dirs) == [step], timeout=20, message=f"the resume at {step}")
        if where == "held-at-scheduled":
            wait_for(lambda: "copy mode" in (session_row(fake.pane)["next_action"] or ""), message="the hold in status")
        daemon.proc.send_signal(signal.SIGKILL)
        daemon.proc.wait(timeout=20)
    finally:
        if where == "held-at-scheduled":
            tmux_server.run("send-keys", "-t", fake.pane, "-X", "cancel")
        else:
            os.kill(fake.pid, signal.SIGCONT)
    assert continuations(fake) == []

    run_daemon()
    wait_for(lambda: continuations(fake), timeout=20, message="the continuation after the restart")
    wait_for(lambda: journal_steps(xdg_dirs) == [], timeout=20, message="the resume settled")
    fake.wait_idle(works=1)
    wait_for(lambda: session_row(fake.pane)["state"] in ("idle", "working"), message="the session working again")
    assert len(continuations(fake)) == 1
    assert not any(e["kind"] == "journal.rolled-back" for e in status()["events"])
