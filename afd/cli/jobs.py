"""`afd jobs …`: helper sessions that a session supervises, their results, and handing them off.

Run from inside a session's pane: the pane comes from `$TMUX_PANE`, and the
daemon checks it against the calling process before believing it.
"""

from __future__ import annotations

import argparse
import os
import time

from afd.cli.main import EXIT_FAIL, EXIT_OK, UserError
from afd.cli.sessions import CREATE_TIMEOUT, _ask, _show


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("jobs", help="sessions supervised by other sessions",
                       description="Jobs: sessions that another session (their supervisor) started and waits for. "
                       "Run these from inside a session's pane; `afd help agents` explains them for agents.")
    s = p.add_subparsers(dest="jobs_command", metavar="SUBCOMMAND", required=True)

    cr = s.add_parser("create", help="start a job owned by the session you run in",
                      description="Create a session like `afd sessions create` (branch afd/NAME, a worktree of your "
                      "session's repository) owned by the session whose pane runs this command.")
    cr.add_argument("name", help="job name (also names the branch afd/NAME)")
    cr.add_argument("--agent", required=True, help="agent to start (claude, codex, devin, …)")
    cr.add_argument("--prompt", required=True, help="the job's mission, given to its agent")
    cr.add_argument("--title", help="a short title for lists (default: the prompt's first line)")
    cr.add_argument("--parent", metavar="JOB", help="one of your jobs this one belongs under")
    cr.add_argument("--json", action="store_true", help="print the result as JSON")
    cr.set_defaults(func=run_create)

    ls = s.add_parser("list", help="list jobs", description="From a session's pane: that session's jobs. "
                      "Elsewhere: every job, grouped by supervisor.")
    ls.add_argument("--json", action="store_true", help="print JSON")
    ls.set_defaults(func=run_list)

    dn = s.add_parser("done", help="report, from a job's pane, that its work is finished",
                      description="Mark the job you run in as done; its supervisor gets an envelope with the summary and branch.")
    dn.add_argument("--summary", help="one or two sentences on what was done")
    dn.add_argument("--json", action="store_true", help="print the result as JSON")
    dn.set_defaults(func=run_done)

    fl = s.add_parser("fail", help="report, from a job's pane, that it cannot finish",
                      description="Mark the job you run in as failed; its supervisor gets an envelope with the reason.")
    fl.add_argument("--reason", required=True, help="why the job cannot finish")
    fl.add_argument("--json", action="store_true", help="print the result as JSON")
    fl.set_defaults(func=run_fail)

    ho = s.add_parser("handoff", help="give your jobs to another session",
                      description="Move your top-level jobs (all, or those named) and everything under them to another "
                      "live session, which becomes their supervisor; you stay their first fallback recipient.")
    ho.add_argument("--to", required=True, metavar="SESSION", help="the session that takes the jobs over (its afd name, tmux session, session:window.pane or pane id)")
    ho.add_argument("--jobs", nargs="+", metavar="NAME", default=["all"], help="'all' (the default) or job names")
    ho.add_argument("--note", help="context for the new supervisor (at most 4000 characters)")
    ho.add_argument("--json", action="store_true", help="print the result as JSON")
    ho.set_defaults(func=run_handoff)


def _pane() -> str | None:
    return os.environ.get("TMUX_PANE") or None


def run_create(args: argparse.Namespace) -> int:
    begun = _ask("jobs.create", {"name": args.name, "agent": args.agent, "prompt": args.prompt, "pane": _pane(),
                                 "title": args.title, "parent": args.parent})
    deadline = time.monotonic() + CREATE_TIMEOUT
    while not (r := _ask("sessions.create-result", {"journal": begun["journal"]}))["done"]:
        if time.monotonic() > deadline:
            raise UserError(f"the daemon is still creating {args.name} after {CREATE_TIMEOUT:.0f}s; see `afd events`", EXIT_FAIL)
        time.sleep(0.1)
    del r["done"]
    r["owner"] = begun["owner"]
    return _show(r, args.json, f"created job {r['name']} for {r['owner']}: branch {r['branch']} in {r['worktree']}, pane {r['pane']}")


def run_list(args: argparse.Namespace) -> int:
    r = _ask("jobs.list", {"pane": _pane()})
    if args.json:
        return _show(r["jobs"], True, "")
    from rich.console import Console
    from rich.table import Table

    from afd.display.text import cell, neutral

    if not r["jobs"]:
        print("no jobs")
        return EXIT_OK
    owners = [r["supervisor"]] if r["supervisor"] else sorted({j["owner"] for j in r["jobs"]})
    console = Console()
    for owner in owners:
        table = Table(title=cell(f"jobs of {owner}"), title_justify="left")
        for col in ("name", "title", "status", "owner", "parent"):
            table.add_column(col)
        for j in r["jobs"]:
            if j["owner"] == owner:
                # A job's title and names were typed by an agent: text, never markup.
                table.add_row(*(cell(neutral(v)) for v in (j["name"], j["title"], j["status"], j["owner"], j["parent"] or "-")))
        console.print(table)
    return EXIT_OK


def run_done(args: argparse.Namespace) -> int:
    r = _ask("jobs.done", {"pane": _pane(), "summary": args.summary})
    return _show(r, args.json, f"job {r['name']} is done; {r['owner']} will be told")


def run_fail(args: argparse.Namespace) -> int:
    r = _ask("jobs.fail", {"pane": _pane(), "reason": args.reason})
    return _show(r, args.json, f"job {r['name']} is failed; {r['owner']} will be told")


def run_handoff(args: argparse.Namespace) -> int:
    r = _ask("jobs.handoff", {"pane": _pane(), "to": args.to, "selected": args.jobs, "note": args.note})
    return _show(r, args.json, f"handed off {len(r['jobs'])} job(s) to {r['to']}: {', '.join(r['jobs'])} (receipt {r['receipt']})")
