"""`afd sessions …`: list, create, adopt, set a mission, pause, unpause, cancel, forget. Changes go through the daemon."""

from __future__ import annotations

import argparse
import os
import time

from afd.errors import EXIT_DAEMON_DOWN, EXIT_FAIL, EXIT_OK, UserError

# git worktree add is given two minutes by the daemon, and the agent's start a few seconds more.
CREATE_TIMEOUT = 180.0

NAME_HELP = "the session: its afd name, its tmux session, session:window.pane, or pane id (%%3)"


def _duration(text: str) -> float:
    """An argparse type: a duration as the config writes them, more than zero."""
    from afd.config.durations import DurationError, parse_duration

    try:
        seconds = parse_duration(text)
    except DurationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if seconds <= 0:
        raise argparse.ArgumentTypeError("a pause of no time holds nothing; give a duration such as 2h, or leave --for out")
    return seconds


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sessions", help="list and manage sessions", description="List and manage afd's sessions.")
    s = p.add_subparsers(dest="sessions_command", metavar="SUBCOMMAND", required=True)

    ls = s.add_parser("list", help="list sessions", description="List sessions (read from the store when the daemon is down).")
    ls.add_argument("--json", action="store_true", help="print a JSON list")
    ls.set_defaults(func=run_list)

    cr = s.add_parser(
        "create",
        help="new branch, worktree and tmux session running an agent on a prompt",
        description="Create branch afd/NAME from --base (default HEAD) with a git worktree under worktree_root, "
        "start the agent on the prompt in a tmux session afd-NAME, and record the prompt as the mission.",
    )
    cr.add_argument("name", help="session name (also names the branch afd/NAME)")
    cr.add_argument("--agent", required=True, help="agent to start (claude, codex, devin, …), or an account of the config "
                    "([accounts.NAME], e.g. claude-work) to start its agent on it")
    cr.add_argument("--repo", required=True, help="path to the git repository")
    cr.add_argument("--prompt", required=True, help="the mission: the first prompt given to the agent")
    cr.add_argument("--base", help="commit or branch to start from (default: the repository's HEAD)")
    cr.add_argument("--json", action="store_true", help="print the result as JSON")
    cr.set_defaults(func=run_create)

    ad = s.add_parser(
        "adopt",
        help="watch an existing pane as a session",
        description="Adopt a pane (a pane id like %3 or a target like work:1.0). --agent vouches for the agent "
        "when afd cannot tell (a wrapper script); that is recorded as your word.",
    )
    ad.add_argument("pane", help="pane id (%%3) or target (session:window.pane)")
    ad.add_argument("--name", help="session name (default: from the pane's tmux location)")
    ad.add_argument("--mission", help="the goal of the work in this pane")
    ad.add_argument("--agent", help="the agent running there, on your word")
    ad.add_argument("--json", action="store_true", help="print the result as JSON")
    ad.set_defaults(func=run_adopt)

    sm = s.add_parser("set-mission", help="set a session's mission", description="Set (or, with an empty TEXT, clear) a session's mission.")
    sm.add_argument("name", help=NAME_HELP)
    sm.add_argument("text", help="the goal, in a sentence or two (empty clears it)")
    sm.add_argument("--json", action="store_true", help="print the result as JSON")
    sm.set_defaults(func=run_set_mission)

    pa = s.add_parser(
        "pause",
        help="hold every automatic action that types into a session's pane",
        description="Pause a session: afd types nothing into its pane by itself (no resume, no automatic handoff, no "
        "job envelope) until you unpause it or --for has passed. It is still watched and reported, and a manual "
        "`afd resume` or `afd handoff` still acts. The pause survives a restart of afd.",
    )
    pa.add_argument("name", help=NAME_HELP)
    pa.add_argument("--for", dest="duration", metavar="DURATION", type=_duration,
                    help='how long, e.g. "2h" or "1h30m" (default: until `afd sessions unpause`)')
    pa.add_argument("--json", action="store_true", help="print the result as JSON")
    pa.set_defaults(func=run_pause)

    up = s.add_parser("unpause", help="let afd act on a paused session again",
                      description="End a session's pause; afd acts on it again as configured from the next poll.")
    up.add_argument("name", help=NAME_HELP)
    up.add_argument("--json", action="store_true", help="print the result as JSON")
    up.set_defaults(func=run_unpause)

    ca = s.add_parser(
        "cancel",
        help="cancel what afd planned for a session's present wall",
        description="Cancel the resume (or automatic handoff) afd planned for the wall the session stands at now. "
        "It is kept with that wall, so afd does not plan it again; the next wall is planned as ever. "
        "`afd resume NAME` still resumes it by hand. Refused (exit 1) when the session is not at a limit or an "
        "action is under way.",
    )
    ca.add_argument("name", help=NAME_HELP)
    ca.add_argument("--json", action="store_true", help="print the result as JSON")
    ca.set_defaults(func=run_cancel)

    fg = s.add_parser("forget", help="drop a session from afd's state (the pane is not touched)", description="Forget a session; its pane and worktree are left alone.")
    fg.add_argument("name", help=NAME_HELP)
    fg.add_argument("--json", action="store_true", help="print the result as JSON")
    fg.set_defaults(func=run_forget)


def _ask(cmd: str, args: dict, timeout: float = 60.0):
    from afd.daemon import control

    try:
        return control.request(control.socket_path(), cmd, args, timeout=timeout)
    except control.DaemonUnavailable:
        raise UserError(
            "the daemon is not running; start it with `afd run` (it is the only writer of afd's state)", EXIT_DAEMON_DOWN
        ) from None


def _show(result, as_json: bool, text: str) -> int:
    if as_json:
        from afd.cli.common import print_json

        print_json(result)
    else:
        from afd.display.text import neutral

        print(neutral(text, lines=True))
    return EXIT_OK


def run_list(args: argparse.Namespace) -> int:
    from afd.cli.status import read_report

    report, running = read_report(0)
    if args.json:
        from afd.cli.common import print_json

        print_json(report["sessions"])
    else:
        from datetime import datetime, timezone

        from afd.cli.status_view import paused_now
        from afd.display.text import neutral

        now = datetime.now(timezone.utc)
        # A mission may come from an agent's argv, a name from a pane's title: neutral, one line each.
        for s in report["sessions"]:
            state = s["state"] + (" (paused)" if paused_now(s, now) else "")
            print(neutral(f"{s['name']:<20} {s['agent'] or '?':<8} {state:<8} {s['pane'] or '-':<5} "
                          f"{s['branch'] or '-'}  {s['mission'] or ''}"))
        if not report["sessions"]:
            print("no sessions")
    return EXIT_OK if running else EXIT_DAEMON_DOWN


def run_create(args: argparse.Namespace) -> int:
    repo = os.path.abspath(args.repo)
    begun = _ask("sessions.create", {"name": args.name, "agent": args.agent, "repo": repo, "prompt": args.prompt, "base": args.base})
    # The daemon makes the worktree on a worker (it can take minutes) and keeps serving meanwhile.
    deadline = time.monotonic() + CREATE_TIMEOUT
    while not (r := _ask("sessions.create-result", {"journal": begun["journal"]}))["done"]:
        if time.monotonic() > deadline:
            raise UserError(
                f"the daemon is still creating {args.name} after {CREATE_TIMEOUT:.0f}s; see `afd events`", EXIT_FAIL
            )
        time.sleep(0.1)
    del r["done"]
    on = f" on account {r['account']}" if r.get("account") and r["account"] != r.get("agent") else ""
    routed = f"\n{r['routed']}" if r.get("routed") else ""
    return _show(r, args.json, f"created {r['name']}: {r.get('agent')}{on}, branch {r['branch']} in {r['worktree']}, "
                               f"pane {r['pane']} (tmux session {r['tmux_session']}){routed}")


def run_adopt(args: argparse.Namespace) -> int:
    r = _ask("sessions.adopt", {"pane": args.pane, "name": args.name, "mission": args.mission, "agent": args.agent})
    word = " on your word" if r["identity_source"] == "user" else ""
    return _show(r, args.json, f"adopted pane {r['pane']} as {r['name']} ({r['agent']}{word})")


def run_set_mission(args: argparse.Namespace) -> int:
    r = _ask("sessions.set-mission", {"name": args.name, "mission": args.text})
    return _show(r, args.json, f"{r['name']}: mission {'set' if r['mission'] else 'cleared'}")


def run_forget(args: argparse.Namespace) -> int:
    r = _ask("sessions.forget", {"name": args.name})
    return _show(r, args.json, f"forgot {r['name']}; its pane and worktree were left alone")


def run_pause(args: argparse.Namespace) -> int:
    r = _ask("sessions.pause", {"name": args.name, "for_seconds": args.duration})
    return _show(r, args.json, f"paused {r['name']} {_until(r['until'])}: afd types nothing into its pane by itself; "
                               "it is still watched and reported")


def run_unpause(args: argparse.Namespace) -> int:
    r = _ask("sessions.unpause", {"name": args.name})
    text = f"unpaused {r['name']}; afd acts on it again as configured" if r["was_paused"] else f"{r['name']} was not paused"
    return _show(r, args.json, text)


def run_cancel(args: argparse.Namespace) -> int:
    r = _ask("sessions.cancel", {"name": args.name})
    was = f" (it was: {r['was']})" if r.get("was") else ""
    return _show(r, args.json, f"cancelled afd's plan for {r['name']}'s present wall{was}; "
                               f"resume it by hand with: afd resume {r['name']}")


def _until(iso: str | None) -> str:
    """`until 17:30 (in 2h00m)` in the reader's zone, or `until you unpause it`."""
    if iso is None:
        return "until you unpause it (afd sessions unpause)"
    from datetime import datetime, timezone

    from afd.kit.resettime import local_zone
    from afd.notifiers.message import clock_time

    at = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    return f"until {clock_time(at, datetime.now(timezone.utc), local_zone())}"
