"""Request handlers that need no tmux: refusals that protect state."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone
from types import SimpleNamespace

import pytest

from afd.cli.main import UserError
from afd.config.settings import Config
from afd.daemon.requests import RequestHandler
from afd.daemon.supervisor import Supervisor
from afd.model import IdentityKind, IdentitySource, SessionState
from afd.pluginset import load_plugins
from afd.record.store import Store
from afd.record.types import LedgerEntry, SessionRecord
from afd.world.tmux import ServerRef

T0 = datetime(2026, 7, 13, 9, 0, tzinfo=timezone.utc)
REC = SessionRecord(
    name="fix", pane_id="%3", server_socket="/s", server_pid=1, agent="claude", identity=IdentityKind.KNOWN,
    identity_source=IdentitySource.PROCESS, state=SessionState.GONE, created_at=T0, updated_at=T0,
)


@pytest.fixture
def handler(tmp_path):
    store = Store(tmp_path / "state.db")
    sup = Supervisor(Config(), load_plugins(None, entry_points=False), store, ServerRef(socket_name="absent"))
    yield RequestHandler(SimpleNamespace(store=store, supervisor=sup, control=None, web=None))
    store.close()


def test_forget_refuses_an_unknown_session(handler):
    handler.store.upsert_session(replace(REC, state=SessionState.UNKNOWN))
    with pytest.raises(UserError, match="tmux did not answer"):
        handler.do_sessions_forget("fix")
    assert handler.store.get_session("fix") is not None


def test_forget_refuses_a_session_with_a_ledger_and_keeps_it(handler):
    handler.store.upsert_session(REC)
    handler.store.add_ledger(LedgerEntry("fix", T0, "claude", "codex", "a" * 40, "limited", True))
    with pytest.raises(UserError, match="ledger"):
        handler.do_sessions_forget("fix")
    assert len(handler.store.ledger("fix")) == 1 and handler.store.get_session("fix") is not None


def test_forget_drops_a_gone_session_without_a_ledger(handler):
    handler.store.upsert_session(REC)
    assert handler.do_sessions_forget("fix")["forgotten"]
    assert handler.store.get_session("fix") is None


# --- the command table ---------------------------------------------------------------------


def test_the_table_answers_the_daemons_jobs_and_the_extensions_commands(handler):
    from afd.web.requests import WebRequests

    names = set(RequestHandler(handler.daemon, (WebRequests,)).table)
    assert {"status", "sessions.create", "handoff", "jobs.create", "jobs.handoff", "web.start", "web.jobs-handoff"} <= names
    # Without the dashboard's extension, the daemon answers no dashboard command.
    assert not {n for n in handler.table if n.startswith("web.")}
    with pytest.raises(UserError, match="unknown request 'web.start'"):
        handler.handle("web.start", {})


def test_two_groups_answering_one_command_is_refused_at_start(handler):
    class Shadow:
        def __init__(self, h):
            pass

        def commands(self):
            return {"status": lambda: {}}

        def started(self):
            pass

    with pytest.raises(ValueError, match="two command groups answer 'status'"):
        RequestHandler(handler.daemon, (Shadow,))
