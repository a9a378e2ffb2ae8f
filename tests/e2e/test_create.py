"""`sessions create` carried out by the supervisor's create runner, on a real tmux server and git repository."""

from __future__ import annotations

import os
import signal
import sys
from types import SimpleNamespace

import pytest

from afd.cli.main import UserError
from afd.config.settings import AgentOverride, Config
from afd.daemon.requests import RequestHandler
from afd.daemon.supervisor import Supervisor
from afd.pluginset import load_plugins
from afd.record.store import Store
from afd.world.tmux import ServerRef
from harness import git, install_fake_bin, wait_for

pytestmark = pytest.mark.tmux


@pytest.fixture
def daemon_like(tmux_server, xdg_dirs):
    """What the request handler needs of a daemon, with a supervisor that can be 'restarted' on the same store."""
    bin_dir = install_fake_bin(tmux_server.scratch)
    tmux_server.run("set-environment", "-g", "AFD_FAKE_LOG", str(tmux_server.scratch / "created.jsonl"))
    stores = []

    def make(command: list[str]):
        config = Config(poll_interval=0.05, worktree_root=str(xdg_dirs["XDG_DATA_HOME"] / "wt"),
                        agents={"claude": AgentOverride(command=tuple(command))})
        store = Store(xdg_dirs["XDG_STATE_HOME"] / "afd" / "state.db")
        stores.append(store)
        server = ServerRef(socket_name=tmux_server.name)
        plugins = load_plugins(None, entry_points=False)
        sup = Supervisor(config, plugins, store, server)
        return SimpleNamespace(config=config, plugins=plugins, store=store, server=server, supervisor=sup)

    make.bin_dir = bin_dir
    yield make
    for store in stores:
        store.close()


def finished(handler: RequestHandler, journal: int) -> dict:
    return wait_for(lambda: (r := handler.do_sessions_create_result(journal))["done"] and r, timeout=60,
                    message="the create carried through")


def test_created_session_waits_for_its_agent_behind_a_launcher_across_a_restart(daemon_like, tmux_server, git_repo):
    release = tmux_server.scratch / "launcher-release"
    claude = str(daemon_like.bin_dir / "claude")
    # `env` and an interpreter that is not the agent stand in front of it until released: identity unknown.
    launcher = (f"import os, sys, time\nwhile not os.path.exists({str(release)!r}): time.sleep(0.05)\n"
                f"os.execv({claude!r}, [{claude!r}, *sys.argv[1:]])")
    first = daemon_like(["env", "SHIM=1", sys.executable, "-c", launcher])
    handler = RequestHandler(first)
    begun = handler.do_sessions_create("shimmed", "claude", str(git_repo), "fix it")
    pane = finished(handler, begun["journal"])["pane"]
    for _ in range(3):
        first.supervisor.poll()
    assert [(r.name, r.state) for r in first.store.list_sessions()] == [("shimmed", "idle")]
    first.store.close()

    second = daemon_like(["env", "SHIM=1", sys.executable, "-c", launcher])  # afd restarted
    second.supervisor.advance_actions()  # the restarted engine's first turn over the rows it found
    assert len(second.store.pending_journal()) == 1  # still waiting for the agent afd started
    for _ in range(3):
        second.supervisor.poll()
    assert [(r.name, r.state, r.pane_id) for r in second.store.list_sessions()] == [("shimmed", "idle", pane)]

    release.touch()
    rec = wait_for(lambda: (second.supervisor.poll(), second.store.get_session("shimmed"))[1].agent_pid
                   and second.store.get_session("shimmed"), timeout=30, message="the agent seen starting")
    assert rec.identity == "known" and rec.state != "gone"
    assert [r.name for r in second.store.list_sessions()] == ["shimmed"]
    assert second.store.pending_journal() == []
    kinds = [e.event.kind for e in second.store.recent_events()]
    assert "session.started" in kinds and "session.gone" not in kinds


def test_create_refuses_when_tmux_does_not_answer(daemon_like, tmux_server, git_repo):
    d = daemon_like([str(daemon_like.bin_dir / "claude")])
    handler = RequestHandler(d)
    pid = int(tmux_server.run("display-message", "-p", "#{pid}").stdout)
    os.kill(pid, signal.SIGSTOP)
    try:
        with pytest.raises(UserError, match="tmux did not answer"):
            handler.do_sessions_create("frozen", "claude", str(git_repo), "p")
    finally:
        os.kill(pid, signal.SIGCONT)
    assert "afd/frozen" not in git(git_repo, "branch", "--list", "afd/frozen")
    assert d.store.list_sessions() == [] and d.store.pending_journal() == []
