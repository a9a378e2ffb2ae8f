"""The state database and its lock: round trips, migrations, refusals, corruption."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from afd.judge.limits import unknown_fact
from afd.kit import paths
from afd.model import Event
from afd.record.store import MIGRATIONS, SCHEMA_VERSION, StateLock, Store, StoreError, default_path
from afd.record.types import (
    BannerSighting,
    JournalState,
    LedgerEntry,
    LimitFact,
    LimitState,
    NextAction,
    PlanKind,
    ResumeHistory,
    SessionRecord,
    Witnesses,
)

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=timezone.utc)


@pytest.fixture
def db_path(tmp_path) -> Path:
    return tmp_path / "state" / "state.db"


@pytest.fixture
def store(db_path):
    with Store(db_path) as s:
        yield s


def session(name="work:1.0", **changes) -> SessionRecord:
    base = dict(
        name=name,
        pane_id="%3",
        server_socket="/tmp/tmux-1000/default",
        server_pid=4242,
        agent="codex",
        identity="known",
        identity_source="process",
        state="working",
        created_at=NOW,
        updated_at=NOW,
    )
    base.update(changes)
    return SessionRecord(**base)


def user_version(path: Path) -> int:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()


# --- paths -----------------------------------------------------------------


def test_paths_follow_xdg_at_call_time(xdg_dirs, monkeypatch):
    assert paths.state_dir() == xdg_dirs["XDG_STATE_HOME"] / "afd"
    assert paths.runtime_dir() == xdg_dirs["XDG_RUNTIME_DIR"] / "afd"
    assert paths.data_dir() == xdg_dirs["XDG_DATA_HOME"] / "afd"
    assert paths.config_dir() == xdg_dirs["XDG_CONFIG_HOME"] / "afd"
    assert default_path() == xdg_dirs["XDG_STATE_HOME"] / "afd" / "state.db"
    monkeypatch.setenv("XDG_STATE_HOME", str(xdg_dirs["HOME"] / "elsewhere"))
    assert paths.state_dir() == xdg_dirs["HOME"] / "elsewhere" / "afd"


@pytest.mark.parametrize("value", [pytest.param(None, id="unset"), pytest.param("", id="empty"), pytest.param("rel/dir", id="relative")])
def test_paths_fall_back_to_home_defaults(xdg_dirs, monkeypatch, value):
    for var in ("XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR"):
        if value is None:
            monkeypatch.delenv(var)
        else:
            monkeypatch.setenv(var, value)
    home = xdg_dirs["HOME"]
    assert paths.state_dir() == home / ".local" / "state" / "afd"
    assert paths.data_dir() == home / ".local" / "share" / "afd"
    assert paths.runtime_dir() == home / ".local" / "state" / "afd" / "run"


# --- opening a fresh store ---------------------------------------------------


def test_fresh_store_is_wal_at_current_version_and_private(store, db_path):
    assert store.journal_mode() == "wal"
    assert user_version(db_path) == SCHEMA_VERSION
    assert db_path.stat().st_mode & 0o777 == 0o600
    assert store.backup_path is None
    assert store.opened_fresh_after_corruption is None


def test_reopening_keeps_state_and_takes_no_backup(db_path):
    with Store(db_path) as s:
        s.upsert_session(session())
    with Store(db_path) as s:
        assert s.get_session("work:1.0") == session()
        assert s.backup_path is None
    assert not list(db_path.parent.glob("*.bak-*"))


# --- round trips -------------------------------------------------------------


def test_session_with_every_field_round_trips(store):
    full = session(
        mission="fix the login redirect",
        worktree="/home/u/wt/login",
        branch="afd/login",
        agent_pid=5151,
        agent_started_at=1740830400.37,
        last_banner="You've hit your usage limit. Try again at 2:00 PM.",
        banner_first_seen_at=NOW - timedelta(minutes=3),
        reset_at=NOW + timedelta(hours=2),
        next_action=NextAction(PlanKind.RESUME, "reset", NOW + timedelta(hours=2, minutes=1), 1, 5),
        witnesses=Witnesses.BOTH,
        awaiting_since=NOW - timedelta(seconds=5),
        state="limited",
    )
    store.upsert_session(full)
    assert store.get_session(full.name) == full


def test_session_with_unknown_identity_and_no_agent_round_trips(store):
    bare = session(agent=None, identity="unknown", server_pid=None, state="idle")
    store.upsert_session(bare)
    assert store.get_session(bare.name) == bare


def test_upsert_replaces_and_list_is_sorted(store):
    store.upsert_session(session("b"))
    store.upsert_session(session("a"))
    store.upsert_session(session("b", state="gone", updated_at=NOW + timedelta(minutes=1)))
    assert [s.name for s in store.list_sessions()] == ["a", "b"]
    assert store.get_session("b").state == "gone"


def test_identity_outside_three_values_is_refused(store):
    with pytest.raises(sqlite3.IntegrityError):
        store.upsert_session(session(identity="maybe"))


def test_missing_session_is_none(store):
    assert store.get_session("nope") is None
    assert store.delete_session("nope") is False


def test_delete_session_forgets_its_banner_and_ledger(store):
    store.upsert_session(session("s"))
    store.record_banner("s", "limit", NOW, None)
    store.add_ledger(LedgerEntry("s", NOW, "claude", "codex", "abc123", "limit", True))
    assert store.delete_session("s") is True
    assert store.get_session("s") is None
    assert store.banner_first_seen("s", "limit") is None
    assert store.ledger("s") == []


@pytest.mark.parametrize(
    "fact",
    [
        pytest.param(unknown_fact("devin"), id="unknown"),
        pytest.param(
            LimitFact("codex", LimitState.LIMITED, NOW + timedelta(hours=1), NOW, "work:1.0", "usage limit"), id="limited"
        ),
        pytest.param(LimitFact("codex", LimitState.LIMITED, None, NOW, "work:1.0", "usage limit"), id="limited-no-reset"),
        pytest.param(LimitFact("claude", LimitState.AVAILABLE, None, NOW, "w:2.0"), id="available"),
    ],
)
def test_limit_fact_round_trips(store, fact):
    store.save_limit(fact)
    assert store.load_limits() == {fact.agent: fact}


def test_save_limit_replaces_the_agents_fact(store):
    store.save_limit(LimitFact("codex", LimitState.LIMITED, NOW, NOW, "a", "b"))
    store.save_limit(LimitFact("codex", LimitState.AVAILABLE, None, NOW, "c"))
    store.save_limit(unknown_fact("claude"))
    assert {a: f.state for a, f in store.load_limits().items()} == {
        "claude": LimitState.UNKNOWN,
        "codex": LimitState.AVAILABLE,
    }


def test_timestamps_come_back_as_the_same_instant_in_utc(store):
    plus5 = timezone(timedelta(hours=5))
    store.save_limit(LimitFact("codex", LimitState.LIMITED, datetime(2025, 3, 1, 17, 0, tzinfo=plus5), NOW, "s"))
    reset = store.load_limits()["codex"].reset_at
    assert reset == datetime(2025, 3, 1, 12, 0, tzinfo=timezone.utc)
    assert reset.utcoffset() == timedelta(0)


def test_naive_datetime_is_refused(store):
    with pytest.raises(ValueError, match="naive"):
        store.upsert_session(session(created_at=datetime(2025, 1, 1)))


def test_banner_first_seen_survives_reopen_and_is_per_text(db_path):
    with Store(db_path) as s:
        assert s.banner_first_seen("w", "limit, resets in 2h") is None
        s.record_banner("w", "limit, resets in 2h", NOW, NOW + timedelta(hours=2))
    with Store(db_path) as s:
        assert s.banner_first_seen("w", "limit, resets in 2h") == BannerSighting(NOW, NOW + timedelta(hours=2))
        assert s.banner_first_seen("w", "another banner") is None
        assert s.banner_first_seen("other-session", "limit, resets in 2h") is None


def test_record_banner_keeps_only_the_current_banner(store):
    store.record_banner("w", "first", NOW, None)
    store.record_banner("w", "second", NOW + timedelta(minutes=1), None)
    assert store.banner_first_seen("w", "first") is None
    assert store.banner_first_seen("w", "second") == BannerSighting(NOW + timedelta(minutes=1), None)
    store.clear_banner("w")
    assert store.banner_first_seen("w", "second") is None


def test_events_round_trip_in_order_with_cursor(store):
    ids = [
        store.add_event(Event(at=NOW + timedelta(seconds=i), kind="k", message=f"m{i}", session="s", data={"i": i}))
        for i in range(5)
    ]
    assert [e.event.message for e in store.recent_events(limit=3)] == ["m2", "m3", "m4"]
    assert [e.id for e in store.events_since(ids[1])] == ids[2:]
    assert store.events_since(ids[-1]) == []
    first = store.events_since(0)[0]
    assert first.event == Event(at=NOW, kind="k", message="m0", session="s", data={"i": 0})


def test_event_message_is_stored_as_one_line(store):
    store.add_event(Event(at=NOW, kind="k", message="two\nlines"))
    assert store.recent_events()[0].event.message == "two lines"


def test_events_older_than_30_days_are_pruned(store):
    for age in (timedelta(days=31), timedelta(days=30, seconds=1), timedelta(days=30), timedelta(days=1)):
        store.add_event(Event(at=NOW - age, kind="k", message=str(age)))
    assert store.prune_events(NOW) == 2
    assert [e.event.message for e in store.recent_events()] == [str(timedelta(days=30)), str(timedelta(days=1))]


def test_event_ids_are_not_reused_after_pruning(store):
    old = store.add_event(Event(at=NOW - timedelta(days=40), kind="k", message="old"))
    store.prune_events(NOW)
    assert store.add_event(Event(at=NOW, kind="k", message="new")) > old


def test_journal_begin_finish_and_pending(store):
    a = store.journal_begin("s", "handoff", {"to": "codex", "head": "abc"}, at=NOW)
    b = store.journal_begin("s", "resume", {}, at=NOW)
    assert [(e.id, e.intent, e.state) for e in store.pending_journal()] == [
        (a, {"head": "abc", "to": "codex"}, JournalState.PENDING),
        (b, {}, JournalState.PENDING),
    ]
    store.journal_finish(a, JournalState.DONE, "codex started", at=NOW + timedelta(seconds=5))
    assert [e.id for e in store.pending_journal()] == [b]
    done = store.journal_entry(a)
    assert (done.state, done.outcome, done.finished_at) == (JournalState.DONE, "codex started", NOW + timedelta(seconds=5))


def test_journal_entry_finishes_only_once(store):
    entry = store.journal_begin("s", "resume", {}, at=NOW)
    store.journal_finish(entry, JournalState.ROLLED_BACK, "pane gone")
    with pytest.raises(StoreError, match="not pending"):
        store.journal_finish(entry, JournalState.DONE, "again")


def test_ledger_round_trips_per_session(store):
    first = LedgerEntry("s", NOW, "claude", "codex", "a" * 40, "limit", True)
    second = LedgerEntry("s", NOW + timedelta(hours=1), "codex", "claude", "b" * 40, "user", False)
    ids = [store.add_ledger(first), store.add_ledger(second)]
    store.add_ledger(LedgerEntry("other", NOW, "x", "y", "c" * 40, "limit", True))
    assert store.ledger("s") == [replace(first, id=ids[0]), replace(second, id=ids[1])]


def test_meta_round_trips(store):
    assert store.get_meta("pid") is None
    store.set_meta("pid", "123")
    store.set_meta("pid", "456")
    assert store.get_meta("pid") == "456"


def test_transaction_commits_together_or_not_at_all(store):
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.upsert_session(session("a"))
            store.journal_begin("a", "resume", {}, at=NOW)
            raise RuntimeError("crash between the two")
    assert store.get_session("a") is None
    assert store.pending_journal() == []


# --- migrations --------------------------------------------------------------

V2 = "ALTER TABLE sessions ADD COLUMN note TEXT;"


def test_migration_backs_up_the_old_version_first(db_path):
    with Store(db_path) as s:
        s.upsert_session(session())
    with Store(db_path, migrations=(*MIGRATIONS, V2)) as s:
        backup = s.backup_path
        assert s.get_session("work:1.0") == session()
    assert backup == db_path.with_name(f"state.db.bak-v{SCHEMA_VERSION}")
    assert user_version(backup) == SCHEMA_VERSION
    assert user_version(db_path) == SCHEMA_VERSION + 1
    conn = sqlite3.connect(backup)
    assert conn.execute("SELECT name FROM sessions").fetchall() == [("work:1.0",)]
    conn.close()


def test_failed_migration_leaves_the_old_version_and_its_backup(db_path):
    with Store(db_path) as s:
        s.upsert_session(session())
    with pytest.raises(StoreError, match="cannot prepare"):
        Store(db_path, migrations=(*MIGRATIONS, "CREATE TABLE half_done (x); CREATE TABLE (;"))
    assert user_version(db_path) == SCHEMA_VERSION
    assert db_path.with_name(f"state.db.bak-v{SCHEMA_VERSION}").exists()
    with Store(db_path) as s:
        assert s.get_session("work:1.0") == session()
        assert "half_done" not in [r[0] for r in s._rows("SELECT name FROM sqlite_master")]


def test_second_backup_of_a_version_does_not_overwrite_the_first(db_path):
    Store(db_path).close()
    with pytest.raises(StoreError):
        Store(db_path, migrations=(*MIGRATIONS, "CREATE TABLE (;"))
    with Store(db_path) as s:  # the same version, with different content since that backup
        s.set_meta("note", "changed after the first backup")
    Store(db_path, migrations=(*MIGRATIONS, V2)).close()
    assert sorted(p.name for p in db_path.parent.glob("*.bak-*")) == [f"state.db.bak-v{SCHEMA_VERSION}", f"state.db.bak-v{SCHEMA_VERSION}.1"]


def test_a_migration_that_keeps_failing_keeps_one_backup(db_path):
    Store(db_path).close()
    for _ in range(3):
        with pytest.raises(StoreError):
            Store(db_path, migrations=(*MIGRATIONS, "CREATE TABLE (;"))
    assert [p.name for p in db_path.parent.glob("*.bak-*")] == [f"state.db.bak-v{SCHEMA_VERSION}"]
    with Store(db_path, migrations=(*MIGRATIONS, V2)) as s:
        assert s.backup_path == db_path.with_name(f"state.db.bak-v{SCHEMA_VERSION}")


def test_a_version_1_database_gains_the_location_column(db_path):
    Store(db_path, migrations=MIGRATIONS[:1]).close()
    conn = sqlite3.connect(db_path)
    conn.execute(
        "INSERT INTO sessions (name, pane_id, server_socket, identity, identity_source, state, created_at, updated_at)"
        " VALUES ('work:1.0', '%3', '/tmp/tmux-1000/default', 'known', 'process', 'idle', ?, ?)",
        (NOW.isoformat(), NOW.isoformat()),
    )
    conn.commit()
    conn.close()
    with Store(db_path) as s:
        assert s.backup_path == db_path.with_name("state.db.bak-v1")
        kept = s.get_session("work:1.0")
        assert kept.state == "idle" and kept.location is None
        s.upsert_session(replace(kept, location="work:1.0"))
        assert s.get_session("work:1.0").location == "work:1.0"


def _set_version(path: Path, version: int) -> None:
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {version}")
    conn.commit()
    conn.close()


def test_newer_database_is_refused_and_left_byte_identical(db_path):
    with Store(db_path) as s:
        s.upsert_session(session())
    _set_version(db_path, SCHEMA_VERSION + 7)
    before = db_path.read_bytes()
    with pytest.raises(StoreError, match=r"schema version \d+, newer than this afd understands"):
        Store(db_path)
    assert db_path.read_bytes() == before


def test_newer_database_with_unmerged_wal_is_refused_untouched(tmp_path):
    # A crashed newer afd leaves its latest writes in the -wal file only;
    # a writable open here would checkpoint them into the main file.
    live = tmp_path / "live" / "state.db"
    Store(live).close()
    writer = sqlite3.connect(live, isolation_level=None)
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    for name in ("state.db", "state.db-wal"):
        shutil.copyfile(live.with_name(name), crashed / name)
    writer.close()
    db = crashed / "state.db"
    before = (db.read_bytes(), (crashed / "state.db-wal").read_bytes())
    with pytest.raises(StoreError, match="newer"):
        Store(db)
    assert (db.read_bytes(), (crashed / "state.db-wal").read_bytes()) == before


def test_foreign_sqlite_database_is_refused_untouched(db_path):
    db_path.parent.mkdir(parents=True)
    conn = sqlite3.connect(db_path)
    conn.execute("CREATE TABLE photos (id)")
    conn.commit()
    conn.close()
    before = db_path.read_bytes()
    with pytest.raises(StoreError, match="not afd's state"):
        Store(db_path)
    assert db_path.read_bytes() == before


# --- corruption --------------------------------------------------------------


def _write_garbage(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"this is not a database\n" * 200)


def _damage_pages(path: Path) -> None:
    with Store(path) as s:
        for i in range(300):
            s.add_event(Event(at=NOW, kind="k", message="x" * 200 + str(i)))
    data = bytearray(path.read_bytes())
    page = 4096
    data[page : page * 4] = b"\xff" * (page * 3)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "damage", [pytest.param(_write_garbage, id="not-sqlite"), pytest.param(_damage_pages, id="damaged-pages")]
)
def test_corrupt_database_is_moved_aside_and_reported(db_path, damage):
    damage(db_path)
    broken = db_path.read_bytes()
    with Store(db_path) as s:
        moved = s.opened_fresh_after_corruption
        assert s.list_sessions() == []
        s.upsert_session(session())
    assert moved is not None and moved.name.startswith("state.db.corrupt-")
    assert moved.read_bytes() == broken
    with Store(db_path) as s:
        assert s.opened_fresh_after_corruption is None
        assert s.get_session("work:1.0") == session()


def test_corrupt_database_wal_moves_with_it(db_path):
    _write_garbage(db_path)
    db_path.with_name("state.db-wal").write_bytes(b"wal of the broken file")
    with Store(db_path) as s:
        moved = s.opened_fresh_after_corruption
    assert moved.with_name(moved.name + "-wal").read_bytes() == b"wal of the broken file"


def test_empty_file_is_a_fresh_database_not_corruption(db_path):
    db_path.parent.mkdir(parents=True)
    db_path.touch()
    with Store(db_path) as s:
        assert s.opened_fresh_after_corruption is None
    assert user_version(db_path) == SCHEMA_VERSION


# --- read-only ---------------------------------------------------------------


def test_readonly_open_of_absent_state_creates_nothing(tmp_path):
    path = tmp_path / "nothing" / "state.db"
    with pytest.raises(StoreError, match="no afd state"):
        Store.open_readonly(path)
    assert not path.parent.exists()


def test_readonly_open_reads_and_refuses_writes(db_path):
    with Store(db_path) as s:
        s.upsert_session(session())
        s.save_limit(unknown_fact("codex"))
    before = db_path.read_bytes()
    with Store.open_readonly(db_path) as ro:
        assert ro.list_sessions() == [session()]
        assert ro.load_limits() == {"codex": unknown_fact("codex")}
        with pytest.raises(StoreError, match="read-only"):
            ro.upsert_session(session("other"))
    assert db_path.read_bytes() == before


def test_readonly_open_sees_the_daemons_writes(store, db_path):
    store.upsert_session(session())
    with Store.open_readonly(db_path) as ro:
        assert ro.get_session("work:1.0") == session()
        store.upsert_session(session(state="limited"))
        assert ro.get_session("work:1.0").state == "limited"


def test_readonly_open_of_corrupt_file_reports_and_moves_nothing(db_path):
    _write_garbage(db_path)
    with pytest.raises(StoreError, match="corrupt"):
        Store.open_readonly(db_path)
    assert sorted(p.name for p in db_path.parent.iterdir()) == ["state.db"]


@pytest.mark.parametrize("offset", [pytest.param(1, id="newer"), pytest.param(-1, id="older")])
def test_readonly_open_refuses_other_versions_without_migrating(db_path, offset):
    Store(db_path).close()
    _set_version(db_path, SCHEMA_VERSION + offset)
    with pytest.raises(StoreError, match="schema version"):
        Store.open_readonly(db_path)
    assert user_version(db_path) == SCHEMA_VERSION + offset
    assert not list(db_path.parent.glob("*.bak-*"))


# --- the lock ----------------------------------------------------------------


def test_lock_writes_pid_and_reports_held(tmp_path):
    lock_file = tmp_path / "state.lock"
    assert StateLock.is_held(lock_file) is False
    with StateLock(lock_file):
        assert StateLock.is_held(lock_file) is True
        assert StateLock.holder_pid(lock_file) == os.getpid()
    assert StateLock.is_held(lock_file) is False


def test_second_lock_in_same_process_is_refused(tmp_path):
    lock_file = tmp_path / "state.lock"
    with StateLock(lock_file):
        with pytest.raises(StoreError) as info:
            StateLock(lock_file).acquire()
    assert str(info.value) == f"another afd is already running on {tmp_path} (pid {os.getpid()})"


def test_lock_held_by_another_process_is_refused_then_freed_when_it_dies(tmp_path):
    lock_file = tmp_path / "state.lock"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from afd.record.store import StateLock; l = StateLock(sys.argv[1]); l.acquire();"
            " print('held', flush=True); sys.stdin.read()",
            str(lock_file),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        assert StateLock.is_held(lock_file) is True
        with pytest.raises(StoreError, match=rf"another afd is already running on .* \(pid {holder.pid}\)"):
            StateLock(lock_file).acquire()
    finally:
        holder.kill()
        holder.wait()
    assert StateLock.is_held(lock_file) is False
    with StateLock(lock_file):
        assert StateLock.holder_pid(lock_file) == os.getpid()


def test_lock_for_store_sits_beside_the_database(db_path):
    assert StateLock.for_store(db_path).path == db_path.with_name("state.lock")


def test_reads_kept_between_polls_see_every_write_of_this_store_and_of_another(tmp_path):
    from afd.record.store import Store as _Store
    from afd.record.types import SessionRecord

    path = tmp_path / "state.db"
    now = datetime(2026, 7, 13, 9, 0, tzinfo=timezone.utc)

    def rec(name, state="idle"):
        return SessionRecord(name=name, pane_id="%1", server_socket="/s", server_pid=1, agent="claude", identity="known",
                             identity_source="process", state=state, created_at=now, updated_at=now)  # fmt: skip

    with _Store(path) as daemon, _Store(path) as cli:
        daemon.upsert_session(rec("a"))
        assert [r.state for r in daemon.list_sessions()] == ["idle"]
        daemon.upsert_session(rec("a", "limited"))
        assert [r.state for r in daemon.list_sessions()] == ["limited"]
        cli.upsert_session(rec("b"))  # another connection's commit
        assert [r.name for r in daemon.list_sessions()] == ["a", "b"]
        assert cli.delete_session("b")
        assert [r.name for r in daemon.list_sessions()] == ["a"]
        daemon.list_sessions().clear()  # a caller's list is its own
        assert len(daemon.list_sessions()) == 1


def test_resume_histories_read_at_once_follow_every_write_and_a_rolled_back_one(tmp_path):
    path = tmp_path / "state.db"
    with Store(path) as daemon, Store(path) as cli:
        assert daemon.resume_history("a") == ResumeHistory()
        daemon.save_resume_history("a", ResumeHistory(episode="w1", attempts=1))
        cli.save_resume_history("b", ResumeHistory(episode="w2", attempts=2))  # another connection's commit
        assert {k: v.attempts for k, v in daemon.resume_histories().items()} == {"a": 1, "b": 2}
        assert daemon.resume_history("b").episode == "w2"

        with pytest.raises(RuntimeError), daemon.transaction():
            daemon.save_resume_history("a", ResumeHistory(episode="w1", attempts=3))
            assert daemon.resume_history("a").attempts == 3  # read inside, then undone
            raise RuntimeError("the step failed")
        assert daemon.resume_history("a").attempts == 1
        assert cli.delete_session("a") is False  # no session row, but its history goes with the name
        assert set(daemon.resume_histories()) == {"b"}
