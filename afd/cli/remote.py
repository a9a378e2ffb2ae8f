"""`afd remote`: what another host's afd may ask of this one over ssh, and nothing else (hidden from --help).

It runs as the forced command of afd's key in `~/.ssh/authorized_keys`
(`afd hosts authorize` prints the line), so whatever the other side sends
arrives here as `$SSH_ORIGINAL_COMMAND`: words among status, limits,
usage and version, each answered from this host's store, read-only, as
one JSON object (afd.judge.peer_answer). A shell, `scp`, `sftp` or any
other word is refused with one line and exit 2, and nothing runs. Run by
hand (no `$SSH_CONNECTION`), the words may be given as arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from datetime import datetime, timezone

from afd.errors import EXIT_FAIL, EXIT_OK, EXIT_USAGE


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("remote", description="Answer another host's afd (the forced command of afd's key).")
    p.add_argument("requests", nargs="*", help=argparse.SUPPRESS)
    p.set_defaults(func=run)


def _words(args: argparse.Namespace) -> list[str]:
    original = os.environ.get("SSH_ORIGINAL_COMMAND")
    if original is not None:
        return original.split()
    if os.environ.get("SSH_CONNECTION"):
        return []  # a login with no command: a shell, which this key never gives
    return list(args.requests)


def run(args: argparse.Namespace) -> int:
    from afd.judge.peer_answer import parse_requests

    try:
        asked = parse_requests(_words(args))
    except ValueError as exc:
        print(f"afd remote: refused: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        value = answer(asked)
    except Exception as exc:  # one line for the asker, never a traceback into its log
        from afd.display.text import neutral

        print(f"afd remote: cannot answer: {neutral(exc)}", file=sys.stderr)
        return EXIT_FAIL
    sys.stdout.write(json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n")
    return EXIT_OK


def answer(asked: tuple[str, ...]) -> dict:
    """This host's answer, read from its store (whether or not its daemon runs) and its config."""
    from afd import __version__
    from afd.config.settings import load_config
    from afd.judge import fleet, peer_answer
    from afd.judge.usage import UsageFigures
    from afd.record.files import default_path, lock_is_held, lock_path_for
    from afd.record.fleet_book import local_fact

    config = load_config(None)
    now = datetime.now(timezone.utc)
    db = default_path()
    sessions: list[dict] = []
    facts = []
    usage = None
    agents: list[str] = []
    if db.exists():
        from afd.cli.status import _stored
        from afd.daemon.status import report, usage_json

        rows, _meta = _stored(db, 0)
        agents = list(rows.agents or ())
        built = report(rows, agents, {})
        sessions = [s for s in built["sessions"] if s["state"] != "gone"]
        facts = [local_fact(r) for r in rows.limits]
        if "usage" in asked:
            figures = usage_json(rows, [(a["name"], a["agent"]) for a in built["accounts"]], now)
            usage = UsageFigures.from_json(figures) if figures is not None else None
    if config.fleet_share and not agents:
        from afd.pluginset import load_plugins

        agents = sorted(load_plugins(config.plugins_dir).agents)
    shared = fleet.shared_accounts(agents, config.accounts.values(), share_defaults=config.fleet_share)
    running = lock_is_held(lock_path_for(db))
    return peer_answer.answer(asked=asked, version=__version__, hostname=socket.gethostname(), now=now, running=running,
                              sessions=sessions, facts=facts, usage=usage, shared=shared).to_json()
