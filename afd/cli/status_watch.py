"""`afd status --watch`: the status tables live, refreshed from the daemon each second.

The report is asked of the daemon once a second (from the store when it is
down, said in the header) and drawn with the countdowns counted from the
moment of drawing, in the reader's zone. The view takes the terminal's
alternate screen, so Ctrl-C gives the terminal back as it was.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from afd.display.reader import Reader
from afd.errors import EXIT_OK

REFRESH = 1.0  # seconds


def header(report: dict, running: bool, reader: Reader) -> str:
    from afd.cli.status_view import server_words

    clock = reader.now.astimezone(reader.zone).strftime("%H:%M:%S")
    if report.get("no_state"):
        state = "afd has no state yet and is not running (start it with `afd run`)"
    elif running:
        d = report["daemon"]
        state = f"afd {d.get('version')} running (pid {d.get('pid')}, tmux server: {server_words(d)})"
    else:
        state = "afd is not running; the state it last stored"
    return f"{state} · {clock} · Ctrl-C leaves"


def view(report: dict, running: bool, width: int, events: int, wide: bool = False):
    from rich.console import Group
    from rich.text import Text

    from afd.cli.status_view import report_view

    reader = Reader.here()
    top = Text(header(report, running, reader), style="bold" if running else "yellow")
    return Group(top, *report_view(report, reader, width, wide=wide, events=events, cut_events=True))


def watch(events: int, read_report: Callable[[int], tuple[dict, bool]], wide: bool = False) -> int:
    """`read_report(events)` is the report and whether the daemon answered (afd.cli.status hands it in)."""
    from rich.console import Console
    from rich.live import Live

    console = Console(highlight=False)
    try:
        with Live(console=console, screen=True, auto_refresh=False, vertical_overflow="crop") as live:
            while True:
                started = time.monotonic()
                report, running = read_report(events)
                live.update(view(report, running, console.width, events, wide), refresh=True)
                time.sleep(max(0.05, REFRESH - (time.monotonic() - started)))
    except KeyboardInterrupt:
        return EXIT_OK
