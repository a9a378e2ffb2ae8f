"""`afd status --watch`: the status tables live, refreshed from the daemon each second.

The report is asked of the daemon once a second (from the store when it is
down, said in the header) and drawn with the countdowns counted from the
moment of drawing, in the reader's zone. The view takes the terminal's
alternate screen, so Ctrl-C gives the terminal back as it was.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone, tzinfo
from typing import TYPE_CHECKING

from afd.errors import EXIT_OK

if TYPE_CHECKING:
    from rich.console import RenderableType

REFRESH = 1.0  # seconds
# The status tables for a report: (report, now, zone, terminal width, events) → what rich draws.
Tables = Callable[[dict, datetime, tzinfo, int, int], Sequence["RenderableType"]]


def header(report: dict, running: bool, now: datetime, zone) -> str:
    clock = now.astimezone(zone).strftime("%H:%M:%S")
    if report.get("no_state"):
        state = "afd has no state yet and is not running (start it with `afd run`)"
    elif running:
        d = report["daemon"]
        state = f"afd {d.get('version')} running (pid {d.get('pid')}, tmux server: {d.get('server')})"
    else:
        state = "afd is not running; the state it last stored"
    return f"{state} · {clock} · Ctrl-C leaves"


def view(report: dict, running: bool, width: int, events: int, tables: Tables):
    from rich.console import Group
    from rich.text import Text

    from afd.kit.resettime import local_zone

    now = datetime.now(timezone.utc)
    zone = local_zone()
    top = Text(header(report, running, now, zone), style="bold" if running else "yellow")
    return Group(top, *tables(report, now, zone, width, events))


def watch(events: int, read_report: Callable[[int], tuple[dict, bool]], tables: Tables) -> int:
    """`read_report(events)` is the report and whether the daemon answered; `tables` draws it (afd.cli.status)."""
    from rich.console import Console
    from rich.live import Live

    console = Console(highlight=False)
    try:
        with Live(console=console, screen=True, auto_refresh=False, vertical_overflow="crop") as live:
            while True:
                started = time.monotonic()
                report, running = read_report(events)
                live.update(view(report, running, console.width, events, tables), refresh=True)
                time.sleep(max(0.05, REFRESH - (time.monotonic() - started)))
    except KeyboardInterrupt:
        return EXIT_OK
