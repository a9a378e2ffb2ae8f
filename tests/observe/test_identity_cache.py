"""The identity cache: each event that can change a pane's identity makes it walk again; nothing else does."""

from __future__ import annotations

import os
import re
import shlex
import stat
import subprocess
import sys
from dataclasses import replace

import psutil
import pytest

from afd.model import AgentSpec
from afd.observe.identity import IdentityKind, ProcessFact, identify
from afd.observe.identity_cache import Held, IdentityCache, LinuxProc, ProcStat, rules_key
from afd.world import tmux
from harness import start_fake, wait_for

CLAUDE = AgentSpec(name="claude", executables=("claude",), command=("claude",))
CODEX = AgentSpec(name="codex", executables=("codex",), command=("codex",))
SPECS = {"claude": CLAUDE, "codex": CODEX}


def judge(procs):
    return identify(procs, SPECS)


def pane(pane_pid: int = 100, current_command: str = "bash", dead: bool = False) -> tmux.PaneInfo:
    return tmux.PaneInfo(
        pane_id="%1", pane_pid=pane_pid, current_command=current_command, start_command="", cwd="/",
        dead=dead, width=80, height=24, cursor_x=0, cursor_y=0, history_size=0, window_activity=0,
        in_mode=False, session_name="s", window_index=0, pane_index=0,
    )  # fmt: skip


class FakeProc:
    """A process table: pid → (state, tpgid, start ticks, argv, ppid)."""

    def __init__(self):
        self.table: dict[int, dict] = {}
        self.reads = 0
        self.walked = 0
        self.released = 0

    def add(self, pid, argv, *, ppid, tpgid=0, start=None, state="S"):
        self.table[pid] = dict(argv=tuple(argv), ppid=ppid, tpgid=tpgid, start=start or pid * 10, state=state)

    def stat(self, pid):
        self.reads += 1
        p = self.table.get(pid)
        return None if p is None else ProcStat(p["state"], p["tpgid"], p["start"])

    def argv(self, pid):
        self.reads += 1
        p = self.table.get(pid)
        return None if p is None else p["argv"]

    def hold(self, pid, start_ticks):
        st = self.stat(pid)
        ok = st is not None and st.start_ticks == start_ticks and st.state != "Z"
        return Held(pid, start_ticks, None) if ok else None

    def ended(self, held):
        self.reads += len(held)
        gone = set()
        for h in held:
            p = self.table.get(h.pid)
            if p is None or p["start"] != h.start_ticks or p["state"] == "Z":
                gone.add(h)
        return gone

    def release(self, held):
        self.released += 1

    def walker(self, root):
        self.walked += 1
        out, stack = [], [root]
        while stack:
            pid = stack.pop()
            p = self.table.get(pid)
            if p is None:
                continue
            fg = self.table[root]["tpgid"]
            status = psutil.STATUS_ZOMBIE if p["state"] == "Z" else psutil.STATUS_SLEEPING
            name = os.path.basename(p["argv"][0])
            out.append(ProcessFact(pid, p["ppid"], name, "", p["argv"], float(p["start"]), status, pid, pid == fg))
            stack.extend(c for c, q in self.table.items() if q["ppid"] == pid)
        return out


class Mono:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


@pytest.fixture
def world():
    procs, mono = FakeProc(), Mono()
    procs.add(100, ["-bash"], ppid=1, tpgid=200)
    procs.add(200, ["claude", "fix it"], ppid=100, tpgid=200)
    cache = IdentityCache(proc=procs, walker=procs.walker, monotonic=mono)
    return procs, mono, cache


def poll(cache, p=None, bound=None):
    cache.begin_poll()
    return cache.lookup(p or pane(), judge, bound)


def test_a_pane_that_did_not_change_is_not_walked_again(world):
    procs, mono, cache = world
    _, first = poll(cache)
    assert first.kind is IdentityKind.KNOWN and first.pid == 200
    for _ in range(5):
        mono.now += 1
        _, again = poll(cache)
        assert again == first
    assert procs.walked == 1


def test_a_child_tool_of_the_agent_does_not_change_its_identity(world):
    procs, mono, cache = world
    poll(cache)
    procs.add(300, ["bash", "-c", "git status"], ppid=200, tpgid=200)  # same process group: not a new foreground
    _, ident = poll(cache)
    assert procs.walked == 1 and ident.agent == "claude" and ident.pid == 200
    mono.now += 31  # and when the safety walk does see the child, the agent is still the one nearest the root
    _, ident = poll(cache)
    assert procs.walked == 2 and ident.agent == "claude" and ident.pid == 200


def test_agent_exit_walks_again(world):
    procs, _, cache = world
    poll(cache)
    procs.table[200]["state"] = "Z"  # a zombie counts as gone, before anything else changed
    _, ident = poll(cache)
    assert procs.walked == 2 and ident.kind is IdentityKind.NONE


def test_exec_of_a_wrapper_into_the_agent_is_seen_at_the_next_poll(world):
    procs, _, cache = world
    procs.table[200]["argv"] = ("sh", "/usr/local/bin/my-wrapper", "fix it")
    _, ident = poll(cache)
    assert ident.kind is IdentityKind.UNKNOWN
    procs.table[200]["argv"] = ("claude", "fix it")  # same pid, same start: only argv tells
    _, ident = poll(cache)
    assert procs.walked == 2 and ident.kind is IdentityKind.KNOWN and ident.pid == 200


def test_a_new_agent_in_the_same_pane_is_seen(world):
    procs, _, cache = world
    poll(cache)
    del procs.table[200]
    procs.add(250, ["codex"], ppid=100, tpgid=250)
    procs.table[100]["tpgid"] = 250
    _, ident = poll(cache)
    assert procs.walked == 2 and ident.agent == "codex" and ident.pid == 250


def test_pid_reuse_is_not_the_same_agent(world):
    procs, _, cache = world
    poll(cache)
    procs.table[200]["start"] += 5  # the agent died and an unrelated process got its pid
    procs.table[200]["argv"] = ("claude", "fix it")
    _, ident = poll(cache)
    assert procs.walked == 2 and ident.create_time == float(procs.table[200]["start"])


def test_the_bound_agent_is_watched_even_when_identity_names_another(world):
    procs, _, cache = world
    procs.add(150, ["python3", "/opt/agent.py"], ppid=100, tpgid=200)  # vouched-for wrapper, a background job
    poll(cache, bound=(150, 1500.0))
    procs.table[150]["state"] = "Z"
    poll(cache, bound=(150, 1500.0))
    assert procs.walked == 2


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda p: replace(p, pane_pid=101), id="respawned-pane"),
        pytest.param(lambda p: replace(p, current_command="node"), id="current-command"),
        pytest.param(lambda p: replace(p, dead=True), id="dead-pane"),
    ],
)
def test_a_changed_pane_is_walked_again(world, change):
    procs, _, cache = world
    procs.add(101, ["-bash"], ppid=1, tpgid=101)
    poll(cache)
    poll(cache, change(pane()))
    assert procs.walked == 2 - change(pane()).dead  # a dead pane has no processes to walk


def test_the_safety_walk_comes_every_30_seconds(world):
    procs, mono, cache = world
    poll(cache)
    mono.now = 29.9
    poll(cache)
    assert procs.walked == 1
    mono.now = 30.0
    poll(cache)
    assert procs.walked == 2


def test_a_safety_walk_that_finds_every_process_as_it_was_keeps_the_identity_and_its_holds(world):
    procs, mono, cache = world
    made = []

    def counted(ps):
        made.append(ps)
        return judge(ps)

    cache.begin_poll()
    _, first = cache.lookup(pane(), counted)
    for step in (31, 62):
        mono.now = step
        cache.begin_poll()
        _, again = cache.lookup(pane(), counted)
        assert again is first  # the account read with it stands too: the same processes
    assert procs.walked == 3 and len(made) == 1 and procs.released == 0

    procs.add(300, ["bash", "-c", "git status"], ppid=200, tpgid=200)  # found by the next safety walk
    mono.now = 93
    cache.begin_poll()
    _, after = cache.lookup(pane(), counted)
    assert procs.walked == 4 and len(made) == 2 and procs.released > 0
    assert after is not first and (after.agent, after.pid) == ("claude", 200)


def test_a_reload_of_the_rules_drops_every_entry(world):
    procs, _, cache = world
    cache.begin_poll(rules_key(SPECS, {}))
    cache.lookup(pane(), judge)
    cache.begin_poll(rules_key(SPECS, {"claude": ["my-claude"]}))
    cache.lookup(pane(), judge)
    assert procs.walked == 2


def test_closed_panes_are_forgotten(world):
    procs, _, cache = world
    poll(cache)
    cache.retain([])
    poll(cache)
    assert procs.walked == 2


def test_a_known_agent_pane_reads_no_proc_file_and_a_shell_pane_a_handful(world):
    procs, _, cache = world
    poll(cache)
    procs.reads = 0
    poll(cache)
    assert procs.reads == 1  # the one exit check of the held agent, no /proc file
    procs.table[100]["tpgid"] = 100
    del procs.table[200]
    poll(cache)  # the agent exited: a shell pane from now on
    procs.reads = 0
    poll(cache)
    assert procs.reads <= 3  # the shell's stat, the foreground leader's stat and argv


def test_linux_proc_reads_this_process():
    me = LinuxProc()
    st = me.stat(os.getpid())
    assert st is not None and st.state in "RS" and st.start_ticks > 0
    assert me.argv(os.getpid()) == tuple(psutil.Process().cmdline())
    assert me.stat(2**22 + 12345) is None and me.argv(2**22 + 12345) is None


def test_linux_proc_sees_an_exit_before_the_zombie_is_reaped_and_never_holds_a_reused_pid():
    me = LinuxProc()
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        ticks = me.stat(child.pid).start_ticks
        assert me.hold(child.pid, ticks + 1) is None  # another start: another process with this pid
        held = me.hold(child.pid, ticks)
        assert held is not None and me.ended([held]) == set()
        child.stdin.close()
        wait_for(lambda: me.stat(child.pid).state == "Z", message="a zombie")  # exited, not yet reaped
        assert me.ended([held]) == {held}
        me.release(held)
    finally:
        child.wait()


def test_forgotten_panes_release_their_pidfds(world):
    _, _, cache = world
    me = LinuxProc()
    cache._proc = me
    cache._walker = lambda pid: [ProcessFact(os.getpid(), os.getppid(), "python", "", ("claude",), psutil.Process().create_time(), "running", os.getpgid(0), True)]
    fds = len(os.listdir("/proc/self/fd"))
    poll(cache)
    assert len(os.listdir("/proc/self/fd")) == fds + 1
    cache.retain([])
    assert len(os.listdir("/proc/self/fd")) == fds


# --- on a real tmux server -------------------------------------------------------


def real_cache(server):
    cache = IdentityCache(monotonic=lambda: 0.0)  # the safety walk never hides a missed event

    def look(pane_id):
        cache.begin_poll()
        inv = tmux.list_panes(tmux.ServerRef(socket_name=server.name))
        p = next(x for x in inv.panes if x.pane_id == pane_id)
        return cache.lookup(p, judge)[1]

    return cache, look


@pytest.mark.tmux
def test_real_agent_exit_and_a_new_agent_in_the_same_pane(tmux_server):
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, prompt="fix it", in_shell=True)
    fake.wait_ready()
    cache, look = real_cache(tmux_server)
    first = wait_for(lambda: (i := look(fake.pane)).kind is IdentityKind.KNOWN and i, message="claude known")
    assert first.pid == fake.pid
    walks = cache.walks
    assert look(fake.pane) == first and cache.walks == walks  # idle: no walk
    fake.type("\x03", enter=False)  # ctrl-c: the fake exits, the shell's prompt returns
    wait_for(lambda: look(fake.pane).kind is IdentityKind.NONE, message="the agent's exit")
    fake.type("codex 'tidy up'")
    second = wait_for(lambda: (i := look(fake.pane)).kind is IdentityKind.KNOWN and i, message="codex known")
    assert second.agent == "codex" and second.pid != first.pid


@pytest.mark.tmux
def test_real_wrapper_that_execs_the_agent_is_known_at_the_next_look(tmux_server, fake_bin):
    go = tmux_server.scratch / "go"
    wrapper = fake_bin / "slow-wrapper"
    # Holds the terminal as `sh slow-wrapper` until told, then execs the agent: same pid, new argv.
    wrapper.write_text(f'#!/bin/sh\nwhile [ ! -e {shlex.quote(str(go))} ]; do sleep 0.05; done\nexec claude "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    pane_id = tmux_server.new_pane(
        f"exec {shlex.quote(str(wrapper))} 'fix it'", cwd=tmux_server.scratch,
        env={"PATH": f"{fake_bin}:{os.environ['PATH']}", "AFD_FAKE_LOG": str(tmux_server.scratch / "w.jsonl")},
    )  # fmt: skip
    cache, look = real_cache(tmux_server)
    before = wait_for(lambda: (i := look(pane_id)).kind is IdentityKind.UNKNOWN and i, message="the wrapper")
    assert re.search(r"slow-wrapper", " ".join(before.argv))
    go.touch()
    tmux_server.logs.append(tmux_server.scratch / "w.jsonl")
    wait_for(lambda: (tmux_server.scratch / "w.jsonl").exists() and '"start"' in (tmux_server.scratch / "w.jsonl").read_text())
    after = look(pane_id)  # the one look right after the exec
    assert after.kind is IdentityKind.KNOWN and after.agent == "claude" and after.pid == before.pid
