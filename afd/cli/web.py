"""`afd web`: have the daemon serve the dashboard, and print the address to log in with."""

from __future__ import annotations

import argparse
import sys

from afd.errors import EXIT_DAEMON_DOWN, EXIT_FAIL, EXIT_OK, UserError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "web",
        help="open the dashboard: the daemon serves it on loopback; prints a one-time login address",
        description="Ask the running daemon to serve the dashboard (on [web] bind and port; loopback only) if it "
        "does not yet, and print its address with a one-time login token, good for ten minutes. Refused (exit 1) "
        "inside a watched agent's pane: an agent must not log itself in.",
    )
    p.add_argument("--open", action="store_true", help="open the address with the desktop's web browser")
    p.add_argument("--json", action="store_true", help="print url, login_url, port and bind as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from afd.daemon import control

    try:
        # Starting the server imports it and binds: more than a status request's moment.
        result = control.request(control.socket_path(), "web.start", {}, timeout=30)
    except control.DaemonUnavailable:
        raise UserError("the daemon is not running; start it with `afd run` (it serves the dashboard)", EXIT_DAEMON_DOWN) from None
    if args.open:
        import webbrowser

        if not webbrowser.open(result["login_url"]):
            raise UserError(f"no web browser could be started; open {result['login_url']} yourself", EXIT_FAIL)
    if args.json:
        from afd.cli.common import print_json

        print_json(result)
    else:
        print(result["login_url"])
        print(f"afd: the dashboard is at {result['url']}; this login address works once, for ten minutes", file=sys.stderr)
    return EXIT_OK
