"""`afd hosts`: the other machines this afd asks over OpenSSH for their accounts' limits (docs/fleet.md)."""

from __future__ import annotations

import argparse
import sys

from afd.errors import EXIT_DAEMON_DOWN, EXIT_FAIL, EXIT_OK, UserError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "hosts",
        help="the other machines afd asks over ssh for their accounts' limits: add, list, remove, check, authorize",
        description="Each host runs its own afd; this one asks the hosts added here, over the system's ssh with afd's "
        "own key, for their sessions, usage and limit facts. A wall another host saw on an account both share "
        "(share = true) counts here too. See docs/fleet.md.",
    )
    actions = p.add_subparsers(dest="hosts_action", metavar="ACTION", required=True)
    add = actions.add_parser("add", help="add a host to ask (needs the daemon)",
                             description="Add host NAME, reached as DEST: anything ssh takes as a destination (an alias "
                             "of ~/.ssh/config, user@host). A port goes in --port; a DEST starting with '-' is refused. "
                             "Then run `afd hosts authorize` and add its line to DEST's ~/.ssh/authorized_keys.")
    add.add_argument("name", help="the name afd shows for it")
    add.add_argument("dest", help="where ssh reaches it: an alias of ~/.ssh/config or user@host")
    add.add_argument("--port", type=int, help="its ssh port, when not the one ssh would use")
    add.add_argument("--json", action="store_true", help="print the host as JSON")
    add.set_defaults(func=run_add)
    listing = actions.add_parser("list", help="the hosts, how each last answered, and what each told",
                                 description="Every host added, its last contact, whether its facts are stale, its "
                                 "clock's skew and its afd's version. Read from the store when the daemon is down (exit 3).")
    listing.add_argument("--json", action="store_true", help="print a JSON list")
    listing.set_defaults(func=run_list)
    remove = actions.add_parser("remove", help="stop asking a host, and forget what it told (needs the daemon)",
                                description="Remove host NAME and the facts it told; its ssh connection is closed.")
    remove.add_argument("name", help="the host's name, from `afd hosts list`")
    remove.add_argument("--json", action="store_true", help="print the removed host as JSON")
    remove.set_defaults(func=run_remove)
    check = actions.add_parser("check", help="ask the hosts now and say how each answered",
                               description="Ask each host (or NAME) once now, over the same connection the daemon "
                               "uses, and say how it went: answered (its afd's version, clock skew, sessions and "
                               "facts), unreachable, refused, invalid or host-key-changed. Exit 1 when one did not "
                               "answer. Stores nothing.")
    check.add_argument("name", nargs="?", help="one host (default: every one)")
    check.add_argument("--json", action="store_true", help="print a JSON list")
    check.set_defaults(func=run_check)
    authorize = actions.add_parser("authorize", help="print the authorized_keys line for the other hosts",
                                   description="Print the line to add to ~/.ssh/authorized_keys on each other host: "
                                   "afd's own key (made once, ed25519, in afd's state dir), good only for `afd remote`, "
                                   "which answers status, usage, limits and version and nothing else. Needs the daemon.")
    authorize.add_argument("--json", action="store_true", help="print the line and the key's path as JSON")
    authorize.set_defaults(func=run_authorize)


def _ask(cmd: str, args: dict, what: str) -> object:
    from afd.daemon import control

    try:
        return control.request(control.socket_path(), cmd, args, timeout=60)
    except control.DaemonUnavailable:
        raise UserError(f"the daemon is not running, and {what}; start it with `afd run` and try again",
                        EXIT_DAEMON_DOWN) from None


def _print_json(value: object) -> None:
    from afd.cli.common import print_json

    print_json(value)


def run_add(args: argparse.Namespace) -> int:
    host = _ask("hosts.add", {"name": args.name, "dest": args.dest, "port": args.port}, "only it adds hosts")
    assert isinstance(host, dict)
    if args.json:
        _print_json(host)
    else:
        port = f" port {host['port']}" if host["port"] else ""
        print(f"added host {host['name']} ({host['dest']}{port}); afd asks it from now on")
        print("on that host, add the line `afd hosts authorize` prints to ~/.ssh/authorized_keys; "
              f"`afd hosts check {host['name']}` tries it")
    return EXIT_OK


def run_remove(args: argparse.Namespace) -> int:
    host = _ask("hosts.remove", {"name": args.name}, "only it removes hosts")
    assert isinstance(host, dict)
    if args.json:
        _print_json(host)
    else:
        print(f"removed host {host['name']}, and the facts it told")
    return EXIT_OK


def run_authorize(args: argparse.Namespace) -> int:
    found = _ask("hosts.authorize", {}, "it makes afd's key")
    assert isinstance(found, dict)
    if args.json:
        _print_json(found)
    else:
        print(found["line"])
        print("afd: add this line to ~/.ssh/authorized_keys on each host that this one's afd may ask",
              file=sys.stderr)
    return EXIT_OK


def read_hosts(answers: bool = False) -> tuple[list[dict], bool]:
    """Every host as `hosts list --json` gives it (with `answers`, what each last said), and whether the daemon
    answered (else: from the store)."""
    from afd.daemon import control
    from afd.kit import paths

    if paths.control_socket().exists():
        try:
            return control.request(control.socket_path(), "hosts.list", {"answers": answers}), True
        except control.DaemonUnavailable:
            pass
    from datetime import datetime, timezone

    from afd.config.settings import load_config
    from afd.daemon.fleet import host_json

    hosts, facts = _stored_hosts()
    interval = load_config(None).fleet_pull_interval
    now = datetime.now(timezone.utc)
    return [host_json(h, facts.get(h.name, {}), interval, now, answer=answers) for h in hosts], False


def _stored_hosts():
    from afd.record.files import default_path
    from afd.record.fleet_book import read_facts, read_hosts
    from afd.record.store import Store, StoreError

    db = default_path()
    if not db.exists():
        return [], {}
    try:
        store = Store.open_readonly(db)
    except StoreError as exc:
        raise UserError(str(exc), EXIT_DAEMON_DOWN) from None
    try:
        if not store.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'hosts'"):
            return [], {}  # a store from before the fleet
        return read_hosts(store.query), read_facts(store.query)
    finally:
        store.close()


def run_list(args: argparse.Namespace) -> int:
    hosts, running = read_hosts()
    if args.json:
        _print_json(hosts)
    else:
        from afd.display.reader import Reader

        reader = Reader.here()
        if not running:
            print("afd is not running; the hosts as it last stored them")
        if not hosts:
            print("no hosts: `afd hosts add NAME DEST` adds one (docs/fleet.md)")
        for h in hosts:
            print(reader.says(host_line(h)))
    return EXIT_OK if running else EXIT_DAEMON_DOWN


def host_line(h: dict) -> str:
    """One host in words: `workstation (me@ws) · answered 14:02 · afd 0.2.0`, or why its facts are stale."""
    where = h["dest"] + (f" port {h['port']}" if h.get("port") else "")
    parts = [f"{h['name']} ({where})"]
    if h["contact"] is None:
        parts.append("not asked yet")
    elif h["contact"] == "answered" and not h["stale"]:
        parts.append(f"answered {h['answered_at']}")
    else:
        parts.append(f"{h['contact']}, stale since {h['stale_since'] or h['asked_at']}")
    if h.get("skewed"):
        parts.append(f"clock {h['skew_seconds']:+.0f} s off: its facts are shown, not used")
    if h.get("version"):
        parts.append(f"afd {h['version']}")
    if h.get("host_key"):
        parts.append(h["host_key"])
    if h.get("error"):
        parts.append(h["error"])
    return " · ".join(parts)


def run_check(args: argparse.Namespace) -> int:
    from afd.config.settings import load_config
    from afd.daemon import fleet
    from afd.judge import fleet as rules

    hosts, _facts = _stored_hosts()
    if args.name:
        hosts = [h for h in hosts if h.name == args.name]
        if not hosts:
            raise UserError(f"no host named {args.name!r} (`afd hosts list` shows them)", EXIT_FAIL)
    if not hosts:
        raise UserError("no hosts to check: `afd hosts add NAME DEST` adds one", EXIT_FAIL)
    transport = fleet.transport(load_config(None).fleet_timeout)
    results = []
    for h in hosts:
        if not args.json:
            print(f"asking {h.name} …", file=sys.stderr, flush=True)
        pull = fleet.ask(transport, h.name, h.dest, h.port)
        answer = pull.answer
        skew = rules.skew_of(answer.time, pull.reply.sent_at, pull.reply.received_at) if answer else None
        trip = fleet.round_trip(pull.reply)
        results.append({
            "name": h.name, "dest": h.dest, "port": h.port,
            "contact": "answered" if answer else fleet.after_pull(h, pull).contact.value,  # type: ignore[union-attr]
            "error": pull.problem, "round_trip_seconds": round(trip, 3), "version": answer.version if answer else None,
            "skew_seconds": round(skew, 3) if skew is not None else None,
            "skewed": rules.is_skewed(skew, trip), "new_host_key": pull.reply.new_host_key,
            "sessions": len(answer.sessions or ()) if answer else None,
            "limits": len(answer.facts or ()) if answer else None,
        })
    if args.json:
        _print_json(results)
    else:
        from afd.display.reader import Reader

        reader = Reader.here()
        for r in results:
            if r["contact"] == "answered":
                line = (f"{r['name']}: answered in {r['round_trip_seconds']:.1f} s · afd {r['version']} · "
                        f"{r['sessions']} sessions · {r['limits']} shared limit facts · clock {r['skew_seconds']:+.1f} s")
                if r["skewed"]:
                    line += " (over 60 s: its facts are shown, not used)"
            else:
                line = f"{r['name']}: {r['contact']}: {r['error']}"
            if r["new_host_key"]:
                line += f"\n  first contact: accepted its host key {r['new_host_key']}"
            print(reader.says(line, lines=True))
    return EXIT_OK if all(r["contact"] == "answered" for r in results) else EXIT_FAIL
