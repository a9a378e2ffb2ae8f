"""Helpers for tests that run fake agents on a private tmux server.

Every wait polls with a deadline (``wait_for``); nothing sleeps for a fixed
time and hopes. Fakes are judged by their JSON-lines log, not by timing.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TypeVar

import psutil

from afd.testing.fake_agent import AGENTS, author, write_launcher
from afd.testing.scenario import Scenario, write_scenario

T = TypeVar("T")
SPINNER = re.compile(r"Working…? \(\d+s")  # the fakes' spinner row, any agent

TEST_NAME, TEST_EMAIL = "afd test", "test@afd.invalid"
GIT_IDENTITY = ("-c", f"user.name={TEST_NAME}", "-c", f"user.email={TEST_EMAIL}", "-c", "commit.gpgsign=false")


class WaitTimeout(AssertionError):
    pass


def wait_for(
    predicate: Callable[[], T], timeout: float = 10.0, interval: float = 0.05, message: str = "condition"
) -> T:
    """Poll ``predicate`` until it returns something truthy, and return that; fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        last = predicate()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise WaitTimeout(f"timed out after {timeout}s waiting for {message}; last value: {last!r}")
        time.sleep(interval)


# --- tmux --------------------------------------------------------------------


@dataclass
class TmuxServer:
    """A private tmux server: `run(...)` is `tmux -L <name> ...`."""

    name: str
    env: dict
    scratch: Path | None = None  # a short private directory for bins, logs, scenarios
    logs: list[Path] = field(default_factory=list)  # fake logs, so teardown can reap strays
    _ids: itertools.count = field(default_factory=itertools.count)

    def run(
        self, *args: str, check: bool = True, timeout: float = 10, path: str | None = None
    ) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["tmux", "-L", self.name, *args],
            capture_output=True,
            text=True,
            env=self.env if path is None else {**self.env, "PATH": path},
            check=check,
            timeout=timeout,
        )

    @property
    def socket_path(self) -> Path:
        return Path(os.environ.get("TMUX_TMPDIR", "/tmp")) / f"tmux-{os.getuid()}" / self.name

    def new_pane(
        self,
        command: str,
        *,
        cwd: Path | str,
        env: Mapping[str, str] | None = None,
        width: int = 120,
        height: int = 40,
        session: str | None = None,
        remain_on_exit: bool = False,
    ) -> str:
        """Start ``command`` (one shell string, as a user would type it) in a new session; returns the pane id."""
        session = session or f"s{next(self._ids)}"
        env_args = [a for key, value in (env or {}).items() for a in ("-e", f"{key}={value}")]
        args = ["new-session", "-d", "-P", "-F", "#{pane_id}", "-s", session, "-x", str(width), "-y", str(height)]
        args += ["-c", str(cwd), *env_args]
        # tmux gives a new pane the PATH of the client that asked for it,
        # whatever `-e PATH=` says; so ask with that PATH.
        path = (env or {}).get("PATH")
        if not remain_on_exit:
            return self.run(*args, command, path=path).stdout.strip()
        # The option must be on before the command can exit, so start a
        # placeholder, set it, and respawn the pane with the real command.
        pane = self.run(*args, "sleep 3600", path=path).stdout.strip()
        self.run("set-option", "-p", "-t", pane, "remain-on-exit", "on")
        self.run("respawn-pane", "-k", "-t", pane, "-c", str(cwd), *env_args, command, path=path)
        return pane

    def capture(self, pane: str) -> str:
        """The pane's visible screen, wrapped rows joined (what afd reads)."""
        return self.run("capture-pane", "-p", "-J", "-t", pane).stdout

    def send_keys(self, pane: str, *keys: str, literal: bool = False) -> None:
        self.run("send-keys", "-t", pane, *(["-l"] if literal else []), *keys)

    def paste(self, pane: str, text: str) -> None:
        """Paste like a terminal: bracketed (`ESC[200~ … ESC[201~`) when the program asked for it."""
        buffer = f"afd-test-{next(self._ids)}"
        self.run("set-buffer", "-b", buffer, "--", text)
        self.run("paste-buffer", "-p", "-d", "-b", buffer, "-t", pane)

    def pane_field(self, pane: str, fmt: str) -> str:
        return self.run("display-message", "-p", "-t", pane, fmt).stdout.strip()

    def pane_exists(self, pane: str) -> bool:
        out = self.run("list-panes", "-a", "-F", "#{pane_id}", check=False).stdout.split()
        return pane in out

    def kill(self) -> None:
        subprocess.run(["tmux", "-L", self.name, "kill-server"], capture_output=True, env=self.env, timeout=10)
        # tmux 3.3a leaves the socket file behind after kill-server.
        self.socket_path.unlink(missing_ok=True)
        reap_fakes(self.logs)


# --- fake agents ---------------------------------------------------------------


def install_fake_bin(tmp_dir: Path, wrappers: Mapping[str, str] | None = None) -> Path:
    """Write `claude`, `codex`, `devin` (and any ``wrappers``: name → agent) into ``tmp_dir/bin``."""
    bin_dir = Path(tmp_dir) / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for agent in AGENTS:
        write_launcher(bin_dir, agent, agent)
    for name, agent in (wrappers or {}).items():
        write_launcher(bin_dir, name, agent)
    return bin_dir


@dataclass
class FakePane:
    server: TmuxServer
    pane: str
    agent: str
    log: Path
    cwd: Path
    bin_dir: Path

    def capture(self) -> str:
        return self.server.capture(self.pane)

    def events(self, kind: str | None = None) -> list[dict]:
        return [e for e in read_log(self.log) if kind is None or e["event"] == kind]

    def wait_for_log(self, predicate: Callable[[dict], bool], timeout: float = 10.0, message: str = "a log event") -> dict:
        return wait_for_log(self.log, predicate, timeout=timeout, message=message)

    def wait_for_event(self, kind: str, timeout: float = 10.0, **match) -> dict:
        def wanted(e: dict) -> bool:
            return e["event"] == kind and all(e.get(k) == v for k, v in match.items())

        return self.wait_for_log(wanted, timeout=timeout, message=f"{kind} {match or ''} in {self.log}")

    def wait_for_screen(self, predicate: Callable[[str], bool], timeout: float = 10.0, message: str = "screen") -> str:
        def check() -> str | None:
            text = self.capture()
            return text if predicate(text) else None

        return wait_for(check, timeout=timeout, message=f"{message} in pane {self.pane}")

    def wait_ready(self, timeout: float = 15.0) -> dict:
        return self.wait_for_event("ready", timeout=timeout)

    def wait_idle(self, works: int, timeout: float = 15.0) -> None:
        """Until ``works`` turns have committed and the screen has settled (no spinner)."""
        wait_for(lambda: len(self.events("work")) >= works, timeout=timeout, message=f"{works} work events")
        self.wait_for_screen(lambda s: not SPINNER.search(s), timeout=timeout, message="no spinner")

    def type(self, text: str, enter: bool = True) -> None:
        self.server.send_keys(self.pane, text, literal=True)
        if enter:
            self.server.send_keys(self.pane, "Enter")

    def paste(self, text: str, enter: bool = True) -> None:
        self.server.paste(self.pane, text)
        if enter:
            self.server.send_keys(self.pane, "Enter")

    @property
    def pid(self) -> int:
        return self.events("start")[0]["pid"]


def start_fake(
    server: TmuxServer,
    agent: str,
    *,
    cwd: Path | str,
    scenario: Scenario | Mapping[str, object] | None = None,
    prompt: str | None = None,
    args: Iterable[str] = (),
    log: Path | None = None,
    command_name: str | None = None,
    env: Mapping[str, str] | None = None,
    width: int = 120,
    height: int = 40,
    in_shell: bool = False,
    remain_on_exit: bool = False,
) -> FakePane:
    """Start a fake ``agent`` in a new pane of ``server``, the way a user would type it.

    The pane runs ``<command_name or agent> [ARGS...] [PROMPT]`` with the fake
    bin dir first on PATH and the fake's log and scenario in its environment
    (so argv looks like the real CLI's). ``command_name`` runs a launcher of
    another name (one from ``install_fake_bin(wrappers=...)``). ``in_shell``
    starts an interactive shell and types the command into it, so the agent
    is a child of the pane's shell and the shell's prompt returns after it.
    """
    scratch = server.scratch
    if scratch is None:
        raise RuntimeError("this TmuxServer has no scratch directory; use the tmux_server fixture")
    bin_dir = scratch / "bin"
    if not (bin_dir / agent).exists():
        install_fake_bin(scratch)
    if command_name and command_name not in AGENTS:
        write_launcher(bin_dir, command_name, agent)  # a wrapper that hides the agent's name
    if agent not in AGENTS and not (bin_dir / agent).exists():
        write_launcher(bin_dir, agent, agent)  # an agent only a manifest knows: its scenario gives the style
    n = next(server._ids)
    log = Path(log) if log else scratch / "logs" / f"{agent}-{n}.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.touch()
    server.logs.append(log)
    pane_env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "AFD_FAKE_LOG": str(log),
        "TERM": "tmux-256color",
        "LANG": "C.UTF-8",
    }
    if scenario is not None:
        pane_env["AFD_FAKE_SCENARIO"] = str(write_scenario(scratch / f"scenario-{n}.json", scenario))
    pane_env.update(env or {})
    argv = [command_name or agent, *args, *([prompt] if prompt is not None else [])]
    command = shlex.join(argv)
    if in_shell:
        rc = scratch / "bashrc"
        rc.write_text("PS1='$ '\n", encoding="utf-8")  # bash ignores a PS1 handed in by the environment
        pane = server.new_pane(
            f"exec bash --noprofile --rcfile {shlex.quote(str(rc))} -i", cwd=cwd, env=pane_env, width=width,
            height=height, remain_on_exit=remain_on_exit,
        )
        wait_for(lambda: server.capture(pane).strip().endswith("$"), message="the shell prompt")
        server.send_keys(pane, command, literal=True)
        server.send_keys(pane, "Enter")
    else:
        pane = server.new_pane(
            command, cwd=cwd, env=pane_env, width=width, height=height, remain_on_exit=remain_on_exit
        )
    return FakePane(server=server, pane=pane, agent=agent, log=log, cwd=Path(cwd), bin_dir=bin_dir)


def capture(server: TmuxServer, pane: str) -> str:
    return server.capture(pane)


def read_log(path: Path | str) -> list[dict]:
    """The fake's events so far; a line still being written is left for the next read."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    events = []
    for line in text.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            break
    return events


def wait_for_log(
    path: Path | str, predicate: Callable[[dict], bool], timeout: float = 10.0, message: str = "a log event"
) -> dict:
    def find() -> dict | None:
        return next((e for e in read_log(path) if predicate(e)), None)

    return wait_for(find, timeout=timeout, message=message)


def fake_pids(logs: Iterable[Path]) -> list[int]:
    pids = []
    for log in logs:
        for e in read_log(log):
            if e["event"] == "start":
                pids.append(e["pid"])
            elif e["event"] == "child":
                pids.append(e["child_pid"])
    return pids


def process_alive(pid: int) -> bool:
    """True while ``pid`` runs; a zombie counts as gone."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def reap_fakes(logs: Iterable[Path]) -> None:
    """Kill fakes and their children a test left running (they may ignore SIGHUP and SIGTERM)."""
    for pid in fake_pids(logs):
        try:
            proc = psutil.Process(pid)
            cmdline = " ".join(proc.cmdline())
        except psutil.Error:
            continue
        # Only ours: a recycled pid belongs to someone else.
        if "afd-fake-child" in cmdline or ("/bin/" in cmdline and any(a in cmdline for a in AGENTS)):
            try:
                proc.send_signal(signal.SIGKILL)
            except psutil.Error:
                pass


# --- git -----------------------------------------------------------------------


def git(cwd: Path | str, *args: str) -> str:
    return subprocess.run(
        ["git", *GIT_IDENTITY, *args], cwd=cwd, check=True, capture_output=True, text=True, timeout=30
    ).stdout.strip()


def make_git_repo(path: Path, commits: int = 3) -> Path:
    """A repository on `main` with ``commits`` commits by the test identity."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    for i in range(1, commits + 1):
        (path / f"file{i}.txt").write_text(f"content {i}\n", encoding="utf-8")
        git(path, "add", f"file{i}.txt")
        git(path, "commit", "-q", "-m", f"commit {i}")
    return path


def add_worktree(repo: Path, path: Path, branch: str, base: str = "HEAD") -> Path:
    git(repo, "worktree", "add", "-q", "-b", branch, str(path), base)
    return path


def commits_by(repo: Path | str, agent: str, rev_range: str = "HEAD") -> list[str]:
    """SHAs in ``rev_range`` authored by the fake ``agent``."""
    _, email = author(agent)
    out = git(repo, "log", "--format=%H", f"--author={email}", rev_range)
    return out.split()


def load_builtin_plugin(name: str) -> ModuleType:
    """A built-in detector module, loaded by file path the way afd loads a drop-in (not as a package)."""
    from afd.pluginset import builtin_dir

    module_name = f"afd_test_{name}_plugin"
    spec = importlib.util.spec_from_file_location(module_name, builtin_dir() / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses in the module look themselves up there
    spec.loader.exec_module(module)
    return module


# What the exactly-once tests (the simulated clock and the real tmux) type, launch and wall on.
BRIEF = "You are continuing work already in progress in this worktree."  # a handoff brief's first line
CODEX_PAST = {"form": "at", "reset": "Jul 25th, 2025 5:55 PM"}  # a reset long past
# A manifest agent that types its first prompt, walled by a clock-time reset.
MYCLI = r"""
name = "mycli"
[process]
executables = ["mycli"]
[launch]
command = ["mycli"]
first_prompt = "typed"
[screen]
composer = '^[›▌](?:\s|$)'
transcript = '^[•■]'
chrome = ['(?:^\s*|\s{2})\? for shortcuts\b', '\d{1,3}% context left']
busy = ['^(?!.*\bretrying\b).*\besc to interrupt\b']
submitted = '^›\s*\S'
[[banner]]
kind = "quota"
regex = '^■ Mycli quota used up\. It comes back at (?P<clock>\d{1,2}:\d{2} [AP]M) \((?P<zone>[^)]+)\)\.$'
"""
