"""`afd usage`: per account and window, how much is used, when it resets, when it runs out, and where each figure comes from."""

from __future__ import annotations

import argparse
import sys

from afd.display.text import neutral
from afd.errors import EXIT_DAEMON_DOWN, EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "usage",
        help="each account's usage windows: used, reset, when it runs out, and where each figure comes from",
        description="Per account and window: the share used, the reset, and when the window runs out at the recent "
        "burn rate (a range). Each figure says where it comes from: `exact` (the agent's own report, with its age; "
        "stale after usage_stale_after) or `calibrated from N stops` (afd's own walls on that account). An account "
        "with neither has no figure: afd never guesses a plan's entitlement. Claude Code reports its figures through "
        "`afd statusline` (see `afd statusline install`); Codex in its rollout records. Works read-only from the "
        "store when the daemon is down (exit 3). The JSON schema is in docs/usage.md.",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object (schema in docs/usage.md)")
    p.set_defaults(func=run)


def read_usage() -> tuple[dict, bool]:
    """The figures from the running daemon, else from the store; and whether the daemon runs."""
    from afd.kit import paths

    if paths.control_socket().exists():
        from afd.daemon import control

        try:
            return control.request(control.socket_path(), "usage", {}), True
        except control.DaemonUnavailable:
            pass
        except control.DaemonTimeout:
            print("afd: the daemon did not answer in time; showing the figures it last stored", file=sys.stderr)
    from afd.cli.status import read_report

    report, running = read_report(0)
    figures = report.get("usage")
    if figures is None:  # no state yet
        from datetime import datetime, timezone

        from afd.judge.usage import AccountUsage, UsageFigures

        figures = UsageFigures(datetime.now(timezone.utc), tuple(
            AccountUsage(a["name"], a["agent"], (), "no figure: afd has no state yet") for a in report["accounts"])).to_json()
    return figures, running


def run(args: argparse.Namespace) -> int:
    figures, running = read_usage()
    if args.json:
        from afd.cli.common import print_json

        print_json(figures)
    else:
        from rich.console import Console

        console = Console(highlight=False, soft_wrap=True)
        if not running:
            console.print("[yellow]afd is not running[/]; the figures it last stored, aged to now")
        console.print(usage_table(figures))
    return EXIT_OK if running else EXIT_DAEMON_DOWN


def window_label(w: dict, agent: str | None = None) -> str:
    """`5-hour`, or `5-hour (codex_spark)` for a limit other than the agent's own."""
    from afd.judge.usage import LABELS

    name = LABELS.get(w["window"], w["window"])
    return f"{name} ({w['limit_id']})" if w.get("limit_id") and w["limit_id"] != agent else name


def provenance_words(w: dict) -> str:
    from afd.judge.usage import age_words

    if w["provenance"] == "calibrated":
        return f"calibrated from {w['stops']} stop{'s' if w['stops'] != 1 else ''}"
    return f"exact, {age_words(w.get('age_seconds'))} old" + (" (stale)" if w.get("stale") else "")


def local_time(iso: str | None, now, zone) -> str | None:
    """An ISO UTC instant in the reader's zone, with a countdown while it is ahead."""
    from afd.display.reader import Reader

    return Reader(now, zone).at(iso)


def runs_out_words(w: dict, now, zone) -> str:
    f = w.get("forecast")
    if f is None:
        if w.get("used_percent") is not None and w["used_percent"] >= 100:
            return "used up"
        return "-"
    if f["lasts_to_reset"]:
        return "not before the reset"
    early = local_time(f["earliest"], now, zone) if f["earliest"] else None
    late = local_time(f["latest"], now, zone) if f["latest"] else "after the reset"
    return f"{early} – {late}" if early and early != late else (early or late or "-")


def usage_table(figures: dict, *, now=None, zone=None, narrow: bool = False):
    """The usage panel (`afd usage`, `afd status`, `status --watch`), times in the reader's zone."""
    from datetime import datetime, timezone

    from rich.table import Table
    from rich.text import Text

    from afd.kit.resettime import local_zone

    now = now or datetime.now(timezone.utc)
    zone = zone or local_zone()
    table = Table(title="usage", title_justify="left")
    columns = ("account", "window", "used", "resets", "runs out", "figure")
    for col in columns if not narrow else ("account", "window", "used", "runs out"):
        table.add_column(col)
    for account in figures.get("accounts", ()):
        if not account["windows"]:
            cells = [Text(neutral(account["account"])), Text("-"), Text("-"), Text("-"), Text("-"),
                     Text("no figure", style="dim")]
            table.add_row(*(cells if not narrow else [cells[0], cells[1], cells[2], cells[4]]))
            continue
        for w in account["windows"]:
            used = w.get("used_percent")
            style = "bold red" if used is not None and used >= 95 else "yellow" if used is not None and used >= 80 else ""
            figure = provenance_words(w)
            cells = [
                Text(neutral(account["account"])), Text(window_label(w, account["agent"])),
                Text("?" if used is None else f"{used:g} %", style=style),
                Text(local_time(w.get("resets_at"), now, zone) or "-"),
                Text(runs_out_words(w, now, zone)),
                Text(figure, style="yellow" if w.get("stale") else "dim" if w["provenance"] == "calibrated" else ""),
            ]
            table.add_row(*(cells if not narrow else [cells[0], cells[1], cells[2], cells[4]]))
    return table

