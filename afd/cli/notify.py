"""`afd notify test`: one test message through each configured notifier, and what each answered."""

from __future__ import annotations

import argparse
import socket
import sys
from datetime import datetime, timezone

from afd.cli.common import load_effective, print_json
from afd.errors import EXIT_FAIL, EXIT_OK, UserError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "notify",
        help="notifications: send a test message through the configured notifiers",
        description="Work with the [[notify]] tables of the config.",
    )
    verbs = p.add_subparsers(dest="verb", metavar="VERB")
    t = verbs.add_parser(
        "test",
        help="send a test message through each configured notifier and show what each answered",
        description="Send one test message through each [[notify]] notifier of the config file (the "
        "file as it is now, whether or not the daemon runs, from this shell's environment), one "
        "attempt each, and print each answer (an endpoint's words with the notifier's secrets redacted). "
        "Exit 1 when any was not plainly sent (failed, or unconfirmed: a 2xx whose reply was cut off) or none is configured.",
    )
    t.add_argument("--type", choices=("desktop", "ntfy", "webhook", "command"), help="only notifiers of this type")
    t.add_argument("--config", metavar="PATH", help="config file (default: $XDG_CONFIG_HOME/afd/config.toml)")
    t.add_argument("--json", action="store_true", help="print one JSON object")
    t.set_defaults(func=run_test)
    p.set_defaults(func=lambda args: (p.print_help(sys.stderr), 2)[1])


def run_test(args: argparse.Namespace) -> int:
    from afd.config.settings import default_config_path
    from afd.kit.resettime import local_zone
    from afd.model import Event
    from afd.notifiers.builtin import send_once
    from afd.notifiers.message import compose

    config, _plugins = load_effective(args.config)
    chosen = [n for n in config.notify if args.type is None or n.type == args.type]
    where = config.path or default_config_path()
    if not chosen:
        if config.notify:
            kinds = ", ".join(sorted({n.type for n in config.notify}))
            raise UserError(f"no notifier of type {args.type} in {where} (configured: {kinds})", EXIT_FAIL)
        raise UserError(f"no [[notify]] tables in {where}; config.example.toml shows each type", EXIT_FAIL)
    now = datetime.now(timezone.utc)
    host = socket.gethostname()
    event = Event(at=now, kind="notify.test", message=f"a test message from afd on {host}: notifications reach you")
    notice = compose(event, None, now=now, zone=local_zone(), host=host)
    results = []
    for settings in chosen:
        got = send_once(settings, notice)
        results.append({"number": settings.number, "type": settings.type, "name": settings.label,
                        "sent": got.sent, "outcome": got.outcome.value, "answer": got.detail})
    if args.json:
        print_json({"config": str(where), "notifiers": results})
    else:
        from afd.display.reader import Reader

        reader = Reader.here()
        for r in results:
            mark = "sent" if r["sent"] else r["outcome"].upper() if r["outcome"] == "unconfirmed" else "FAILED"
            # The answer is the endpoint's own words: neutral before it reaches the terminal.
            print(f"notify[{r['number']}] {reader.says(r['name'])}: {mark}: {reader.says(r['answer'])}")
    return EXIT_OK if all(r["sent"] for r in results) else EXIT_FAIL
