"""`afd handoff` (through the daemon) and `afd ledger` (from the store)."""

from __future__ import annotations

import argparse

from afd.errors import EXIT_DAEMON_DOWN, EXIT_FAIL, EXIT_OK, EXIT_USAGE, UserError


def register(sub: argparse._SubParsersAction) -> None:
    h = sub.add_parser(
        "handoff",
        help="swap another agent into a session's pane, with a brief",
        description="Stop the session's agent (its whole process tree, confirmed gone), start AGENT in the same "
        "pane, worktree and branch, and give it a brief: the mission (or --brief), the fact of the handoff and the "
        "exact git ranges of the work done. Answers when the swap has settled.",
    )
    h.add_argument("session", help="the session to hand off: its afd name, tmux session, session:window.pane or pane id (%%3)")
    h.add_argument("--to", required=True, metavar="AGENT", help="the agent to hand the work to (its default account), "
                   "or an account of the config ([accounts.NAME], e.g. claude-work) to start its agent on")
    h.add_argument("--brief", metavar="TEXT", help="the goal to give the new agent (replaces the session's mission)")
    h.add_argument("--force", action="store_true", help="hand off even when AGENT is known to be at its usage limit")
    h.add_argument("--no-wait", action="store_true", help="answer at once with the journal id; follow with `afd events`")
    h.add_argument("--json", action="store_true", help="print the result as JSON")
    h.set_defaults(func=run_handoff)

    lg = sub.add_parser(
        "ledger",
        help="a session's handoffs and the commit range each agent wrote",
        description="The session's handoff ledger: who handed to whom, when, at which HEAD, and the commit range "
        "each agent wrote (BASE..SHA1 by the first, SHA1..HEAD by the next, ...).",
    )
    lg.add_argument("session", help="the session: its afd name, tmux session, session:window.pane or pane id (%%3)")
    form = lg.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="print one JSON object")
    form.add_argument("--markdown", action="store_true", help="print markdown ready for a pull-request description")
    lg.set_defaults(func=run_ledger)


def run_handoff(args: argparse.Namespace) -> int:
    from afd.cli.common import print_json
    from afd.daemon import control

    request = {"name": args.session, "to": args.to, "brief": args.brief, "force": args.force, "wait": not args.no_wait}
    try:
        sub = control.subscribe(control.socket_path(), "handoff", request, timeout=30)
    except control.DaemonUnavailable:
        raise UserError("the daemon is not running; start it with `afd run` (it is the only writer of afd's state)", EXIT_DAEMON_DOWN) from None
    result = dict(sub.result or {})
    if not args.no_wait:
        settled = next(iter(sub), None)
        sub.close()
        if settled is None:
            raise UserError(f"the daemon stopped before the handoff settled; see `afd events` (journal {result.get('journal')})", EXIT_FAIL)
        result.update(settled)
    if args.json:
        print_json(result)
        return EXIT_OK if result["state"] in ("done", "pending") else EXIT_FAIL
    from afd.display.reader import Reader

    says = Reader.here().says  # the outcome quotes panes and refusals (their instants in ISO UTC)
    if result["state"] == "pending":
        print(says(f"handoff of {args.session} to {args.to} started (journal {result['journal']}); follow it with `afd events -f`"))
    elif result["state"] == "done":
        print(says(f"{args.session}: {result['outcome']}"))
    else:
        print(says(f"afd: {args.session}: handoff {result['outcome']}"))
    return EXIT_OK if result["state"] in ("done", "pending") else EXIT_FAIL


def run_ledger(args: argparse.Namespace) -> int:
    from afd.cli.common import print_json
    from afd.record import ledger
    from afd.record.naming import resolve
    from afd.record.store import Store, StoreError, default_path
    from afd.world import git

    db = default_path()
    if not db.exists():
        raise UserError("afd has no state yet; start it with `afd run`", EXIT_USAGE)
    try:
        store = Store.open_readonly(db)
    except StoreError as exc:
        raise UserError(str(exc), EXIT_FAIL) from None
    try:
        # The same names the daemon takes (`naming.resolve`), read from the store whether or not it runs.
        rec = resolve(args.session, store.list_sessions())
        entries = store.ledger(rec.name)
    finally:
        store.close()
    head = git.head_of(rec.worktree)
    if args.json:
        print_json(ledger.as_json(rec.name, entries, head))
        return EXIT_OK
    from afd.display.reader import Reader

    reader = Reader.here()
    if args.markdown:
        # Read by others, in a pull request, maybe in another zone: each time with its offset.
        print(ledger.as_markdown(rec.name, entries, head, zone=reader.zone), end="")
    else:
        from rich.console import Console
        from rich.table import Table

        from afd.display.text import cell, neutral

        console = Console(highlight=False, soft_wrap=True)
        if not entries:
            console.print(neutral(f"{rec.name}: no handoffs recorded"), markup=False)
            return EXIT_OK
        table = Table(title=cell(f"{rec.name}: handoffs"), title_justify="left")
        for col in ("at", "from", "to", "head", "reason", "automatic"):
            table.add_column(col)
        for e in entries:
            table.add_row(cell(reader.dated(e.at)), cell(ledger.who(e.from_agent, e.from_account)),
                          cell(ledger.who(e.to_agent, e.to_account)), cell(e.head_sha[:12]), cell(reader.says(e.reason)),
                          "yes" if e.automatic else "no")
        console.print(table)
        for s in ledger.stretches(entries):
            console.print(neutral(f"  {ledger.who(s.agent, s.account):<8} wrote {s.range}"), markup=False)
    return EXIT_OK
