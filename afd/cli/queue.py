"""`afd queue`: hold a prompt for a session until its account's window resets (or a time), list, cancel."""

from __future__ import annotations

import argparse
import sys

from afd.errors import EXIT_DAEMON_DOWN, EXIT_OK, UserError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "queue",
        help="hold a prompt for a session until its window resets; list and cancel held prompts",
        description="Hold a prompt for a session and have afd type it in once, when the session's account's window "
        "resets (plus resume_grace) or at a time you give. It goes in as an envelope when the agent waits at its "
        "prompt, or with the resume at its wall (one paste with the resume's continuation, never two). Kept across "
        "restarts; each delivery is journaled. See docs/usage.md.",
    )
    actions = p.add_subparsers(dest="queue_action", metavar="ACTION", required=True)
    add = actions.add_parser("add", help="hold a prompt for SESSION",
                             description="Hold TEXT for SESSION. Needs the daemon (it delivers it).")
    add.add_argument("session", help="the session to type it into")
    add.add_argument("text", help="the prompt")
    add.add_argument("--at", default="reset", metavar="reset|HH:MM|ISO",
                     help="when: `reset` (the account's next reset, the default), HH:MM in your zone, or an ISO 8601 time")
    add.add_argument("--json", action="store_true", help="print the held prompt as JSON")
    add.set_defaults(func=run_add)
    listing = actions.add_parser("list", help="the held prompts and how each went",
                                 description="Every held prompt: waiting, delivering, delivered, unconfirmed or "
                                 "cancelled. Read from the store when the daemon is down (exit 3).")
    listing.add_argument("--json", action="store_true", help="print a JSON list")
    listing.set_defaults(func=run_list)
    cancel = actions.add_parser("cancel", help="cancel a waiting prompt", description="Cancel a prompt still waiting.")
    cancel.add_argument("id", type=int, help="its number, from `afd queue list`")
    cancel.add_argument("--json", action="store_true", help="print the cancelled prompt as JSON")
    cancel.set_defaults(func=run_cancel)


def _ask(cmd: str, args: dict) -> dict:
    from afd.daemon import control

    try:
        return control.request(control.socket_path(), cmd, args)
    except control.DaemonUnavailable:
        raise UserError("the daemon is not running, so nothing would deliver a held prompt; start it with `afd run` "
                        "and queue it again", EXIT_DAEMON_DOWN) from None


def _show(item: dict, as_json: bool, verb: str) -> None:
    if as_json:
        from afd.cli.common import print_json

        print_json(item)
        return
    from datetime import datetime, timezone

    from afd.cli.usage import local_time
    from afd.kit.resettime import local_zone

    when = local_time(item["due_at"], datetime.now(timezone.utc), local_zone())
    print(f"{verb} prompt {item['id']} for {item['session']}: due {when}" + (" (its account's reset)" if item["at"] == "reset" else ""))


def run_add(args: argparse.Namespace) -> int:
    _show(_ask("queue.add", {"session": args.session, "text": args.text, "at": args.at}), args.json, "held")
    return EXIT_OK


def run_cancel(args: argparse.Namespace) -> int:
    _show(_ask("queue.cancel", {"item": args.id}), args.json, "cancelled")
    return EXIT_OK


def run_list(args: argparse.Namespace) -> int:
    items, running = _read_list()
    if args.json:
        from afd.cli.common import print_json

        print_json(items)
    else:
        from datetime import datetime, timezone

        from rich.console import Console
        from rich.table import Table

        from afd.cli.usage import local_time
        from afd.kit.resettime import local_zone

        now, zone = datetime.now(timezone.utc), local_zone()
        table = Table(title="held prompts", title_justify="left")
        for col in ("id", "session", "due", "state", "prompt", "how it went"):
            table.add_column(col)
        for i in items:
            text = i["text"] if len(i["text"]) <= 50 else i["text"][:49] + "…"
            table.add_row(str(i["id"]), i["session"], local_time(i["due_at"], now, zone) or "-", i["state"], text,
                          i["outcome"] or "-")
        console = Console(highlight=False)
        if not running:
            console.print("[yellow]afd is not running[/]; the held prompts as it last stored them")
        console.print(table if items else "no held prompts")
    return EXIT_OK if running else EXIT_DAEMON_DOWN


def _read_list() -> tuple[list[dict], bool]:
    from afd.daemon import control
    from afd.kit import paths

    if paths.control_socket().exists():
        try:
            return control.request(control.socket_path(), "queue.list", {}), True
        except control.DaemonUnavailable:
            pass
    from afd.record.files import default_path
    from afd.record.queue_book import read_all
    from afd.record.store import Store, StoreError

    db = default_path()
    if not db.exists():
        return [], False
    try:
        store = Store.open_readonly(db)
    except StoreError as exc:
        print(f"afd: {exc}", file=sys.stderr)
        return [], False
    try:
        return [i.to_json() for i in read_all(store.query)], False
    finally:
        store.close()
