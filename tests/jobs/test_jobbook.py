"""The jobs' records on the store: the migration from the previous schema, transfers, the outbox's stable keys."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timezone

import pytest

from afd.jobs.book import JobBook
from afd.model import Event
from afd.record.store import MIGRATIONS, SCHEMA_VERSION, Store, StoreError
from afd.record.types import EnvelopeState, SessionRecord

T = datetime(2026, 1, 1, tzinfo=timezone.utc)
JOBS_STEP = next(i for i, m in enumerate(MIGRATIONS) if "CREATE TABLE jobs" in m)


def user_version(path) -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()


def test_migration_from_the_previous_schema_keeps_the_data_and_backs_it_up(tmp_path):
    db = tmp_path / "state.db"
    with Store(db, migrations=MIGRATIONS[:JOBS_STEP]) as old:
        old.add_event(Event(at=T, kind="daemon.started", message="hi"))
        old.journal_begin("boss", "create", {"step": "awaiting"})
        # Only the columns of the first schema: later steps may add others before this one.
        old._conn.execute(
            "INSERT INTO sessions (name, pane_id, server_socket, server_pid, agent, identity, identity_source, state,"
            " created_at, updated_at, mission) VALUES ('boss', '%1', '/tmp/sock', 1, 'claude', 'known', 'process',"
            " 'idle', ?, ?, 'm')", (T.isoformat(), T.isoformat()))
    with Store(db) as new:
        assert new.backup_path is not None and user_version(new.backup_path) == JOBS_STEP
        assert new.get_session("boss").mission == "m"
        assert [e.event.kind for e in new.recent_events()] == ["daemon.started"]
        assert [e.session for e in new.pending_journal()] == ["boss"]
        JobBook(new).add_job("fix-a", "fix a", "boss", None, "claude", at=T)
    assert user_version(db) == SCHEMA_VERSION
    with Store(db) as again:  # idempotent: nothing to do, nothing backed up
        assert again.backup_path is None
        assert JobBook(again).job("fix-a").owner == "boss"
    with pytest.raises(StoreError, match="newer"):
        Store(db, migrations=MIGRATIONS[:JOBS_STEP])  # an older afd refuses the newer schema


def test_transfer_writes_owner_history_masters_and_receipt_together(tmp_path):
    with Store(tmp_path / "state.db") as store:
        book = JobBook(store)
        book.add_job("a", "a", "boss", None, "claude", at=T)
        book.add_job("a1", "a1", "boss", "a", "claude", at=T)
        with store.transaction():
            receipt = book.transfer(["a", "a1"], "boss", "heir", "go", {"a": ["heir", "boss"], "a1": ["heir", "boss"]}, at=T)
        assert {n: (j.owner, j.parent) for n, j in book.jobs().items()} == {"a": ("heir", None), "a1": ("heir", "a")}
        assert [(h["from"], h["to"], h["receipt"]) for h in book.history("a1")] == [(None, "boss", None), ("boss", "heir", receipt)]
        assert book.masters("a") == ["heir", "boss"]
        assert book.receipts()[0]["jobs"] == ["a", "a1"]


def test_a_failed_transfer_writes_nothing(tmp_path):
    with Store(tmp_path / "state.db") as store:
        book = JobBook(store)
        book.add_job("a", "a", "boss", None, "claude", at=T)
        with pytest.raises(KeyError), store.transaction():
            book.transfer(["a"], "boss", "heir", None, {}, at=T)  # masters missing: fails half way
        assert book.job("a").owner == "boss" and book.receipts() == [] and book.masters("a") == ["boss"]


def test_an_envelope_key_is_queued_once(tmp_path):
    with Store(tmp_path / "state.db") as store:
        book = JobBook(store)
        assert book.enqueue("done:a", "done", "job a is done", job="a", at=T)
        assert not book.enqueue("done:a", "done", "job a is done again", job="a", at=T)
        [env] = book.envelopes()
        book.move(env.id, EnvelopeState.CONSUMED)
        assert book.open_envelopes() == [] and not book.enqueue("done:a", "done", "x", job="a")


def test_a_job_at_its_limit_sends_one_envelope_per_limit_and_a_closed_one_is_gone(tmp_path):
    from dataclasses import replace
    from types import SimpleNamespace

    from afd.jobs.book import JobBook
    from afd.jobs.outbox import Outbox
    from afd.record.types import JobStatus

    with Store(tmp_path / "state.db") as store:
        events = []
        ctx = SimpleNamespace(store=store, event=lambda kind, message, session=None: events.append(kind))
        outbox, book = Outbox(), JobBook(store)
        book.add_job("a", "fix a", "boss", None, "claude", at=T)
        rec = SessionRecord("a", "%2", "/tmp/sock", 1, "claude", "known", "process", "working", T, T)
        reset = datetime(2026, 1, 1, 15, 0, tzinfo=timezone.utc)
        for state, want in [("limited", JobStatus.LIMITED), ("limited", JobStatus.LIMITED), ("idle", JobStatus.RUNNING),
                            ("limited", JobStatus.LIMITED), ("gone", JobStatus.GONE)]:
            store.upsert_session(replace(rec, state=state, reset_at=reset if state == "limited" else None))
            outbox.observe_jobs(ctx, T)
            assert book.job("a").status is want
        [env] = book.envelopes()  # the same limit seen again is the same envelope
        assert env.kind == "limited" and "until 2026-01-01 15:00 UTC" in env.text and env.job == "a"
        assert events.count("job.status") == 4


def test_a_handoffs_brief_is_handed_the_jobs_its_session_supervises(tmp_path):
    from afd.jobs.book import supervised_lines

    with Store(tmp_path / "state.db") as store:
        book = JobBook(store)
        book.add_job("a", "fix a", "boss", None, "claude", at=T)
        book.add_job("b", "fix b", "other", None, "claude", at=T)
        lines = supervised_lines(store, "boss")
        assert lines[0].startswith("This session supervises 1 job") and lines[1:] == ["  a: fix a (running)"]
        assert supervised_lines(store, "nobody") == []
