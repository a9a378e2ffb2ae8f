"""An upgrade: this afd started on a state database that afd 0.1.0 left in the middle of its actions.

The database is built as 0.1.0 wrote it: its schema (every migration but this
version's) and journal rows in 0.1.0's shapes, with the step names it used.
0.1.0 told whether it waited for an agent it had started from those step
names; this version keeps that on the session, and its migration sets it for
the rows 0.1.0 left. Each action is then carried through by the one engine.
"""

from __future__ import annotations

import json
import shlex
import sqlite3
import sys
from datetime import datetime, timedelta, timezone

import pytest

from afd.config.settings import Config
from afd.daemon.status import build_status
from afd.daemon.supervisor import Supervisor
from afd.pluginset import load_plugins
from afd.record.schema import MIGRATIONS
from afd.record.store import Store
from afd.record.types import JournalState, NextAction, PlanKind
from afd.world import tmux
from harness import install_fake_bin, wait_for

pytestmark = pytest.mark.tmux

MESSAGE = "Your usage limit has reset. Continue the task from where you stopped."
# The schema version afd 0.1.0 wrote (migrations are append-only: its databases ran exactly these).
SCHEMA_0_1_0 = 8


def _iso(at: datetime) -> str:
    return at.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")


def _launcher(tmux_server, release, log, cwd) -> str:
    """A pane whose agent is still behind a launcher (an interpreter that is not the agent) until `release` exists."""
    claude = str(install_fake_bin(tmux_server.scratch) / "claude")
    code = (f"import os, time\nwhile not os.path.exists({str(release)!r}): time.sleep(0.05)\n"
            f"os.execv({claude!r}, [{claude!r}])")
    return tmux_server.new_pane(shlex.join([sys.executable, "-c", code]), cwd=cwd, env={"AFD_FAKE_LOG": str(log)})


def _old_database(path, rows) -> None:
    Store(path, migrations=MIGRATIONS[:SCHEMA_0_1_0]).close()
    conn = sqlite3.connect(path)
    with conn:
        for table, values in rows:
            conn.execute(f"INSERT INTO {table} ({', '.join(values)}) VALUES ({', '.join('?' for _ in values)})",
                         tuple(values.values()))
    conn.close()


def test_actions_afd_0_1_0_left_pending_are_carried_through_after_the_upgrade(tmux_server, xdg_dirs, git_repo):
    now = datetime.now(timezone.utc)
    release = tmux_server.scratch / "release"
    created_log, resumed_log = tmux_server.scratch / "created.jsonl", tmux_server.scratch / "resumed.jsonl"
    created = _launcher(tmux_server, release, created_log, git_repo)
    resumed = _launcher(tmux_server, release, resumed_log, git_repo)
    server = tmux.ServerRef(socket_name=tmux_server.name)
    inv = tmux.list_panes(server)
    session = dict(server_socket=inv.socket_path, server_pid=inv.server_pid, agent="claude", identity_source="process",
                   created_at=_iso(now - timedelta(seconds=20)), updated_at=_iso(now - timedelta(seconds=5)),
                   worktree=str(git_repo), branch="main")
    path = xdg_dirs["XDG_STATE_HOME"] / "afd" / "state.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    _old_database(path, [
        # `sessions create` at `awaiting`: the pane is made and recorded, its agent not seen yet.
        ("sessions", {**session, "name": "made", "pane_id": created, "identity": "unknown", "state": "idle",
                      "mission": "fix it"}),
        ("journal", {"at": _iso(now), "session": "made", "action": "create", "state": "pending", "intent": json.dumps({
            "repo": str(git_repo), "base": None, "branch": "afd/made", "worktree": str(git_repo), "agent": "claude",
            "argv": ["claude"], "tmux_session": "afd-made", "mission": "fix it", "typed_prompt": None,
            "server_socket": inv.socket_path, "account": None, "routed": None, "base_sha": "0" * 40, "pane": created,
            "step": "awaiting", "step_at": now.isoformat(), "run": "a-0.1.0-run", "effect_error": None})}),
        # A resume at `respawned`: its agent had exited at the wall and was started again with its resume args.
        ("sessions", {**session, "name": "back", "pane_id": resumed, "identity": "known", "state": "exited",
                      "mission": "fix the login test"}),
        ("journal", {"at": _iso(now), "session": "back", "action": "resume", "state": "pending", "intent": json.dumps({
            "text": f"{MESSAGE}\n\nThe task: fix the login test", "agent": "claude", "pane_id": resumed,
            "cwd": str(git_repo), "respawn_argv": ["claude", "--continue"], "attempt": 1, "episode": "wall@1",
            "why": "reset", "manual": False, "step": "respawned", "step_at": now.isoformat(), "run": "a-0.1.0-run",
            "enters": 1, "submitted_at": None, "repasted": False, "menu": None})}),
        # A plan 0.1.0 kept as words.
        ("sessions", {**session, "name": "old", "pane_id": "%99", "identity": "known", "state": "gone",
                      "next_action": "resume with: afd resume old"}),
    ])

    store = Store(path)
    try:
        assert store.backup_path is not None  # the upgrade keeps a copy of what 0.1.0 left
        assert store.get_session("old").next_action == NextAction(PlanKind.REPORT, "resume with: afd resume old")
        assert build_status(store, ["claude"], {})["sessions"][2]["next"]["action"] == "report"
        sup = Supervisor(Config(poll_interval=0.05), load_plugins(None, entry_points=False), store, server)
        for _ in range(4):  # both agents are still behind their launchers: waited for, not taken for gone
            sup.poll()
        assert {r.name: r.state for r in store.list_sessions()} == {"made": "idle", "back": "exited", "old": "gone"}
        assert len(store.pending_journal()) == 2

        release.touch()

        def carried() -> bool:
            sup.poll()
            return not store.pending_journal()

        wait_for(carried, timeout=60, message="both actions carried through")
        made, back = store.get_session("made"), store.get_session("back")
        assert made.agent_pid is not None and made.identity == "known" and made.awaiting_since is None
        assert back.agent_pid is not None and back.awaiting_since is None
        rows = {e.session: e for e in (store.journal_entry(i) for i in (1, 2))}
        assert rows["made"].state is JournalState.DONE and "seen running" in rows["made"].outcome
        assert rows["back"].state is JournalState.DONE and rows["back"].outcome.startswith("confirmed")
        # The continuation went in once.
        typed = [e for e in map(json.loads, resumed_log.read_text().splitlines()) if e["event"] == "input" and MESSAGE in e["text"]]
        assert len(typed) == 1
        kinds = [(e.event.session, e.event.kind) for e in store.recent_events(100)]
        assert ("made", "session.started") in kinds and ("back", "session.started") in kinds
        assert not [k for k in kinds if k[1] in ("session.exited", "session.gone")]
        assert [s for s, k in kinds if k == "journal.recovered"] == ["made", "back"]
    finally:
        store.close()
