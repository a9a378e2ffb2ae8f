"""`afd resume SESSION`: resume a limited agent now, through the daemon."""

from __future__ import annotations

import argparse

from afd.errors import EXIT_DAEMON_DOWN, EXIT_OK, UserError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "resume",
        help="resume a session's agent at its limit now",
        description="Send the session's agent its continuation now (answering its limit menu first, if any), "
        "whatever limit_auto_resume says. Refused (exit 1) when the session is not limited, its pane is gone "
        "or unknown, or an action is already in progress.",
    )
    p.add_argument("session", help="the session to resume: its afd name, tmux session, session:window.pane or pane id (%%3)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from afd.daemon import control

    try:
        result = control.request(control.socket_path(), "resume", {"name": args.session})
    except control.DaemonUnavailable:
        raise UserError("the daemon is not running; start it with `afd run` (it does the resuming)", EXIT_DAEMON_DOWN) from None
    if args.json:
        from afd.cli.common import print_json

        print_json(result)
    else:
        from afd.display.text import neutral

        print(neutral(f"resuming {result['name']} in pane {result['pane']} (attempt {result['attempt']}); "
                      "follow it with `afd events -f`"))
    return EXIT_OK
