"""`afd usage`'s table: each account's windows, in words a person reads (status's usage panel shows it too)."""

from __future__ import annotations

from afd.display.text import neutral


def window_label(w: dict, agent: str | None = None) -> str:
    """`5-hour`, or `5-hour (codex_spark)` for a limit other than the agent's own."""
    from afd.judge.usage import LABELS

    name = LABELS.get(w["window"], w["window"])
    return f"{name} ({w['limit_id']})" if w.get("limit_id") and w["limit_id"] != agent else name


def provenance_words(w: dict) -> str:
    from afd.judge.usage import age_words

    if w["provenance"] == "calibrated":
        return f"calibrated from {w['stops']} stop{'s' if w['stops'] != 1 else ''}"
    return f"exact, {age_words(w.get('age_seconds'))} old" + (" (stale)" if w.get("stale") else "")


def local_time(iso: str | None, now, zone) -> str | None:
    """An ISO UTC instant in the reader's zone, with a countdown while it is ahead."""
    from afd.display.reader import Reader

    return Reader(now, zone).at(iso)


def runs_out_words(w: dict, now, zone) -> str:
    f = w.get("forecast")
    if f is None:
        if w.get("used_percent") is not None and w["used_percent"] >= 100:
            return "used up"
        return "-"
    if f["lasts_to_reset"]:
        return "not before the reset"
    early = local_time(f["earliest"], now, zone) if f["earliest"] else None
    late = local_time(f["latest"], now, zone) if f["latest"] else "after the reset"
    return f"{early} – {late}" if early and early != late else (early or late or "-")


def usage_table(figures: dict, *, now=None, zone=None, narrow: bool = False):
    """The usage panel (`afd usage`, `afd status`, `status --watch`), times in the reader's zone."""
    from datetime import datetime, timezone

    from rich.table import Table
    from rich.text import Text

    from afd.kit.resettime import local_zone

    now = now or datetime.now(timezone.utc)
    zone = zone or local_zone()
    table = Table(title="usage", title_justify="left")
    columns = ("account", "window", "used", "resets", "runs out", "figure")
    for col in columns if not narrow else ("account", "window", "used", "runs out"):
        table.add_column(col)
    for account in figures.get("accounts", ()):
        if not account["windows"]:
            cells = [Text(neutral(account["account"])), Text("-"), Text("-"), Text("-"), Text("-"),
                     Text("no figure", style="dim")]
            table.add_row(*(cells if not narrow else [cells[0], cells[1], cells[2], cells[4]]))
            continue
        for w in account["windows"]:
            used = w.get("used_percent")
            style = "bold red" if used is not None and used >= 95 else "yellow" if used is not None and used >= 80 else ""
            figure = provenance_words(w)
            cells = [
                Text(neutral(account["account"])), Text(window_label(w, account["agent"])),
                Text("?" if used is None else f"{used:g} %", style=style),
                Text(local_time(w.get("resets_at"), now, zone) or "-"),
                Text(runs_out_words(w, now, zone)),
                Text(figure, style="yellow" if w.get("stale") else "dim" if w["provenance"] == "calibrated" else ""),
            ]
            table.add_row(*(cells if not narrow else [cells[0], cells[1], cells[2], cells[4]]))
    return table

