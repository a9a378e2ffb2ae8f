"""`afd usage`: per account and window, how much is used, when it resets, when it runs out, and where each figure comes from."""

from __future__ import annotations

import argparse
import sys

from afd.cli.usage_table import usage_table
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
