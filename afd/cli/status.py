"""`afd status` and `afd events`: what afd knows, from the daemon or, when it is down, from the store."""

from __future__ import annotations

import argparse
import sys

from afd.cli.common import count
from afd.errors import EXIT_DAEMON_DOWN, EXIT_OK, EXIT_USAGE, UserError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "status",
        help="sessions, accounts' limit facts and recent events",
        description="Show sessions (each with its agent and account), each account's limit state "
        "(limited / available / unknown) and recent events. Works read-only from the store when the daemon is "
        "down (exit 3).",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object (schema in docs/status.md)")
    p.add_argument("--events", type=count, default=10, metavar="N", help="how many recent events to show (default 10)")
    p.add_argument("--watch", "-w", action="store_true",
                   help="a live view, refreshed from the daemon each second, with countdowns; Ctrl-C leaves")
    p.add_argument("--fleet", action="store_true",
                   help="with --watch: a panel per host of the fleet (afd hosts; docs/fleet.md) above the tables")
    p.add_argument("--wide", action="store_true",
                   help="every column, whatever the terminal's width (cells wrap, none is cut)")
    p.add_argument("--tmux", action="store_true",
                   help="one short line for tmux's status-right: sessions working, limited and needing you, "
                   "the next reset; 'afd down' when the daemon is not running (docs/status.md)")
    p.set_defaults(func=run)

    e = sub.add_parser("events", help="recent events; --follow streams new ones", description="Print afd's recent events, one per line.")
    e.add_argument("--follow", "-f", action="store_true", help="keep printing events as they happen (needs the daemon)")
    e.add_argument("--json", action="store_true", help="one JSON object per line")
    e.add_argument("-n", type=count, default=50, metavar="N", help="how many recent events (default 50)")
    e.set_defaults(func=run_events)


def read_report(events: int) -> tuple[dict, bool]:
    """The status from the running daemon, else from the store; and whether the daemon runs."""
    from afd.kit import paths

    answering = True
    # No socket file, no daemon: the client (and the socket module, ~5 ms to import) is not needed to say so.
    if paths.control_socket().exists():
        from afd.daemon import control

        try:
            return control.request(control.socket_path(), "status", {"events": events}), True
        except control.DaemonUnavailable:
            pass
        except control.DaemonTimeout:
            # There but busy (a poll stuck on a hung tmux): show what it last stored.
            answering = False
            print("afd: the daemon did not answer in time; showing the state it last stored", file=sys.stderr)
    from afd.daemon.status import report
    from afd.record.files import default_path, lock_holder_pid, lock_is_held, lock_path_for

    db = default_path()
    if not db.exists():
        return empty_report(), False
    rows, meta = _stored(db, events)
    # The daemon's lock file, not the database: a busy daemon holds it all the same.
    lock = lock_path_for(db)
    held = lock_is_held(lock)
    daemon = {"running": held, "pid": lock_holder_pid(lock) if held else None,
              "version": meta.get("version"), "started_at": meta.get("started_at")}
    if not answering:
        daemon["answering"] = False
    if rows.agents is None:
        agents, accounts = _agents_and_accounts()
        rows = rows._replace(accounts=rows.accounts if rows.accounts is not None else accounts)
    else:
        agents = list(rows.agents)
    return report(rows, agents, daemon), held


def _stored(db, events: int):
    """The status rows and what the daemon stored about itself (version, started_at), from the database alone."""
    from afd.record.statusread import open_checked, read_status_rows

    conn = open_checked(db)
    if conn is not None:
        try:
            rows = read_status_rows(conn, events)
            meta = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('version', 'started_at')").fetchall())
        finally:
            conn.close()
        return rows, meta
    # Not a file this afd reads as it is: the store says what is wrong with it, in its own words.
    from afd.record.store import Store, StoreError

    try:
        store = Store.open_readonly(db)
    except StoreError as exc:
        raise UserError(str(exc), EXIT_DAEMON_DOWN) from None
    try:
        return store.status_rows(events), {k: store.get_meta(k) for k in ("version", "started_at")}
    finally:
        store.close()


def empty_report() -> dict:
    """The report when afd has never run: every agent unknown, nothing else."""
    from afd.daemon.status import SCHEMA

    agents, accounts = _agents_and_accounts()
    return {
        "schema": SCHEMA,
        "daemon": {"running": False, "pid": None, "version": None, "started_at": None},
        "sessions": [],
        "agents": [
            {"name": n, "state": "unknown", "reset_at": None, "observed_at": None, "source_session": None}
            for n in agents
        ],
        "accounts": [
            {"name": n, "agent": a, "state": "unknown", "reset_at": None, "observed_at": None, "source_session": None}
            for n, a in sorted([(n, n) for n in agents] + list(accounts), key=lambda p: (p[1], p[0] != p[1], p[0]))
        ],
        "events": [],
        "no_state": True,
    }


def _agents_and_accounts() -> tuple[list[str], tuple[tuple[str, str], ...]]:
    """The agents the plugins provide and the accounts the config names, (name, agent), when no daemon said."""
    from afd.cli.common import load_effective

    try:
        config, plugins = load_effective(None)
    except UserError as exc:
        print(f"afd: warning: {exc}", file=sys.stderr)
        from afd.pluginset import load_plugins

        return sorted(load_plugins(None).agents), ()
    return sorted(plugins.agents), tuple((a.name, a.agent) for a in config.accounts.values())


def run(args: argparse.Namespace) -> int:
    if args.tmux:
        if args.json or args.watch or args.wide:
            raise UserError("--tmux prints one short line for tmux's status bar; it takes no --json, --watch or --wide",
                            EXIT_USAGE)
        from afd.cli.status_bar import run_segment

        return run_segment()
    if args.watch:
        if args.json:
            raise UserError("--watch shows a live view for people; --json prints one object (use one or the other)",
                            EXIT_USAGE)
        from afd.cli.status_watch import fleet_panel, watch

        return watch(args.events, read_report, wide=args.wide, fleet=fleet_panel if args.fleet else None)
    if args.fleet:
        raise UserError("--fleet adds the fleet's panel to the live view (--watch); `afd fleet [--json]` shows it once",
                        EXIT_USAGE)
    report, running = read_report(args.events)
    render(report, args.json, wide=args.wide)
    return EXIT_OK if running else EXIT_DAEMON_DOWN


def render(report: dict, as_json: bool, once: bool = False, wide: bool = False) -> None:
    if as_json:
        from afd.cli.common import print_json

        print_json(report)
        if report.get("no_state"):
            print("afd: no state yet and the daemon is not running; start it with `afd run`", file=sys.stderr)
        elif not report["daemon"].get("running") and not once:
            print("afd: the daemon is not running; this is the state it last stored", file=sys.stderr)
        return
    from afd.cli.status_view import daemon_line, piped, report_view
    from afd.display.reader import Reader

    reader = Reader.here()
    d = report["daemon"]
    if once:
        header = None
    elif report.get("no_state"):
        header = "afd has no state yet and is not running; start it with `afd run`"
    elif d.get("running"):
        header = daemon_line(report, reader)
    else:
        header = "afd is not running; showing the state it last stored"
    if not sys.stdout.isatty():
        # A pipe or a file: one line per session, nothing cut, no colour.
        if report.get("no_state"):
            print(header)
            return
        sys.stdout.write(piped(report, reader, header))
        return
    from rich.console import Console
    from rich.text import Text

    # --wide: every column at its natural width, rows running past the edge rather than folded (`less -S` scrolls).
    console = Console(highlight=False, soft_wrap=False, width=100_000 if wide else None)
    if header is not None:
        console.print(Text(header, style="" if d.get("running") or once else "yellow"))
    if report.get("no_state"):
        return
    for part in report_view(report, reader, console.width, wide=wide):
        console.print(part)


def run_events(args: argparse.Namespace) -> int:
    import json

    from afd.cli.status_view import event_lines
    from afd.daemon import control
    from afd.display.reader import Reader

    def show(e: dict) -> None:
        if args.json:
            print(json.dumps(e, ensure_ascii=False), flush=True)
        else:
            # Read as it arrives: a countdown in an event's words counts from now.
            print(event_lines([e], Reader.here())[0], flush=True)

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
