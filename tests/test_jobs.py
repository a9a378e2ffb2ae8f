"""Jobs end to end: a daemon on a private tmux server, fake agents that run `afd jobs …` from their panes."""

from __future__ import annotations

import json
import os
import shlex
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from afd.jobs.book import JobBook
from afd.record.store import Store
from harness import install_fake_bin, read_log, start_fake, wait_for, wait_for_log

pytestmark = pytest.mark.tmux

AFD = f"{shlex.quote(sys.executable)} -m afd"


def afd(*args: str, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("TMUX_PANE", "TMUX")}
    return subprocess.run([sys.executable, "-m", "afd", *args], capture_output=True, text=True, timeout=timeout,
                          env={**base, **(env or {})})


class World:
    """A daemon, a fake supervisor adopted as a session, and helpers to drive agents and read the store."""

    def __init__(self, tmux_server, xdg_dirs, worktree):
        self.tmux, self.xdg, self.make_worktree = tmux_server, xdg_dirs, worktree
        self.daemon: subprocess.Popen | None = None
        self.job_log = tmux_server.scratch / "jobs.jsonl"
        self.release = tmux_server.scratch / "release"
        self.db = xdg_dirs["XDG_STATE_HOME"] / "afd" / "state.db"
        scenario = tmux_server.scratch / "job-scenario.json"
        scenario.write_text(json.dumps({"run_commands": True}))
        install_fake_bin(tmux_server.scratch)
        cfg = xdg_dirs["XDG_CONFIG_HOME"] / "afd" / "config.toml"
        cfg.parent.mkdir(parents=True, exist_ok=True)
        cfg.write_text(f'poll_interval = "200ms"\n[agents.claude]\ncommand = ["{tmux_server.scratch / "bin" / "claude"}"]\n')
        # New tmux sessions (the jobs afd creates) get the server's environment.
        tmux_server.run("set-environment", "-g", "AFD_FAKE_LOG", str(self.job_log))
        tmux_server.run("set-environment", "-g", "AFD_FAKE_SCENARIO", str(scenario))

    def start_daemon(self, env: dict | None = None) -> None:
        err = self.xdg["HOME"] / "daemon.log"
        self.daemon = subprocess.Popen([sys.executable, "-m", "afd", "run", "-L", self.tmux.name],
                                       stdout=subprocess.DEVNULL, stderr=err.open("ab"), env={**os.environ, **(env or {})})
        wait_for(lambda: afd("status", "--json").returncode == 0, timeout=20, message="the daemon answering")

    def kill_daemon(self) -> None:
        self.daemon.send_signal(signal.SIGKILL)
        self.daemon.wait(timeout=10)

    def print_events(self) -> None:
        """The daemon's recent events, shown by pytest when a test fails."""
        if self.db.exists():
            with Store.open_readonly(self.db) as store:
                for e in store.recent_events(80):
                    print(e.event.at.strftime("%H:%M:%S.%f"), e.event.kind, e.event.session, e.event.message)

    def stop(self) -> None:
        self.print_events()
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.terminate()
            try:
                self.daemon.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
                self.daemon.wait()

    def supervisor(self, name: str, hold: Path | None = None, **scenario):
        """A fake claude in its own worktree, adopted by the daemon; returns (fake, session name).

        Its turns last until `hold` (default: the shared release file) exists.
        """
        fake = start_fake(self.tmux, "claude", cwd=self.make_worktree(name),
                          scenario={"run_commands": True, "work_until_file": str(hold or self.release), **scenario})
        fake.wait_ready()
        return fake, self.session_of(fake.pane)

    def sessions(self) -> dict:
        if not self.db.exists():
            return {}
        with Store.open_readonly(self.db) as store:
            return {r.name: r for r in store.list_sessions()}

    def session_of(self, pane: str) -> str:
        return wait_for(lambda: next((n for n, r in self.sessions().items() if r.pane_id == pane and r.state == "idle"), None),
                        timeout=20, message=f"pane {pane} adopted and idle")

    def wait_state(self, name: str, state: str, timeout: float = 20) -> None:
        wait_for(lambda: (r := self.sessions().get(name)) is not None and r.state == state, timeout=timeout,
                 message=f"{name} {state}")

    def run(self, fake, command: str, timeout: float = 60, then: str | None = None) -> dict:
        """Have the agent in `fake`'s pane run `afd …` as a tool; returns its command event.

        `then` is queued behind it, so the agent goes from one turn straight into the next.
        """
        before = len([e for e in read_log(fake.log) if e["event"] == "command"])
        fake.type(f"run: {AFD} {command}")
        if then:
            fake.type(then)
        return wait_for(lambda: (c := [e for e in read_log(fake.log) if e["event"] == "command"])[before:] and c[before],
                        timeout=timeout, message=f"{command!r} run in {fake.pane}")

    def run_in_job(self, job_pane: str, command: str, timeout: float = 60) -> dict:
        before = len([e for e in read_log(self.job_log) if e["event"] == "command"])
        self.tmux.send_keys(job_pane, f"run: {AFD} {command}", literal=True)
        self.tmux.send_keys(job_pane, "Enter")
        return wait_for(lambda: (c := [e for e in read_log(self.job_log) if e["event"] == "command"])[before:] and c[before],
                        timeout=timeout, message=f"{command!r} run in job pane {job_pane}")

    def create_job(self, fake, name: str, *extra: str) -> dict:
        ran = self.run(fake, f"jobs create {name} --agent claude --prompt {shlex.quote('work on ' + name)} --json {' '.join(extra)}")
        assert ran["rc"] == 0, ran["stderr"]
        job = json.loads(ran["stdout"])
        self.wait_state(name, "idle")
        return job

    def envelopes(self) -> list:
        with Store.open_readonly(self.db) as store:
            return JobBook(store).envelopes()

    def book(self, fn):
        with Store.open_readonly(self.db) as store:
            return fn(JobBook(store))

    def dump(self) -> str:
        conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        try:
            # What the poll loop keeps observing (pane states, the limit map, its diary) moves on its
            # own while the agents work; everything else must stay byte-identical.
            observed = tuple(f'INSERT INTO "{t}"' for t in ("sessions", "limits", "events", "meta", "banners"))
            return "\n".join(line for line in conn.iterdump() if not line.startswith(observed)
                             and not line.startswith(("DELETE FROM \"sqlite_sequence\"", "INSERT INTO \"sqlite_sequence\" VALUES('events'")))
        finally:
            conn.close()

    def wait_event(self, kind: str, text: str) -> None:
        def found():
            with Store.open_readonly(self.db) as store:
                return any(e.event.kind == kind and text in e.event.message for e in store.recent_events(200))

        wait_for(found, timeout=20, message=f"event {kind} saying {text!r}")

    def inputs(self, fake, needle: str) -> list[dict]:
        return [e for e in read_log(fake.log) if e["event"] == "input" and needle in e["text"]]


@pytest.fixture
def world(tmux_server, xdg_dirs, worktree):
    w = World(tmux_server, xdg_dirs, worktree)
    try:
        yield w
    finally:
        w.stop()


def test_job_created_from_a_supervisors_pane_reports_done_when_the_supervisor_is_idle(world):
    world.start_daemon()
    boss_fake, boss = world.supervisor("boss")
    job = world.create_job(boss_fake, "fix-a", "--title", "'fix module a'")
    assert job["owner"] == boss and job["branch"] == "afd/fix-a"
    start = wait_for_log(world.job_log, lambda e: e["event"] == "start", message="the job's agent started")
    assert "afd help agents" in start["prompt"] and start["prompt"].startswith("work on fix-a")

    # Outside any pane, and with a $TMUX_PANE the caller does not run in: refused, nothing created.
    outside = afd("jobs", "create", "stray", "--agent", "claude", "--prompt", "p")
    assert outside.returncode == 1 and "refused" in outside.stderr and "\n" not in outside.stderr.strip()
    forged = afd("jobs", "create", "stray", "--agent", "claude", "--prompt", "p", env={"TMUX_PANE": boss_fake.pane})
    assert forged.returncode == 1 and "does not match the process tree" in forged.stderr
    listed = json.loads(afd("jobs", "list", "--json").stdout)
    assert [(j["name"], j["title"], j["status"], j["owner"], j["parent"]) for j in listed] == [
        ("fix-a", "fix module a", "running", boss, None)]

    # The supervisor is busy: the envelope waits.
    boss_fake.type("review the plan")
    world.wait_state(boss, "working")
    job_pane = job["pane"]
    done = world.run_in_job(job_pane, "jobs done --summary 'module a fixed'")
    assert done["rc"] == 0, done["stderr"]
    [env] = world.envelopes()
    assert env.kind == "done" and env.recipient is None
    world.wait_event("job.envelope-held", f"waits: {boss} is working")
    assert world.envelopes()[0].state.value == "pending" and world.inputs(boss_fake, "[afd") == []

    world.release.touch()  # the supervisor's turn ends; it goes idle and takes the envelope
    got = boss_fake.wait_for_log(lambda e: e["event"] == "input" and f"[afd {env.nonce}]" in e["text"], timeout=30)
    assert "job fix-a (fix module a) is done on branch afd/fix-a: module a fixed" in got["text"]
    wait_for(lambda: world.envelopes()[0].state.value == "consumed", timeout=20, message="the envelope consumed")
    assert len(world.inputs(boss_fake, env.nonce)) == 1
    mine = json.loads(world.run(boss_fake, "jobs list --json")["stdout"])
    assert [(j["name"], j["status"]) for j in mine] == [("fix-a", "done")]


def test_handoff_moves_named_jobs_with_descendants_then_all_and_each_rejection_changes_nothing(world):
    world.release.touch()  # turns end at once
    world.start_daemon()
    boss_fake, boss = world.supervisor("boss")
    heir_fake, heir = world.supervisor("heir")
    world.create_job(boss_fake, "fix-a")
    world.create_job(boss_fake, "fix-a1", "--parent", "fix-a")
    world.create_job(boss_fake, "fix-b")

    # Creates settle their journal entries once their agents are seen; after that only refusals could write.
    wait_for(lambda: world.book(lambda b: b.store.pending_journal()) == [], timeout=30, message="creates settled")
    before = world.dump()
    refusals = [
        (heir_fake, "jobs handoff --to " + boss, "has no jobs to hand off"),  # empty selection
        (boss_fake, f"jobs handoff --to {heir} --jobs nope", "no job named 'nope'"),
        (heir_fake, f"jobs handoff --to {boss} --jobs fix-a", "supervised by " + boss),
        (boss_fake, "jobs handoff --to ghost", "'ghost' is not a live session"),
        (boss_fake, f"jobs handoff --to {boss}", "cannot hand its jobs to itself"),
        (boss_fake, f"jobs handoff --to {heir} --note \"$(printf '%4001s' | tr ' ' x)\"", "4001 characters"),
    ]
    for fake, command, reason in refusals:
        ran = world.run(fake, command)
        assert ran["rc"] == 1 and reason in ran["stderr"], (command, ran)
        assert ran["stderr"].count("\n") == 1  # one line
        assert world.dump() == before, command

    ran = world.run(boss_fake, f"jobs handoff --to {heir} --jobs fix-a --note 'finish the parser first' --json")
    assert ran["rc"] == 0, ran["stderr"]
    moved = json.loads(ran["stdout"])
    assert moved["jobs"] == ["fix-a", "fix-a1"] and moved["top"] == ["fix-a"]
    jobs = world.book(lambda b: {n: (j.owner, j.parent) for n, j in b.jobs().items()})
    assert jobs == {"fix-a": (heir, None), "fix-a1": (heir, "fix-a"), "fix-b": (boss, None)}
    assert world.book(lambda b: b.masters("fix-a1")) == [heir, boss]
    assert [(h["from"], h["to"]) for h in world.book(lambda b: b.history("fix-a1"))] == [(None, boss), (boss, heir)]
    [receipt] = world.book(lambda b: b.receipts())
    assert (receipt["from"], receipt["to"], receipt["jobs"], receipt["note"]) == (boss, heir, ["fix-a", "fix-a1"], "finish the parser first")

    wake = heir_fake.wait_for_log(lambda e: e["event"] == "input" and "handed off by" in e["text"], timeout=30)
    assert "fix-a (work on fix-a, running); fix-a1 (work on fix-a1, running)" in wake["text"]
    assert "Note from " + boss + ": finish the parser first" in wake["text"]
    confirm = boss_fake.wait_for_log(lambda e: e["event"] == "input" and f"to {heir}:" in e["text"], timeout=30)
    assert "handed off 2 jobs to " + heir + ": fix-a, fix-a1" in confirm["text"]
    listed = json.loads(world.run(heir_fake, "jobs list --json")["stdout"])
    assert sorted(j["name"] for j in listed) == ["fix-a", "fix-a1"]

    ran = world.run(boss_fake, f"jobs handoff --to {heir} --jobs all")
    assert ran["rc"] == 0, ran["stderr"]
    assert world.book(lambda b: {n: j.owner for n, j in b.jobs().items()}) == {"fix-a": heir, "fix-a1": heir, "fix-b": heir}
    heir_fake.wait_for_log(lambda e: e["event"] == "input" and "fix-b (work on fix-b" in e["text"], timeout=30)
    wait_for(lambda: all(e.state.value == "consumed" for e in world.envelopes()), timeout=30, message="all consumed")
    assert len(world.inputs(heir_fake, "handed off by")) == 2 and len(world.inputs(boss_fake, "handed off ")) == 2


def test_envelopes_go_to_the_former_supervisor_while_the_primary_is_limited_and_back_when_it_resumes(world):
    world.release.touch()
    boss_hold = world.tmux.scratch / "boss-free"
    boss_hold.touch()
    world.start_daemon()
    boss_fake, boss = world.supervisor("boss", hold=boss_hold)
    # The heir hits its limit after its first turn (the waking message); the wall is gone half a second later.
    heir_fake, heir = world.supervisor("heir", limit_after_prompts=1, limit_lasts_seconds=0.5)
    a = world.create_job(boss_fake, "fix-a")
    b = world.create_job(boss_fake, "fix-b")
    assert world.run(boss_fake, f"jobs handoff --to {heir}")["rc"] == 0
    world.wait_state(heir, "limited", timeout=30)

    assert world.run_in_job(a["pane"], "jobs done --summary 'a works'")["rc"] == 0
    got = boss_fake.wait_for_log(lambda e: e["event"] == "input" and "job fix-a" in e["text"], timeout=30)
    assert "is done" in got["text"] and world.inputs(heir_fake, "job fix-a") == []
    assert world.book(lambda b: b.masters("fix-a")) == [heir, boss]  # the primary did not change

    boss_hold.unlink()  # the former supervisor is busy now, the primary still limited: the next one waits
    boss_fake.type("keep going")
    world.wait_state(boss, "working")
    assert world.run_in_job(b["pane"], "jobs fail --reason 'the API is gone'")["rc"] == 0
    world.wait_event("job.envelope-held", f"waits: {boss} is working")
    heir_fake.type("carry on")  # the heir resumes
    got = heir_fake.wait_for_log(lambda e: e["event"] == "input" and "job fix-b" in e["text"], timeout=30)
    assert "failed: the API is gone" in got["text"]
    boss_hold.touch()
    wait_for(lambda: all(e.state.value == "consumed" for e in world.envelopes()), timeout=30, message="all consumed")
    assert world.inputs(boss_fake, "job fix-b") == []
    assert [e.recipient for e in world.envelopes() if e.job] == [boss, heir]


def test_daemon_killed_after_the_handoff_commit_and_while_attempting_delivers_each_envelope_once(world):
    boss_hold, heir_hold = world.tmux.scratch / "boss-free", world.tmux.scratch / "heir-free"
    world.release.touch()
    world.start_daemon()
    boss_fake, boss = world.supervisor("boss", hold=boss_hold)
    heir_fake, heir = world.supervisor("heir", hold=heir_hold)
    job = world.create_job(boss_fake, "fix-a")

    # Both supervisors busy, so nothing is typed: the handoff commits, then the daemon dies.
    heir_fake.type("think")
    world.wait_state(heir, "working")
    ran = world.run(boss_fake, f"jobs handoff --to {heir}", then="think")
    assert ran["rc"] == 0, ran["stderr"]
    world.kill_daemon()
    assert [e.state.value for e in world.envelopes()] == ["pending", "pending"]
    world.start_daemon()
    heir_hold.touch()
    boss_hold.touch()
    wait_for(lambda: all(e.state.value == "consumed" for e in world.envelopes()), timeout=40, message="both consumed")

    # Now between attempting and sent: killed the moment the envelope is written as attempting.
    assert world.run_in_job(job["pane"], "jobs done")["rc"] == 0
    wait_for(lambda: any(e.state.value == "attempting" for e in world.envelopes()), timeout=30, interval=0.002,
             message="an envelope attempting")
    world.kill_daemon()
    [env] = [e for e in world.envelopes() if e.kind == "done"]
    assert env.state.value == "attempting"
    world.start_daemon()
    wait_for(lambda: all(e.state.value == "consumed" for e in world.envelopes()), timeout=40, message="consumed after restart")
    assert len(world.inputs(heir_fake, env.nonce)) == 1
    assert len(world.inputs(heir_fake, "handed off by")) == 1 and len(world.inputs(boss_fake, "handed off 1 job")) == 1


@pytest.mark.parametrize("step", ["routed", "pasted", "entered"])
def test_daemon_killed_after_each_delivery_step_delivers_the_envelope_once(world, step):
    # The daemon dies (SIGKILL) right after it has written `step` to the delivery's journal row, before its effect.
    world.release.touch()
    world.start_daemon(env={"AFD_TEST_CRASH_AT_STEP": step})
    boss_fake, boss = world.supervisor("boss")
    with Store(world.db) as store:
        assert JobBook(store).enqueue("note:plan", "note", "read the plan first", to_session=boss)
    world.daemon.wait(timeout=30)
    assert world.daemon.returncode == -9
    [env] = world.envelopes()
    assert env.state.value == "attempting" and env.recipient == boss
    assert world.inputs(boss_fake, env.nonce) == []  # nothing submitted before the kill

    world.start_daemon()
    wait_for(lambda: world.envelopes()[0].state.value == "consumed", timeout=40, message="consumed after the restart")
    world.wait_event("journal.recovered", f"envelope of {boss}: afd restarted at step {step!r}")
    got = world.inputs(boss_fake, env.nonce)
    assert len(got) == 1 and got[0]["text"].count(env.nonce) == 1 and "read the plan first" in got[0]["text"]
    with Store.open_readonly(world.db) as store:
        assert store.pending_journal() == []
