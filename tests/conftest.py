"""Fixtures shared by the whole suite.

Every tmux server a test starts lives on its own private socket
(`tmux -L afd-test-<random>`, no user config) and is killed, with its socket
file removed, when the test ends, pass or fail. No test talks to the user's
default server. (libtmux's pytest plugin is disabled in pyproject: its
`server`/`session` fixtures would clash.)
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass
class TmuxServer:
    """A private tmux server: `run(...)` is `tmux -L <name> ...`."""

    name: str
    env: dict

    def run(self, *args: str, check: bool = True, timeout: float = 10) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["tmux", "-L", self.name, *args],
            capture_output=True,
            text=True,
            env=self.env,
            check=check,
            timeout=timeout,
        )

    @property
    def socket_path(self) -> Path:
        return Path(f"/tmp/tmux-{os.getuid()}") / self.name

    def kill(self) -> None:
        subprocess.run(["tmux", "-L", self.name, "kill-server"], capture_output=True, env=self.env, timeout=10)
        # tmux 3.3a leaves the socket file behind after kill-server.
        self.socket_path.unlink(missing_ok=True)


@pytest.fixture
def xdg_dirs(tmp_path, monkeypatch):
    """Private XDG config/state/data/runtime dirs and HOME; short paths so AF_UNIX sockets fit."""
    base = Path(f"/tmp/afd-{secrets.token_hex(4)}")
    dirs = {}
    for key, sub in (
        ("HOME", "home"),
        ("XDG_CONFIG_HOME", "cfg"),
        ("XDG_STATE_HOME", "st"),
        ("XDG_DATA_HOME", "data"),
        ("XDG_RUNTIME_DIR", "run"),
    ):
        path = base / sub
        path.mkdir(parents=True, mode=0o700)
        monkeypatch.setenv(key, str(path))
        dirs[key] = path
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    yield dirs
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def tmux_server(xdg_dirs):
    """A tmux server on a unique private socket, killed at teardown even on failure."""
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed; scripts/test installs it")
    env = dict(os.environ)
    env.pop("TMUX", None)
    srv = TmuxServer(name=f"afd-test-{secrets.token_hex(6)}", env=env)
    srv.run("-f", "/dev/null", "start-server", ";", "set-option", "-g", "exit-empty", "off", check=False)
    try:
        yield srv
    finally:
        srv.kill()
