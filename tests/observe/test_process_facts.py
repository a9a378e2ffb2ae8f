"""What afd reads about another process (its PATH, its working directory), through psutil."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from afd.act.preflight import pane_path
from afd.kit.recordtail import process_environment
from afd.observe.look import process_cwd as _process_cwd
from harness import wait_for


@pytest.fixture
def child(tmp_path):
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"}
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], env=env, cwd=tmp_path)
    try:
        # The environment is readable once the exec is done.
        wait_for(lambda: process_environment(proc.pid).get("PATH") == env["PATH"], message="the child's exec")
        yield proc
    finally:
        proc.kill()
        proc.wait()


def test_the_pane_path_is_the_one_its_process_was_started_with(child, tmp_path):
    assert pane_path(child.pid) == f"{tmp_path / 'bin'}:/usr/bin:/bin"


def test_the_working_directory_is_the_process_own(child, tmp_path):
    assert _process_cwd(child.pid) == str(tmp_path)


def test_a_process_that_is_gone_has_no_path_cwd_or_environment_of_its_own(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()  # reaped: the pid names nothing now
    assert pane_path(proc.pid) is None
    assert _process_cwd(proc.pid) is None
    assert _process_cwd(None) is None
    assert process_environment(proc.pid) == dict(os.environ)
