"""Fixtures of the real_agents tier: real Claude Code, Codex, Gemini CLI, OpenCode and GitHub Copilot CLI, offline, on the mock API.

Each test that runs a CLI (marked `real_agents` here) gets a `Rig` (rig.py): its own loopback-only namespace, mock API,
tmux server and throwaway homes, all ended at teardown, pass or fail. The
tier needs root (for the namespace) and the pinned CLIs installed
(`scripts/real-agents install`; `scripts/test` does it when it can); without
them its tests are skipped with the reason, and `scripts/test` says so in its
summary.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import install  # noqa: E402
from netns import can_create, make_ca  # noqa: E402
from rig import Rig  # noqa: E402
from verdicts import Supervisor  # noqa: E402


def pytest_collection_modifyitems(items):
    for item in items:
        if "rig" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.real_agents)
    # The longest tests go first, so that parallel workers run out of work together
    # rather than one of them starting a long test when the others are done.
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


# Read before any test points HOME at a throwaway folder.
CACHE = install.cache_root()


@pytest.fixture(scope="session")
def real_bins() -> dict[str, Path]:
    why = can_create()
    if why:
        pytest.skip(why)
    missing = [p for p in install.pins() if not install.installed(p, CACHE)]
    if missing:
        names = ", ".join(f"{p.package}@{p.version}" for p in missing)
        pytest.skip(f"{names} not installed: run scripts/real-agents install")
    return {p.agent: install.binary(p, CACHE) for p in install.pins()}


@pytest.fixture(scope="session")
def mock_ca(real_bins, tmp_path_factory):
    return make_ca(tmp_path_factory.mktemp("ca"))


@pytest.fixture
def rig(real_bins, mock_ca, xdg_dirs):
    scratch = Path(f"/tmp/afd-real-{secrets.token_hex(4)}")
    scratch.mkdir(mode=0o700)
    rig = Rig(
        scratch=scratch,
        claude_bin=real_bins["claude"],
        codex_bin=real_bins["codex"],
        gemini_bin=real_bins["gemini"],
        opencode_bin=real_bins["opencode"],
        copilot_bin=real_bins["copilot"],
        ca=mock_ca,
        socket_prefix=os.environ.get("AFD_TEST_SOCKET_PREFIX", "afd-test-"),
    )
    try:
        rig.start()
        yield rig
    finally:
        rig.close()
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture
def shop(rig) -> Path:
    """The project folder the agent works in: a git repository with one commit."""
    path = rig.scratch / "shop"
    path.mkdir()
    (path / "README.md").write_text("# shop\n", encoding="utf-8")
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "start"]):
        subprocess.run(["git", "-c", "user.name=afd test", "-c", "user.email=test@afd.invalid", *args],
                       cwd=path, check=True, capture_output=True)
    return path


@pytest.fixture
def afd(rig, xdg_dirs):
    """afd's supervisor watching the rig's tmux server, stopped at teardown: its defaults, polling each second
    (a wall holds for two polls before it counts, so this halves every wait for afd's word)."""
    config = xdg_dirs["XDG_CONFIG_HOME"] / "afd" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('poll_interval = "1s"\n', encoding="utf-8")
    supervisor = Supervisor(rig.tmux.name, rig.scratch / "afd.log")
    try:
        yield supervisor
    finally:
        supervisor.stop()


@pytest.fixture
def afd_resumes(rig, xdg_dirs):
    """afd's supervisor set to resume a limited agent by itself, a second after its reset."""
    config = xdg_dirs["XDG_CONFIG_HOME"] / "afd" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('poll_interval = "1s"\nlimit_auto_resume = true\nresume_grace = "1s"\n', encoding="utf-8")
    supervisor = Supervisor(rig.tmux.name, rig.scratch / "afd.log")
    try:
        yield supervisor
    finally:
        supervisor.stop()
