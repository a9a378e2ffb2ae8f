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
