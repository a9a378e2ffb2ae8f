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


def view(report: dict, running: bool, width: int, events: int, wide: bool = False, fleet: list[str] | None = None):
    from rich.console import Group
    from rich.text import Text

    from afd.cli.status_view import report_view

    reader = Reader.here()
    top = Text(header(report, running, reader), style="bold" if running else "yellow")
    parts = [top]
    if fleet:
        # The other hosts first: the panel a person watching the fleet came for, above the cut of a short terminal.
        parts.append(Text(reader.says("\n".join(fleet), lines=True)))
    return Group(*parts, *report_view(report, reader, width, wide=wide, events=events, cut_events=True))


def fleet_panel() -> list[str]:
    """`--fleet`: every other host's block as `afd fleet` words it (afd.cli.fleet), with a title."""
    from afd.cli.fleet_words import fleet_lines
    from afd.cli.hosts import read_hosts
    from afd.daemon.fleet import fleet_view

    hosts, _ = read_hosts(answers=True)
    if not hosts:
        return ["fleet: no hosts (`afd hosts add NAME DEST`; docs/fleet.md)", ""]
    others = fleet_view({}, hosts, "")["hosts"][1:]
    return ["fleet", *fleet_lines({"hosts": others})]


def watch(events: int, read_report: Callable[[int], tuple[dict, bool]], wide: bool = False,
          fleet: Callable[[], list[str]] | None = None) -> int:
    """`read_report(events)` is the report and whether the daemon answered (afd.cli.status hands it in); with
    `fleet`, the fleet's panel each refresh too."""
    from rich.console import Console
    from rich.live import Live

    console = Console(highlight=False)
    try:
        with Live(console=console, screen=True, auto_refresh=False, vertical_overflow="crop") as live:
            while True:
                started = time.monotonic()
                report, running = read_report(events)
                panel = fleet() if fleet is not None else None
                live.update(view(report, running, console.width, events, wide, panel), refresh=True)
                time.sleep(max(0.05, REFRESH - (time.monotonic() - started)))
    except KeyboardInterrupt:
        return EXIT_OK
