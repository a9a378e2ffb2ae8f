"""afd's cost against the baselines, on one private tmux server, as ratios from one run.

    .venv/bin/python scripts/bench.py                  # the full run: about 45 minutes
    .venv/bin/python scripts/bench.py --quick          # every figure, short windows: about 15 minutes
    .venv/bin/python scripts/bench.py --json           # every figure as one JSON object
    .venv/bin/python scripts/bench.py --only latency   # one part (or several, comma-separated); see --help

It starts its own tmux server (`-L afd-bench-<pid>`, no user config) and
fills it with panes running a stand-in `claude` (a bash script drawing a
50-row Claude Code screen, idle at its prompt; told to, it "works" and
redraws a spinner every 0.3 s). The same panes are then polled, at the
same interval, by each approach in turn:

* afd: one `Supervisor.poll()` (inventory, identity, capture, detectors,
  gates, store), in this process;
* naive (a): one libtmux `capture_pane()` per pane, per poll;
* minimal (b): one `list-panes -a -F` and one chained `capture-pane` of
  every pane, per poll;
* bare: one `list-panes -a -F` per poll and nothing else;
* control (-C): (b)'s two commands through one persistent control-mode client.

CPU per poll is this process's CPU, the tmux clients it started, and the
tmux server's CPU, over the window. Before each window afd is polled until
it has settled on the panes (each one an idle claude session, and two polls
that started nothing but the listing), so a window measures watching, not
adopting. Scenarios: idle at 10, 50, 100, 200 panes; 100 panes with 10 %
working; 100 idle panes with 10,000 lines of scrollback each. Then `afd
run` itself at 100 idle panes with the default poll interval: its share of
one core and its resident memory over time. At 500 panes: afd's poll
against its poll at 100 (both over whole 60 s periods of its routine
captures and identity walks), a wall drawn in one pane and the polls until
afd calls it limited, and `afd run`'s resident memory over
`--daemon-seconds`, flat or not. Action latency: `afd run` among busy panes
resuming a fake agent after its reset, handing another to codex, and typing
a job's envelope into its supervisor when the job hits its wall. And,
without tmux: detection throughput on a 50-row capture, `afd status
--json` latency with 200 sessions in the store, and `afd status --tmux`
(what tmux's status-right runs every status-interval) with them, and the dashboard's page
load and one refresh with them (headless chromium). And `afd run` at the
usual open-files limit (1,024) with 1,100 idle connections held open
against its dashboard: its polls' p99 against windows without them
(alternated, pooled), and a wall found meanwhile. Every figure with a
target is printed beside it (the Targets table; `targets` in --json).

The server is killed and its socket removed at the end, even on failure.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import platform
import resource
import secrets
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import psutil

from afd.config.settings import Config
from afd.daemon.supervisor import Supervisor
from afd.judge.gates import judge
from afd.kit.text import capture_rows
from afd.model import Clock, Event
from afd.observe.identity_cache import REWALK_EVERY
from afd.observe.watch import MAX_CAPTURE_AGE, PaneWatch
from afd.pluginset import load_plugins
from afd.record.store import Store, StoreError
from afd.record.types import SessionRecord
from afd.world import tmux

# A Claude Code screen at its prompt, drawn by bash so 200 panes cost ~4 MB each, not a Python each.
STAND_IN = r"""#!/bin/bash
draw() {
  printf '\033[H\033[2J'
  printf '╭───────────────────────────────────────────╮\n│ ✻ Welcome to Claude Code!                 │\n╰───────────────────────────────────────────╯\n\n'
  printf '> %s\n\n' "$*"
  for ((i = 0; i < 18; i++)); do
    printf '⏺ Update(src/module_%d.py)\n  ⎿  Updated src/module_%d.py with %d additions and %d removals\n' $i $i $((i + 3)) $i
  done
  if ((walled)); then printf '\n⏺ Done. All tests pass.\n  ⎿  You'"'"'ve hit your limit · resets 11pm (America/Anchorage)\n\n'
  else printf '\n⏺ Done. All tests pass.\n\n'; fi
  printf '%.0s─' {1..118}; printf '\n❯ \n'; printf '%.0s─' {1..118}
  printf '\n  ⏵⏵ accept edits on (shift+tab to cycle)\n'
}
walled=0
draw "$@"
stty -echo 2>/dev/null
working=0 n=0 typed=
while :; do
  if ((working)); then
    printf '\r✶ Working… (%ds · esc to interrupt) %d' $((n / 3)) $n
    n=$((n + 1))
    # A read that times out mid-line keeps what it read: the word goes on in the next one.
    if read -r -t 0.3 part; then line=$typed$part typed=; else typed+=$part; continue; fi
  else
    read -r part || exit 0
    line=$typed$part typed=
  fi
  case $line in
    work) working=1 ;;
    idle) working=0; walled=0; draw "$@" ;;
    wall) working=0; walled=1; draw "$@" ;;
    scroll) for ((i = 0; i < 10000; i++)); do printf 'history line %d\n' $i; done; draw "$@" ;;
  esac
done
"""


def cpu_self() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


def proc_cpu(proc: psutil.Process | None) -> float:
    if proc is None:
        return 0.0
    try:
        t = proc.cpu_times()
    except psutil.Error:
        return 0.0
    return t.user + t.system


@dataclass
class Cost:
    polls: int
    wall_ms: float  # median wall time of one poll
    own_ms: float  # per poll: this process
    clients_ms: float  # per poll: tmux clients it started (and a control client)
    server_ms: float  # per poll: the tmux server

    @property
    def cpu_ms(self) -> float:
        return self.own_ms + self.clients_ms + self.server_ms

    def as_json(self) -> dict:
        return {
            "polls": self.polls,
            "wall_ms": round(self.wall_ms, 3),
            "cpu_ms": round(self.cpu_ms, 3),
            "own_ms": round(self.own_ms, 3),
            "clients_ms": round(self.clients_ms, 3),
            "server_ms": round(self.server_ms, 3),
        }


def measure(poll: Callable[[], None], seconds: float, interval: float, server: psutil.Process, extra: psutil.Process | None = None) -> Cost:
    """Poll every `interval` s for `seconds` s; CPU per poll, split by who spent it."""
    own0, kids0 = cpu_self()
    srv0, ext0 = proc_cpu(server), proc_cpu(extra)
    walls = []
    start = next_at = time.monotonic()
    while not walls or time.monotonic() - start < seconds:
        t = time.perf_counter()
        poll()
        walls.append(time.perf_counter() - t)
        next_at += interval
        time.sleep(max(0.0, next_at - time.monotonic()))
    own1, kids1 = cpu_self()
    n = len(walls)
    return Cost(
        n,
        statistics.median(walls) * 1000,
        (own1 - own0) * 1000 / n,
        ((kids1 - kids0) + proc_cpu(extra) - ext0) * 1000 / n,
        (proc_cpu(server) - srv0) * 1000 / n,
    )


class Bench:
    def __init__(self, work: Path, interval: float):
        self.name = f"afd-bench-{os.getpid()}-{secrets.token_hex(3)}"
        self.work = work
        self.interval = interval
        self.ref = tmux.ServerRef(socket_name=self.name)
        self.base = ["tmux", "-L", self.name]
        self.bin = work / "bin"
        self.bin.mkdir()
        (self.bin / "claude").write_text(STAND_IN)
        (self.bin / "claude").chmod(0o755)
        self.panes: list[str] = []
        self.server: psutil.Process | None = None
        self.env = {**os.environ, "PATH": f"{self.bin}:{os.environ['PATH']}"}
        self.env.pop("TMUX", None)

    def tmux(self, *args: str, check: bool = True) -> str:
        return subprocess.run([*self.base, *args], capture_output=True, text=True, env=self.env, check=check).stdout

    def grow(self, n: int) -> None:
        """Add panes (one window each) until there are `n`, and wait until each has drawn its screen."""
        while len(self.panes) < n:
            command = f"claude 'bench pane {len(self.panes)}'"
            if not self.panes:
                self.tmux("-f", "/dev/null", "new-session", "-d", "-s", "bench", "-x", "120", "-y", "50", command)
                self.tmux("set-option", "-g", "history-limit", "20000")
                self.server = psutil.Process(int(self.tmux("display-message", "-p", "#{pid}").strip()))
            else:
                self.tmux("new-window", "-d", "-t", "bench", command)
            self.panes = self.tmux("list-panes", "-a", "-F", "#{pane_id}").split()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if all("accept edits" in t for t in self.screens().values()):
                break
            time.sleep(0.2)
        time.sleep(1.2)  # past the one-second grain of window_activity

    def screens(self) -> dict[str, str]:
        return {p: r.text or "" for p, r in tmux.capture_panes(self.ref, self.panes).items()}

    def tell(self, panes: list[str], word: str) -> None:
        for p in panes:
            self.tmux("send-keys", "-t", p, "-l", word)
            self.tmux("send-keys", "-t", p, "Enter")

    # --- the approaches -------------------------------------------------

    def naive(self) -> Callable[[], None]:
        import libtmux

        server = libtmux.Server(socket_name=self.name)

        def poll() -> None:
            for pane in server.panes:
                pane.capture_pane()

        return poll

    def minimal(self) -> Callable[[], None]:
        def poll() -> None:
            ids = subprocess.run([*self.base, "list-panes", "-a", "-F", "#{pane_id} #{pane_pid} #{window_activity}"],
                                 capture_output=True).stdout.split()[::3]
            chain: list[str] = []
            for p in ids:
                chain += [*([";"] if chain else []), "capture-pane", "-p", "-J", "-t", p.decode()]
            subprocess.run([*self.base, *chain], capture_output=True)

        return poll

    def bare(self) -> Callable[[], None]:
        def poll() -> None:
            subprocess.run([*self.base, "list-panes", "-a", "-F", "#{pane_id}"], capture_output=True)

        return poll


class Control:
    """(b)'s two commands through one persistent `tmux -C` client; what attaching it sets off is recorded."""

    def __init__(self, bench: Bench):
        self.bench = bench
        bench.tmux("set-hook", "-g", "client-attached", "set-option -g @afd_bench_attached yes")
        self.before = self._facts()
        self.proc = subprocess.Popen(
            [*bench.base, "-C", "attach-session", "-t", "bench"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=bench.env,
        )  # fmt: skip
        self.ps = psutil.Process(self.proc.pid)
        self.command("display-message -p ready")  # the attach's own %begin/%end block comes first
        self.after = self._facts()

    def _facts(self) -> dict:
        return {
            "clients": len(self.bench.tmux("list-clients", "-F", "#{client_name}").split()),
            "session_attached": self.bench.tmux("display-message", "-p", "-t", "bench", "#{session_attached}").strip(),
            "window_size": self.bench.tmux("display-message", "-p", "-t", "bench:0", "#{window_width}x#{window_height}").strip(),
            "client_attached_hook_fired": self.bench.tmux("show-options", "-gqv", "@afd_bench_attached").strip() == "yes",
        }

    def command(self, line: str, blocks: int = 1) -> list[bytes]:
        """Send one line; the output rows of its `blocks` %begin…%end blocks (notifications skipped)."""
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()
        out, ends, inside = [], 0, False
        while ends < blocks:
            row = self.proc.stdout.readline()
            if not row:
                raise RuntimeError("the control client went away")
            if row.startswith(b"%begin "):
                inside = row.split()[3:4] == [b"1"]  # flag 1: a command this client sent (the attach's own block is 0)
            elif row.startswith((b"%end ", b"%error ")):
                ends += inside
                inside = False
            elif inside:
                out.append(row)
        return out

    def poll(self) -> None:
        listing = self.command("list-panes -a -F '#{pane_id} #{pane_pid} #{window_activity}'")
        ids = [row.split()[0].decode() for row in listing]
        self.command(" ; ".join(f"capture-pane -p -J -t {p}" for p in ids), blocks=len(ids))

    def close(self) -> dict:
        self.proc.stdin.close()
        self.proc.wait(timeout=10)
        return {"before": self.before, "while_attached": self.after}


# --- afd itself ---------------------------------------------------------


def supervisor(work: Path, bench: Bench) -> Supervisor:
    store = Store(work / "state" / "afd-inproc.db")
    return Supervisor(Config(poll_interval=bench.interval), load_plugins(None, entry_points=False), store, bench.ref)


def settle(sup: Supervisor, bench: Bench, working: frozenset[str] = frozenset(), timeout: float = 600.0) -> dict:
    """Polls at the bench's cadence until afd's picture of the panes is steady, so a window measures
    watching, not adopting: every pane a claude session in the store, in the state its stand-in shows
    (`working` ones working, the rest idle; none unknown), and two polls running that started nothing
    but the listing (no pane adopted, looked up or captured for being new; with panes working, the
    states alone, as their spinners make afd capture them every poll)."""
    start, polls, quiet, why = time.monotonic(), 0, 0, "no poll yet"
    wanted = set(bench.panes)
    while time.monotonic() - start < timeout:
        before = tmux.spawns
        sup.poll()
        polls += 1
        listing_only = tmux.spawns - before == 1
        records = {r.pane_id: r for r in sup.store.list_sessions() if r.pane_id in wanted}
        if len(records) < len(wanted):
            why = f"{len(wanted) - len(records)} of {len(wanted)} panes not yet sessions"
        elif bad := [r for r in records.values()
                     if r.agent != "claude" or r.state != ("working" if r.pane_id in working else "idle")]:  # fmt: skip
            why = f"{len(bad)} sessions not yet in their stand-in's state (e.g. {bad[0].pane_id}: {bad[0].agent}, {bad[0].state})"
        else:
            why = "" if listing_only or working else "the last poll started more than the listing"
        quiet = quiet + 1 if not why else 0
        if quiet >= 2:
            return {"settled": True, "polls": polls, "seconds": round(time.monotonic() - start, 1)}
        time.sleep(bench.interval)
    return {"settled": False, "polls": polls, "seconds": round(time.monotonic() - start, 1), "why": why}


def daemon_run(bench: Bench, work: Path, seconds: float, sample_every: float) -> dict:
    """`afd run` at the default poll interval, with state of its own: share of one core and resident memory over `seconds`."""
    tag = len(bench.panes)
    env = {**bench.env, "XDG_STATE_HOME": str(work / f"dstate{tag}"), "XDG_CONFIG_HOME": str(work / f"dcfg{tag}"),
           "XDG_RUNTIME_DIR": str(work / f"drun{tag}")}  # fmt: skip
    for key in ("XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR"):
        Path(env[key]).mkdir(mode=0o700, exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-m", "afd", "run", "-L", bench.name], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    ps = psutil.Process(proc.pid)
    try:
        store_path = Path(env["XDG_STATE_HOME"]) / "afd" / "state.db"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # warm-up: every pane adopted and judged
            if store_path.exists():
                try:
                    with Store.open_readonly(store_path) as store:
                        states = [r.state for r in store.list_sessions()]
                except StoreError:
                    continue  # afd is still creating or upgrading it
                if len(states) >= len(bench.panes) and all(s == "idle" for s in states):
                    break
            time.sleep(1)
        time.sleep(Config().poll_interval * 2)

        def cpu() -> float:
            t = ps.cpu_times()
            return t.user + t.system + t.children_user + t.children_system

        c0, s0, w0 = cpu(), proc_cpu(bench.server), time.monotonic()
        rss = [(0.0, ps.memory_info().rss)]
        while time.monotonic() - w0 < seconds:
            time.sleep(min(sample_every, max(0.0, seconds - (time.monotonic() - w0))))
            rss.append((time.monotonic() - w0, ps.memory_info().rss))
        elapsed = time.monotonic() - w0
        c1, s1 = cpu(), proc_cpu(bench.server)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
    mib = [r / 2**20 for _, r in rss]
    half = len(mib) // 2
    return {
        "panes": len(bench.panes),
        "poll_interval_s": Config().poll_interval,
        "seconds": round(elapsed, 1),
        "afd_core_percent": round((c1 - c0) / elapsed * 100, 3),
        "tmux_server_core_percent": round((s1 - s0) / elapsed * 100, 3),
        "rss_mib_first": round(mib[0], 1),
        "rss_mib_last": round(mib[-1], 1),
        "rss_mib_max": round(max(mib), 1),
        # Flat: whether the second half set a new high over the first's, and the least-squares slope over
        # the second half (past the first rounds of captures and identity walks a fresh daemon makes).
        "rss_mib_per_hour_second_half": round(slope([t for t, _ in rss[half:]], mib[half:]) * 3600, 2) if len(mib) > 3 else None,
        "rss_mib_second_half_over_first_max": round(max(mib[half:]) - max(mib[:half]), 2) if half else None,
        "rss_samples": [[round(t), round(m, 1)] for (t, _), m in zip(rss, mib, strict=True)],
    }


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ys over xs."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    spread = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / spread if spread else 0.0


# --- without tmux ---------------------------------------------------------


def detection_throughput(screen: str, seconds: float) -> dict:
    """Captures per second through the detectors and both gates, as one watched pane sees them."""
    plugins = load_plugins(None, entry_points=False)
    spec = plugins.agents["claude"]
    clock = Clock(now=datetime.now(timezone.utc), local_zone=timezone.utc)
    results = {}
    banner = screen.replace("⏺ Done. All tests pass.", "  ⎿  You've hit your limit · resets 11pm (America/Anchorage)")
    for label, text in (("idle_screen", screen), ("banner_screen", banner)):
        rows = capture_rows(text)
        watch = PaneWatch(keep=2)
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            found = plugins.detect("claude", rows, clock, None)
            watch.record(rows, found, (0, 0, 0, 0), 0.0, spec.chrome)
            judge("claude", list(watch.captures), list(watch.detections), spec.chrome, tail_lines=8,
                  stability_polls=2, contents=list(watch.contents))  # fmt: skip
            n += 1
        results[label] = {"rows": len(rows), "captures_per_s": round(n / (time.perf_counter() - start))}
    return results


def status_state(work: Path, sessions: int, events: int) -> dict:
    """A state directory whose store holds `sessions` sessions and `events` events; the environment that reads it."""
    state = work / "sstate"
    env = {**os.environ, "XDG_STATE_HOME": str(state), "XDG_CONFIG_HOME": str(work / "scfg"),
           "XDG_RUNTIME_DIR": str(work / "srun")}  # fmt: skip
    # As a user runs it: Python keeps the bytecode it compiled (a shell that turned that off would
    # make afd's start pay for compiling every module, and `import afd` only for one).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for key in ("XDG_CONFIG_HOME", "XDG_RUNTIME_DIR"):
        Path(env[key]).mkdir(mode=0o700, exist_ok=True)
    now = datetime.now(timezone.utc)
    with Store(state / "afd" / "state.db") as store:
        for i in range(sessions):
            store.upsert_session(SessionRecord(
                name=f"bench:{i}.0", pane_id=f"%{i}", server_socket="/tmp/bench", server_pid=1, agent="claude",
                identity="known", identity_source="process", state="idle", created_at=now, updated_at=now,
                mission=f"task {i}", worktree=f"/src/w{i}", branch=f"b{i}", agent_pid=10_000 + i,
                agent_started_at=1.0, location=f"bench:{i}.0",
            ))  # fmt: skip
        for i in range(events):
            store.add_event(Event(at=now - timedelta(seconds=i), kind="session.adopted", message=f"adopted {i}",
                                  session=f"bench:{i % sessions}.0"))  # fmt: skip
        store.set_meta("agents", json.dumps(sorted(load_plugins(None, entry_points=False).agents)))
    return env


def side_by_side(a: list[str], b: list[str], env: dict, repeat: int) -> dict:
    """A and B run in turn (A B A B …, one warm-up each), wall time of each whole process; the ratio pair by pair."""
    def once(argv: list[str]) -> float:
        t = time.perf_counter()
        subprocess.run(argv, env=env, capture_output=True)
        return time.perf_counter() - t

    once(a), once(b)
    pairs = [(once(a), once(b)) for _ in range(repeat)]
    return {
        "runs": repeat,
        "afd_ms_median": round(statistics.median(x for x, _ in pairs) * 1000, 1),
        "import_afd_ms_median": round(statistics.median(y for _, y in pairs) * 1000, 1),
        "ratio_median": round(statistics.median(x / y for x, y in pairs), 3),
    }


def status_latency(work: Path, sessions: int, events: int, repeat: int) -> dict:
    """`afd status --json` as a fresh process beside `python -c "import afd"`: the daemon down, then up."""
    env = status_state(work, sessions, events)
    status = [sys.executable, "-m", "afd", "status", "--json"]
    out = subprocess.run(status, env=env, capture_output=True)
    if len(json.loads(out.stdout)["sessions"]) != sessions:
        raise RuntimeError("afd status did not list every session")
    segment = [sys.executable, "-m", "afd", "status", "--tmux"]  # what tmux runs every status-interval
    result = {"sessions": sessions, "events": events,
              "daemon_down": side_by_side(status, [sys.executable, "-c", "import afd"], env, repeat),
              "tmux_daemon_down": side_by_side(segment, [sys.executable, "-c", "import afd"], env, repeat)}  # fmt: skip
    # The daemon up, watching a tmux server that is not there: it answers from its snapshot.
    proc = subprocess.Popen([sys.executable, "-m", "afd", "run", "-L", f"afd-bench-none-{os.getpid()}"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while subprocess.run(status, env=env, capture_output=True).returncode != 0:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("afd run did not answer status")
            time.sleep(0.2)
        result["daemon_up"] = side_by_side(status, [sys.executable, "-c", "import afd"], env, repeat)
        result["daemon_up"]["answer_ms_median"] = round(daemon_answer_ms(env, repeat), 2)
        result["tmux_daemon_up"] = side_by_side(segment, [sys.executable, "-c", "import afd"], env, repeat)
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    return result


STATUSLINE_PAYLOAD = json.dumps({
    "session_id": "0b7e1a52-5c55-4a49-9c1d-5a0e1f2d3c4b", "transcript_path": "/home/me/.claude/projects/-home-me-shop/t.jsonl",
    "cwd": "/home/me/shop", "model": {"id": "claude-opus-4-5", "display_name": "Opus 4.5"}, "version": "2.1.332",
    "workspace": {"current_dir": "/home/me/shop", "project_dir": "/home/me/shop"},
    "cost": {"total_cost_usd": 1.25, "total_duration_ms": 400000, "total_api_duration_ms": 90000},
    "context_window": {"total_input_tokens": 48000, "context_window_size": 200000},
    "rate_limits": {"five_hour": {"used_percentage": 42.3, "resets_at": 1893456000},
                    "seven_day": {"used_percentage": 13, "resets_at": 1893900000}},
    "prompt_cache": {"warm": True, "expires_at": 1893450000, "recache_tokens_if_cold": 48000},
}).encode()
# A typical user's own status line: reads the payload and prints a line.
USER_LINE = "cat >/dev/null; printf 'main ✓'"


def statusline_cost(work: Path, repeat: int) -> dict:
    """`afd statusline` as Claude Code runs it (a payload on stdin, a fresh process each refresh) beside
    `python -c pass`, and wrapping a user's own command beside that command alone; wall time of each
    whole process, pair by pair."""
    afd = str(Path(sys.executable).with_name("afd"))
    env = {**os.environ, "XDG_RUNTIME_DIR": str(work / "run")}
    (work / "run").mkdir(exist_ok=True)

    def once(argv: list[str]) -> float:
        t = time.perf_counter()
        subprocess.run(argv, env=env, input=STATUSLINE_PAYLOAD, capture_output=True)
        return time.perf_counter() - t

    def pairs(a: list[str], b: list[str]) -> dict:
        once(a), once(b)
        runs = [(once(a), once(b)) for _ in range(repeat)]
        return {"runs": repeat, "afd_ms_median": round(statistics.median(x for x, _ in runs) * 1000, 1),
                "other_ms_median": round(statistics.median(y for _, y in runs) * 1000, 1),
                "ratio_median": round(statistics.median(x / y for x, y in runs), 3)}  # fmt: skip

    return {
        "own_line_vs_python_pass": pairs([afd, "statusline"], [sys.executable, "-c", "pass"]),
        "wrapping_vs_the_users_command": pairs([afd, "statusline", "--", "sh", "-c", USER_LINE], ["sh", "-c", USER_LINE]),
    }


USAGE_WRITER = """
import json, os, sys, time
from pathlib import Path
from afd.observe import statusline
where, n = Path(sys.argv[1]), int(sys.argv[2])
payload = json.loads(sys.argv[3])
i = 0
while True:
    i += 1
    for k in range(n):
        payload["rate_limits"]["five_hour"]["used_percentage"] = round(10 + (i % 800) / 10, 1)
        statusline.record(payload, {"HOME": "/home/me", "CLAUDE_CONFIG_DIR": f"/home/me/.claude-{k}"}, where)
    time.sleep(1.0)
"""


def usage_poll(sup: Supervisor, bench: Bench, work: Path, seconds: float, accounts: int = 3) -> dict:
    """afd's poll at the bench's panes with no usage figures, then with `accounts` status-line files each
    rewritten every second by another process (a Claude Code refreshing its status line while working, its
    five-hour figure moving every time), so every poll ingests them and keeps a sample."""
    from afd.observe.usage import UsageWatch

    where = work / "usage-run"
    sup.usage_poll.watch = UsageWatch.for_runtime_dir(where)
    off = measure(sup.poll, seconds, bench.interval, bench.server)
    writer = subprocess.Popen([sys.executable, "-c", USAGE_WRITER, str(where / "usage"), str(accounts),
                               STATUSLINE_PAYLOAD.decode()], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        time.sleep(2.5)
        sup.poll()
        on = measure(sup.poll, seconds, bench.interval, bench.server)
    finally:
        writer.kill()
        writer.wait(timeout=10)
    samples = sup.store.query("SELECT COUNT(*) AS n FROM usage_samples")[0]["n"]
    return {"panes": len(bench.panes), "accounts": accounts, "off": off.as_json(), "on": on.as_json(),
            "samples_kept": samples, "on_over_off": round(on.cpu_ms / off.cpu_ms, 3) if off.cpu_ms else None}


def daemon_answer_ms(env: dict, repeat: int) -> float:
    """One status request over the control socket, as a dashboard in another process would make it."""
    from afd.daemon import control

    path = Path(env["XDG_RUNTIME_DIR"]) / "afd" / "control.sock"
    walls = []
    for _ in range(repeat * 4):
        t = time.perf_counter()
        control.request(path, "status", {"events": 20})
        walls.append(time.perf_counter() - t)
    return statistics.median(walls) * 1000


def profile_status(work: Path, sessions: int, events: int, top: int = 30) -> str:
    """cProfile of `afd status --json` in a fresh interpreter (daemon down), imports included, by cumulative time."""
    env = status_state(work, sessions, events)
    code = (
        "import cProfile, contextlib, io, pstats, sys\n"
        "prof = cProfile.Profile()\n"
        "prof.enable()\n"
        "from afd.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        "    main(['status', '--json'])\n"
        "prof.disable()\n"
        f"pstats.Stats(prof, stream=sys.stdout).sort_stats('cumulative').print_stats({top})\n"
    )
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout


def wall_found_within(sup: Supervisor, bench: Bench, max_polls: int = 20) -> dict:
    """Draw a usage-limit wall in one pane among all of them (afd settled on them); count afd's polls,
    at the bench's cadence, from the first one after the wall shows until that session is limited."""
    pane = bench.panes[len(bench.panes) // 2]
    bench.tell([pane], "wall")
    deadline = time.monotonic() + 10
    while "hit your limit" not in (tmux.capture_panes(bench.ref, [pane])[pane].text or ""):
        if time.monotonic() > deadline:
            raise RuntimeError(f"pane {pane} did not draw its wall")
        time.sleep(0.05)
    polls: int | None = None
    for count in range(1, max_polls + 1):
        sup.poll()
        rec = next((r for r in sup.store.list_sessions() if r.pane_id == pane), None)
        if rec is not None and rec.state == "limited":
            polls = count
            break
        time.sleep(bench.interval)
    bench.tell([pane], "idle")
    return {"panes": len(bench.panes), "polls": polls, "stability_polls": sup.config.stability_polls}


# --- the dashboard under idle connections ------------------------------------------

IDLE_CONNECTIONS = 1100  # more than the 1,024 descriptors a process gets by default
CONNECTIONS_POLL = 0.5  # seconds: afd run's poll_interval here, for enough polls in a window
CONNECTIONS_ROUNDS = 2  # windows without and with the connections, alternated


class IdleFlood:
    """`count` connections to a port that send nothing, kept at that number: one the server closes is opened again."""

    def __init__(self, port: int, count: int):
        import selectors
        import threading

        self.port, self.count = port, count
        self.sel = selectors.DefaultSelector()
        self.stop_event = threading.Event()
        self.closed_by_server = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _open(self) -> None:
        import selectors
        import socket

        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", self.port))
        self.sel.register(s, selectors.EVENT_READ)

    def _run(self) -> None:
        for _ in range(self.count):
            self._open()
        while not self.stop_event.is_set():
            for key, _ in self.sel.select(0.2):
                try:
                    while key.fileobj.recv(4096):
                        pass
                except BlockingIOError:
                    continue
                except OSError:
                    pass
                self.sel.unregister(key.fileobj)
                key.fileobj.close()
                self.closed_by_server += 1
                self._open()

    def __enter__(self) -> IdleFlood:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop_event.set()
        self.thread.join(10)
        for key in list(self.sel.get_map().values()):
            key.fileobj.close()
        self.sel.close()


def _poll_ms(log: Path, start: int) -> tuple[list[float], int]:
    """The durations of the polls logged in `log` past byte `start`, and where the log ends now."""
    import re

    data = log.read_bytes()
    found = [float(m) for m in re.findall(rb"afd\.daemon: poll took ([0-9.]+) ms", data[start:])]
    return found, len(data)


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.99 * len(ordered)) - 1)]


def connections_load(bench: Bench, work: Path, seconds: float, say: Callable[[str], None]) -> dict:
    """`afd run -v` serving the dashboard at the usual open-files limit (1,024, soft and hard), on the bench's
    panes: its polls' durations over `seconds` without, then with IDLE_CONNECTIONS idle connections held open
    against the dashboard; in each window, a wall drawn in one pane and the seconds until afd calls it limited,
    and `afd status` over the control socket."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**bench.env, "XDG_STATE_HOME": str(work / "cstate"), "XDG_CONFIG_HOME": str(work / "ccfg"),
           "XDG_RUNTIME_DIR": str(work / "crun")}  # fmt: skip
    for key in ("XDG_STATE_HOME", "XDG_RUNTIME_DIR"):
        Path(env[key]).mkdir(mode=0o700, exist_ok=True)
    (work / "ccfg" / "afd").mkdir(parents=True, exist_ok=True)
    (work / "ccfg" / "afd" / "config.toml").write_text(
        f'poll_interval = "{CONNECTIONS_POLL}s"\n[web]\nenabled = true\nport = {port}\n')
    log = work / "connections-afd.log"
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2 * IDLE_CONNECTIONS:
        return {"measured": False, "why": f"this process's hard open-files limit ({hard}) is under {2 * IDLE_CONNECTIONS}"}
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard if hard != resource.RLIM_INFINITY else 8192, hard))

    def usual_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))

    proc = subprocess.Popen([sys.executable, "-m", "afd", "run", "-L", bench.name, "-v"], env=env,
                            stdout=subprocess.DEVNULL, stderr=log.open("wb"), preexec_fn=usual_limit)  # fmt: skip
    ps = psutil.Process(proc.pid)
    store_path = Path(env["XDG_STATE_HOME"]) / "afd" / "state.db"

    def states() -> dict[str, str]:
        try:
            with Store.open_readonly(store_path) as store:
                return {r.pane_id: r.state for r in store.list_sessions()}
        except StoreError:
            return {}

    def status_ms() -> float | None:
        t = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "afd", "status", "--json"], env=env, capture_output=True, text=True)
        return round((time.perf_counter() - t) * 1000, 1) if done.returncode == 0 else None

    def wall_seconds(pane: str) -> float | None:
        bench.tell([pane], "wall")
        t = time.monotonic()
        while time.monotonic() - t < 60:
            if states().get(pane) == "limited":
                found = round(time.monotonic() - t, 2)
                break
            time.sleep(0.05)
        else:
            found = None
        bench.tell([pane], "idle")
        deadline = time.monotonic() + 60
        while states().get(pane) == "limited" and time.monotonic() < deadline:
            time.sleep(0.2)
        return found

    def cpu_s() -> float:
        t = ps.cpu_times()
        return t.user + t.system

    def window(label: str, pane: str) -> dict:
        _, start = _poll_ms(log, 0)
        fds, t, c0 = [], time.monotonic(), cpu_s()
        while time.monotonic() - t < seconds:
            fds.append(ps.num_fds())
            time.sleep(0.5)
        polls, _ = _poll_ms(log, start)
        cpu = round((cpu_s() - c0) / (time.monotonic() - t) * 100, 2)
        answer = status_ms()
        wall = wall_seconds(pane)
        say(f"  {label}: {len(polls)} polls, p99 {p99(polls):.1f} ms, median {statistics.median(polls):.1f} ms; afd "
            f"{cpu} % of a core; wall found in {wall} s; afd status {answer} ms; descriptors max {max(fds)}")
        return {"polls_ms": polls, "core_percent": cpu, "wall_found_s": wall, "status_ms": answer, "fds_max": max(fds)}

    def pooled(windows: list[dict]) -> dict:
        polls = [ms for w in windows for ms in w["polls_ms"]]
        return {"polls": len(polls), "p99_ms": round(p99(polls), 2), "median_ms": round(statistics.median(polls), 2),
                "max_ms": round(max(polls), 2), "core_percent": [w["core_percent"] for w in windows],
                "wall_found_s": [w["wall_found_s"] for w in windows], "status_ms": [w["status_ms"] for w in windows],
                "fds_max": max(w["fds_max"] for w in windows),
                "window_p99_ms": [round(p99(w["polls_ms"]), 2) for w in windows]}  # fmt: skip

    quiet: list[dict] = []
    loaded: list[dict] = []
    closed = 0
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:  # warm-up: every pane adopted and judged
            found = states()
            if len(found) >= len(bench.panes) and all(v == "idle" for v in found.values()):
                break
            time.sleep(1)
        # Past a fresh daemon's first rounds of routine captures and identity walks.
        time.sleep(max(REWALK_EVERY, MAX_CAPTURE_AGE))
        # Alternated, so that the machine's other load falls on both sides alike; each side pooled.
        for n in range(CONNECTIONS_ROUNDS):
            quiet.append(window(f"round {n + 1}, without connections", bench.panes[2 * n]))
            with IdleFlood(port, IDLE_CONNECTIONS) as flood:
                time.sleep(2)
                loaded.append(window(f"round {n + 1}, {IDLE_CONNECTIONS} idle connections held open", bench.panes[2 * n + 1]))
                closed += flood.closed_by_server
            time.sleep(10)  # the last of them closed
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    text = log.read_text(errors="replace")
    without, held = pooled(quiet), pooled(loaded)
    held["closed_by_server"] = closed
    return {
        "measured": True, "panes": len(bench.panes), "poll_interval_s": CONNECTIONS_POLL, "seconds_per_window": seconds,
        "rounds": CONNECTIONS_ROUNDS, "idle_connections": IDLE_CONNECTIONS, "open_files_limit": 1024,
        "without": without, "with": held,
        "p99_with_over_without": round(held["p99_ms"] / without["p99_ms"], 3),
        "wall_found_s_with_max": max((w for w in held["wall_found_s"] if w is not None), default=None),
        "wall_found_s_without_max": max((w for w in without["wall_found_s"] if w is not None), default=None),
        "emfile_in_log": "Too many open files" in text,
    }  # fmt: skip


# --- action latency ---------------------------------------------------------

LATENCY_CONFIG = """\
limit_action = "handoff"
handoff_order = ["codex"]
limit_auto_resume = true
resume_grace = "2s"
handoff_stop_timeout = "2s"
"""
JOB_WALL_AFTER = 8  # seconds from the job's start to its wall
LATENCY_SCENARIOS = {
    # codex's wall comes once afd has adopted everything, with a reset 10 s after it appears.
    "resume-bench": {"agents": {"codex": {"limit_after_seconds": 4, "banner_params": {"reset": "10 seconds"},
                                          "limit_lasts_seconds": 8}}},
    # claude's wall comes after its first piece of work and lasts hours: afd hands the work to codex.
    "handoff-bench": {"agents": {"claude": {"limit_after_prompts": 1, "records": "agree"}}},
    # A supervisor that runs `afd jobs create` as a tool and is idle otherwise.
    "jobs-bench": {"agents": {"claude": {"run_commands": True}}},
    # Its job (the tmux server's environment gives it this file): a wall some seconds after it starts, long
    # after its supervisor's turn ended. No records, so no witness and no handoff: the job only turns limited.
    "jobs-job": {"agents": {"claude": {"limit_after_seconds": JOB_WALL_AFTER}}},
}


def _fake_log(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _instant(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


SESSIONS = (("handoff-bench", "claude", "Fix the login test"), ("resume-bench", "codex", "Write the changelog"),
            ("jobs-bench", "claude", None))
JOB = "fix-a"


def action_latency(busy: int, poll_interval: float, timeout: float, say: Callable[[str], None]) -> dict:
    """`afd run` with `busy` working panes around three fake agents: one resumed after its reset, one handed
    off, and one whose job hits its wall and is told so by an envelope.

    Due: the reset plus `resume_grace` (resume.scheduled's `at`) for the resume; the poll whose
    `session.limited` event made the wall stable for the handoff, and for the job's envelope (the job's
    own wall; its supervisor idle long before). Done: the fake's log saying the continuation was
    pasted; afd's journal saying the old agent was confirmed gone and the new one launched (the new
    agent's own start-up, from its log, is shown apart); the supervisor's fake saying the envelope was
    submitted to it (typed and Enter pressed; its paste is shown apart).
    """
    from afd.cli.demo import Demo

    demo = Demo(Path(tempfile.mkdtemp(prefix="afd-bench-act-", dir="/tmp")))
    stand_in = demo.root / "stand-in" / "claude"
    try:
        demo.prepare()
        (demo.root / "cfg" / "afd" / "config.toml").write_text(f'poll_interval = "{poll_interval:g}s"\n' + LATENCY_CONFIG)
        for name, scenario in LATENCY_SCENARIOS.items():
            (demo.root / f"{name}.json").write_text(json.dumps(scenario), encoding="utf-8")
        for name, _, _ in SESSIONS:
            demo.git(demo.root / "repo", "worktree", "add", "-q", "-b", name, str(demo.root / name), "main")
        stand_in.parent.mkdir()
        stand_in.write_text(STAND_IN)
        stand_in.chmod(0o755)
        demo.tmux("-f", "/dev/null", "new-session", "-d", "-s", "busy", "-x", "120", "-y", "50", f"{stand_in} 'busy 0'")
        # The job afd creates gets the server's environment: its scenario and its log.
        demo.tmux("set-environment", "-g", "AFD_FAKE_SCENARIO", str(demo.root / "jobs-job.json"))
        demo.tmux("set-environment", "-g", "AFD_FAKE_LOG", str(demo.logs / "jobs-job.jsonl"))
        for i in range(1, busy):
            demo.tmux("new-window", "-d", "-t", "busy", f"{stand_in} 'busy {i}'")
        time.sleep(1.0)
        for pane in demo.tmux("list-panes", "-a", "-F", "#{pane_id}").stdout.split():
            demo.tmux("send-keys", "-t", pane, "-l", "work")
            demo.tmux("send-keys", "-t", pane, "Enter")
        err = (demo.root / "afd.log").open("wb")
        demo.daemon = subprocess.Popen([sys.executable, "-m", "afd", "run", "-L", demo.socket], env=demo.env,
                                       stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)  # fmt: skip
        demo._wait(lambda: len((demo.ask("status", {"events": 0}) or {}).get("sessions", ())) >= busy, 120,
                   "afd to adopt the busy panes")  # fmt: skip
        say(f"  {busy} busy panes adopted; starting the three agents")
        for name, agent, prompt in SESSIONS:
            env = ["-e", f"AFD_FAKE_SCENARIO={demo.root / name}.json", "-e", f"AFD_FAKE_LOG={demo.logs / name}.jsonl",
                   "-e", "TERM=tmux-256color"]  # fmt: skip
            demo.tmux("new-session", "-d", "-s", name, "-x", "110", "-y", "30", "-c", str(demo.root / name), *env,
                      shlex.join([agent, *([prompt] if prompt else [])]))  # fmt: skip

        def sessions() -> dict:
            return {(s.get("location") or "").split(":")[0]: s for s in (demo.ask("status", {"events": 0}) or {}).get("sessions", ())}

        demo._wait(lambda: sessions().get("jobs-bench", {}).get("state") == "idle", 60, "the jobs' supervisor adopted and idle")
        create = f"run: {shlex.quote(sys.executable)} -m afd jobs create {JOB} --agent claude --prompt 'Fix module a'"
        demo.tmux("send-keys", "-t", "jobs-bench", "-l", create)
        demo.tmux("send-keys", "-t", "jobs-bench", "Enter")

        def finished() -> bool:
            events = (demo.ask("status", {"events": 200}) or {}).get("events", [])
            kinds = {(e["session"] or "").split(":")[0] + " " + e["kind"] for e in events}
            typed = any(e["event"] == "input" and f"job {JOB} " in e["text"] and "[afd " in e["text"]
                        for e in _fake_log(demo.logs / "jobs-bench.jsonl"))  # fmt: skip
            return "resume-bench resume.confirmed" in kinds and "handoff-bench session.handoff" in kinds and typed

        demo._wait(finished, timeout, "the resume, the handoff and the job's envelope")
        why = None
    except Exception as exc:  # a bench that could not drive every action still reports what it saw
        why = f"{type(exc).__name__}: {exc}"
    finally:
        if demo.daemon is not None and demo.daemon.poll() is None:
            demo.daemon.terminate()
            demo.daemon.wait(timeout=15)
        db = demo.root / "state" / "afd" / "state.db"
        facts = _latency_facts(db, demo.logs) if db.exists() else {}
        demo.stop()
    measured = any(k in facts for k in ("resume_s", "handoff_s", "envelope_s"))
    return {"measured": measured, **({"why": why} if why else {}), "busy_panes": busy, "poll_interval_s": poll_interval, **facts}


def _latency_facts(db: Path, logs: Path) -> dict:
    import sqlite3

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        events = [dict(r) for r in conn.execute("SELECT at, session, kind, data FROM events ORDER BY id")]
        journal = [dict(r) for r in conn.execute("SELECT session, action, intent FROM journal ORDER BY id")]
    finally:
        conn.close()
    out: dict = {}

    def of(prefix: str, kind: str) -> list[dict]:
        return [e for e in events if (e["session"] or "").startswith(prefix) and e["kind"] == kind]

    # Resume: due at the planned instant (reset + grace); done when the fake saw the continuation pasted.
    planned = [json.loads(e["data"]).get("at") for e in of("resume-bench", "resume.scheduled")]
    planned = [at for at in planned if at]
    pasted = [e["t"] for e in _fake_log(logs / "resume-bench.jsonl") if e["event"] == "paste"]
    if planned and pasted:
        due = _instant(planned[-1])
        out["resume_s"] = round(min(t for t in pasted if t >= due - 5) - due, 3)
    # Handoff: due at the poll that found the wall stable; done when afd launched the new agent.
    limited = of("handoff-bench", "session.limited")
    swap = next((json.loads(j["intent"]) for j in journal if j["action"] == "handoff" and j["session"].startswith("handoff-bench")), None)
    if limited and swap and swap.get("launched_at"):
        due = _instant(limited[0]["at"])
        out["handoff_s"] = round(_instant(swap["launched_at"]) - due, 3)
        if swap.get("stopped_at"):
            out["handoff_old_gone_s"] = round(_instant(swap["stopped_at"]) - due, 3)
        starts = [e["t"] for e in _fake_log(logs / "handoff-bench.jsonl") if e["event"] == "start" and e["agent"] == "codex"]
        if starts:
            out["handoff_new_agent_startup_s"] = round(starts[0] - _instant(swap["launched_at"]), 3)
    # The job's envelope: due at the poll that found the job's wall stable, or when its supervisor's turn
    # ended if that came later; done when the supervisor's fake took the envelope's line (pasted, then Enter).
    walled = [e for e in events if (e["session"] or "").split(":")[0] == JOB and e["kind"] == "session.limited"]
    boss = _fake_log(logs / "jobs-bench.jsonl")
    ours = [e for e in boss if "[afd " in e.get("text", "") and f"job {JOB} " in e.get("text", "")]
    typed = [e["t"] for e in ours if e["event"] == "input"]
    if walled and typed:
        wall = _instant(walled[0]["at"])
        turn_ended = max((e["t"] for e in boss if e["event"] == "command" and e["t"] <= typed[0]), default=0.0)
        due = max(wall, turn_ended)
        out["envelope_s"] = round(typed[0] - due, 3)
        out["envelope_due"] = "the job's wall stable" if due == wall else "its supervisor's turn over (after the job's wall)"
        pasted = [e["t"] for e in ours if e["event"] == "paste"]
        if pasted:
            out["envelope_pasted_s"] = round(pasted[0] - due, 3)
    return out


def dashboard_latency(work: Path, sessions: int, repeat: int) -> dict:
    """The dashboard with the `sessions` of status_latency's store: its page load and one refresh, in headless chromium.

    A daemon on an empty private tmux server serves that store; the page is
    loaded through its login address until every session's row is drawn, then
    refreshed once (one /api/status and the re-render) `repeat` times.
    """
    chromium, driver_path = shutil.which("chromium") or shutil.which("chromium-browser"), shutil.which("chromedriver")
    if chromium is None or driver_path is None or importlib.util.find_spec("selenium") is None:
        return {"measured": False, "why": "needs chromium, chromedriver and selenium (scripts/test installs them)"}
    import socket

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "XDG_STATE_HOME": str(work / "sstate"), "XDG_CONFIG_HOME": str(work / "scfg"),
           "XDG_RUNTIME_DIR": str(work / "srun")}  # fmt: skip
    (work / "scfg" / "afd").mkdir(parents=True, exist_ok=True)
    (work / "scfg" / "afd" / "config.toml").write_text(f"[web]\nenabled = true\nport = {port}\n")
    server = f"afd-bench-web-{os.getpid()}"
    subprocess.run(["tmux", "-L", server, "-f", "/dev/null", "start-server", ";", "set-option", "-g", "exit-empty", "off"], check=True)
    daemon = subprocess.Popen([sys.executable, "-m", "afd", "run", "-L", server], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-sync",
                 "--disable-background-networking", "--disable-component-update", "--window-size=1500,1000",
                 f"--user-data-dir={work / 'chromium'}"):  # fmt: skip
        options.add_argument(flag)
    driver = None
    try:
        login = None
        for _ in range(100):
            out = subprocess.run([sys.executable, "-m", "afd", "web", "--json"], env=env, capture_output=True, text=True)
            if out.returncode == 0:
                login = json.loads(out.stdout)["login_url"]
                break
            time.sleep(0.2)
        if login is None:
            raise RuntimeError("the bench's daemon did not serve the dashboard")
        driver = webdriver.Chrome(service=Service(driver_path), options=options)
        count = f"return document.querySelectorAll('#sessions tbody tr').length === {sessions};"
        t = time.perf_counter()
        driver.get(login)
        while not driver.execute_script(count):
            time.sleep(0.005)
        load = time.perf_counter() - t
        # Again, logged in and warm: what opening the page costs once chromium has started.
        driver.execute_script("window.benchOldPage = true; location.reload();")
        t = time.perf_counter()
        while not driver.execute_script("return !window.benchOldPage && " + count[len("return "):]):
            time.sleep(0.005)
        reload = time.perf_counter() - t
        timing = driver.execute_script(
            "const n = performance.getEntriesByType('navigation')[0];"
            "const s = performance.getEntriesByType('resource').find(e => e.name.endsWith('/api/status'));"
            "return {dom: n.domContentLoadedEventEnd, status: s ? s.duration : null};")
        refreshes = []
        for _ in range(repeat):
            refreshes.append(driver.execute_async_script(
                "const done = arguments[0]; const t = performance.now();"
                "setTimeout(() => refresh().then(() => done(performance.now() - t)), 600);") - 600)  # past the status cache
        return {
            "measured": True, "sessions": sessions,
            "page_load_ms": round(load * 1000, 1),
            "page_reload_ms": round(reload * 1000, 1),
            "reload_dom_ready_ms": round(timing["dom"], 1),
            "reload_status_fetch_ms": round(timing["status"], 1) if timing["status"] is not None else None,
            "refresh_ms_median": round(statistics.median(refreshes), 1),
        }  # fmt: skip
    finally:
        if driver is not None:
            driver.quit()
        daemon.terminate()
        daemon.wait(timeout=20)
        subprocess.run(["tmux", "-L", server, "kill-server"], capture_output=True, timeout=10)
        Path(os.environ.get("TMUX_TMPDIR", "/tmp"), f"tmux-{os.getuid()}", server).unlink(missing_ok=True)


# --- the run ----------------------------------------------------------------


PARTS = {
    "poll": "CPU per poll against the baselines: idle at each --panes count up to 200, 10 % working, scrollback",
    "daemon": "afd run at 100 idle panes: share of one core and memory",
    "panes500": "the largest --panes count (over 200): a poll there against one at 100, and a wall found among them",
    "memory500": "afd run at the largest --panes count: memory over --daemon-seconds, flat or not",
    "detection": "detectors and gates on one capture, without tmux",
    "status": "afd status --json and afd status --tmux at 200 sessions beside python -c 'import afd'",
    "latency": "action latency: a resume, a handoff and a job's envelope among busy panes",
    "dashboard": "the dashboard at 200 sessions, in headless chromium",
    "connections": "afd run at 100 idle panes: its poll with 1,100 idle connections to the dashboard against without, and a wall found",
    "usage": "afd statusline per call against python -c pass; afd's poll at 100 idle panes with usage figures coming in",
    "fleet": "the limit map's merge with 3 hosts' facts; a pull over a loopback sshd, first and multiplexed",
}


def fleet_cost(work: Path, repeat: int) -> dict:
    """What the fleet costs: merging 3 hosts' facts into a map of 20 accounts (each time the map is read), and one
    pull over a real sshd on loopback (the first opens the connection and accepts the host key; the rest are
    sessions on the multiplexed one). The pulls run on the daemon's worker, never in the poll."""
    import socket

    from afd.daemon import fleet
    from afd.judge.fleet import PeerFacts, merged
    from afd.record.types import LimitFact, LimitState
    from afd.world.ssh import ensure_key

    now = datetime.now(timezone.utc)
    accounts = [f"acct{i}" for i in range(20)]
    here = {a: LimitFact("claude", LimitState.AVAILABLE, None, now, "s", account=a) for a in accounts}
    peers = [PeerFacts(f"h{j}", {a: LimitFact("claude", LimitState.LIMITED, now + timedelta(hours=1), now, "s", account=a)
                                 for a in accounts}, now) for j in range(3)]
    shared = {a: "claude" for a in accounts}
    n = 2000
    started = time.perf_counter()
    for _ in range(n):
        merged(here, peers, shared, now)
    out: dict = {"merge_us": round((time.perf_counter() - started) / n * 1e6, 1)}
    sshd = shutil.which("sshd") or "/usr/sbin/sshd"
    if not os.path.exists(sshd):
        out["pull"] = "skipped: no sshd (openssh-server)"
        return out
    base = Path(tempfile.mkdtemp(prefix="afd-fl-", dir="/tmp"))
    env_before = dict(os.environ)
    for key, sub in (("HOME", "home"), ("XDG_CONFIG_HOME", "cfg"), ("XDG_STATE_HOME", "st"), ("XDG_RUNTIME_DIR", "run")):
        (base / sub).mkdir(mode=0o700)
        os.environ[key] = str(base / sub)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(base / "hk")], check=True)
    public = ensure_key(fleet.key_path())
    remote = (f"env HOME={base / 'home'} XDG_CONFIG_HOME={base / 'cfg'} XDG_STATE_HOME={base / 'st'} "
              f"{shlex.quote(sys.executable)} -m afd remote")
    (base / "ak").write_text(f'command="{remote}",restrict {public}\n')
    (base / "sshd_config").write_text("\n".join([
        f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {base / 'hk'}", f"AuthorizedKeysFile {base / 'ak'}",
        f"PidFile {base / 'pid'}", "StrictModes no", "UsePAM no", "PasswordAuthentication no", ""]))
    if os.getuid() == 0:
        Path("/run/sshd").mkdir(exist_ok=True)
    proc = subprocess.Popen([sshd, "-D", "-f", str(base / "sshd_config"), "-E", str(base / "log")])
    transport = fleet.transport(10.0)
    dest = f"{os.environ.get('USER') or 'root'}@127.0.0.1"
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        times = []
        for _ in range(repeat + 1):
            started = time.perf_counter()
            pull = fleet.ask(transport, "b", dest, port)
            times.append(time.perf_counter() - started)
            if pull.answer is None:
                out["pull"] = f"failed: {pull.problem}"
                return out
        out["pull_first_ms"] = round(times[0] * 1000)
        out["pull_multiplexed_ms"] = round(statistics.median(times[1:]) * 1000)
    finally:
        transport.stop(dest, port)
        proc.terminate()
        proc.wait()
        os.environ.clear()
        os.environ.update(env_before)
        shutil.rmtree(base, ignore_errors=True)
    return out


def afd_window(seconds: float) -> float:
    """afd's window: whole periods of its slowest routine work (the backstop capture of unchanged panes,
    and the identity walk), so every window holds the same share of it: a 5 s window held a capture of
    every pane or none, by chance, and so did each side of a ratio."""
    period = max(REWALK_EVERY, MAX_CAPTURE_AGE)
    return math.ceil(max(seconds, period) / period) * period


def run(args: argparse.Namespace, say: Callable[[str], None]) -> dict:
    work = Path(tempfile.mkdtemp(prefix="afd-bench-"))
    (work / "state").mkdir()
    (work / "status").mkdir()
    bench = Bench(work, args.interval)
    parts = args.only
    large = max(args.panes) if max(args.panes) > 200 and parts & {"panes500", "memory500"} else None
    counts = sorted({n for n in args.panes if n != large} if "poll" in parts else set())
    if "daemon" in parts or "connections" in parts or "usage" in parts or ("panes500" in parts and large is not None):
        counts = sorted({*counts, 100})
    if large is not None:
        counts.append(large)
    window = afd_window(args.seconds)
    result: dict = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": {"cores": os.cpu_count(), "python": platform.python_version(),
                    "tmux": subprocess.run(["tmux", "-V"], capture_output=True, text=True).stdout.strip()},
        "settings": {"seconds_per_window": args.seconds, "afd_seconds_per_window": window, "poll_interval_s": args.interval, "daemon_seconds": args.daemon_seconds,
                     "parts": sorted(parts)},
        "scenarios": {}, "settle": {},
    }  # fmt: skip
    sup = None
    try:
        def unseen() -> int:
            # A poll that failed to capture is cheap and wrong: count what afd could not see.
            return sum(1 for r in sup.store.list_sessions() if r.state == "unknown") if sup is not None else 0

        def scenario(label: str, approaches: dict[str, Callable[[], None]], extra=None) -> None:
            say(f"{label}: {len(bench.panes)} panes")
            costs = {}
            for name, poll in approaches.items():
                # afd's window holds whole periods of its routine captures and walks; the others have none.
                costs[name] = measure(poll, window if name == "afd" else args.seconds, args.interval, bench.server,
                                      extra if name == "control" else None)  # fmt: skip
                say(f"  {name:8} {costs[name].cpu_ms:8.2f} ms CPU/poll")
            result["scenarios"][label] = {"panes": len(bench.panes), **{k: v.as_json() for k, v in costs.items()}}
            if sup is not None:
                result["scenarios"][label]["afd_unanswered_sessions"] = missed = unseen()
                if missed:
                    say(f"  afd could not capture {missed} sessions' panes: its figure here is not a working poll")

        def steady(label: str, working: frozenset[str] = frozenset()) -> None:
            result["settle"][label] = done = settle(sup, bench, working)
            say(f"  settled in {done['polls']} polls, {done['seconds']:g} s" if done["settled"] else
                f"  NOT settled after {done['polls']} polls, {done['seconds']:g} s: {done['why']}")  # fmt: skip

        common = {"naive": bench.naive(), "minimal": bench.minimal(), "bare": bench.bare()}
        for n in counts:
            bench.grow(n)
            sup = sup or supervisor(work, bench)
            steady(f"idle_{n}")
            if n == large:
                if "panes500" in parts:
                    # The naive poller needs more than a poll interval per poll past 200 panes; (b) and bare are the yardsticks.
                    scenario(f"idle_{n}", {"afd": sup.poll, "minimal": common["minimal"], "bare": common["bare"]})
                    result["panes500"] = {"panes": n, "window_s": window, "afd_500": result["scenarios"][f"idle_{n}"]["afd"],
                                          **result.get("panes500", {})}  # fmt: skip
                    say(f"a wall among {n} panes")
                    result["wall_found"] = wall_found_within(sup, bench)
                if "memory500" in parts:
                    say(f"afd run at {n} idle panes, default poll interval, {args.daemon_seconds:g} s")
                    result["daemon_large"] = daemon_run(bench, work, args.daemon_seconds, memory_sample_every(args.daemon_seconds))
                continue
            if "poll" in parts:
                approaches = {"afd": sup.poll, **(common if n <= 200 else {k: common[k] for k in ("minimal", "bare")})}
                control = None
                if n == 100:
                    control = Control(bench)
                    approaches["control"] = control.poll
                scenario(f"idle_{n}", approaches, control.ps if control else None)
                if control is not None:
                    result["control_mode"] = control.close()
            if n != 100:
                continue
            if "panes500" in parts and large is not None:
                if "poll" in parts:
                    result["panes500"] = {"afd_100": result["scenarios"]["idle_100"]["afd"]}
                else:
                    say(f"afd at 100 idle panes for {window:g} s, one half of the {large}-against-100 pair")
                    result["panes500"] = {"afd_100": measure(sup.poll, window, args.interval, bench.server).as_json(),
                                          "afd_100_unanswered_sessions": unseen()}  # fmt: skip
            if "poll" in parts:
                workers = bench.panes[:10]
                bench.tell(workers, "work")
                time.sleep(1.2)
                steady("working_10pct_of_100", frozenset(workers))
                scenario("working_10pct_of_100", {"afd": sup.poll, **common})
                bench.tell(workers, "idle")
                bench.grow(100)
            if "usage" in parts:
                say("afd's poll at 100 idle panes: usage figures off, then coming in for 3 accounts every second")
                result["usage_poll"] = usage_poll(sup, bench, work, window)
                say(f"  off {result['usage_poll']['off']['cpu_ms']:.2f} ms, on {result['usage_poll']['on']['cpu_ms']:.2f} ms CPU/poll")
            if "connections" in parts:
                window_s = afd_window(max(args.seconds, 120.0))  # whole periods of afd's routine work
                say(f"afd run at 100 idle panes, {CONNECTIONS_POLL:g} s a poll, {CONNECTIONS_ROUNDS} rounds of {window_s:g} s without and with "
                    f"{IDLE_CONNECTIONS} idle connections to the dashboard")
                result["connections"] = connections_load(bench, work, window_s, say)
            if "daemon" in parts:
                say("afd run at 100 idle panes, default poll interval")
                result["daemon"] = daemon_run(bench, work, args.daemon_seconds, memory_sample_every(args.daemon_seconds))
            if "poll" in parts:
                bench.tell(bench.panes, "scroll")
                bench.grow(100)
                steady("idle_100_scrollback")
                history = bench.tmux("display-message", "-p", "-t", bench.panes[0], "#{history_size}").strip()
                scenario("idle_100_scrollback", {"afd": sup.poll, "minimal": common["minimal"]})
                result["scenarios"]["idle_100_scrollback"]["history_lines"] = int(history or 0)
                for pane in bench.panes:  # the larger counts compare plain panes with plain panes
                    bench.tmux("clear-history", "-t", pane)
    finally:
        if sup is not None:
            sup.store.close()
        bench.tmux("kill-server", check=False)
        Path(os.environ.get("TMUX_TMPDIR", "/tmp"), f"tmux-{os.getuid()}", bench.name).unlink(missing_ok=True)

    if "detection" in parts:
        say("detection throughput")
        screen = "\n".join(capture_rows(subprocess.run(["bash", str(bench.bin / "claude"), "bench pane 0"], capture_output=True,
                                                       text=True, stdin=subprocess.DEVNULL).stdout.replace("\033[H\033[2J", "")))  # fmt: skip
        result["detection"] = detection_throughput(screen, 1.0 if args.quick else 3.0)
    if "usage" in parts:
        say("afd statusline per call")
        result["statusline"] = statusline_cost(work, 10 if args.quick else 30)
    if "fleet" in parts:
        say("the fleet: the limit map's merge, and a pull over a loopback sshd")
        result["fleet"] = fleet_cost(work, 5 if args.quick else 10)
    if "status" in parts:
        say("afd status latency")
        result["status"] = status_latency(work / "status", 200, 1000, 5)
    if "latency" in parts:
        say(f"action latency: a resume, a handoff and a job's envelope among {args.busy} busy panes (afd run, default poll interval)")
        result["action_latency"] = action_latency(args.busy, Config().poll_interval, 240, say)
    if "dashboard" in parts:
        say("the dashboard at 200 sessions: page load and one refresh")
        if "status" not in parts:
            status_state(work / "status", 200, 1000)
        result["dashboard"] = dashboard_latency(work / "status", 200, 3 if args.quick else 7)
    shutil.rmtree(work, ignore_errors=True)
    result["ratios"] = ratios(result)
    return result


def memory_sample_every(seconds: float) -> float:
    """A resident-memory sample every 5 s over ten minutes (120), more often over a short window."""
    return max(1.0, min(5.0, seconds / 40))


def ratios(result: dict) -> dict:
    s = result["scenarios"]
    out: dict = {}

    def cpu(label: str, who: str) -> float | None:
        return s.get(label, {}).get(who, {}).get("cpu_ms")

    for label in s:
        afd = cpu(label, "afd")
        for other in ("naive", "minimal", "bare", "control"):
            if afd and cpu(label, other):
                out[f"{label}.afd_over_{other}"] = round(afd / cpu(label, other), 3)
    pair = result.get("panes500", {})
    if pair.get("afd_100", {}).get("cpu_ms") and pair.get("afd_500", {}).get("cpu_ms"):
        # Both sides over the same whole periods of afd's routine work, both settled (see afd_window).
        out["idle_500_over_idle_100.afd"] = round(pair["afd_500"]["cpu_ms"] / pair["afd_100"]["cpu_ms"], 3)
    if cpu("idle_100", "afd") and cpu("idle_200", "afd"):
        out["idle_200_over_idle_100.afd"] = round(cpu("idle_200", "afd") / cpu("idle_100", "afd"), 3)
    if cpu("idle_100", "afd") and cpu("idle_100_scrollback", "afd"):
        out["scrollback_over_plain.afd"] = round(cpu("idle_100_scrollback", "afd") / cpu("idle_100", "afd"), 3)
    if cpu("idle_100", "control") and cpu("idle_100", "minimal"):
        out["idle_100.control_over_minimal"] = round(cpu("idle_100", "control") / cpu("idle_100", "minimal"), 3)
    return out


def targets(result: dict) -> list[dict]:
    """Every figure the bench has a target for, measured or not (value and met None: not measured in this run)."""
    r, cfg = result["ratios"], Config()
    big = result.get("daemon_large") or {}
    wall, st, act = result.get("wall_found") or {}, result.get("status") or {}, result.get("action_latency") or {}
    panes = (result.get("panes500") or {}).get("panes") or big.get("panes") or 500
    bound = round(act.get("poll_interval_s", cfg.poll_interval) + 1, 3)
    busy = act.get("busy_panes", 100)
    rows = [
        ("100 idle panes: afd + tmux server vs minimal poller (b)", "idle_100.afd_over_minimal", "≤", 0.8),
        ("100 idle panes: afd + tmux server vs minimal poller (b), the aim", "idle_100.afd_over_minimal", "≤", 0.6),
        ("100 idle panes: afd + tmux server vs one bare list-panes", "idle_100.afd_over_bare", "≤", 1.5),
        ("10 % working: afd vs minimal poller (b)", "working_10pct_of_100.afd_over_minimal", "≤", 1.0),
        ("10 % working: afd vs naive (a)", "working_10pct_of_100.afd_over_naive", "≤", 0.1),
        ("linear: 200 panes vs 100 panes", "idle_200_over_idle_100.afd", "≤", 2.3),
        ("10,000 lines of scrollback vs none", "scrollback_over_plain.afd", "≤", 1.2),
        (f"{panes} idle panes vs 100: afd's poll, both settled", "idle_500_over_idle_100.afd", "≤", 5.5),
    ]
    out = [{"target": what, "key": f"ratios.{key}", "value": r.get(key), "limit": (op, limit)} for what, key, op, limit in rows]

    def row(what: str, key: str, op: str, limit: float) -> None:
        value: object = result
        for part in key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        out.append({"target": what, "key": key, "value": value, "limit": (op, limit)})

    row(f"a wall among {panes} panes: polls from its showing until limited", "wall_found.polls", "≤",
        wall.get("stability_polls", cfg.stability_polls) + 1)
    row("afd run, 100 idle panes, default interval: share of one core (%)", "daemon.afd_core_percent", "<", 1)
    row("afd run, 100 idle panes: resident memory, last sample (MiB)", "daemon.rss_mib_last", "<", 60)
    row(f"afd run, {panes} idle panes: resident memory, max over {big.get('seconds', '–')} s (MiB)", "daemon_large.rss_mib_max", "<", 80)
    row(f"afd run, {panes} idle panes: flat, the second half's max over the first half's (MiB)",
        "daemon_large.rss_mib_second_half_over_first_max", "≤", 1)
    row("afd statusline (own line) vs python -c pass, per call", "statusline.own_line_vs_python_pass.ratio_median", "≤", 2.0)
    row("afd's poll at 100 idle panes: usage figures coming in vs none", "usage_poll.on_over_off", "≤", 1.1)
    for side in ("daemon_down", "daemon_up"):
        row(f"afd status --json, {st.get('sessions', 200)} sessions, {st.get('events', 1000)} events, {side.replace('_', ' ')}: "
            "vs python -c 'import afd'", f"status.{side}.ratio_median", "≤", 1.5)  # fmt: skip
    for side in ("daemon_down", "daemon_up"):
        row(f"afd status --tmux (tmux's status-right), {st.get('sessions', 200)} sessions, {side.replace('_', ' ')}: "
            "vs python -c 'import afd'", f"status.tmux_{side}.ratio_median", "≤", 1.5)  # fmt: skip
    row("afd run, 100 idle panes: poll p99 with 1,100 idle dashboard connections over without", "connections.p99_with_over_without", "≤", 1.2)
    # On time: within two polls of the time the same wall took without the connections.
    alone = (result.get("connections") or {}).get("wall_found_s_without_max")
    row("afd run, 100 idle panes, 1,100 idle dashboard connections: seconds until a wall is limited (the slowest)",
        "connections.wall_found_s_with_max", "≤",
        (alone if alone is not None else 0.0) + 2 * CONNECTIONS_POLL)
    row(f"dashboard, {(result.get('dashboard') or {}).get('sessions', 200)} sessions: GET /api/status in a page reload (ms)",
        "dashboard.reload_status_fetch_ms", "<", 50)
    for key, what in (("resume_s", "resume: reset + grace → continuation pasted (s)"),
                      ("handoff_s", "handoff: wall stable → old agent gone, new one launched (s)"),
                      ("envelope_s", "job's envelope: the job's wall stable → envelope typed and entered (s)")):
        row(f"{what}, {busy} busy panes", f"action_latency.{key}", "≤", bound)
    for o in out:
        (op, limit), value = o["limit"], o["value"]
        o["limit"] = f"{op} {limit:g}"
        o["met"] = None if value is None else bool(value <= limit if op == "≤" else value < limit)
        if o["key"] == "wall_found.polls" and wall and value is None:
            o["met"] = False  # looked for, and not found within the polls it was given
    return out


def render(result: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    m = result["machine"]
    console.print(f"afd benchmark {result['date']} · {m['cores']} cores · {m['tmux']} · Python {m['python']} · "
                  f"{result['settings']['seconds_per_window']:g} s a window (afd's: "
                  f"{result['settings'].get('afd_seconds_per_window', result['settings']['seconds_per_window']):g} s) "
                  f"at {result['settings']['poll_interval_s']:g} s a poll")  # fmt: skip
    table = Table(title="CPU per poll (ms): this process + the tmux clients it starts + the tmux server")
    for col in ("scenario", "panes", "afd", "naive (a)", "minimal (b)", "bare list", "-C", "afd/(b)", "afd/(a)", "afd/bare", "afd wall"):
        table.add_column(col, justify="left" if col == "scenario" else "right")
    for label, sc in result["scenarios"].items():
        def c(k: str, sc: dict = sc) -> str:
            return f"{sc[k]['cpu_ms']:.2f}" if k in sc else "–"

        def r(k: str, label: str = label) -> str:
            v = result["ratios"].get(f"{label}.afd_over_{k}")
            return f"{v:.2f}×" if v is not None else "–"

        afd = c("afd") + (" !" if sc.get("afd_unanswered_sessions") else "")
        table.add_row(label, str(sc["panes"]), afd, c("naive"), c("minimal"), c("bare"), c("control"),
                      r("minimal"), r("naive"), r("bare"), f"{sc['afd']['wall_ms']:.1f}")  # fmt: skip
    console.print(table)
    if any(sc.get("afd_unanswered_sessions") for sc in result["scenarios"].values()):
        console.print("! afd could not capture some panes in this scenario (see afd_unanswered_sessions in --json)")
    t = Table(title="Targets")
    for col in ("target", "value", "limit", "met"):
        t.add_column(col)
    for row in targets(result):
        met = {True: "[green]yes[/]", False: "[red]no[/]", None: "not measured"}[row["met"]]
        t.add_row(row["target"], "–" if row["value"] is None else f"{row['value']}", row["limit"], met)
    console.print(t)
    unsettled = {k: v for k, v in result.get("settle", {}).items() if not v["settled"]}
    for label, v in unsettled.items():
        console.print(f"! afd had not settled before {label} after {v['polls']} polls ({v['why']}): that window measures adopting too")
    other = Table(title="Other figures")
    other.add_column("figure")
    other.add_column("value", justify="right")
    d = result.get("daemon")
    if d:
        other.add_row("afd run: tmux server's share of one core (%)", f"{d['tmux_server_core_percent']}")
        other.add_row(f"afd run: RSS first / last / max over {d['seconds']:g} s (MiB)", f"{d['rss_mib_first']} / {d['rss_mib_last']} / {d['rss_mib_max']}")
    for label, v in result.get("detection", {}).items():
        other.add_row(f"detection + gates, {v['rows']}-row {label.replace('_', ' ')} (captures/s)", f"{v['captures_per_s']:,}")
    s = result.get("status", {})
    for side in ("daemon_down", "daemon_up"):
        if side in s:
            v = s[side]
            other.add_row(f"afd status --json, {side.replace('_', ' ')} (ms; python -c 'import afd' beside it)",
                          f"{v['afd_ms_median']} vs {v['import_afd_ms_median']}")  # fmt: skip
    if "answer_ms_median" in s.get("daemon_up", {}):
        other.add_row("status over the control socket from a running process (ms)", f"{s['daemon_up']['answer_ms_median']}")
    fl = result.get("fleet")
    if fl:
        other.add_row("fleet: the limit map's merge, 20 accounts × 3 hosts (µs per read)", f"{fl['merge_us']}")
        if "pull_first_ms" in fl:
            other.add_row("fleet: one pull over loopback ssh, first / multiplexed (ms; on the worker, not the poll)",
                          f"{fl['pull_first_ms']} / {fl['pull_multiplexed_ms']}")
        elif "pull" in fl:
            other.add_row("fleet: one pull over loopback ssh", fl["pull"])
    sl = result.get("statusline")
    if sl:
        v, w = sl["own_line_vs_python_pass"], sl["wrapping_vs_the_users_command"]
        other.add_row("afd statusline per call, own line (ms; python -c pass beside it)", f"{v['afd_ms_median']} vs {v['other_ms_median']}")
        other.add_row("afd statusline wrapping a user's command (ms; the command alone beside it)",
                      f"{w['afd_ms_median']} vs {w['other_ms_median']} ({w['ratio_median']}×)")
    u = result.get("usage_poll")
    if u:
        other.add_row(f"afd's poll at {u['panes']} idle panes, usage off / on for {u['accounts']} accounts (CPU ms)",
                      f"{u['off']['cpu_ms']} / {u['on']['cpu_ms']} ({u['on_over_off']}×)")
    p = result.get("panes500")
    if p and "afd_500" in p:
        other.add_row(f"afd's poll, 100 vs {p['panes']} idle panes, {p['window_s']:g} s each (CPU ms; wall ms)",
                      f"{p['afd_100']['cpu_ms']} vs {p['afd_500']['cpu_ms']}; {p['afd_100']['wall_ms']} vs {p['afd_500']['wall_ms']}")
    d = result.get("daemon_large")
    if d:
        other.add_row(f"afd run, {d.get('panes', '')} idle panes: share of one core (%); tmux server's (%)",
                      f"{d['afd_core_percent']}; {d['tmux_server_core_percent']}")
        other.add_row(f"afd run, {d.get('panes', '')} idle panes over {d['seconds']:g} s: RSS first / last / max (MiB); slope over the second half (MiB/h)",
                      f"{d['rss_mib_first']} / {d['rss_mib_last']} / {d['rss_mib_max']}; {d.get('rss_mib_per_hour_second_half')}")
    w = result.get("dashboard")
    if w and w["measured"]:
        other.add_row(f"dashboard, {w['sessions']} sessions: first load through the login to every row drawn (ms)", f"{w['page_load_ms']}")
        other.add_row(f"dashboard, {w['sessions']} sessions: reload to every row drawn (ms; DOM ready {w['reload_dom_ready_ms']}, "
                      f"/api/status {w['reload_status_fetch_ms']})", f"{w['page_reload_ms']}")
        other.add_row(f"dashboard, {w['sessions']} sessions: one refresh, /api/status and re-render (ms)", f"{w['refresh_ms_median']}")
    elif w:
        other.add_row("dashboard", "not measured: " + w["why"])
    if "control_mode" in result:
        cm = result["control_mode"]
        other.add_row("-C client: attached clients before → while", f"{cm['before']['clients']} → {cm['while_attached']['clients']}")
        other.add_row("-C client: client-attached hook fired", str(cm["while_attached"]["client_attached_hook_fired"]))
        other.add_row("-C client: window size before → while", f"{cm['before']['window_size']} → {cm['while_attached']['window_size']}")
    a = result.get("action_latency", {})
    if a.get("measured"):
        for key in ("handoff_old_gone_s", "handoff_new_agent_startup_s", "envelope_pasted_s"):
            if key in a:
                other.add_row(f"action latency: {key.replace('_', ' ')}", f"{a[key]}")
        if "envelope_due" in a:
            other.add_row("action latency: the envelope was due at", a["envelope_due"])
    if a.get("why"):
        other.add_row("action latency", ("partly measured: " if a.get("measured") else "not measured: ") + a["why"])
    c = result.get("connections")
    if c and c.get("measured"):
        for side in ("without", "with"):
            v = c[side]
            other.add_row(f"afd run, {c['panes']} panes, {side} {c['idle_connections']} idle dashboard connections: poll p99 / median / max (ms); "
                          "polls; share of a core (%); afd status (ms); descriptors max",
                          f"{v['p99_ms']} / {v['median_ms']} / {v['max_ms']}; {v['polls']}; {v['core_percent']}; {v['status_ms']}; {v['fds_max']}")  # fmt: skip
    elif c:
        other.add_row("dashboard connections", "not measured: " + c["why"])
    console.print(other)


def parts_of(text: str) -> set[str]:
    parts = {p.strip() for p in text.split(",") if p.strip()}
    if unknown := parts - set(PARTS):
        raise argparse.ArgumentTypeError(f"unknown part {', '.join(sorted(unknown))} (known: {', '.join(PARTS)})")
    return parts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="short windows (5 s; afd's 60 s, whole periods of its routine work; afd run for 60 s): every figure, noisier")
    parser.add_argument("--seconds", type=float, help="length of each measured window (default 30; 5 with --quick)")
    parser.add_argument("--interval", type=float, default=1.0, help="poll interval of the comparisons, in seconds (default 1)")
    parser.add_argument("--daemon-seconds", type=float, help="how long `afd run` is watched for CPU share and memory (default 600; 60 with --quick)")
    parser.add_argument("--panes", type=lambda s: [int(x) for x in s.split(",")], default=[10, 50, 100, 200, 500],
                        help="pane counts of the idle scenarios, comma-separated (default 10,50,100,200,500)")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print every figure as one JSON object instead of tables")
    parser.add_argument("--show", metavar="FILE", help="print the tables of an earlier --json run, and measure nothing")
    parser.add_argument("--profile", action="store_true",
                        help="print a cProfile of `afd status --json` (200 sessions, 1,000 events, daemon down), and measure nothing else")  # fmt: skip
    parser.add_argument("--only", metavar="PARTS", type=parts_of, default=set(PARTS),
                        help="measure only these parts, comma-separated: " + "; ".join(f"{k}: {v}" for k, v in PARTS.items()).replace("%", "%%"))  # fmt: skip
    parser.add_argument("--no-actions", dest="actions", action="store_false",
                        help="leave out the action latency run (the same as leaving 'latency' out of --only)")  # fmt: skip
    parser.add_argument("--busy", type=int, default=100, help="busy panes around the action latency's agents (default 100)")
    args = parser.parse_args()
    if not args.actions:
        args.only.discard("latency")
    if args.show:
        render(json.loads(Path(args.show).read_text()))
        return 0
    if args.profile:
        work = Path(tempfile.mkdtemp(prefix="afd-bench-"))
        try:
            print(profile_status(work, 200, 1000))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return 0
    args.seconds = args.seconds or (5.0 if args.quick else 30.0)
    args.daemon_seconds = args.daemon_seconds or (60.0 if args.quick else 600.0)
    args.panes = sorted(set(args.panes))
    if shutil.which("tmux") is None:
        print("bench: tmux is not installed", file=sys.stderr)
        return 2
    if importlib.util.find_spec("libtmux") is None:
        print("bench: the naive baseline needs libtmux (not an afd dependency): .venv/bin/python -m pip install libtmux",
              file=sys.stderr)  # fmt: skip
        return 3
    result = run(args, say=lambda line: print(line, file=sys.stderr, flush=True))
    result["targets"] = targets(result)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        render(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
