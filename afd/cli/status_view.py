"""The status report drawn for a person: tables that fit the terminal, or one line per session when piped.

A terminal gets the richest layout whose columns fit its width without
cutting a cell: every column at 160 columns or so, the essential ones
(`status --watch` draws the same) at 120, and at 80 the name, the agent on
its account, the state, the reset and the next action; a cell that does
not fit wraps, it is never cut to `bil…`. `--wide` shows every column
whatever the width. Piped, each session is one line, nothing cut, no
colour, for grep and awk. Every cell goes through the reader
(`afd.display`): text from outside is neutral, instants are in the reader's
zone with a countdown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from afd.display.reader import Reader
from afd.display.text import neutral

_STATE_STYLE = {
    "all_limited": "bold red", "handing_off": "bold yellow", "resuming": "bold yellow", "needs_human": "bold red",
    "limited": "bold red", "working": "green", "idle": "cyan", "exited": "yellow", "gone": "dim", "unknown": "magenta",
    "available": "green",
}

FULL = ("name", "where", "agent", "account", "state", "witnesses", "reset", "mission", "worktree", "branch",
        "next action")
ESSENTIAL = ("name", "agent", "account", "state", "reset", "next action")
# At 80 columns the account rides in the agent's cell (`claude (claude-work)`) when it is not the default,
# and the reset in the next action's words (`resume at 08:00 (in 3h24m)`, `… (limit resets 08:00 …)`).
COMPACT = ("name", "agent", "state", "next action")
SESSION_LAYOUTS = (FULL, ESSENTIAL, COMPACT)

ACCOUNTS_FULL = ("account", "agent", "state", "reset", "seen", "by session")
ACCOUNTS_SHORT = ("account", "agent", "state", "reset")

# The columns that may wrap (at spaces, or folded; never cut) rather than widen a table past the terminal,
# and the width each is counted at when choosing a layout. Names and states never wrap.
_WRAPS = {"next action": 24, "worktree": 16, "branch": 16, "reset": 16, "agent": 12}
# Between two columns: one space of padding each side, no rule.
_GAP = 2

@dataclass(frozen=True, slots=True)
class Row:
    """One session's cells as words, and the state (for its colour)."""

    cells: dict[str, str]
    state: str


def _who(agent: str, account: str | None) -> str:
    return f"{agent} ({account})" if account and account not in ("-", agent.split(" ")[0]) else agent


def session_rows(report: dict, reader: Reader) -> list[Row]:
    """Every session's cells, in the reader's words."""
    rows = []
    for s in report["sessions"]:
        agent = neutral(s["agent"] or "?")
        if s["identity_source"] == "user":
            agent += " (your word)"
        if s.get("handoffs"):
            agent += f" ⇄{s['handoffs']}"  # handed off this many times; `afd ledger NAME` shows where
        account = neutral(s.get("account") or "-")
        where = neutral(f"{s.get('location') or '?'} {s['pane'] or ''}".strip())
        reset = reader.at(s["reset_at"]) or ("not stated" if s["state"] == "limited" else "-")
        cells = {
            "name": neutral(s["name"]), "where": where, "agent": agent, "account": account,
            "state": neutral(s["state"]) + (" · paused" if paused_now(s, reader.now) else ""), "witnesses": neutral(s.get("witnesses") or "-"), "reset": reset,
            "mission": "yes" if s["mission"] else "no", "worktree": reader.says(_home(s["worktree"])) or "-",
            "branch": neutral(s["branch"] or "-"), "next action": next_words(s, reader) or "-",
        }
        rows.append(Row(cells, s["state"]))
    return rows


def paused_now(session: dict, now) -> bool:
    """Whether the session's pause holds at `now` (the store may keep one that ended while the daemon was down)."""
    from datetime import datetime

    pause = session.get("paused")
    if not pause:
        return False
    until = pause.get("until")
    return until is None or datetime.fromisoformat(until.replace("Z", "+00:00")) > now


def next_words(session: dict, reader: Reader) -> str | None:
    """The next action in the reader's zone with a countdown (JSON keeps ISO UTC)."""
    from afd.decide.nextaction import words

    if session.get("next") is None:
        return reader.says(session.get("next_action")) or None
    return reader.says(words(session["next"]))


def account_rows(report: dict, reader: Reader) -> list[Row]:
    rows = []
    for a in report.get("accounts", [{**a, "agent": a["name"]} for a in report["agents"]]):
        # A fact another host of the fleet told says where it was seen (docs/fleet.md).
        host = f" · seen on {neutral(a['source_host'])}" if a.get("source_host") else ""
        cells = {"account": neutral(a["name"]), "agent": neutral(a["agent"]), "state": neutral(a["state"]),
                 "reset": (reader.at(a["reset_at"]) or "-") + host, "seen": reader.at(a["observed_at"]) or "never",
                 "by session": neutral(a["source_session"] or "-")}
        rows.append(Row(cells, a["state"]))
    return rows


def _home(path: str | None) -> str | None:
    import os

    home = os.path.expanduser("~")
    if path and home not in ("", "/") and (path == home or path.startswith(home + "/")):
        return "~" + path[len(home):]
    return path


def _cell_width(text: str) -> int:
    from rich.cells import cell_len

    return max((cell_len(line) for line in text.split("\n")), default=0)


def _widest(rows: Sequence[Row], col: str, columns: Sequence[str]) -> int:
    return max([_cell_width(col), *(_cell_width(_cell(r, col, columns)) for r in rows)])


def widths(rows: Sequence[Row], columns: Sequence[str], width: int) -> list[int] | None:
    """Each column's width so the table fits `width`: names and states whole, the rest wrapped no narrower
    than its floor; None when even that does not fit."""
    natural = [_widest(rows, col, columns) for col in columns]
    floors = [min(n, _WRAPS.get(col, n)) for col, n in zip(columns, natural, strict=True)]
    room = width - _GAP * (len(columns) - 1)
    if sum(natural) <= room:
        return natural
    if sum(floors) > room:
        return None
    # What is left past the floors is shared out fairly: the columns needing least get all they need, the
    # rest share the remainder equally.
    out, spare = list(floors), room - sum(floors)
    needy = sorted((i for i in range(len(columns)) if natural[i] > floors[i]), key=lambda i: natural[i] - floors[i])
    for k, i in enumerate(needy):
        share = min(natural[i] - out[i], spare // (len(needy) - k))
        out[i] += share
        spare -= share
    for i in reversed(needy):  # the odd columns integer division left
        more = min(natural[i] - out[i], spare)
        out[i] += more
        spare -= more
    return out


def _cell(row: Row, col: str, columns: Sequence[str]) -> str:
    if col == "agent" and "account" not in columns:
        return _who(row.cells["agent"], row.cells.get("account"))
    return row.cells[col]


def choose(rows: Sequence[Row], layouts: Sequence[Sequence[str]], width: int) -> tuple[Sequence[str], list[int] | None]:
    """The richest layout that fits `width` with no cell cut, and its column widths; the narrowest when none does."""
    for columns in layouts:
        fitted = widths(rows, columns, width)
        if fitted is not None:
            return columns, fitted
    return layouts[-1], None


def _table(title: str, rows: Sequence[Row], columns: Sequence[str], fitted: list[int] | None):
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title, title_justify="left", box=None, pad_edge=False, header_style="bold underline")
    for i, col in enumerate(columns):
        # Wrapped at spaces, or folded, never cut to `bil…`; without widths (--wide, or nothing fits) rich shares out.
        given = fitted[i] if fitted else None
        table.add_column(col, overflow="fold", width=given, no_wrap=given is not None and given >= _widest(rows, col, columns))
    for r in rows:
        table.add_row(*(Text(_cell(r, c, columns), style=_STATE_STYLE.get(r.state, "") if c == "state" else "")
                        for c in columns))
    return table


def report_view(report: dict, reader: Reader, width: int, *, wide: bool = False, events: int | None = None,
                cut_events: bool = False) -> list:
    """The sessions table, the accounts table and the recent events, as rich renderables fitting `width`."""
    from rich.text import Text

    parts: list = []
    sessions = session_rows(report, reader)
    if sessions:
        columns, fitted = (FULL, widths(sessions, FULL, width)) if wide else choose(sessions, SESSION_LAYOUTS, width)
        parts.append(_table("sessions", sessions, columns, fitted))
    else:
        parts.append(Text("no sessions yet (panes running a known agent are adopted automatically)"))
    accounts = account_rows(report, reader)
    columns, fitted = ((ACCOUNTS_FULL, widths(accounts, ACCOUNTS_FULL, width)) if wide
                       else choose(accounts, (ACCOUNTS_FULL, ACCOUNTS_SHORT), width))
    parts.append(_table("accounts", accounts, columns, fitted))
    figures = report.get("usage")
    if figures and any(a["windows"] for a in figures.get("accounts", ())):
        from afd.cli.usage_table import usage_table

        parts.append(usage_table(figures, now=reader.now, zone=reader.zone, narrow=not wide and width < 100))
    recent = report["events"] if events is None else report["events"][:events]
    if recent:
        parts.append(_events_table(recent, reader, cut=cut_events))
    return parts


def _events_table(events: Sequence[dict], reader: Reader, *, cut: bool):
    """The recent events, their words wrapped under themselves (or, live, cut at the edge)."""
    from rich.table import Table
    from rich.text import Text

    table = Table.grid(padding=(0, 2))
    table.title, table.title_justify, table.title_style = "recent events", "left", "bold"
    for _ in range(3):
        table.add_column(no_wrap=True)
    table.add_column(no_wrap=cut, overflow="ellipsis" if cut else "fold")
    for e in events:
        # Text, never markup: a message quotes panes and replies.
        table.add_row(*(Text(v) for v in _event_cells(e, reader).values()))
    return table


def event_lines(events: Sequence[dict], reader: Reader) -> list[str]:
    """`09:30:05  shop-api:0.0    resume.scheduled   resume at 10:00 (in 29m)`, one per event."""
    return [f"{reader.happened(e['at'])}  {neutral(e['session'] or '-'):<14} {neutral(e['kind']):<18} {reader.says(e['message'])}"
            for e in events]


def daemon_line(report: dict, reader: Reader) -> str:
    d = report["daemon"]
    since = reader.at(d.get("started_at")) or "?"
    return f"afd {d.get('version')} running (pid {d.get('pid')}, since {since}, tmux server: {server_words(d)})"


def server_words(daemon: dict) -> str:
    """The tmux server the daemon watches, by its socket's path (`/tmp/tmux-1000/default`)."""
    return neutral(daemon.get("server_socket") or daemon.get("server") or "?")


def lines(rows: Sequence[Row], columns: Sequence[str]) -> list[str]:
    """A header and one line per row, columns aligned, nothing cut; the last column is left ragged."""
    table = [list(columns), *([_cell(r, c, columns) for c in columns] for r in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(columns))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(line[:-1], widths, strict=False)) + "  " + line[-1]
            for line in table]


def piped(report: dict, reader: Reader, header: str | None, events: int | None = None) -> str:
    """The report for a pipe: one line per session (and per account, per event), nothing cut, no colour."""
    out = [header] if header else []
    sessions = session_rows(report, reader)
    if sessions:
        out += lines(sessions, FULL)
    else:
        out.append("no sessions yet (panes running a known agent are adopted automatically)")
    out.append("")
    out += lines(account_rows(report, reader), ACCOUNTS_FULL)
    recent = report["events"] if events is None else report["events"][:events]
    if recent:
        out += ["", *lines([Row(_event_cells(e, reader), "") for e in recent], ("at", "session", "kind", "message"))]
    return "\n".join(out) + "\n"


def _event_cells(event: dict, reader: Reader) -> dict[str, str]:
    return {"at": reader.happened(event["at"]), "session": neutral(event["session"] or "-"),
            "kind": neutral(event["kind"]), "message": reader.says(event["message"])}
