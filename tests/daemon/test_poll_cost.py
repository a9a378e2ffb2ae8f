"""A poll in which nothing changed spawns one tmux process (list-panes) and writes nothing."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from afd.config.settings import Config
from afd.daemon.supervisor import AVAILABLE_REFRESH, Supervisor
from afd.observe.identity_cache import REWALK_EVERY, IdentityCache
from afd.observe.watch import MAX_CAPTURE_AGE
from afd.pluginset import load_plugins
from afd.record.store import Store
from afd.record.types import LimitState
from afd.world import tmux
from harness import start_fake, wait_for


class Mono:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.mark.tmux
def test_an_unchanged_poll_spawns_only_list_panes_and_writes_nothing(tmux_server, xdg_dirs):
    idle = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, prompt="fix the login redirect")
    walled = start_fake(tmux_server, "codex", cwd=tmux_server.scratch, scenario={"limit_now": True}, prompt="go")
    idle.wait_idle(works=1)  # its prompt's work done: from here on its screen does not change
    walled.wait_for_event("limit")
    mono = Mono()
    store = Store(xdg_dirs["XDG_STATE_HOME"] / "afd" / "state.db")
    sup = Supervisor(
        Config(poll_interval=0.05),
        load_plugins(None, entry_points=False),
        store,
        tmux.ServerRef(socket_name=tmux_server.name),
        clock=lambda: datetime(2026, 7, 13, 9, 0, tzinfo=timezone.utc),
        identities=IdentityCache(monotonic=mono),
        monotonic=mono,
    )
    try:

        def states():
            return sorted((r.agent, r.state) for r in store.list_sessions())

        def settled_poll():
            before = tmux.spawns
            sup.poll()
            return states() == [("claude", "idle"), ("codex", "limited")] and tmux.spawns - before == 1

        # Settled: both judged, and a poll that needed only the listing.
        wait_for(settled_poll, timeout=20, message="a settled poll")

        changes, spawns, walks = store.total_changes(), tmux.spawns, sup.identities.walks
        for _ in range(3):
            sup.poll()
        assert tmux.spawns - spawns == 3  # one list-panes each: no capture, not even of the limited pane
        assert store.total_changes() == changes
        assert sup.identities.walks == walks

        mono.now += REWALK_EVERY  # the safety walk: identity read afresh, nothing captured, nothing to write
        spawns = tmux.spawns
        sup.poll()
        assert sup.identities.walks == walks + 2
        assert tmux.spawns - spawns == 1
        assert store.total_changes() == changes

        mono.now += MAX_CAPTURE_AGE - REWALK_EVERY  # the backstop capture: one chained call for both panes
        spawns, walks = tmux.spawns, sup.identities.walks
        sup.poll()
        assert tmux.spawns - spawns == 2
        assert store.total_changes() == changes and states() == [("claude", "idle"), ("codex", "limited")]
    finally:
        store.close()


def test_an_agent_seen_working_every_poll_is_written_available_once_a_minute(xdg_dirs):
    t0 = datetime(2026, 7, 13, 9, 0, tzinfo=timezone.utc)
    with Store(xdg_dirs["XDG_STATE_HOME"] / "afd" / "state.db") as store:
        sup = Supervisor(Config(), load_plugins(None, entry_points=False), store, tmux.ServerRef(socket_name="unused"))
        sup._observe_working("codex", "codex", "s1", t0)
        changes = store.total_changes()
        for second in range(1, 60):
            sup._observe_working("codex", "codex", "s1", t0 + timedelta(seconds=second))
        assert store.total_changes() == changes
        sup._observe_working("codex", "codex", "s1", t0 + AVAILABLE_REFRESH)
        fact = store.load_limits()["codex"]
        assert store.total_changes() == changes + 1
        assert fact.state is LimitState.AVAILABLE and fact.observed_at == t0 + AVAILABLE_REFRESH
