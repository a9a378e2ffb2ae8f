"""The daemon as a process, for end-to-end tests: start `afd run` on the test's tmux server, read its status,
write its config, and the fake claude at its wall that the handoff and dashboard tests start from."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harness import git, read_log, start_fake, wait_for


def afd(*args: str, timeout: float = 30, check: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "afd", *args], capture_output=True, text=True, timeout=timeout, check=check)


class Daemon:
    def __init__(self, proc: subprocess.Popen, stderr: Path):
        self.proc, self.stderr = proc, stderr

    def log(self) -> str:
        return self.stderr.read_text(errors="replace")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                return self.proc.wait()
        return self.proc.returncode


@pytest.fixture
def run_daemon(tmux_server, xdg_dirs):
    started: list[Daemon] = []

    def start(*extra: str, env: dict | None = None, wait_ready: bool = True, nofile: int | tuple[int, int] | None = None) -> Daemon:
        """`afd run`; with `nofile`, under that open-files limit: one number for soft and hard, or (soft, hard)."""
        err = xdg_dirs["HOME"] / f"daemon-{len(started)}.log"

        def limited() -> None:
            import resource

            resource.setrlimit(resource.RLIMIT_NOFILE, nofile if isinstance(nofile, tuple) else (nofile, nofile))

        proc = subprocess.Popen(
            [sys.executable, "-m", "afd", "run", "-L", tmux_server.name, *extra],
            stdout=subprocess.DEVNULL,
            stderr=err.open("wb"),
            env={**os.environ, **(env or {})},
            preexec_fn=limited if nofile is not None else None,  # noqa: PLW1509 (no threads run in this child yet)
        )
        d = Daemon(proc, err)
        started.append(d)
        if wait_ready:
            wait_for(lambda: afd("status", "--json").returncode == 0, timeout=20, message="the daemon answering")
        return d

    yield start
    for d in started:
        d.stop()


def status() -> dict:
    done = afd("status", "--json")
    assert done.returncode in (0, 3), done.stderr
    return json.loads(done.stdout)


def write_config(xdg_dirs, text: str) -> Path:
    path = xdg_dirs["XDG_CONFIG_HOME"] / "afd" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


FAST = 'poll_interval = "200ms"\nhandoff_stop_timeout = "1s"\n'
AUTO = FAST + 'limit_action = "handoff"\nhandoff_order = ["codex", "claude"]\n'


def session_for(pane: str) -> dict:
    return wait_for(lambda: next((s for s in status()["sessions"] if s["pane"] == pane), None), message=f"a session for {pane}")


def session(name: str) -> dict:
    return next(s for s in status()["sessions"] if s["name"] == name)


def wait_session(name: str, predicate, message: str, timeout: float = 30) -> dict:
    try:
        return wait_for(lambda: (lambda s: s if predicate(s) else None)(session(name)), timeout=timeout, message=message)
    except AssertionError:
        print(afd("events", "-n", "40").stdout)  # shown by pytest with the failure
        raise


def wait_state(name: str, *states: str, timeout: float = 30) -> dict:
    return wait_session(name, lambda s: s["state"] in states, f"{name} in {states}", timeout)


def logged(fake, agent: str, kind: str) -> list[dict]:
    return [e for e in read_log(fake.log) if e["agent"] == agent and e["event"] == kind]


def events(kind: str) -> list[dict]:
    return [e for e in json.loads(afd("status", "--json", "--events", "200").stdout)["events"] if e["kind"] == kind]


@pytest.fixture
def limited_claude(run_daemon, tmux_server, xdg_dirs, worktree):
    """Factory: config, daemon, a fake claude in a worktree that hits its wall after its first prompt."""

    def start(config: str = FAST, claude: dict | None = None, codex: dict | None = None, wait_limited: bool = True,
              daemon_env: dict | None = None, **kw):
        wt = worktree("feature")
        base = git(wt, "rev-parse", "HEAD")
        write_config(xdg_dirs, config)
        start.daemons.append(run_daemon(env=daemon_env))
        agents = {"claude": {"limit_after_prompts": 1, **(claude or {})}, "codex": codex or {}}
        fake = start_fake(tmux_server, "claude", cwd=wt, prompt="Fix the login test", scenario={"agents": agents}, **kw)
        name = session_for(fake.pane)["name"]
        if wait_limited:
            wait_state(name, "limited", "handing_off", "all_limited", "idle", "working") if "limit_action" in config else wait_state(name, "limited")
        return wt, base, name, fake

    start.daemons = []
    return start


# --- a store as a daemon leaves it, for the read-only command line -----------------------------------

HOSTILE_MISSION = "ship it\x1b[2J\x1b]0;pwned\x07\rrm -rf ~ [bold red]now[/]"


def seed_store(now, *, hostile: bool = False) -> dict[str, str]:
    """The store of a daemon that watched five sessions a person reads at `now` (aware UTC): limited ones with
    resets and plans, one working, one needing you, one idle; an account's fact, a handoff, events whose words
    carry ISO UTC instants. Written where the test's XDG_STATE_HOME points. Returns the sessions' names."""
    from datetime import timedelta

    from afd.judge.limits import LimitFact, LimitState
    from afd.model import Event, IdentityKind, IdentitySource, SessionState
    from afd.record.store import Store, default_path
    from afd.record.types import LedgerEntry, NextAction, SessionRecord

    def iso(at) -> str:
        return at.strftime("%Y-%m-%dT%H:%M:%SZ")

    soon, weekly = now + timedelta(hours=3, minutes=24), now + timedelta(days=4, hours=2)
    names = {"billing": "billing-service-api:1.2", "shop": "shop-api:0.0", "weekly": "weekly:0.0",
             "docs": "docs-site:2.0", "notes": "notes:3.1"}
    plans = {
        "billing": {"action": "resume", "at": iso(soon + timedelta(seconds=5)), "attempt": 1, "of": 3, "why": "reset"},
        "weekly": {"action": "report", "at": iso(weekly), "attempt": None, "of": 3,
                   "why": f"resume with: afd resume {names['weekly']}"},
        "docs": {"action": "needs-human", "at": None, "attempt": None, "of": 3, "why": "spend cap — add credits"},
    }
    facts = {
        "billing": ("claude", "claude-work", SessionState.LIMITED, soon, "pane+record"),
        "shop": ("codex", "codex", SessionState.WORKING, None, None),
        "weekly": ("claude", "claude", SessionState.LIMITED, weekly, "pane"),
        "docs": ("gemini", "gemini", SessionState.LIMITED, None, "pane"),  # shown as needs_human: its plan
        "notes": ("opencode", "opencode", SessionState.IDLE, None, None),
    }
    with Store(default_path()) as store:
        for i, (key, (agent, account, state, reset, witnesses)) in enumerate(facts.items()):
            mission = HOSTILE_MISSION if hostile and key == "shop" else f"the {key} work: a mission of some length"
            store.upsert_session(SessionRecord(
                name=names[key], pane_id=f"%{12 + i}", server_socket="/tmp/tmux-test/default", server_pid=1,
                agent=agent, identity=IdentityKind.KNOWN, identity_source=IdentitySource.PROCESS, state=state,
                created_at=now - timedelta(hours=5), updated_at=now - timedelta(minutes=i), mission=mission,
                worktree=f"/srv/work/{names[key].split(':')[0]}-feature-retry-logic", branch=f"afd/{key}-retry-backoff",
                reset_at=reset, next_action=NextAction.loads(json.dumps(plans[key])) if key in plans else None, location=names[key],
                witnesses=witnesses, account=account))
        store.save_limit(LimitFact("claude", LimitState.LIMITED, soon, now - timedelta(minutes=3), names["billing"],
                                   account="claude-work"))
        store.save_limit(LimitFact("claude", LimitState.LIMITED, weekly, now - timedelta(minutes=9), names["weekly"]))
        store.add_ledger(LedgerEntry(session=names["shop"], at=now - timedelta(hours=2), from_agent="claude",
                                     to_agent="codex", head_sha="a" * 40, reason="limit", automatic=True,
                                     base_sha="b" * 40, from_account="claude", to_account="codex"))
        for minutes, name, kind, message in (
            (50, names["billing"], "session.limited", f"limit reached; resets at {iso(soon)}"),
            (49, names["billing"], "resume.scheduled", f"resume at {iso(soon + timedelta(seconds=5))} (attempt 1 of 3)"),
            (30, names["weekly"], "session.limited", f"limit reached; resets at {iso(weekly)}"),
            (20, names["docs"], "session.needs_human", "needs you: spend cap — add credits"),
            (10, names["shop"], "handoff.refused", f"codex is at its usage limit until {iso(soon)}"),
            (5, names["shop"], "session.mission", HOSTILE_MISSION if hostile else "mission set"),
        ):
            store.add_event(Event(at=now - timedelta(minutes=minutes), kind=kind, message=message, session=name))
    return names
