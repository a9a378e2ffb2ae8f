"""Plain `afd status` as a person reads it: in a real tmux pane at 80, 120 and 200 columns, with --wide, and piped.

The store is the one a daemon leaves (`seed_store`): five sessions, long names, limited ones with plans, one
needing you, events whose words carry ISO UTC instants. The daemon is down, so status reads the store.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from datetime import datetime, timezone

import pytest
from rich.cells import cell_len

from daemon_harness import HOSTILE_MISSION, seed_store
from harness import wait_for

pytestmark = pytest.mark.tmux

ISO_INSTANT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d")


def pane_env(xdg_dirs, tz: str = "Europe/Berlin") -> dict:
    return {k: str(v) for k, v in xdg_dirs.items()} | {
        "TZ": tz, "TERM": "tmux-256color", "LANG": "C.UTF-8", "COLUMNS": "", "LINES": "",
        "PYTHONPATH": os.pathsep.join(sys.path)}


def run_in_pane(tmux_server, xdg_dirs, args: str, width: int) -> tuple[str, str]:
    """`afd ARGS` in a pane `width` columns wide, as a user types it; its screen (wrapped rows joined) and pane."""
    command = f"{shlex.quote(sys.executable)} -m afd {args}; echo afd-exit=$?; sleep 600"
    pane = tmux_server.new_pane(f"bash --noprofile --norc -c {shlex.quote(command)}", cwd=tmux_server.scratch,
                                env=pane_env(xdg_dirs), width=width, height=90)
    screen = wait_for(lambda: (s := tmux_server.capture(pane)) and "afd-exit=" in s and s, timeout=30,
                      message="afd to finish")
    return screen, pane


def section(screen: str, title: str, until: str) -> list[str]:
    lines = screen.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == title)
    end = next(i for i, line in enumerate(lines) if i > start and line.strip() == until)
    return lines[start + 1:end]


@pytest.mark.parametrize(
    ("width", "shown", "left_out"),
    [
        pytest.param(80, ("name", "agent", "state", "next action"), ("account", "worktree", "witnesses"), id="80"),
        pytest.param(120, ("name", "agent", "account", "state", "reset", "next action"), ("worktree", "witnesses"),
                     id="120"),
        pytest.param(200, ("where", "witnesses", "mission", "worktree", "branch", "next action"), (), id="200"),
    ],
)
def test_the_table_fits_the_terminal_and_cuts_no_cell(tmux_server, xdg_dirs, width, shown, left_out):
    names = seed_store(datetime.now(timezone.utc))
    screen, _ = run_in_pane(tmux_server, xdg_dirs, "status", width)
    assert "afd-exit=3" in screen and "afd is not running" in screen
    # Joined rows wider than the pane are rows the terminal had to wrap: the table did not fit.
    assert max(cell_len(line.rstrip()) for line in screen.splitlines()) <= width, screen
    assert "…" not in screen, screen
    table = section(screen, "sessions", "accounts")
    header = table[0].split()
    assert all(col.split()[0] in header for col in shown), table[0]
    assert not any(col in table[0] for col in left_out), table[0]
    for name in names.values():  # every name whole, on its own row
        assert any(line.startswith(name + " ") for line in table), (name, table)
    for state in ("limited", "needs_human", "working", "idle"):
        assert any(f" {state} " in line + " " for line in table), state
    # The next action in the reader's words: a clock time with its countdown, never an ISO instant.
    row = next(i for i, line in enumerate(table) if line.startswith(names["billing"]))
    words = " ".join(line[len(names["billing"]):].strip() for line in table[row:row + 2])
    assert re.search(r"resume at \d\d:\d\d \(in 3h2\dm\)", words), words
    # Readable: no session takes more than four rows, none at 120 and 200 more than three.
    starts = [i for i, line in enumerate(table) if any(line.startswith(n + " ") for n in names.values())]
    rows = [b - a for a, b in zip(starts, [*starts[1:], len(table)], strict=True)]
    assert max(rows) <= (4 if width == 80 else 3), table
    assert not ISO_INSTANT.search(screen)


def test_wide_shows_every_column_whole_at_80(tmux_server, xdg_dirs):
    names = seed_store(datetime.now(timezone.utc))
    screen, _ = run_in_pane(tmux_server, xdg_dirs, "status --wide", 80)
    assert "afd-exit=3" in screen and "…" not in screen
    joined = screen.splitlines()
    header = next(line for line in joined if line.startswith("name "))
    assert header.split()[:4] == ["name", "where", "agent", "account"] and "worktree" in header and "witnesses" in header
    row = next(line for line in joined if line.startswith(names["billing"] + " "))
    assert "/srv/work/billing-service-api-feature-retry-logic" in row and "afd/billing-retry-backoff" in row


def test_piped_status_is_one_line_per_session_with_nothing_cut_and_no_colour(xdg_dirs):
    names = seed_store(datetime.now(timezone.utc), hostile=True)
    done = subprocess.run([sys.executable, "-m", "afd", "status"], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "TZ": "Europe/Berlin", "COLUMNS": "80"})
    assert done.returncode == 3
    out = done.stdout
    assert "\x1b" not in out and "…" not in out
    lines = out.splitlines()
    for key, name in names.items():
        mine = [line for line in lines if line.startswith(name + " ")]
        assert len(mine) == 1, (name, lines)
        assert f"/srv/work/{name.split(':')[0]}-feature-retry-logic" in mine[0] and f"afd/{key}-retry-backoff" in mine[0]
    weekly = next(line for line in lines if line.startswith(names["weekly"] + " "))
    assert re.search(r"resume with: afd resume weekly:0\.0 \(limit resets \w{3} \w{3} \d\d \d\d:\d\d \(in 4d\dh\)\)$",
                     weekly), weekly
    assert max(len(line) for line in lines) > 80  # a pipe is not a terminal: nothing is cut to its width
    assert "ship it\\x1b[2J\\x1b]0;pwned\\x07 rm -rf ~ [bold red]now[/]" in out


def test_hostile_text_reaches_the_pane_as_text(tmux_server, xdg_dirs):
    seed_store(datetime.now(timezone.utc), hostile=True)
    screen, pane = run_in_pane(tmux_server, xdg_dirs, "status", 200)
    assert "afd-exit=3" in screen and "sessions" in screen  # no clear-screen wiped what came before
    assert "ship it\\x1b[2J\\x1b]0;pwned\\x07 rm -rf ~ [bold red]now[/]" in screen
    assert tmux_server.run("display-message", "-p", "-t", pane, "#{pane_title}").stdout.strip() != "pwned"
    listed, _ = run_in_pane(tmux_server, xdg_dirs, "sessions list", 200)
    # The mission as stored keeps its carriage return: shown as one, not obeyed.
    assert "ship it\\x1b[2J\\x1b]0;pwned\\x07\\x0drm -rf ~ [bold red]now[/]" in listed
    assert HOSTILE_MISSION not in listed
