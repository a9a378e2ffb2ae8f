"""afd/record/statusread.py: what status shows, read as rows in a fixed number of queries, and which files it vouches for."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timedelta, timezone

import pytest

from afd.model import Event, IdentityKind, IdentitySource, SessionState
from afd.record.schema import MIGRATIONS
from afd.record.statusread import open_checked, read_status_rows
from afd.record.store import Store
from afd.record.types import JournalState, LedgerEntry, LimitFact, LimitState, SessionRecord

T0 = datetime(2026, 7, 13, 9, 0, tzinfo=timezone.utc)


def session(name: str) -> SessionRecord:
    return SessionRecord(name=name, pane_id="%1", server_socket="/s", server_pid=1, agent="codex",
                         identity=IdentityKind.KNOWN, identity_source=IdentitySource.PROCESS,
                         state=SessionState.IDLE, created_at=T0, updated_at=T0)


@pytest.fixture
def path(tmp_path):
    p = tmp_path / "state.db"
    store = Store(p)
    for name in ("b", "a", "c"):
        store.upsert_session(session(name))
    for i, (name, to) in enumerate((("a", "claude"), ("b", "devin"), ("a", "codex"))):
        store.add_ledger(LedgerEntry(name, T0 + timedelta(minutes=i), "codex", to, f"{i}" * 40, "limit", False))
    store.journal_begin("a", "resume", {"step": "scheduled"})
    store.journal_begin("b", "resume", {"step": "scheduled"})
    store.journal_begin("c", "handoff", {"step": "stop"})
    store.save_limit(LimitFact("codex", LimitState.LIMITED, T0, T0, "a"))
    for i in range(5):
        store.add_event(Event(at=T0 + timedelta(seconds=i), kind="k", message=f"event {i}"))
    store.close()
    return p


def _connect(path) -> sqlite3.Connection:
    conn = open_checked(path)
    assert conn is not None
    return conn


def test_the_rows_status_shows_in_their_order(path):
    rows = read_status_rows(_connect(path), events=3)
    assert [r["name"] for r in rows.sessions] == ["a", "b", "c"]
    assert {k: [r["to_agent"] for r in v] for k, v in rows.ledger.items()} == {"a": ["claude", "codex"], "b": ["devin"]}
    assert [r["account"] for r in rows.limits] == ["codex"]
    # The most recent events, oldest first.
    assert [r["message"] for r in rows.events] == ["event 2", "event 3", "event 4"]
    # The daemon never said which agents and accounts it had: unknown, not none.
    assert rows.agents is None and rows.accounts is None


def test_a_session_is_resuming_only_while_a_resume_of_it_is_pending(path):
    conn = _connect(path)
    assert read_status_rows(conn, 0).resuming == {"a", "b"}  # c's pending action is a handoff
    conn.close()
    store = Store(path)
    [entry] = [e for e in store.pending_journal() if e.session == "b"]
    store.journal_finish(entry.id, JournalState.DONE, "sent")
    store.close()
    assert read_status_rows(_connect(path), 0).resuming == {"a"}


def test_what_the_daemon_said_of_its_agents_and_accounts_is_read_back(path):
    store = Store(path)
    store.set_meta("agents", json.dumps(["claude", "codex"]))
    store.set_meta("accounts", json.dumps([["claude-work", "claude"]]))
    store.close()
    rows = read_status_rows(_connect(path), 0)
    assert rows.agents == ("claude", "codex") and rows.accounts == (("claude-work", "claude"),)


def test_the_read_takes_as_many_queries_for_many_sessions_as_for_one(tmp_path):
    counts = []
    for n in (1, 40):
        p = tmp_path / f"{n}.db"
        store = Store(p)
        for i in range(n):
            store.upsert_session(session(f"s{i:02}"))
            store.add_ledger(LedgerEntry(f"s{i:02}", T0, "codex", "claude", "0" * 40, "limit", False))
        store.close()
        conn = _connect(p)
        statements: list[str] = []
        conn.set_trace_callback(statements.append)
        rows = read_status_rows(conn, 20)
        assert len(rows.sessions) == n and len(rows.ledger) == n
        counts.append(len(statements))
    assert counts[0] == counts[1]


def test_the_read_is_one_snapshot(path):
    conn = _connect(path)
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    read_status_rows(conn, 5)
    assert statements[0] == "BEGIN" and statements[-1] == "COMMIT"


def test_a_current_database_is_vouched_for_and_opened_read_only(path):
    conn = _connect(path)
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        conn.execute("DELETE FROM sessions")


@pytest.mark.parametrize("make", ["missing", "not sqlite", "corrupt", "older schema"])
def test_anything_else_is_not_vouched_for(tmp_path, make):
    p = tmp_path / "state.db"
    if make == "not sqlite":
        p.write_bytes(b"plain text, not a database" * 10)
    elif make == "corrupt":
        Store(p).close()
        data = bytearray(p.read_bytes())
        data[100:4096] = b"\xff" * (4096 - 100)
        p.write_bytes(bytes(data))
    elif make == "older schema":
        Store(p, migrations=MIGRATIONS[:-1]).close()
    assert open_checked(p) is None
