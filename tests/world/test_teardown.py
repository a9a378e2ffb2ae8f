"""Stopping an agent's process tree: escalation, confirmation, and what is left alone. Real processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import psutil
import pytest

from afd.world import teardown
from afd.world.teardown import Gone
from harness import process_alive, wait_for

# The "agent": ignores SIGTERM, starts one child of the given kind, prints the child's pid.
AGENT = textwrap.dedent(
    """
    import os, signal, subprocess, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    kind = sys.argv[1]
    def prep():
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if kind == "own-group":
            os.setpgid(0, 0)
        elif kind == "own-session":
            os.setsid()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], preexec_fn=prep)
    print(child.pid, flush=True)
    time.sleep(60)
    """
)


@pytest.fixture
def agent():
    started: list[int] = []

    def start(kind: str) -> tuple[subprocess.Popen, teardown.Proc, int]:
        proc = subprocess.Popen(
            [sys.executable, "-c", AGENT, kind], stdout=subprocess.PIPE, text=True, start_new_session=True
        )
        child = int(proc.stdout.readline())
        started.extend([proc.pid, child])
        return proc, teardown.Proc(proc.pid, psutil.Process(proc.pid).create_time()), child

    yield start
    for pid in started:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_sigterm_ignored_escalates_to_sigkill_and_the_tree_is_confirmed_gone(agent):
    proc, me, child = agent("same-group")
    tree = teardown.look(me)
    assert {p.pid for p in tree.procs} == {me.pid, child}
    assert teardown.signal_group(tree.pgid, teardown.TERM)
    # Both ignore SIGTERM: still there, and confirmation says so.
    assert teardown.confirm_gone(tree.procs)[0] is Gone.ALIVE
    teardown.signal_group(tree.pgid, teardown.KILL)
    outcome = wait_for(lambda: teardown.confirm_gone(tree.procs)[0] is Gone.GONE or None, message="tree gone")
    assert outcome
    # The agent is a zombie until its parent reaps it: a zombie counts as gone.
    assert not process_alive(child)
    proc.wait()


def test_a_process_that_left_the_group_keeps_the_tree_alive(agent):
    proc, me, child = agent("own-group")
    tree = teardown.look(me)
    teardown.signal_group(tree.pgid, teardown.KILL)
    wait_for(lambda: proc.poll() is not None, message="the agent killed")
    state, left = teardown.confirm_gone(tree.procs)
    assert state is Gone.ALIVE and [p.pid for p in left] == [child]


def test_a_detached_daemon_is_left_alone_and_reported(agent):
    proc, me, daemon = agent("own-session")
    tree = teardown.look(me)
    assert [p.pid for p in tree.procs] == [me.pid]
    assert [p.pid for p in tree.detached] == [daemon]
    teardown.signal_group(tree.pgid, teardown.KILL)
    wait_for(lambda: teardown.confirm_gone(tree.procs)[0] is Gone.GONE or None, message="agent gone")
    assert process_alive(daemon)


def test_a_reused_pid_is_not_the_recorded_process():
    me = psutil.Process()
    assert teardown.state_of(teardown.Proc(me.pid, me.create_time() + 1)) is Gone.GONE
    assert teardown.state_of(teardown.Proc(me.pid, me.create_time())) is Gone.ALIVE


def test_a_process_whose_start_time_is_unknown_is_never_taken_for_gone():
    me = teardown.Proc(os.getpid(), None)
    assert teardown.state_of(me) is Gone.ALIVE
    assert teardown.look(me).pgid == os.getpgid(0)
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert teardown.state_of(teardown.Proc(child.pid, None)) is Gone.GONE


def test_our_own_group_is_never_signalled():
    assert not teardown.signal_group(os.getpgid(0), teardown.KILL)
