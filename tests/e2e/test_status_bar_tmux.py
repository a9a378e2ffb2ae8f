"""The `.tmux.conf` line of docs/status.md, in a real tmux status bar: a client attached to the watched server."""

from __future__ import annotations

import re
import secrets
import sys
from pathlib import Path

import pytest

from daemon_harness import run_daemon, status, write_config  # noqa: F401
from harness import TmuxServer, start_fake, wait_for

pytestmark = pytest.mark.tmux

DOCS = Path(__file__).parents[2] / "docs" / "status.md"


def documented_line() -> str:
    block = re.search(r"```tmux\n(.+?)\n```", DOCS.read_text(), re.S).group(1)
    assert block.count("\n") == 0 and "afd status --tmux" in block, block
    return block


def test_the_documented_line_shows_the_segment_in_tmuxs_status_bar(tmux_server, run_daemon, xdg_dirs):
    write_config(xdg_dirs, 'poll_interval = "200ms"\n')
    fake = start_fake(tmux_server, "codex", cwd=tmux_server.scratch, scenario={
        "limit_now": True, "banner": "codex.usage-limit", "banner_params": {"reset": "2 hours"}})
    fake.wait_ready()
    # The line as documented, afd named by this interpreter (a job of the tmux server runs it).
    line = documented_line().replace("afd status --tmux", f"{sys.executable} -m afd status --tmux")
    conf = tmux_server.scratch / "tmux.conf"
    conf.write_text(f"{line}\nset -g status-interval 1\n")
    tmux_server.run("source-file", str(conf))
    # A client attached to the watched server, inside a pane of another server: its screen shows the bar.
    outer = TmuxServer(name=f"{tmux_server.name}-outer-{secrets.token_hex(2)}", env=tmux_server.env,
                       scratch=tmux_server.scratch)
    try:
        pane = outer.new_pane(f"env -u TMUX TERM=tmux-256color tmux -L {tmux_server.name} attach",
                              cwd=tmux_server.scratch, width=160, height=12)
        wait_for(lambda: "afd down" in outer.capture(pane), timeout=30, message="the mark with the daemon down")
        run_daemon()
        wait_for(lambda: status()["sessions"] and status()["sessions"][0]["state"] == "limited", timeout=30,
                 message="limited")
        bar = wait_for(lambda: (m := re.search(r"afd ⏳1 (1h\d\dm|2h00m) ❗1", outer.capture(pane))) and m.group(),
                       timeout=30, message="the segment in the status bar")
        assert bar.startswith("afd ⏳1")
    finally:
        outer.kill()
