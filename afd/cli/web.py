"""`afd web`: have the daemon serve the dashboard, and print the address to log in with."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from afd.errors import EXIT_DAEMON_DOWN, EXIT_FAIL, EXIT_OK, UserError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "web",
        help="open the dashboard: the daemon serves it on loopback; prints a one-time login address",
        description="Ask the running daemon to serve the dashboard (on [web] bind and port; loopback only) if it "
        "does not yet, and print its address with a one-time login token (after '#', so no server ever receives it), "
        "good once, for ten minutes; each browser tab logs in on its own. Refused (exit 1) "
        "inside a watched agent's pane: an agent must not log itself in.",
    )
    p.add_argument("--open", action="store_true",
                   help="open the dashboard in the desktop's web browser, through a private file that holds the login "
                   "address (never the browser's command line, which other users can read)")
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

        page = login_page(result["login_url"])
        # The browser is given the file's address: a command line is readable by every user in
        # /proc/PID/cmdline, and a watcher there could redeem the token first.
        if not webbrowser.open(page.as_uri()):
            raise UserError(f"no web browser could be started; open {result['login_url']} yourself", EXIT_FAIL)
    if args.json:
        from afd.cli.common import print_json

        print_json(result)
    else:
        print(result["login_url"])
        print(f"afd: the dashboard is at {result['url']}; this login address logs one browser tab in, once, within ten minutes",
              file=sys.stderr)
    return EXIT_OK


LOGIN_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">
<meta http-equiv="refresh" content="0;url={url}"><title>afd: opening the dashboard</title></head>
<body><p><a href="{url}">Open the afd dashboard</a></p></body></html>
"""


def login_page(login_url: str) -> Path:
    """A page that sends the browser on to `login_url`, in a file only this user can read (0600, in the 0700 runtime dir).

    Replaced at each `afd web --open`; the token in it is spent by the login, or expires in ten minutes.
    """
    import html
    import os
    import tempfile

    from afd.kit.paths import runtime_dir

    folder = runtime_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(folder, 0o700)
    fd, temp = tempfile.mkstemp(dir=folder, prefix=".web-login.", suffix=".html")  # created 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(LOGIN_PAGE.format(url=html.escape(login_url, quote=True)))
        target = folder / "web-login.html"
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return target
