"""A jobs world for end-to-end tests: a daemon on a private tmux server, and fake agents that run `afd jobs …`."""

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
from harness import install_fake_bin, read_log, start_fake, wait_for

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
