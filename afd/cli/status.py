"""`afd status` and `afd events`: what afd knows, from the daemon or, when it is down, from the store."""

from __future__ import annotations

import argparse
import sys

from afd.errors import EXIT_DAEMON_DOWN, EXIT_OK, UserError
from afd.cli.common import count


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "status",
        help="sessions, agents' limit facts and recent events",
        description="Show sessions, each agent's limit state (limited / available / unknown) and recent "
        "events. Works read-only from the store when the daemon is down (exit 3).",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object (schema in the README)")
    p.add_argument("--events", type=count, default=10, metavar="N", help="how many recent events to show (default 10)")
    p.set_defaults(func=run)

    e = sub.add_parser("events", help="recent events; --follow streams new ones", description="Print afd's recent events, one per line.")
    e.add_argument("--follow", "-f", action="store_true", help="keep printing events as they happen (needs the daemon)")
    e.add_argument("--json", action="store_true", help="one JSON object per line")
    e.add_argument("-n", type=count, default=50, metavar="N", help="how many recent events (default 50)")
    e.set_defaults(func=run_events)


def read_report(events: int) -> tuple[dict, bool]:
    """The status from the running daemon, else from the store; and whether the daemon runs."""
    from afd.daemon import control
    from afd.daemon.status import build_status
    from afd.record.store import StateLock, Store, StoreError, default_path, lock_path_for

    answering = True
    try:
        return control.request(control.socket_path(), "status", {"events": events}), True
    except control.DaemonUnavailable:
        pass
    except control.DaemonTimeout:
        # There but busy (a poll stuck on a hung tmux): show what it last stored.
        answering = False
        print("afd: the daemon did not answer in time; showing the state it last stored", file=sys.stderr)
    db = default_path()
    if not db.exists():
        return empty_report(), False
    try:
        store = Store.open_readonly(db)
    except StoreError as exc:
        raise UserError(str(exc), EXIT_DAEMON_DOWN) from None
    try:
        agents = _agent_names()
        # The daemon's lock file, not the database: a busy daemon holds it all the same.
        lock = lock_path_for(db)
        held = StateLock.is_held(lock)
        daemon = {"running": held, "pid": StateLock.holder_pid(lock) if held else None,
                  "version": store.get_meta("version"), "started_at": store.get_meta("started_at")}
        if not answering:
            daemon["answering"] = False
        return build_status(store, agents, daemon, events), held
    finally:
        store.close()


def empty_report() -> dict:
    """The report when afd has never run: every agent unknown, nothing else."""
    from afd.daemon.status import SCHEMA

    return {
        "schema": SCHEMA,
        "daemon": {"running": False, "pid": None, "version": None, "started_at": None},
        "sessions": [],
        "agents": [
            {"name": n, "state": "unknown", "reset_at": None, "observed_at": None, "source_session": None}
            for n in _agent_names()
        ],
        "events": [],
        "no_state": True,
    }


def _agent_names() -> list[str]:
    from afd.cli.common import load_effective

    try:
        _config, plugins = load_effective(None)
    except UserError as exc:
        print(f"afd: warning: {exc}", file=sys.stderr)
        from afd.config.loader import load_plugins

        plugins = load_plugins(None)
    return sorted(plugins.agents)


def run(args: argparse.Namespace) -> int:
    report, running = read_report(args.events)
    render(report, args.json)
    return EXIT_OK if running else EXIT_DAEMON_DOWN


def _next_words(session: dict) -> str | None:
    """The next action in the reader's zone with a countdown (JSON keeps ISO UTC)."""
    from datetime import datetime, timezone

    from afd.decide.nextaction import words
    from afd.kit.resettime import local_zone

    if session.get("next") is None:
        return session.get("next_action")
    return words(session["next"], now=datetime.now(timezone.utc), zone=local_zone())


_STATE_STYLE = {"all_limited": "bold red", "handing_off": "bold yellow", "resuming": "bold yellow", "needs_human": "bold red", "limited": "bold red", "working": "green", "idle": "cyan", "exited": "yellow", "gone": "dim", "unknown": "magenta", "available": "green"}


def render(report: dict, as_json: bool, once: bool = False) -> None:
    if as_json:
        from afd.cli.common import print_json

        print_json(report)
        if report.get("no_state"):
            print("afd: no state yet and the daemon is not running; start it with `afd run`", file=sys.stderr)
        elif not report["daemon"].get("running") and not once:
            print("afd: the daemon is not running; this is the state it last stored", file=sys.stderr)
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(highlight=False, soft_wrap=True)
    d = report["daemon"]
    if once:
        pass
    elif report.get("no_state"):
        console.print("[yellow]afd has no state yet and is not running[/]; start it with `afd run`")
        return
    elif d.get("running"):
        console.print(f"afd {d.get('version')} running (pid {d.get('pid')}, since {d.get('started_at')}, tmux server: {d.get('server')})", markup=False)
    else:
        console.print("[yellow]afd is not running[/]; showing the state it last stored")

    table = Table(title="sessions", title_justify="left")
    for col in ("name", "where", "agent", "state", "witnesses", "reset", "mission", "worktree", "branch", "next action"):
        table.add_column(col)
    for s in report["sessions"]:
        agent = s["agent"] or "?"
        if s["identity_source"] == "user":
            agent += " (your word)"
        if s.get("handoffs"):
            agent += f" ⇄{s['handoffs']}"  # handed off this many times; `afd ledger NAME` shows where
        where = f"{s.get('location') or '?'} {s['pane'] or ''}".strip()
        table.add_row(
            Text(s["name"]), Text(where), Text(agent), Text(s["state"], style=_STATE_STYLE.get(s["state"], "")),
            Text(s.get("witnesses") or "-", style="yellow" if s.get("witnesses") == "disputed" else ""),
            Text(s["reset_at"] or ("not stated" if s["state"] == "limited" else "-")),
            Text("yes" if s["mission"] else "no"), Text(s["worktree"] or "-"), Text(s["branch"] or "-"),
            Text(_next_words(s) or "-"),
        )
    if report["sessions"]:
        console.print(table)
    else:
        console.print("no sessions yet (panes running a known agent are adopted automatically)")

    agents = Table(title="agents", title_justify="left")
    for col in ("agent", "state", "reset", "seen", "by session"):
        agents.add_column(col)
    for a in report["agents"]:
        agents.add_row(Text(a["name"]), Text(a["state"], style=_STATE_STYLE.get(a["state"], "")), Text(a["reset_at"] or "-"),
                       Text(a["observed_at"] or "never"), Text(a["source_session"] or "-"))
    console.print(agents)
    if report["events"]:
        console.print("[bold]recent events[/]")
        for e in report["events"]:
            console.print(f"  {e['at']}  {e['session'] or '-':<14} {e['kind']:<18} {e['message']}", markup=False)


def run_events(args: argparse.Namespace) -> int:
    import json

    from afd.daemon import control

    def show(e: dict) -> None:
        if args.json:
            print(json.dumps(e, ensure_ascii=False), flush=True)
        else:
            print(f"{e['at']}  {e['session'] or '-':<14} {e['kind']:<18} {e['message']}", flush=True)

    if args.follow:
        try:
            sub = control.subscribe(control.socket_path(), "events", {"follow": True, "limit": args.n})
        except control.DaemonUnavailable:
            raise UserError("the daemon is not running, so there are no events to follow; start it with `afd run`", EXIT_DAEMON_DOWN) from None
        for e in sub.result or []:
            show(e)
        try:
            for e in sub:
                show(e)
        except KeyboardInterrupt:
            return EXIT_OK
        print("afd: the daemon stopped; no more events", file=sys.stderr)
        return EXIT_DAEMON_DOWN
    report, running = read_report(args.n)
    for e in report["events"]:
        show(e)
    return EXIT_OK if running else EXIT_DAEMON_DOWN
