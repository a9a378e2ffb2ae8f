"""`afd fleet`: every host's sessions, accounts, usage and afd version, side by side, with its last contact."""

from __future__ import annotations

import argparse
import socket

from afd.errors import EXIT_DAEMON_DOWN, EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "fleet",
        help="every host's sessions, accounts and afd version, side by side, with its last contact",
        description="This host and every host added with `afd hosts add`: its sessions, its accounts' limits, its "
        "afd's version, and when it last answered (a host that stopped answering is stale: its facts are as it last "
        "told them). Actions stay local: run a command for a host's session on that host. Read from the store "
        "when the daemon is down (exit 3). See docs/fleet.md.",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object: {\"hosts\": [...]}, this host first")
    p.set_defaults(func=run)


def read_fleet() -> tuple[dict, bool]:
    """The fleet view, and whether the daemon answered."""
    from afd.cli.hosts import read_hosts
    from afd.cli.status import read_report
    from afd.daemon.fleet import fleet_view

    local, running = read_report(0)
    hosts, _ = read_hosts(answers=True)
    return fleet_view(local, hosts, socket.gethostname()), running


def run(args: argparse.Namespace) -> int:
    view, running = read_fleet()
    if args.json:
        from afd.cli.common import print_json

        print_json(view)
    else:
        from afd.cli.fleet_words import fleet_lines
        from afd.display.reader import Reader

        print(Reader.here().says("\n".join(fleet_lines(view, running)), lines=True))
    return EXIT_OK if running else EXIT_DAEMON_DOWN
