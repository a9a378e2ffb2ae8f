"""`afd status` and `afd events`: what afd knows, from the daemon or, when it is down, from the store."""

from __future__ import annotations

import argparse
import sys

from afd.cli.common import count
from afd.errors import EXIT_DAEMON_DOWN, EXIT_OK, UserError


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
    p.set_defaults(func=run)

    e = sub.add_parser("events", help="recent events; --follow streams new ones", description="Print afd's recent events, one per line.")
    e.add_argument("--follow", "-f", action="store_true", help="keep printing events as they happen (needs the daemon)")
    e.add_argument("--json", action="store_true", help="one JSON object per line")
    e.add_argument("-n", type=count, default=50, metavar="N", help="how many recent events (default 50)")
    e.set_defaults(func=run_events)


def read_report(events: int) -> tuple[dict, bool]:
    """The status from the running daemon, else from the store; and whether the daemon runs."""
    from afd.config import paths

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
        from afd.config.loader import load_plugins

        return sorted(load_plugins(None).agents), ()
    return sorted(plugins.agents), tuple((a.name, a.agent) for a in config.accounts.values())


def run(args: argparse.Namespace) -> int:
    if args.watch:
        if args.json:
            raise UserError("--watch shows a live view for people; --json prints one object (use one or the other)")
        from afd.cli.status_watch import watch

        return watch(args.events)
    report, running = read_report(args.events)
    render(report, args.json)
    return EXIT_OK if running else EXIT_DAEMON_DOWN


def _next_words(session: dict, now=None, zone=None) -> str | None:
    """The next action in the reader's zone with a countdown (JSON keeps ISO UTC)."""
    from datetime import datetime, timezone

    from afd.decide.nextaction import words
    from afd.kit.resettime import local_zone

    if session.get("next") is None:
        return session.get("next_action")
    return words(session["next"], now=now or datetime.now(timezone.utc), zone=zone or local_zone())


def local_time(iso: str | None, now, zone) -> str | None:
    """An ISO UTC instant of the report in the reader's zone, with a countdown while it is ahead."""
    from datetime import datetime

    from afd.notifiers.message import clock_time

    if not iso:
        return None
    try:
        at = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return iso
    return clock_time(at, now, zone)


def event_time(iso: str, now, zone) -> str:
    """When an event happened, in the reader's zone: the time of day, with the date unless it is today."""
    from datetime import datetime

    try:
        at = datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone(zone)
    except (ValueError, AttributeError):
        return str(iso)
    return at.strftime("%H:%M:%S") if at.date() == now.astimezone(zone).date() else at.strftime("%b %d %H:%M:%S")


_STATE_STYLE = {
    "all_limited": "bold red", "handing_off": "bold yellow", "resuming": "bold yellow", "needs_human": "bold red",
    "limited": "bold red", "working": "green", "idle": "cyan", "exited": "yellow", "gone": "dim", "unknown": "magenta",
    "available": "green",
}

# Columns a narrow terminal keeps (`status --watch` below NARROW columns wide).
NARROW = 110
_ESSENTIAL = ("name", "agent", "account", "state", "reset", "next action")


def report_view(report: dict, *, now=None, zone=None, narrow: bool = False, events: int | None = None) -> list:
    """The sessions table, the agents table and the recent events, as rich renderables, times in `zone`."""
    from datetime import datetime, timezone

    from rich.table import Table
    from rich.text import Text

    from afd.kit.resettime import local_zone

    now = now or datetime.now(timezone.utc)
    zone = zone or local_zone()
    parts: list = []
    table = Table(title="sessions", title_justify="left")
    columns = ("name", "where", "agent", "account", "state", "witnesses", "reset", "mission", "worktree", "branch",
               "next action")
    shown = [c for c in columns if not narrow or c in _ESSENTIAL]
    for col in shown:
        table.add_column(col)
    for s in report["sessions"]:
        agent = s["agent"] or "?"
        if s["identity_source"] == "user":
            agent += " (your word)"
        if s.get("handoffs"):
            agent += f" ⇄{s['handoffs']}"  # handed off this many times; `afd ledger NAME` shows where
        where = f"{s.get('location') or '?'} {s['pane'] or ''}".strip()
        cells = {
            "name": Text(s["name"]), "where": Text(where), "agent": Text(agent),
            "account": Text(s.get("account") or "-", style="magenta" if s.get("account") == "unknown" else ""),
            "state": Text(s["state"], style=_STATE_STYLE.get(s["state"], "")),
            "witnesses": Text(s.get("witnesses") or "-", style="yellow" if s.get("witnesses") == "disputed" else ""),
            "reset": Text(local_time(s["reset_at"], now, zone) or ("not stated" if s["state"] == "limited" else "-")),
            "mission": Text("yes" if s["mission"] else "no"), "worktree": Text(s["worktree"] or "-"),
            "branch": Text(s["branch"] or "-"), "next action": Text(_next_words(s, now, zone) or "-"),
        }
        table.add_row(*(cells[c] for c in shown))
    if report["sessions"]:
        parts.append(table)
    else:
        parts.append(Text("no sessions yet (panes running a known agent are adopted automatically)"))

    # A limit belongs to an account: one row each (an agent's default account is named after it).
    accounts = Table(title="accounts", title_justify="left")
    account_columns = ("account", "agent", "state", "reset")
    for col in account_columns if narrow else (*account_columns, "seen", "by session"):
        accounts.add_column(col)
    for a in report.get("accounts", [{**a, "agent": a["name"]} for a in report["agents"]]):
        account_cells = [Text(a["name"]), Text(a["agent"]), Text(a["state"], style=_STATE_STYLE.get(a["state"], "")),
                         Text(local_time(a["reset_at"], now, zone) or "-")]
        if not narrow:
            account_cells += [Text(local_time(a["observed_at"], now, zone) or "never"), Text(a["source_session"] or "-")]
        accounts.add_row(*account_cells)
    parts.append(accounts)
    recent = report["events"] if events is None else report["events"][:events]
    if recent:
        parts.append(Text("recent events", style="bold"))
        for e in recent:
            at = event_time(e["at"], now, zone)
            line = f"  {at}  {e['session'] or '-':<14} {e['kind']:<18} {e['message']}"
            parts.append(Text(line, no_wrap=narrow, overflow="ellipsis"))
    return parts


def daemon_line(report: dict) -> str:
    d = report["daemon"]
    return f"afd {d.get('version')} running (pid {d.get('pid')}, since {d.get('started_at')}, tmux server: {d.get('server')})"


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

    console = Console(highlight=False, soft_wrap=True)
    d = report["daemon"]
    if once:
        pass
    elif report.get("no_state"):
        console.print("[yellow]afd has no state yet and is not running[/]; start it with `afd run`")
        return
    elif d.get("running"):
        console.print(daemon_line(report), markup=False)
    else:
        console.print("[yellow]afd is not running[/]; showing the state it last stored")
    for part in report_view(report):
        console.print(part)


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
