"""`afd demo` runs to the end and leaves nothing behind."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.tmux


def test_demo_resumes_one_session_and_hands_off_the_other_then_cleans_up(xdg_dirs):
    done = subprocess.run(
        [sys.executable, "-m", "afd", "demo", "--timeout", "240"], capture_output=True, text=True, timeout=300,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    out = done.stdout
    assert "resume.confirmed" in out and "session.handoff" in out
    assert re.search(r"\| `[0-9a-f]{12}\.\.[0-9a-f]{12}` \| claude \| handed to codex automatically \(usage limit\) \|", out)
    socket = re.search(r"private tmux server (afd-demo-[0-9a-f]+)", out).group(1)
    root = Path(re.search(r"everything under (\S+)", out).group(1))
    assert not root.exists()
    assert subprocess.run(["tmux", "-L", socket, "list-sessions"], capture_output=True).returncode != 0
    # The user's own afd state (this test's private XDG dirs) was never touched.
    assert not (xdg_dirs["XDG_STATE_HOME"] / "afd").exists()


def test_demo_web_shows_the_demo_in_the_dashboard(xdg_dirs):
    from web_harness import Client

    from harness import wait_for

    proc = subprocess.Popen(
        [sys.executable, "-m", "afd", "demo", "--web", "--timeout", "240"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL, text=True, env={**os.environ, "COLUMNS": "200"},
    )
    try:
        seen = []
        for line in proc.stdout:
            seen.append(line)
            if line.startswith("dashboard: open "):
                break
        login = re.fullmatch(r"dashboard: open (http://127\.0\.0\.1:(\d+)/#token=\S+)\n", seen[-1])
        assert login, "".join(seen)
        client = Client(int(login.group(2)))
        client.log_in(login.group(1))
        assert "<title>afd</title>" in client.get("/").text

        def both_sessions():
            reply = client.get("/api/status")
            names = {s["location"].split(":")[0] for s in reply.json()["sessions"] if s.get("location")}
            return names >= {"resume-demo", "handoff-demo"}

        wait_for(both_sessions, timeout=60, message="both demo sessions in the dashboard's status")
        out, err = proc.communicate(timeout=280)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, "".join(seen) + out + err
    assert "done:" in out
    # The dashboard went with the demo's afd.
    try:
        gone = client.get("/", timeout=2).status != 200
    except OSError:
        gone = True
    assert gone
