"""`afd demo`: both ways of acting on a limit, live, on fake agents, told as it goes, touching none of your state.

First afd waits: codex in `resume-demo` hits its wall with a reset seconds
away, and afd resumes it once the reset has passed. Then the demo edits afd's
config, as a person would, to hand off: claude in `handoff-demo` hits its
wall, an hour long, and afd hands the work to codex in the same pane. The
private world they run in is `demo_world`; what is said is `demo_story`.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from afd.errors import EXIT_FAIL, EXIT_OK, EXIT_USAGE, UserError

# Measured 2026-12-05 with `time afd demo` on a shared 2-core machine (load 7): 18.9, 19.5 and 20.3 s.
DURATION = "about 20 seconds"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help=f"watch afd resume one agent and hand another's work over, on fake agents ({DURATION})",
        description="Start a private tmux server, a throwaway git repository and a private afd (its own state, "
        "config and socket); show, in plain words as it happens, one agent resumed after its reset and one "
        f"agent's work handed from claude to codex in the same pane. Takes {DURATION}. Needs only tmux and git; "
        "touches none of your state or tmux servers.",
    )
    p.add_argument("--keep", action="store_true", help="leave the demo running at the end and print how to attach and stop it")
    p.add_argument("--timeout", type=float, default=150.0, metavar="SECONDS", help="give up after this long (default 150)")
    p.add_argument("--web", action="store_true",
                   help="also show it in the dashboard, on a free loopback port of its own; prints the login address")
    p.set_defaults(func=run)


class Story:
    """The live view: narration printed as events come, the tables kept below it."""

    def __init__(self, demo, console, live, deadline: float):
        self.demo, self.console, self.live, self.deadline = demo, console, live, deadline
        self.seen: set[tuple] = set()
        self.report: dict = {}

    def say(self, text: str, at: str | None = None) -> None:
        """One line of the story, wrapped whole under itself: nothing is cut at any width."""
        import textwrap

        from afd.cli.demo_story import Clock

        clock = Clock.here()
        prefix = f"{clock.happened(at) if at else clock.happened(clock.now.isoformat())}  "
        width = max(40, self.console.width - 1)
        lines = textwrap.fill(text, width=width, initial_indent=prefix, subsequent_indent=" " * len(prefix),
                              break_long_words=True, break_on_hyphens=False)
        self.console.print(lines, markup=False, highlight=False, soft_wrap=True)

    def poll(self) -> dict:
        """Ask afd for its status, tell each new event, redraw the tables."""
        from rich.console import Group

        from afd.cli.demo_story import Clock, limits_table, narrate, sessions_table

        self.demo.check_alive()
        if time.monotonic() > self.deadline:
            raise UserError("the demo did not finish in time (see --timeout)", EXIT_FAIL)
        self.report = self.demo.ask("status", {"events": 200}) or self.report
        clock = Clock.here()
        for event in self.report.get("events", ()):
            key = (event["at"], event.get("session"), event["kind"], event.get("message"))
            if key in self.seen:
                continue
            self.seen.add(key)
            words = narrate(event, self.report, clock)
            if words:
                self.say(words, event["at"])
        self.live.update(Group(sessions_table(self.report, clock), limits_table(self.report, clock)))
        return self.report

    def until(self, done) -> dict:
        while not done(self.poll()):
            time.sleep(0.25)
        return self.report


def _kinds(report: dict, session: str) -> set[str]:
    return {e["kind"] for e in report.get("events", ()) if (e.get("session") or "").split(":")[0] == session}


def _handed(report: dict, session: str, to: str) -> bool:
    s = next((s for s in report.get("sessions", ()) if s["name"].split(":")[0] == session), None)
    return (s is not None and s.get("agent") == to and s["state"] in ("working", "idle")
            and "session.handoff" in _kinds(report, session))


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.live import Live
    from rich.text import Text

    from afd.cli.demo_story import Clock
    from afd.cli.demo_world import (
        HANDOFF_CONFIG,
        HANDOFF_FROM,
        HANDOFF_SESSION,
        HANDOFF_TO,
        RESUME_AGENT,
        RESUME_SESSION,
        Demo,
    )

    for tool in ("tmux", "git"):
        if shutil.which(tool) is None:
            raise UserError(f"afd demo needs {tool}; install it and try again", EXIT_USAGE)
    console = Console(highlight=False)
    started = time.monotonic()
    demo = Demo(Path(tempfile.mkdtemp(prefix="afd-demo-", dir="/tmp")), web=args.web)
    code = EXIT_FAIL
    try:
        console.print(f"afd demo: private tmux server [bold]{demo.socket}[/], everything under {demo.root}; "
                      f"none of your own state is touched. It takes {DURATION}.", soft_wrap=False)
        console.print("Two fake agents stand in for the real CLIs: they draw the same screens and the same "
                      f"usage-limit walls. Times are in your zone ({Clock.here().zone_name()}).")
        demo.prepare()
        demo.start_afd()
        if args.web:
            login = demo.ask("web.start")
            if login is None:
                raise UserError(f"the demo's afd did not serve the dashboard (see {demo.root / 'afd.log'})", EXIT_FAIL)
            # Plain print, flushed: a script reading the output needs this line before the live view.
            print(f"dashboard: open {login['login_url']}", flush=True)
        with Live(Text(""), console=console, refresh_per_second=4, transient=False) as live:
            story = Story(demo, live.console, live, time.monotonic() + args.timeout)
            story.say('First, afd waits: limit_action = "wait" and limit_auto_resume = true. At a wall it '
                      "waits for the reset the wall names, then tells the same agent to go on.")
            demo.start_agent(RESUME_SESSION)
            story.until(lambda r: "resume.confirmed" in _kinds(r, RESUME_SESSION))
            story.say(f'Now the demo edits afd\'s config, as you would: limit_action = "handoff", handoff_order = '
                      f'["{HANDOFF_TO}"]. afd sees the file change and reloads it by itself.')
            reloaded = len([e for e in story.report.get("events", ()) if e["kind"] == "config.reloaded"])
            demo.write_config(HANDOFF_CONFIG)
            story.until(lambda r: len([e for e in r.get("events", ()) if e["kind"] == "config.reloaded"]) > reloaded)
            story.say(f"Second, afd hands off: when {HANDOFF_FROM} hits a wall, the work goes to {HANDOFF_TO} "
                      f"(which afd has just seen working in {RESUME_SESSION}) in the same pane.")
            demo.start_agent(HANDOFF_SESSION)
            report = story.until(lambda r: _handed(r, HANDOFF_SESSION, HANDOFF_TO))
        handed = next(s for s in report["sessions"] if s["name"].split(":")[0] == HANDOFF_SESSION)
        ledger = subprocess.run(
            [sys.executable, "-m", "afd", "ledger", handed["name"], "--markdown"], env=demo.env, capture_output=True,
            text=True, timeout=30,
        )
        console.print(f"\n[bold]afd ledger {handed['name']} --markdown[/]: what you would paste into the pull request")
        print(ledger.stdout, flush=True)
        console.print(f"[green]done[/] in {time.monotonic() - started:.0f} s: {RESUME_AGENT} in {RESUME_SESSION} "
                      f"was resumed after its reset; {HANDOFF_FROM}'s work in {HANDOFF_SESSION} went to {HANDOFF_TO} "
                      "in the same pane.")
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
            pid = demo.daemon.pid if demo.daemon is not None else "the daemon"
            console.print(
                f"stop it: kill {pid}; tmux -L {demo.socket} kill-server; rm -rf {demo.root}", markup=False
            )
        else:
            demo.stop()
    return code
