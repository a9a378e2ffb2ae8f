"""afd names the tmux server it watches by its socket: the one tmux's own rule picks (-L/-S, else $TMUX)."""

from __future__ import annotations

import os
import secrets
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from daemon_harness import afd, status
from harness import start_fake, wait_for

pytestmark = pytest.mark.tmux


def test_a_bare_afd_run_inside_a_pane_watches_that_server_and_says_so(tmux_server, xdg_dirs):
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, prompt="fix the login redirect")
    fake.wait_ready()
    env = {k: str(v) for k, v in xdg_dirs.items()} | {"PYTHONPATH": os.pathsep.join(sys.path), "LANG": "C.UTF-8"}
    # No -L: inside the pane, $TMUX names the test's private server, as it would for a bare `tmux`.
    command = f"{shlex.quote(sys.executable)} -m afd run 2>{tmux_server.scratch}/afd.log; sleep 600"
    pane = tmux_server.new_pane(f"bash --noprofile --norc -c {shlex.quote(command)}", cwd=tmux_server.scratch, env=env)
    try:
        socket = str(tmux_server.socket_path)
        wait_for(lambda: afd("status", "--json").returncode == 0 and status()["sessions"], timeout=30,
                 message="the daemon in the pane adopting the fake on its own server")
        report = status()
        assert report["daemon"]["server"] == socket
        assert report["daemon"]["server_ref"] == [None, socket]
        assert {s["pane"] for s in report["sessions"]} == {fake.pane}
        human = afd("status")
        assert f"tmux server: {socket}" in human.stdout.splitlines()[0], human.stdout
        doctor = afd("doctor")  # run outside tmux, it checks the daemon's server, not the default one
        assert socket in doctor.stdout, doctor.stdout
    finally:
        tmux_server.send_keys(pane, "C-c")
        wait_for(lambda: afd("status", "--json").returncode == 3, timeout=30, message="the daemon stopping")


def test_with_no_server_running_afd_says_which_socket_it_looked_for(xdg_dirs):
    name = f"afd-test-none-{secrets.token_hex(6)}"
    socket = Path(os.environ.get("TMUX_TMPDIR") or "/tmp").resolve() / f"tmux-{os.getuid()}" / name
    done = subprocess.run([sys.executable, "-m", "afd", "run", "-L", name, "--once"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert f"no tmux server is running at {socket}; nothing to watch yet" in done.stderr, done.stderr
