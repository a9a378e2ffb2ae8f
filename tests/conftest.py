"""Fixtures shared by the whole suite.

Every tmux server a test starts lives on its own private socket
(`tmux -L afd-test-<random>`, no user config) and is killed, with its socket
file removed, when the test ends, pass or fail. No test talks to the user's
default server. (libtmux's pytest plugin is disabled in pyproject: its
`server`/`session` fixtures would clash.) The helpers for fake agents on
those servers (`start_fake`, `wait_for`, `read_log`, ...) are in `harness.py`.
"""

from __future__ import annotations

import os
import secrets
import shutil
from pathlib import Path

import pytest

from harness import TmuxServer, add_worktree, install_fake_bin, make_git_repo


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
    scratch = xdg_dirs["HOME"].parent / "t"
    scratch.mkdir()
    # scripts/test sets a per-run prefix so its leak check sees only its own servers.
    prefix = os.environ.get("AFD_TEST_SOCKET_PREFIX", "afd-test-")
    srv = TmuxServer(name=f"{prefix}{secrets.token_hex(6)}", env=env, scratch=scratch)
    srv.run("-f", "/dev/null", "start-server", ";", "set-option", "-g", "exit-empty", "off", check=False)
    try:
        yield srv
    finally:
        srv.kill()


@pytest.fixture
def fake_bin(xdg_dirs):
    """A bin dir with the fake `claude`, `codex`, `devin` and a `my-wrapper` that runs claude under another name."""
    return install_fake_bin(xdg_dirs["HOME"].parent / "fb", wrappers={"my-wrapper": "claude"})


@pytest.fixture
def git_repo(tmp_path):
    """A git repository on `main` with three commits by the test identity."""
    return make_git_repo(tmp_path / "repo")


@pytest.fixture
def worktree(git_repo, tmp_path):
    """Factory: `worktree("feature")` adds a worktree of `git_repo` on a new branch and returns its path."""

    def make(branch: str = "feature", base: str = "HEAD") -> Path:
        return add_worktree(git_repo, tmp_path / "wt" / branch.replace("/", "-"), branch, base)

    return make
