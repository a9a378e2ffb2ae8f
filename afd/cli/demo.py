"""`afd demo`: both ways of acting on a limit, live, on fake agents, touching none of your state.

Everything lives in one throwaway directory: a private tmux server, a git
repository with two worktrees, afd's own state, config and control socket,
and the fake `claude` and `codex` (the test suite's stand-ins, which draw the
real CLIs' screens and walls). One session runs codex, which hits its wall
with a reset a few seconds away and is resumed after it; the other runs
claude, which hits its wall and is handed to codex in the same pane.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from afd.errors import EXIT_FAIL, EXIT_OK, EXIT_USAGE, UserError

RESUME_SESSION, HANDOFF_SESSION = "resume-demo", "handoff-demo"
CONFIG = """\
poll_interval = "250ms"
limit_action = "handoff"
handoff_order = ["codex"]
limit_auto_resume = true
resume_grace = "2s"
handoff_stop_timeout = "2s"
"""
SCENARIOS = {
    # codex's wall comes a few seconds in and lifts 8 s later: afd resumes it after the stated reset.
    RESUME_SESSION: {"agents": {"codex": {"limit_after_seconds": 6, "banner_params": {"reset": "10 seconds"}, "limit_lasts_seconds": 8}}},
    # claude's wall comes after its first piece of work, hours long: afd hands the work to codex.
    HANDOFF_SESSION: {"agents": {"claude": {"limit_after_prompts": 1, "records": "agree"}}},
}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="watch afd resume one agent and hand another's work over, on fake agents (about a minute)",
        description="Start a private tmux server, a throwaway git repository and a private afd (its own state, "
        "config and socket) with automatic resume and handoff on; show one session resumed after its reset and "
        "one handed from claude to codex, live. Needs only tmux and git; touches none of your state or tmux servers.",
    )
    p.add_argument("--keep", action="store_true", help="leave the demo running at the end and print how to attach and stop it")
    p.add_argument("--timeout", type=float, default=150.0, metavar="SECONDS", help="give up after this long (default 150)")
    p.add_argument("--web", action="store_true",
                   help="also show it in the dashboard, on a free loopback port of its own; prints the login address")
    p.set_defaults(func=run)


class Demo:
    def __init__(self, root: Path, web: bool = False):
        self.root = root
        self.web_port = _free_port() if web else None
        self.socket = f"afd-demo-{secrets.token_hex(4)}"
        self.bin = root / "bin"
        self.logs = root / "logs"
        self.env = {
            **{k: v for k, v in os.environ.items() if k != "TMUX"},
            "XDG_CONFIG_HOME": str(root / "cfg"),
            "XDG_STATE_HOME": str(root / "state"),
            "XDG_DATA_HOME": str(root / "data"),
            # The fakes write their session records here, as the real CLIs do, never in the user's own.
            "CLAUDE_CONFIG_DIR": str(root / "claude"),
            "CODEX_HOME": str(root / "codex"),
            "XDG_RUNTIME_DIR": str(root / "run"),
            "PATH": f"{root / 'bin'}{os.pathsep}{os.environ.get('PATH', os.defpath)}",
            "LANG": os.environ.get("LANG") or "C.UTF-8",
        }
        self.daemon: subprocess.Popen | None = None

    # --- setting up ---------------------------------------------------------

    def tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(["tmux", "-L", self.socket, *args], env=self.env, capture_output=True, text=True, check=check, timeout=10)

    def git(self, cwd: Path, *args: str) -> None:
        ident = ["-c", "user.name=afd demo", "-c", "user.email=demo@afd.invalid", "-c", "commit.gpgsign=false"]
        subprocess.run(["git", *ident, *args], cwd=cwd, env=self.env, capture_output=True, check=True, timeout=30)

    def prepare(self) -> None:
        from afd.testing.fake_agent import write_launcher

        for sub in ("cfg/afd", "state", "data", "run", "bin", "logs"):
            (self.root / sub).mkdir(parents=True, mode=0o700, exist_ok=True)
        for agent in ("claude", "codex"):
            write_launcher(self.bin, agent, agent)
        web = f"\n[web]\nenabled = true\nport = {self.web_port}\n" if self.web_port else ""
        (self.root / "cfg" / "afd" / "config.toml").write_text(CONFIG + web, encoding="utf-8")
        for name, scenario in SCENARIOS.items():
            (self.root / f"{name}.json").write_text(json.dumps(scenario), encoding="utf-8")
        repo = self.root / "repo"
        repo.mkdir()
        self.git(repo, "init", "-q", "-b", "main")
        (repo / "README.md").write_text("# A project\n", encoding="utf-8")
        self.git(repo, "add", "README.md")
        self.git(repo, "commit", "-q", "-m", "Start")
        for name in (RESUME_SESSION, HANDOFF_SESSION):
            self.git(repo, "worktree", "add", "-q", "-b", name, str(self.root / name), "main")

    def start(self) -> None:
        self.tmux("-f", "/dev/null", "start-server", ";", "set-option", "-g", "exit-empty", "off")
        err = (self.root / "afd.log").open("wb")
        self.daemon = subprocess.Popen(
            [sys.executable, "-m", "afd", "run", "-L", self.socket, "--config", str(self.root / "cfg" / "afd" / "config.toml")],
            env=self.env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
        )
        self._wait(lambda: self.ask("status", {"events": 0}) is not None, 30, "afd to start")
        for name, agent, prompt in (
            (HANDOFF_SESSION, "claude", "Fix the login test"),
            (RESUME_SESSION, "codex", "Write the changelog"),
        ):
            env = ["-e", f"AFD_FAKE_SCENARIO={self.root / name}.json", "-e", f"AFD_FAKE_LOG={self.logs / name}.jsonl",
                   "-e", "TERM=tmux-256color"]
            self.tmux("new-session", "-d", "-s", name, "-x", "110", "-y", "30", "-c", str(self.root / name), *env,
                      shlex.join([agent, prompt]))

    # --- watching -------------------------------------------------------------

    def ask(self, cmd: str, args: dict | None = None):
        from afd.daemon import control

        try:
            return control.request(Path(self.env["XDG_RUNTIME_DIR"]) / "afd" / "control.sock", cmd, args or {}, timeout=5)
        except (control.ControlError, control.DaemonUnavailable, OSError):
            return None

    def _wait(self, ready, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            if self.daemon is not None and self.daemon.poll() is not None:
                raise UserError(f"the demo's afd stopped (see {self.root / 'afd.log'})", EXIT_FAIL)
            if time.monotonic() > deadline:
                raise UserError(f"the demo timed out waiting for {what}", EXIT_FAIL)
            time.sleep(0.2)

    def done(self, report: dict) -> bool:
        kinds = {(e["session"] or "", e["kind"]) for e in report["events"]}
        sessions = {s["location"].split(":")[0]: s for s in report["sessions"] if s.get("location")}
        handed = sessions.get(HANDOFF_SESSION)
        resumed = any(s.startswith(RESUME_SESSION) and k == "resume.confirmed" for s, k in kinds)
        return resumed and handed is not None and handed["agent"] == "codex" and handed["state"] in ("working", "idle")

    # --- ending ----------------------------------------------------------------

    def stop(self) -> None:
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGTERM)
            try:
                self.daemon.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
        self.tmux("kill-server", check=False)
        from afd.daemon.supervisor import expected_socket_path
        from afd.world.tmux import ServerRef

        leftover = expected_socket_path(ServerRef(socket_name=self.socket))
        if leftover is not None:
            Path(leftover).unlink(missing_ok=True)
        self._kill_fakes()
        shutil.rmtree(self.root, ignore_errors=True)

    def _kill_fakes(self) -> None:
        # Fakes that ignore SIGHUP would outlive their panes; their logs name them.
        import psutil

        for log in self.logs.glob("*.jsonl"):
            for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                pid = record.get("child_pid") or (record.get("pid") if record.get("event") == "start" else None)
                try:
                    proc = psutil.Process(pid) if pid else None
                    if proc is not None and str(self.bin) in " ".join(proc.cmdline()):
                        proc.kill()
                except psutil.Error:
                    pass


def _free_port() -> int:
    import socket

    # Never the user's own [web] port: their daemon may be serving there.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _view(report: dict, demo: Demo):
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from afd.cli.status_view import event_lines, next_words
    from afd.display.reader import Reader
    from afd.display.text import cell

    reader = Reader.here()  # the reader's zone, countdowns from now
    table = Table(title="sessions (afd status)", title_justify="left")
    for col in ("session", "agent", "state", "next action", "handoffs"):
        table.add_column(col)
    for s in report["sessions"]:
        table.add_row(cell(s["name"]), cell(s["agent"] or "?"), cell(s["state"]), cell(next_words(s, reader) or "-"),
                      str(s.get("handoffs", 0)))
    agents = Table(title="agents", title_justify="left")
    for col in ("agent", "state", "reset"):
        agents.add_column(col)
    for a in report["agents"]:
        if a["name"] in ("claude", "codex"):
            agents.add_row(cell(a["name"]), cell(a["state"]), cell(reader.at(a["reset_at"]) or "-"))
    events = Text("\n".join(event_lines(report["events"][-14:], reader)), no_wrap=True, overflow="ellipsis")
    return Group(table, agents, Text("events", style="bold"), events)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.live import Live

    for tool in ("tmux", "git"):
        if shutil.which(tool) is None:
            raise UserError(f"afd demo needs {tool}; install it and try again", EXIT_USAGE)
    console = Console(highlight=False)
    demo = Demo(Path(tempfile.mkdtemp(prefix="afd-demo-", dir="/tmp")), web=args.web)
    code = EXIT_FAIL
    try:
        console.print(f"afd demo: private tmux server [bold]{demo.socket}[/], everything under {demo.root}")
        demo.prepare()
        demo.start()
        assert demo.daemon is not None  # started just now
        if args.web:
            login = demo.ask("web.start")
            if login is None:
                raise UserError(f"the demo's afd did not serve the dashboard (see {demo.root / 'afd.log'})", EXIT_FAIL)
            # Plain print, flushed: a script reading the output needs this line before the live view.
            print(f"dashboard: open {login['login_url']}", flush=True)
        deadline = time.monotonic() + args.timeout
        report = demo.ask("status", {"events": 40})
        with Live(_view(report, demo), console=console, refresh_per_second=4, transient=False) as live:
            while True:
                report = demo.ask("status", {"events": 40}) or report
                live.update(_view(report, demo))
                if demo.done(report):
                    break
                if demo.daemon.poll() is not None:
                    raise UserError(f"the demo's afd stopped (see {demo.root / 'afd.log'})", EXIT_FAIL)
                if time.monotonic() > deadline:
                    raise UserError(f"the demo did not finish within {args.timeout:g}s", EXIT_FAIL)
                time.sleep(0.25)
        handed = next(s for s in report["sessions"] if s["location"].startswith(HANDOFF_SESSION))
        ledger = subprocess.run(
            [sys.executable, "-m", "afd", "ledger", handed["name"], "--markdown"], env=demo.env, capture_output=True, text=True, timeout=30
        )
        console.print(f"\n[bold]afd ledger {handed['name']} --markdown[/]")
        print(ledger.stdout, flush=True)
        console.print("[green]done:[/] one session resumed after its reset, one handed from claude to codex in the same pane.")
        code = EXIT_OK
        if args.web and not args.keep and sys.stdin.isatty():
            input("The dashboard stays up until you press Enter. ")
    finally:
        if args.keep and code == EXIT_OK:
            console.print(f"left running. Attach: tmux -L {demo.socket} attach", markup=False)
            console.print(
                f"afd's state: XDG_STATE_HOME={demo.env['XDG_STATE_HOME']} XDG_RUNTIME_DIR={demo.env['XDG_RUNTIME_DIR']} afd status",
                markup=False,
            )
            console.print(
                f"stop it: kill {demo.daemon.pid if demo.daemon else '(not started)'}; tmux -L {demo.socket} kill-server; rm -rf {demo.root}", markup=False
            )
        else:
            demo.stop()
    return code
