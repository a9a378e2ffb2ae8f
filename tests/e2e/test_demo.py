"""`afd demo` tells its story to the end, in the reader's zone, and leaves nothing behind."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

pytestmark = pytest.mark.tmux

ZONE = "Asia/Kathmandu"  # +05:45: a clock time in it is never a UTC one with another hour
# The story, in the order it happens: what afd does and why.
STORY = [
    r"resume-demo: afd finds codex in the pane's process tree and watches it as session resume-demo:0\.0, on account codex\.",
    r"resume-demo: codex hits its usage limit; the wall says it resets at (?P<reset>\d\d:\d\d:\d\d) \(in \d+s\)\. "
    r"afd counts it as a stall, not text in a file",
    r"resume-demo: afd will resume codex at \d\d:\d\d:\d\d \(in \d+s\): the stated reset plus resume_grace",
    r"resume-demo: afd pastes the continuation into codex's pane",
    r"resume-demo: codex took it and went back to work\.",
    r"Now the demo edits afd's config, as you would: limit_action = \"handoff\"",
    r"handoff-demo: afd finds claude in the pane's process tree and watches it as session handoff-demo:0\.0, on account claude\.",
    r"handoff-demo: claude hits its usage limit; the wall says it resets at \d\d:\d\d:\d\d \(in (59m|1h00m)\)\..*"
    r"claude's own records show the same wall, so two witnesses agree\.",
    r"handoff-demo: afd hands the work to codex, the first account in handoff_order that is not limited\. It stops "
    r"claude, waits until every one of its processes is gone",
    r"handoff-demo: codex now works where claude stopped\. The ledger records the branch's HEAD at the swap "
    r"\([0-9a-f]{12}\)",
]


def _unwrapped(narration: str) -> str:
    """The story's lines joined again: each is `HH:MM:SS  text`, wrapped under itself."""
    return re.sub(r"\n {10}", " ", narration)


def test_demo_tells_what_happens_and_why_in_the_readers_zone_then_cleans_up(xdg_dirs):
    done = subprocess.run(
        [sys.executable, "-m", "afd", "demo", "--timeout", "240"], capture_output=True, text=True, timeout=300,
        env={**os.environ, "COLUMNS": "80", "TZ": ZONE},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    out = done.stdout
    shown, _, ledger = out.partition("afd ledger handoff-demo:0.0 --markdown")
    story = _unwrapped(shown)

    # Each step told, in order, in plain words.
    at = 0
    for step in STORY:
        found = re.compile(step, re.S).search(story, at)
        assert found, f"not told (after char {at}): {step}\n\n{story}"
        at = found.end()
    # Told as it happened, in the reader's zone: each line's clock time is near now in Kathmandu.
    now = datetime.now(ZoneInfo(ZONE))
    for stamp in re.findall(r"^(\d\d:\d\d:\d\d)  ", story, re.M):
        local = datetime.combine(now.date(), datetime.strptime(stamp, "%H:%M:%S").time(), ZoneInfo(ZONE))
        assert abs(local - now) < timedelta(minutes=10) or abs(local - now) > timedelta(hours=23), (stamp, now)
    flat = " ".join(out.split())
    assert f"Times are in your zone ({ZONE})" in flat
    # No ISO UTC instants, no raw event kinds or refusals, no cut or over-wide lines.
    assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d", shown), shown
    assert "handoff.refused" not in out and "afd says (" not in shown, shown
    assert "…" not in shown and "..." not in shown
    assert max(len(line) for line in shown.splitlines()) <= 80

    # The limits table, truthful: claude at its wall (resetting in the reader's zone), codex seen working;
    # the accounts named as afd names them, never a temporary directory.
    limits = shown[shown.index("limits (afd status: accounts)"):]
    assert re.search(r"│ claude\s+│ claude\s+│ limited\s+│ \d\d:\d\d:\d\d \(in (59m|1h00m)\)\s+│ handoff-demo\s+│", limits), limits
    assert re.search(r"│ codex\s+│ codex\s+│ available\s+│ -\s+│ resume-demo\s+│", limits), limits
    assert "/tmp" not in limits and "@" not in limits
    sessions = shown[shown.index("sessions (afd status)"):shown.index("limits (afd status: accounts)")]
    assert re.search(r"│ handoff-demo:0\.0\s+│ codex\s+│ codex\s+│ (working|idle)\s+│", sessions), sessions
    assert re.search(r"done in \d+ s: codex in resume-demo was resumed after its reset; claude's work in handoff-demo went to codex", flat)

    assert re.search(r"\| `[0-9a-f]{12}\.\.[0-9a-f]{12}` \| claude \| handed to codex automatically \(usage limit\) \|", out)
    # The ledger, read by others in a PR, gives its times with their offset; nothing anywhere in UTC.
    assert re.search(r"- \d{4}-\d\d-\d\d \d\d:\d\d \+05:45: claude → codex", ledger), ledger
    assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d)?(Z|\+00:00)|\bUTC\b", out), out
    socket = re.search(r"private tmux server (afd-demo-[0-9a-f]+)", flat).group(1)
    root = Path(re.search(r"everything under (\S+);", flat).group(1))
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
    assert re.search(r"^done in \d+ s: ", out, re.M), out
    # The dashboard went with the demo's afd.
    try:
        gone = client.get("/", timeout=2).status != 200
    except OSError:
        gone = True
    assert gone
