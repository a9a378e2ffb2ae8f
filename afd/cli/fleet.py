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
        from afd.display.reader import Reader

        print(Reader.here().says("\n".join(fleet_lines(view, running)), lines=True))
    return EXIT_OK if running else EXIT_DAEMON_DOWN


def fleet_lines(view: dict, running: bool = True) -> list[str]:
    """The fleet in words, one block per host (what `afd fleet` and `afd status --watch --fleet` show)."""
    out: list[str] = [] if running else ["afd is not running here; the fleet as it last stored it", ""]
    for h in view["hosts"]:
        if h["here"]:
            head = f"{h['name']} (here) · afd {h['version'] or '?'}"
        else:
            if h["contact"] is None:
                how = "not asked yet"
            elif h["stale"]:
                how = f"{h['contact']}, stale since {h['stale_since'] or '?'}" + (f": {h['error']}" if h["error"] else "")
            else:
                how = f"answered {h['last_contact']}"
            head = f"{h['name']} ({h['dest']}) · afd {h['version'] or '?'} · {how}"
            if h["skewed"]:
                head += " · its clock is over 60 s off: its facts are shown, not used"
        out.append(head)
        for s in h["sessions"]:
            until = f" until {s['reset_at']}" if s.get("reset_at") and s["state"] == "limited" else ""
            out.append(f"  {s['name']} · {s.get('agent') or '?'} · {s.get('account') or '-'} · {s['state']}{until}"
                       + (f" · {s['next_action']}" if s.get("next_action") else ""))
        if not h["sessions"]:
            out.append("  no sessions")
        for f in h["limits"]:
            if f["state"] == "limited":
                seen = f" · seen on {f['source_host']}" if h["here"] and f.get("source_host") else ""
                until = f" until {f['reset_at']}" if f.get("reset_at") else ""
                out.append(f"  {f['account']} · limited{until}{seen}")
        out.append("")
    if len(view["hosts"]) > 1:
        out.append("actions stay local: run a command for a host's session on that host")
    return out
