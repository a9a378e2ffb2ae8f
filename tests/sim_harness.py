"""A simulated tmux server and simulated time, for tests that drive afd's real loop turn by turn.

Everything of afd runs as in `afd run`: the supervisor's poll, the gates, the engine and every
executor, the planner, `afd.daemon.loop.turn` and the loop's `Tempo`. Two things are simulated:

* the clock: one number of seconds, read by the supervisor (`clock`, `monotonic`, `tmux_time`),
  the engine and the fake agents; every tmux call costs `CALL_COST` of it, as a real one costs
  about 3 ms, so within one turn the poll's listing comes before the engine's look;
* the tmux server: `SimServer.exchange` answers the commands `afd.world.tmux` sends (listings,
  chained captures, bracketed pastes, keys, respawns, pane options) over panes whose screens are
  fake agents (`afd.testing.fake_agent`) living in this process, on the simulated clock.

The processes in the panes are real: stand-ins that sleep, named and started like the agents
(`python …/bin/codex "the prompt"`), so identity, the account's environment, a swap's teardown
and its preflight read /proc as they do for real. Whatever reached a pane is counted where it
arrives: `SimPane.received` (every input a fake agent took, typed, pasted or as a launch
argument), `SimWorld.pastes` and `SimWorld.launches` (what tmux was asked to deliver).
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from afd.testing.fake_agent import PASTE_END, PASTE_START, FakeAgent, Log, parse_invocation
from afd.testing.scenario import Scenario
from afd.world import tmux

CALL_COST = 0.003  # seconds of simulated time one tmux client call takes
SIZE = (120, 40)
KEYS = {"Enter": "\r", "Up": "\x1b[A", "Down": "\x1b[B", "Escape": "\x1b", "C-c": "\x03"}
STAND_IN = """#!/bin/sh
"exec" "{python}" "$0" "$@"
# A stand-in for an agent's process: its screen is simulated; it only has to exist, and go when told.
import time
while True:
    time.sleep(3600)
"""


@dataclass
class SimClock:
    """Simulated time: epoch seconds, also used as the monotonic clock (only differences are read)."""

    t: float

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.t, timezone.utc)

    def time(self) -> float:
        return self.t


class MemoryLog(Log):
    """A fake agent's log kept in memory: what it received and did, in order."""

    def __init__(self, agent: str):
        super().__init__(None, agent)
        self.events: list[dict] = []

    def write(self, event: str, **data) -> None:
        self.events.append({"event": event, "agent": self.agent, **data})


@dataclass
class SimPane:
    pane_id: str
    index: int
    cwd: str
    start_command: str
    proc: subprocess.Popen | None
    agent: FakeAgent | None
    logs: list[MemoryLog] = field(default_factory=list)  # every agent that ran here, oldest first
    options: dict[str, str] = field(default_factory=dict)
    dead: bool = False
    rows: list[str] = field(default_factory=list)
    activity: int = 0

    def received(self, marker: str) -> list[dict]:
        """Every input any agent in this pane took (argument, paste, typed) whose text holds `marker`."""
        return [e for log in self.logs for e in log.events if e["event"] == "input" and marker in e.get("text", "")]


class SimWorld:
    """The simulated tmux server's state: panes, paste buffers, and what was delivered."""

    def __init__(self, clock: SimClock, bin_dir: Path, scenarios: dict[str, Scenario], env: dict[str, str] | None = None,
                 *, mid_turn: bool = False):
        self.clock = clock
        # The agents draw only after the poll's listing: what changed on screen since the last turn shows
        # first to a capture (the engine's own look, when the listing gave the poll no reason to capture).
        self.mid_turn = mid_turn
        self.bin_dir = bin_dir
        self.scenarios = scenarios
        self.env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", **(env or {})}
        self.panes: dict[str, SimPane] = {}
        self.buffers: dict[str, str] = {}
        self.pastes: list[tuple[str, str]] = []  # (pane, text)
        self.launches: list[tuple[str, tuple[str, ...]]] = []  # (pane, argv), the first command of a pane included
        self.calls = 0
        self._next = 0
        self._listed: dict[str, int] = {}
        bin_dir.mkdir(parents=True, exist_ok=True)
        for agent in scenarios:
            path = bin_dir / agent
            path.write_text(STAND_IN.format(python=sys.executable), encoding="utf-8")
            path.chmod(0o755)

    # --- panes -------------------------------------------------------------------

    def new_pane(self, argv: list[str], cwd: Path | str) -> SimPane:
        """A new session with one pane running `argv` (its command resolved on the stand-ins' PATH)."""
        pane = SimPane(f"%{self._next}", self._next, str(cwd), shlex.join(argv), None, None)
        self._next += 1
        self.panes[pane.pane_id] = pane
        self._spawn(pane, [str(self.bin_dir / argv[0]), *argv[1:]], str(cwd))
        self._draw(pane)
        return pane

    def _spawn(self, pane: SimPane, argv: list[str], cwd: str) -> None:
        # Run as given (an `env -u VAR …` in front of the agent execs it, as in a real pane).
        pane.proc = subprocess.Popen(argv, cwd=cwd, env=self.env, start_new_session=True, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        command = _after_env(argv)
        agent = Path(command[0]).name
        scenario = self.scenarios[agent]
        log = MemoryLog(agent)
        pane.logs.append(log)
        invocation = parse_invocation(scenario.style or agent, command[1:])
        fake = FakeAgent(agent=agent, scenario=scenario, invocation=invocation, log=log, cwd=cwd, clock=self.clock.time,
                         size=SIZE)
        fake.start()
        pane.agent, pane.dead, pane.cwd = fake, False, cwd
        self.launches.append((pane.pane_id, tuple(argv)))

    def _draw(self, pane: SimPane) -> None:
        if pane.agent is not None and pane.proc is not None and pane.proc.poll() is not None:
            pane.agent = None  # its process is gone (a swap stopped it): what it drew stays, as on a dead pane
            if pane.options.get("remain-on-exit") != "on":
                del self.panes[pane.pane_id]
                return
            pane.dead = True
        if pane.agent is not None:
            pane.agent.tick()
            rows = [r.rstrip() for r in pane.agent.rows()]
            if rows != pane.rows:
                pane.rows, pane.activity = rows, int(self.clock.t)

    def close(self) -> None:
        for pane in self.panes.values():
            if pane.proc is not None and pane.proc.poll() is None:
                os.killpg(pane.proc.pid, signal.SIGKILL)
                pane.proc.wait()

    # --- the tmux command language, as afd.world.tmux speaks it -------------------

    def exchange(self, args, stdin: bytes | None) -> tmux.Reply:
        self.calls += 1
        self.clock.t += CALL_COST
        shown = {p.pane_id: p.activity for p in self.panes.values()}
        for pane in list(self.panes.values()):
            self._draw(pane)
        # Mid-turn, the listing answers as the panes stood just before their last draw: it comes first.
        self._listed = shown if self.mid_turn and "list-panes" in args else {}
        out: list[str] = []
        command: list[str] = []
        for arg in [*args, ";"]:
            if arg != ";":
                command.append(arg[:-2] + ";" if arg.endswith("\\;") else arg)
                continue
            error = self._command(command, stdin, out)
            if error:
                return tmux.Reply(1, "".join(out).encode(), error + "\n")
            command = []
        return tmux.Reply(0, "".join(out).encode(), "")

    def _pane(self, target: str | None) -> SimPane | None:
        return self.panes.get(target or "")

    def _fields(self, pane: SimPane) -> dict[str, str]:
        pid = pane.proc.pid if pane.proc is not None else 0
        return {
            "pane_id": pane.pane_id, "pane_pid": str(pid), "pane_current_command": "python3",
            "pane_start_command": pane.start_command, "pane_current_path": pane.cwd, "pane_dead": "1" if pane.dead else "0",
            "pane_width": str(SIZE[0]), "pane_height": str(SIZE[1]), "cursor_x": "0", "cursor_y": "0", "history_size": "0",
            "window_activity": str(self._listed.get(pane.pane_id, pane.activity)), "pane_in_mode": "0", "session_name": f"s{pane.index}",
            "window_index": "0", "pane_index": "0", "pid": str(os.getpid()),
        }

    def _expand(self, form: str, values: dict[str, str]) -> str:
        out, i = [], 0
        while i < len(form):
            if form.startswith("##", i):
                out.append("#")
                i += 2
            elif form.startswith("#{", i):
                end = form.index("}", i)
                out.append(values[form[i + 2 : end]])
                i = end + 1
            else:
                out.append(form[i])
                i += 1
        return "".join(out)

    def _command(self, command: list[str], stdin: bytes | None, out: list[str]) -> str | None:
        name, rest = command[0], command[1:]
        flags, target, words = _parse(rest)
        pane = self._pane(target)
        if target is not None and pane is None:
            return f"can't find pane: {target}"
        server = {"socket_path": f"/tmp/sim-{id(self)}", "pid": str(os.getpid())}
        if name == "display-message":
            out.append(self._expand(words[-1], {**server, **(self._fields(pane) if pane else {})}) + "\n")
        elif name == "list-panes":
            form = flags["-F"]
            out.extend(self._expand(form, {**server, **self._fields(p)}) + "\n" for p in self.panes.values())
        elif name == "capture-pane":
            assert pane is not None
            out.append("\n".join(pane.rows) + "\n")
        elif name == "load-buffer":
            self.buffers[flags["-b"]] = (stdin or b"").decode("utf-8")
        elif name == "paste-buffer":
            assert pane is not None
            text = self.buffers.pop(flags["-b"])
            self.pastes.append((pane.pane_id, text))
            if pane.agent is not None:
                typed = text.replace("\n", "\r")  # as tmux pastes line breaks
                bracketed = pane.agent.scenario.bracketed_paste and "-p" in flags
                pane.agent.feed(f"{PASTE_START}{typed}{PASTE_END}" if bracketed else typed)
        elif name == "delete-buffer":
            self.buffers.pop(flags["-b"], None)
        elif name == "send-keys":
            assert pane is not None
            for key in words:
                if pane.agent is not None:
                    pane.agent.feed(key if "-l" in flags else KEYS[key])
        elif name == "list-clients":
            pass  # nobody is attached: nobody types
        elif name == "show-options":
            value = pane.options.get(words[0]) if pane else None
            out.append(f"{value}\n" if value is not None else "")
        elif name == "set-option":
            assert pane is not None
            if "-u" in flags:
                pane.options.pop(words[0], None)
            else:
                pane.options[words[0]] = words[1]
        elif name == "respawn-pane":
            assert pane is not None
            if "-k" not in flags and not pane.dead:
                return f"pane {pane.pane_id} still active"
            if pane.proc is not None and pane.proc.poll() is None:
                os.killpg(pane.proc.pid, signal.SIGKILL)
                pane.proc.wait()
            argv = words[1:] if words and words[0] == "--" else words
            if len(argv) == 1 and argv[0].startswith("exec "):
                argv = shlex.split(argv[0][len("exec "):])
            self._spawn(pane, argv, flags.get("-c", pane.cwd).replace("##", "#"))
            self._draw(pane)
        elif name == "kill-pane":
            assert pane is not None
            if pane.proc is not None and pane.proc.poll() is None:
                os.killpg(pane.proc.pid, signal.SIGKILL)
                pane.proc.wait()
            del self.panes[pane.pane_id]
        else:
            raise AssertionError(f"the simulated tmux does not know {command!r}")
        return None


def _after_env(argv: list[str]) -> list[str]:
    """The command an `env [-u VAR]… [VAR=value]… COMMAND…` prefix runs."""
    if not argv or Path(argv[0]).name != "env":
        return argv
    i = 1
    while i < len(argv) and (argv[i] == "-u" or "=" in argv[i] or argv[i - 1] == "-u"):
        i += 1
    return argv[i:]


_VALUE_FLAGS = {"-t", "-F", "-b", "-c", "-e", "-s", "-x", "-y"}


def _parse(args: list[str]) -> tuple[dict[str, str], str | None, list[str]]:
    flags: dict[str, str] = {}
    words: list[str] = []
    it = iter(args)
    for arg in it:
        if words or arg == "--":
            words.append(arg)
        elif arg in _VALUE_FLAGS:
            flags[arg] = next(it)
        elif arg.startswith("-") and len(arg) > 1 and arg != "-":
            for ch in arg[1:]:
                flags[f"-{ch}"] = ""
        else:
            words.append(arg)
    return flags, flags.get("-t"), words


class SimServer(tmux.ServerRef):
    """A `tmux.ServerRef` whose clients are answered by a `SimWorld` in this process."""

    def __init__(self, world: SimWorld):
        super().__init__(socket_name=f"sim-{id(world)}")
        object.__setattr__(self, "world", world)

    def exchange(self, args, timeout, stdin, client_env) -> tmux.Reply:
        return self.world.exchange(args, stdin)  # type: ignore[attr-defined]
