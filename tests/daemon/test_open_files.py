"""`afd run` takes its hard open-files limit as its soft one at start."""

from __future__ import annotations

import pytest

from daemon_harness import run_daemon  # noqa: F401 (a fixture)

pytestmark = pytest.mark.tmux


def limits_of(pid: int) -> tuple[int, int]:
    for line in open(f"/proc/{pid}/limits", encoding="ascii"):
        if line.startswith("Max open files"):
            soft, hard = line.split()[3:5]
            return int(soft), int(hard)
    raise AssertionError("no open-files line")


def test_the_daemon_raises_its_soft_open_files_limit_to_the_hard_one(run_daemon):
    daemon = run_daemon(nofile=(1024, 4096))
    assert limits_of(daemon.proc.pid) == (4096, 4096)
