"""The poll's lean listing: paths and start commands asked for only where adoption needs them; busy seen from the tail."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from afd.config.settings import Config
from afd.daemon.supervisor import Supervisor
from afd.judge import sessions
from afd.judge.gates import is_chrome
from afd.pluginset import load_plugins
from afd.record.store import Store
from afd.world import tmux
from harness import start_fake, wait_for

SPECS = load_plugins(None, entry_points=False).agents


def _server(tmux_server) -> tmux.ServerRef:
    return tmux.ServerRef(socket_name=tmux_server.name)


@pytest.mark.tmux
def test_lean_listing_leaves_out_paths_and_pane_details_fills_them_in(tmux_server, tmp_path):
    server = _server(tmux_server)
    started = tmux.new_session(server, "lean", str(tmp_path), ["sleep", "600"])
    assert started.ok, started.error
    full = {p.pane_id: p for p in tmux.list_panes(server).panes}
    lean = tmux.list_panes(server, details=False)
    assert lean.answered and lean.error is None
    pane = next(p for p in lean.panes if p.pane_id == started.value)
    assert (pane.cwd, pane.start_command) == (None, None)
    # Every other field is the same as the full listing's.
    assert dataclasses.replace(full[pane.pane_id], cwd=None, start_command=None) == pane

    detailed = tmux.pane_details(server, pane)
    assert detailed == full[pane.pane_id] and detailed.cwd == str(tmp_path)
    tmux_server.run("kill-pane", "-t", pane.pane_id)
    assert tmux.pane_details(server, pane) is None


@pytest.mark.tmux
def test_an_adopted_pane_gets_its_worktree_and_branch_though_the_poll_lists_no_paths(tmux_server, git_repo, xdg_dirs):
    fake = start_fake(tmux_server, "claude", cwd=git_repo, prompt="tidy the parser")
    fake.wait_ready()
    store = Store(xdg_dirs["XDG_STATE_HOME"] / "afd" / "state.db")
    try:
        sup = Supervisor(Config(poll_interval=0.05), load_plugins(None, entry_points=False), store, _server(tmux_server))

        def adopted():
            sup.poll()
            return next((r for r in store.list_sessions() if r.pane_id == fake.pane), None)

        rec = wait_for(adopted, timeout=15.0, interval=0.05, message="adoption")
        assert (rec.worktree, rec.branch, rec.mission) == (str(git_repo), "main", "tidy the parser")
    finally:
        store.close()


def _busy_everywhere(rows, busy, chrome, tail_lines) -> bool:
    """The definition: busy markers among the last `tail_lines` non-blank, non-chrome rows."""
    printed = [r for r in rows if r.strip() and not is_chrome(r, chrome)][-tail_lines:]
    return any(p.search(r) for r in printed for p in busy)


def _row_pool(agent: str) -> list[str]:
    return [
        "",
        "   ",
        "some reply text",
        "✻ Thinking… (12s · ↑ 1.2k tokens · esc to interrupt)",
        "• Working (3s • esc to interrupt)",
        "⠋ Thinking… (4s)",
        "› ",
        "> ",
        "? for shortcuts",
        "─" * 40,
        "  ⏵⏵ accept edits on (shift+tab to cycle)",
        "100% context left",
    ]


@pytest.mark.parametrize("agent", sorted(SPECS))
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_busy_from_the_bottom_up_agrees_with_the_whole_screen_definition(agent, data):
    spec = SPECS[agent]
    rows = data.draw(st.lists(st.sampled_from(_row_pool(agent)), max_size=30))
    tail = data.draw(st.integers(min_value=1, max_value=12))
    assert sessions.seen_busy(rows, spec.busy, spec.chrome, tail) == _busy_everywhere(rows, spec.busy, spec.chrome, tail)
