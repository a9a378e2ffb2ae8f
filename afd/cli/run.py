"""`afd run`: the supervisor in the foreground (what systemd starts)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from afd.cli.common import add_server_options
from afd.display.text import neutral


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="run the supervisor in the foreground",
        description="Watch the panes of one tmux server and keep afd's state. The server is chosen as tmux "
        "chooses it: -L or -S, else [tmux] in the config, else the server whose pane this runs in ($TMUX), else "
        "tmux's default server; `afd status` names its socket. With no config file, afd "
        "only watches and reports: nothing is resumed or handed off unattended. "
        "SIGHUP or a change of the config file reloads it; SIGTERM stops cleanly.",
    )
    p.add_argument("--config", metavar="PATH", help="config file (default: $XDG_CONFIG_HOME/afd/config.toml)")
    add_server_options(p, "[tmux] in the config, else $TMUX's server, else tmux's default")
    p.add_argument(
        "--once",
        action="store_true",
        help="poll stability_polls times (at least twice), poll_interval apart, print what was found and exit",
    )
    p.add_argument("--json", action="store_true", help="with --once: print the status as JSON")
    p.add_argument("-v", "--verbose", action="store_true", help="log debug detail")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from afd.daemon.loop import Daemon, StartupError, setup_logging

    setup_logging(args.verbose)
    from afd.web.requests import WebRequests

    daemon = Daemon(Path(args.config) if args.config else None, args.socket_name, args.socket_path, extensions=(WebRequests,))
    try:
        daemon.start()
    except StartupError as exc:
        print(f"afd: {exc}", file=sys.stderr)
        return exc.code
    try:
        if args.once:
            return _once(daemon, args.json)
        daemon.install_signals()
        daemon.start_control()
        daemon.watch_config()
        return daemon.run_forever()
    except StartupError as exc:
        print(f"afd: {exc}", file=sys.stderr)
        return exc.code
    finally:
        daemon.close()


def _once(daemon, as_json: bool) -> int:
    from afd.cli.status import render
    from afd.daemon.status import build_status

    # The first look at a pane cannot tell a still pane from a changing one, so
    # even `stability_polls = 1` needs a second look before anything is judged.
    polls = max(daemon.config.stability_polls, 2)
    for i in range(polls):
        summary = daemon.poll()
        print(f"afd: poll {i + 1}/{polls}: {neutral(summary.line())}", file=sys.stderr)
        if i + 1 < polls:
            time.sleep(daemon.config.poll_interval)
    report = build_status(
        daemon.store,
        daemon.plugins.agents,
        {"running": False, "pid": None, "version": None, "started_at": None, "once": True},
    )
    render(report, as_json, once=True)
    return 0
