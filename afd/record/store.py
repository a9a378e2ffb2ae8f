"""The durable state: one SQLite file, and the lock that makes one daemon its only writer.

Everything afd remembers across a restart is here: sessions, the per-agent
limit map, each session's current banner with its first-seen time (so a
relative reset is parsed once and does not drift after a restart), events,
the action journal ("intent before effect") and the handoff ledger.

What it refuses to do (DESIGN rule 7): it never writes to a database from a
newer afd, never migrates without a backup, and never recreates a corrupt
file in place — the file is moved aside and the new path is reported. It
keeps no pane content except a detection's banner text, since captures can
hold secrets.

All timestamps are aware datetimes in, ISO 8601 UTC strings on disk.
"""

from __future__ import annotations

import errno
import fcntl
import glob
import json
import os
import sqlite3
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import overload

from afd.errors import EXIT_CONFIG, AfdError
from afd.model import Event, IdentityKind, IdentitySource, SessionState
from afd.record.files import DB_NAME, LOCK_NAME, default_path, lock_holder_pid, lock_is_held, lock_path_for  # noqa: F401
from afd.record.schema import MIGRATIONS, SCHEMA_VERSION, SQL_FUNCTIONS  # noqa: F401
from afd.record.types import (
    NO_HISTORY,
    BannerSighting,
    JournalEntry,
    JournalState,
    LedgerEntry,
    LimitFact,
    LimitState,
    NextAction,
    Pause,
    ResumeHistory,
    SessionRecord,
    StoredEvent,
    Witnesses,
)

EVENT_RETENTION = timedelta(days=30)
_SQLITE_MAGIC = b"SQLite format 3\x00"
_CORRUPT_CODES = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


class StoreError(AfdError):
    """The state cannot be used as asked; the message is one sentence for the user."""


class StoreRefused(StoreError):
    """The file is not one this afd may write (newer schema, someone else's database): a restart cannot fix it."""

    code = EXIT_CONFIG  # like a bad config: systemd must not restart-loop on it




# --- conversions ------------------------------------------------------------


@overload
def _iso(value: datetime) -> str: ...
@overload
def _iso(value: None) -> None: ...
def _iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"naive datetime {value!r}: the store keeps only aware instants")
    # Fixed width, one zone: string order is time order, which pruning uses.
    return value.astimezone(timezone.utc).isoformat(timespec="microseconds")


@overload
def _dt(value: str) -> datetime: ...
@overload
def _dt(value: None) -> None: ...
def _dt(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


# The encoding of instants on disk, for the other record books on this
# database (afd/jobs/book.py), which keep their own tables with the same rule.
instant_to_text = _iso
instant_from_text = _dt


def _inserted_id(cur: sqlite3.Cursor) -> int:
    # Always set after an INSERT into a table with an integer key.
    assert cur.lastrowid is not None
    return cur.lastrowid


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _one_line(text: str) -> str:
    return " ".join(text.splitlines())


_SESSION_COLUMNS = tuple(f.name for f in fields(SessionRecord))
_SESSION_DATETIMES = frozenset({"created_at", "updated_at", "banner_first_seen_at", "reset_at", "awaiting_since", "continued_at"})


def _session_column(name: str, value):
    if name in _SESSION_DATETIMES:
        return _iso(value)
    if name == "next_action":
        return value.dumps() if value is not None else None
    return value


def _session_to_row(record: SessionRecord) -> tuple:
    return tuple(_session_column(name, getattr(record, name)) for name in _SESSION_COLUMNS)


# Stored as their plain string values; read back as the enums the code compares with `is`.
_SESSION_ENUMS = {"state": SessionState, "identity": IdentityKind, "identity_source": IdentitySource, "witnesses": Witnesses}


def _session_value(name: str, value):
    if name in _SESSION_DATETIMES:
        return _dt(value)
    if name == "next_action":
        return NextAction.loads(value)
    kind = _SESSION_ENUMS.get(name)
    if kind is not None and value in kind._value2member_map_:
        return kind(value)
    return value


def _session_from_row(row: sqlite3.Row) -> SessionRecord:
    return SessionRecord(**{name: _session_value(name, row[name]) for name in _SESSION_COLUMNS})


def _limit_from_row(row: sqlite3.Row) -> LimitFact:
    return LimitFact(
        agent=row["agent"],
        # The default account is named after its agent, and kept as None in the fact.
        account=row["account"] if row["account"] != row["agent"] else None,
        state=LimitState(row["state"]),
        reset_at=_dt(row["reset_at"]),
        observed_at=_dt(row["observed_at"]),
        source_session=row["source_session"],
        banner=row["banner"],
    )


def _event_from_row(row: sqlite3.Row) -> StoredEvent:
    return StoredEvent(
        id=row["id"],
        event=Event(
            at=_dt(row["at"]),
            kind=row["kind"],
            message=row["message"],
            session=row["session"],
            data=json.loads(row["data"]),
        ),
    )


def _journal_from_row(row: sqlite3.Row) -> JournalEntry:
    return JournalEntry(
        id=row["id"],
        at=_dt(row["at"]),
        session=row["session"],
        action=row["action"],
        intent=json.loads(row["intent"]),
        state=JournalState(row["state"]),
        outcome=row["outcome"],
        finished_at=_dt(row["finished_at"]),
    )


def _ledger_from_row(row: sqlite3.Row) -> LedgerEntry:
    return LedgerEntry(
        id=row["id"],
        session=row["session"],
        at=_dt(row["at"]),
        from_agent=row["from_agent"],
        to_agent=row["to_agent"],
        head_sha=row["head_sha"],
        reason=row["reason"],
        automatic=bool(row["automatic"]),
        from_conversation=row["from_conversation"],
        base_sha=row["base_sha"],
        journal_id=row["journal_id"],
        from_account=row["from_account"],
        to_account=row["to_account"],
    )


# --- opening ----------------------------------------------------------------


def _is_corruption(exc: sqlite3.DatabaseError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    # Extended codes carry the primary code in the low byte.
    return code is not None and (code & 0xFF) in _CORRUPT_CODES


def _header_problem(path: Path) -> str | None:
    """Why the file cannot be an SQLite database, judged from its first bytes."""
    with path.open("rb") as f:
        head = f.read(len(_SQLITE_MAGIC))
    if head and head != _SQLITE_MAGIC:
        return "not an SQLite database"
    return None


def _integrity_problem(conn: sqlite3.Connection) -> str | None:
    try:
        rows = conn.execute("PRAGMA quick_check").fetchall()
    except sqlite3.DatabaseError as exc:
        if _is_corruption(exc):
            return str(exc)
        raise
    if [tuple(r) for r in rows] != [("ok",)]:
        return "; ".join(str(r[0]) for r in rows[:3])
    return None


def _user_tables(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
    return [r[0] for r in rows]


def _free_name(path: Path) -> Path:
    candidate, n = path, 1
    while candidate.exists():
        candidate = path.with_name(f"{path.name}.{n}")
        n += 1
    return candidate


def _move_aside(path: Path) -> Path:
    stamp = _now().strftime("%Y%m%dT%H%M%SZ")
    target = _free_name(path.with_name(f"{path.name}.corrupt-{stamp}"))
    # The -wal and -shm files belong to the broken file; leaving them would
    # let SQLite replay them into the fresh database.
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            side.rename(target.with_name(target.name + suffix))
    path.rename(target)
    return target


def _touch_private(path: Path) -> None:
    # SQLite would create the file with the umask's mode; missions and
    # banners are the user's business only. Its -wal/-shm copy this mode.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    os.close(fd)


def _connect(target: str, *, uri: bool = False) -> sqlite3.Connection:
    # Autocommit at the driver level: every transaction is an explicit BEGIN.
    conn = sqlite3.connect(target, uri=uri, isolation_level=None, check_same_thread=False, timeout=5.0)
    conn.row_factory = sqlite3.Row
    return conn


def _backup(conn: sqlite3.Connection, path: Path, version: int) -> Path:
    base = path.with_name(f"{path.name}.bak-v{version}")
    target = _free_name(base)
    _touch_private(target)
    dest = sqlite3.connect(target)
    try:
        conn.backup(dest)
    finally:
        dest.close()
    # A migration that fails rolls back, and the next start tries again: the
    # same state needs only the backup taken the first time.
    fresh = target.read_bytes()
    for earlier in sorted(path.parent.glob(f"{glob.escape(base.name)}*")):
        if earlier != target and earlier.is_file() and earlier.read_bytes() == fresh:
            target.unlink()
            return earlier
    return target


def _migrate(conn: sqlite3.Connection, steps: Sequence[str], start: int) -> None:
    for version in range(start, len(steps)):
        try:
            # executescript runs the script as written; the transaction is
            # ours, so a failing step leaves the previous version intact.
            script = f"BEGIN IMMEDIATE;\n{steps[version]}\nPRAGMA user_version = {version + 1};\nCOMMIT;"
            conn.executescript(script)
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise


@dataclass(frozen=True, slots=True)
class _Inspection:
    problem: str | None  # why the file is corrupt, or None
    version: int
    has_tables: bool


# --- the store --------------------------------------------------------------


class Store:
    """The state database. `Store(path)` opens it for writing (the daemon).

    After opening, `opened_fresh_after_corruption` is the path a corrupt
    database was moved to (the caller reports it), else None;
    `backup_path` is the copy taken before a migration, else None.
    """

    def __init__(self, path: Path | str | None = None, *, migrations: Sequence[str] = MIGRATIONS):
        self.path = Path(path) if path is not None else default_path()
        self.readonly = False
        self.opened_fresh_after_corruption: Path | None = None
        self.backup_path: Path | None = None
        self._lock = threading.RLock()
        self.peer_limits: Callable[[dict[str, LimitFact]], dict[str, LimitFact]] | None = None
        self._conn = self._open_writable(tuple(migrations))

    @classmethod
    def open_readonly(cls, path: Path | str | None = None) -> Store:
        """Open for reading only (`afd status` with the daemon down): creates, moves and migrates nothing."""
        self = cls.__new__(cls)
        self.path = Path(path) if path is not None else default_path()
        self.readonly = True
        self.opened_fresh_after_corruption = None
        self.backup_path = None
        self._lock = threading.RLock()
        self.peer_limits = None
        self._conn = self._open_readonly()
        return self

    # -- opening

    def _inspect(self) -> _Inspection:
        """Look at an existing file through a read-only connection, which never checkpoints or rewrites it."""
        path = self.path
        if (problem := _header_problem(path)) is not None:
            return _Inspection(problem=problem, version=0, has_tables=False)
        uri = "file:" + urllib.parse.quote(str(path.resolve())) + "?mode=ro"
        try:
            conn = _connect(uri, uri=True)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot open the state database {path}: {exc}") from exc
        try:
            problem = _integrity_problem(conn)
            if problem is not None:
                return _Inspection(problem=problem, version=0, has_tables=False)
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            return _Inspection(problem=None, version=version, has_tables=bool(_user_tables(conn)))
        except sqlite3.DatabaseError as exc:
            if _is_corruption(exc):
                return _Inspection(problem=str(exc), version=0, has_tables=False)
            raise StoreError(f"cannot read the state database {path}: {exc}") from exc
        finally:
            conn.close()

    def _refuse_version(self, found: _Inspection, known: int) -> None:
        if found.version > known:
            raise StoreRefused(
                f"the state database {self.path} has schema version {found.version}, newer than this afd "
                f"understands ({known}); upgrade afd, or move the file aside to start afresh"
            )
        if found.version == 0 and found.has_tables:
            raise StoreRefused(f"{self.path} is an SQLite database but not afd's state; move it aside")

    def _open_writable(self, steps: tuple[str, ...]) -> sqlite3.Connection:
        path = self.path
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if path.exists():
            found = self._inspect()
            if found.problem is not None:
                try:
                    self.opened_fresh_after_corruption = _move_aside(path)
                except OSError as exc:
                    raise StoreError(
                        f"the state database {path} is corrupt ({found.problem}) "
                        f"and could not be moved aside: {exc}"
                    ) from exc
            else:
                # Refused here, before any writable connection exists: even
                # closing one can checkpoint the WAL into the file.
                self._refuse_version(found, len(steps))
        _touch_private(path)
        try:
            conn = _connect(str(path))
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot open the state database {path}: {exc}") from exc
        try:
            self._prepare(conn, steps)
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise StoreError(f"cannot prepare the state database {path}: {exc}") from exc
        except BaseException:
            conn.close()
            raise
        return conn

    def _prepare(self, conn: sqlite3.Connection, steps: tuple[str, ...]) -> None:
        known = len(steps)
        conn.execute("PRAGMA busy_timeout = 5000")
        # Under the write lock, so the version read is the one migrated from.
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            self._refuse_version(_Inspection(None, version, bool(_user_tables(conn))), known)
        finally:
            conn.execute("ROLLBACK")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise StoreError(f"cannot put the state database {self.path} in WAL mode (got {mode})")
        if 0 < version < known:
            self.backup_path = _backup(conn, self.path, version)
        # What afd deletes or rewrites (a scrubbed secret, a pruned event) is zeroed, not left in free space.
        conn.execute("PRAGMA secure_delete = ON")
        for name, (arity, function) in SQL_FUNCTIONS.items():
            conn.create_function(name, arity, function, deterministic=True)
        _migrate(conn, steps, version)

    def _open_readonly(self) -> sqlite3.Connection:
        path = self.path
        if not path.is_file():
            raise StoreError(f"there is no afd state at {path}")
        found = self._inspect()
        if found.problem is not None:
            raise StoreError(
                f"the state database {path} is corrupt ({found.problem}); `afd run` will move it aside"
            )
        if found.version != SCHEMA_VERSION:
            if found.version > SCHEMA_VERSION:
                fix = f"newer than this afd understands ({SCHEMA_VERSION}); upgrade afd"
            else:
                fix = f"older than this afd's ({SCHEMA_VERSION}); start `afd run` once to upgrade it"
            raise StoreError(f"the state database {path} has schema version {found.version}, {fix}")
        uri = "file:" + urllib.parse.quote(str(path.resolve())) + "?mode=ro"
        try:
            return _connect(uri, uri=True)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot open the state database {path}: {exc}") from exc

    # -- lifecycle

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction; store calls inside it join it, so they commit together."""
        if self.readonly:
            raise StoreError(f"the state database {self.path} is open read-only")
        with self._lock:
            if self._conn.in_transaction:
                yield
                return
            # IMMEDIATE takes the write lock up front, so a transaction never
            # fails half way for want of it.
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self._conn.execute("ROLLBACK")
                # What was read inside it may be undone; total_changes does not go back.
                self.__dict__.pop("_reads", None)
                raise
            self._conn.execute("COMMIT")

    def _rows(self, sql: str, params: Sequence = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def journal_mode(self) -> str:
        return self._rows("PRAGMA journal_mode")[0][0]

    def _unchanged_since_read(self, what: str, load):
        """`load()`'s answer, kept until anyone writes to the database.

        The supervisor reads every session and the limit map each poll; an
        unchanged poll should not parse them all again. `data_version` moves
        when another connection commits (a CLI command, another process);
        `total_changes` when this one writes.
        """
        with self._lock:
            key = (self._conn.execute("PRAGMA data_version").fetchone()[0], self._conn.total_changes)
            reads = self.__dict__.setdefault("_reads", {})
            if what not in reads or reads[what][0] != key:
                reads[what] = (key, load())
            return reads[what][1]

    def total_changes(self) -> int:
        """Rows written through this store since it was opened: a poll that changed nothing adds none."""
        with self._lock:
            return self._conn.total_changes

    # -- for other record books on this database (afd/jobs/book.py)

    def execute(self, sql: str, params: Sequence = ()) -> sqlite3.Cursor:
        """Run one write statement in a transaction (joining the caller's, if one is open)."""
        with self.transaction():
            return self._conn.execute(sql, params)

    def query(self, sql: str, params: Sequence = ()) -> list[sqlite3.Row]:
        """The rows of one read statement."""
        return self._rows(sql, params)

    # -- sessions

    def upsert_session(self, record: SessionRecord) -> None:
        columns = ", ".join(_SESSION_COLUMNS)
        marks = ", ".join("?" for _ in _SESSION_COLUMNS)
        updates = ", ".join(f"{c} = excluded.{c}" for c in _SESSION_COLUMNS if c != "name")
        with self.transaction():
            self._conn.execute(
                f"INSERT INTO sessions ({columns}) VALUES ({marks}) ON CONFLICT (name) DO UPDATE SET {updates}",
                _session_to_row(record),
            )

    def get_session(self, name: str) -> SessionRecord | None:
        rows = self._rows("SELECT * FROM sessions WHERE name = ?", (name,))
        return _session_from_row(rows[0]) if rows else None

    def list_sessions(self) -> list[SessionRecord]:
        return list(self._unchanged_since_read("sessions", lambda: [_session_from_row(r) for r in self._rows("SELECT * FROM sessions ORDER BY name")]))

    def delete_session(self, name: str) -> bool:
        """Forget a session, its banner and its ledger; events and the journal stay as history."""
        with self.transaction():
            cur = self._conn.execute("DELETE FROM sessions WHERE name = ?", (name,))
            self._conn.execute("DELETE FROM banners WHERE session = ?", (name,))
            # A later session of the same name must not inherit this one's
            # handoffs: the ledger bounds ping-ponging per session.
            self._conn.execute("DELETE FROM ledger WHERE session = ?", (name,))
            self._conn.execute("DELETE FROM resume_history WHERE session = ?", (name,))
            self._conn.execute("DELETE FROM pauses WHERE session = ?", (name,))
            return cur.rowcount > 0

    # -- the limit map

    def save_limit(self, fact: LimitFact) -> None:
        with self.transaction():
            self._conn.execute(
                "INSERT INTO limits (account, agent, state, reset_at, observed_at, source_session, banner)"
                " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (account) DO UPDATE SET agent = excluded.agent,"
                " state = excluded.state, reset_at = excluded.reset_at, observed_at = excluded.observed_at,"
                " source_session = excluded.source_session, banner = excluded.banner",
                (
                    fact.account_name,
                    fact.agent,
                    fact.state.value,
                    _iso(fact.reset_at),
                    _iso(fact.observed_at),
                    fact.source_session,
                    fact.banner,
                ),
            )

    def load_limits(self) -> dict[str, LimitFact]:
        """The limit map by account; an agent's default account is keyed by the agent's name."""
        return dict(self._unchanged_since_read("limits", lambda: {r["account"]: _limit_from_row(r) for r in self._rows("SELECT * FROM limits ORDER BY account")}))

    def limit_map(self) -> dict[str, LimitFact]:
        """The limit map afd acts on: this host's (`load_limits`, which only what this host sees writes), with what
        the fleet's hosts told merged in through `peer_limits` (the daemon's, afd.judge.fleet's table) when set."""
        here = self.load_limits()
        return self.peer_limits(here) if self.peer_limits is not None else here

    # -- banners (one current banner per session)

    def banner_first_seen(self, session: str, banner_text: str) -> BannerSighting | None:
        """When this session first showed this banner, and the reset read then; None if it is new."""
        rows = self._rows(
            "SELECT first_seen_at, reset_at FROM banners WHERE session = ? AND banner_text = ?",
            (session, banner_text),
        )
        if not rows:
            return None
        return BannerSighting(first_seen_at=_dt(rows[0]["first_seen_at"]), reset_at=_dt(rows[0]["reset_at"]))

    def record_banner(
        self, session: str, banner_text: str, first_seen_at: datetime, reset_at: datetime | None
    ) -> None:
        """Make this the session's current banner, replacing any other."""
        with self.transaction():
            self._conn.execute(
                "INSERT INTO banners (session, banner_text, first_seen_at, reset_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (session) DO UPDATE SET banner_text = excluded.banner_text,"
                " first_seen_at = excluded.first_seen_at, reset_at = excluded.reset_at",
                (session, banner_text, _iso(first_seen_at), _iso(reset_at)),
            )

    def clear_banner(self, session: str) -> None:
        with self.transaction():
            self._conn.execute("DELETE FROM banners WHERE session = ?", (session,))

    # -- events

    def add_event(self, event: Event) -> int:
        """Store an event (its message as one line) and return its id."""
        with self.transaction():
            cur = self._conn.execute(
                "INSERT INTO events (at, session, kind, message, data) VALUES (?, ?, ?, ?, ?)",
                (
                    _iso(event.at),
                    event.session,
                    event.kind,
                    _one_line(event.message),
                    json.dumps(event.data, sort_keys=True, default=str),
                ),
            )
            return _inserted_id(cur)

    def recent_events(self, limit: int = 50) -> list[StoredEvent]:
        """The last `limit` events, oldest first."""
        rows = self._rows("SELECT * FROM events ORDER BY id DESC LIMIT ?", (limit,))
        return [_event_from_row(r) for r in reversed(rows)]

    def events_since(self, event_id: int, limit: int | None = None) -> list[StoredEvent]:
        """Events after `event_id`, oldest first (0 for all)."""
        rows = self._rows("SELECT * FROM events WHERE id > ? ORDER BY id LIMIT ?", (event_id, limit or -1))
        return [_event_from_row(r) for r in rows]

    def prune_events(self, now: datetime) -> int:
        """Delete events older than 30 days before `now`; return how many went."""
        with self.transaction():
            cur = self._conn.execute("DELETE FROM events WHERE at < ?", (_iso(now - EVENT_RETENTION),))
            return cur.rowcount

    # -- the journal

    def journal_begin(self, session: str, action: str, intent: dict, *, at: datetime | None = None) -> int:
        """Commit an action's intent before its first effect; returns the entry's id."""
        with self.transaction():
            cur = self._conn.execute(
                "INSERT INTO journal (at, session, action, intent, state) VALUES (?, ?, ?, ?, 'pending')",
                (_iso(at or _now()), session, action, json.dumps(intent, sort_keys=True)),
            )
            return _inserted_id(cur)

    def journal_finish(
        self, entry_id: int, state: JournalState, outcome: str, *, at: datetime | None = None
    ) -> None:
        if state is JournalState.PENDING:
            raise ValueError("a journal entry finishes as done or rolled_back")
        with self.transaction():
            cur = self._conn.execute(
                "UPDATE journal SET state = ?, outcome = ?, finished_at = ? WHERE id = ? AND state = 'pending'",
                (state.value, outcome, _iso(at or _now()), entry_id),
            )
            if cur.rowcount != 1:
                raise StoreError(f"journal entry {entry_id} is not pending")

    def journal_step(self, entry_id: int, step: str, *, at: datetime | None = None, **data) -> None:
        """Record that a pending action is at `step` (with `data` merged into its intent), before the step's effect."""
        with self.transaction():
            rows = self._conn.execute("SELECT intent FROM journal WHERE id = ? AND state = 'pending'", (entry_id,)).fetchall()
            if not rows:
                raise StoreError(f"journal entry {entry_id} is not pending")
            intent = json.loads(rows[0]["intent"])
            intent.update(data, step=step, step_at=_iso(at or _now()))
            self._conn.execute("UPDATE journal SET intent = ? WHERE id = ?", (json.dumps(intent, sort_keys=True), entry_id))

    def pending_journal(self) -> list[JournalEntry]:
        rows = self._rows("SELECT * FROM journal WHERE state = 'pending' ORDER BY id")
        return [_journal_from_row(r) for r in rows]

    def journal_set_intent(self, entry_id: int, intent: dict) -> None:
        """Record the step a pending action has reached (its intent) before that step's effect."""
        with self.transaction():
            cur = self._conn.execute(
                "UPDATE journal SET intent = ? WHERE id = ? AND state = 'pending'",
                (json.dumps(intent, sort_keys=True), entry_id),
            )
            if cur.rowcount != 1:
                raise StoreError(f"journal entry {entry_id} is not pending")

    def journal_entry(self, entry_id: int) -> JournalEntry | None:
        rows = self._rows("SELECT * FROM journal WHERE id = ?", (entry_id,))
        return _journal_from_row(rows[0]) if rows else None

    # -- the ledger

    def add_ledger(self, entry: LedgerEntry) -> int:
        with self.transaction():
            cur = self._conn.execute(
                "INSERT INTO ledger (session, at, from_agent, to_agent, head_sha, reason, automatic,"
                " from_conversation, base_sha, journal_id, from_account, to_account)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    entry.session,
                    _iso(entry.at),
                    entry.from_agent,
                    entry.to_agent,
                    entry.head_sha,
                    entry.reason,
                    int(entry.automatic),
                    entry.from_conversation,
                    entry.base_sha,
                    entry.journal_id,
                    entry.from_account,
                    entry.to_account,
                ),
            )
            return _inserted_id(cur)

    def ledger_for_journal(self, journal_id: int) -> LedgerEntry | None:
        rows = self._rows("SELECT * FROM ledger WHERE journal_id = ?", (journal_id,))
        return _ledger_from_row(rows[0]) if rows else None

    def ledger(self, session: str) -> list[LedgerEntry]:
        rows = self._rows("SELECT * FROM ledger WHERE session = ? ORDER BY id", (session,))
        return [_ledger_from_row(r) for r in rows]

    # -- resume history (attempts and backoff per session)

    def resume_history(self, session: str) -> ResumeHistory:
        return self.resume_histories().get(session, NO_HISTORY)

    def resume_histories(self) -> Mapping[str, ResumeHistory]:
        """Every session's history, read in one query and kept until a write: the planner looks at each session every poll."""
        return self._unchanged_since_read("resume_history", self._load_resume_histories)

    def _load_resume_histories(self) -> dict[str, ResumeHistory]:
        return {
            r["session"]: ResumeHistory(
                episode=r["episode"],
                attempts=r["attempts"],
                last_sent_at=_dt(r["last_sent_at"]),
                backoff_level=r["backoff_level"],
                relimited_at=_dt(r["relimited_at"]),
                unconfirmed=bool(r["unconfirmed"]),
                retry_after=_dt(r["retry_after"]),
                needs_human=r["needs_human"],
                first_seen_at=_dt(r["first_seen_at"]),
                reset_at=_dt(r["reset_at"]),
                handoff_wall=r["handoff_wall"],
                handoff_tried=r["handoff_tried"],
                cancelled=r["cancelled"],
            )
            for r in self._rows("SELECT * FROM resume_history")
        }

    def save_resume_history(self, session: str, history: ResumeHistory) -> None:
        with self.transaction():
            self._conn.execute(
                "INSERT INTO resume_history (session, episode, attempts, last_sent_at, backoff_level, relimited_at,"
                " unconfirmed, retry_after, needs_human, first_seen_at, reset_at, handoff_wall, handoff_tried, cancelled)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session) DO UPDATE SET episode = excluded.episode,"
                " attempts = excluded.attempts, last_sent_at = excluded.last_sent_at,"
                " backoff_level = excluded.backoff_level, relimited_at = excluded.relimited_at,"
                " unconfirmed = excluded.unconfirmed, retry_after = excluded.retry_after,"
                " needs_human = excluded.needs_human, first_seen_at = excluded.first_seen_at,"
                " reset_at = excluded.reset_at, handoff_wall = excluded.handoff_wall,"
                " handoff_tried = excluded.handoff_tried, cancelled = excluded.cancelled",
                (
                    session,
                    history.episode,
                    history.attempts,
                    _iso(history.last_sent_at),
                    history.backoff_level,
                    _iso(history.relimited_at),
                    int(history.unconfirmed),
                    _iso(history.retry_after),
                    history.needs_human,
                    _iso(history.first_seen_at),
                    _iso(history.reset_at),
                    history.handoff_wall,
                    history.handoff_tried,
                    history.cancelled,
                ),
            )

    # -- pauses (the person's hold on a session)

    def pauses(self) -> Mapping[str, Pause]:
        """Every session's pause as stored, ended or not (`policy.pause_in_force` tells), kept until a write."""
        return self._unchanged_since_read("pauses", lambda: {
            r["session"]: Pause(r["session"], _dt(r["since"]), _dt(r["until"])) for r in self._rows("SELECT * FROM pauses")
        })

    def save_pause(self, pause: Pause) -> None:
        with self.transaction():
            self._conn.execute(
                "INSERT INTO pauses (session, since, until) VALUES (?, ?, ?)"
                " ON CONFLICT (session) DO UPDATE SET since = excluded.since, until = excluded.until",
                (pause.session, _iso(pause.since), _iso(pause.until)),
            )

    def delete_pause(self, session: str) -> bool:
        """End a session's pause; False when it had none."""
        with self.transaction():
            return self._conn.execute("DELETE FROM pauses WHERE session = ?", (session,)).rowcount > 0

    # -- what status shows

    def status_rows(self, events: int = 20):
        """The rows of the status report (`afd.record.statusread`), in one read."""
        from afd.record.statusread import read_status_rows

        with self._lock:
            return read_status_rows(self._conn, events)

    def change_marker(self) -> tuple[int, int]:
        """A value that moves whenever anyone commits to the database: while it is equal, so is the content."""
        with self._lock:
            return (self._conn.execute("PRAGMA data_version").fetchone()[0], self._conn.total_changes)

    # -- meta (daemon pid, started_at, version)

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction():
            self._conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    def get_meta(self, key: str) -> str | None:
        rows = self._rows("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0]["value"] if rows else None


# --- the single-writer lock -------------------------------------------------


class StateLock:
    """An exclusive flock on `state.lock` beside the database, held while a daemon runs.

    The kernel drops it when the process dies, so a crashed daemon never
    leaves a stale lock behind. The holder's pid is written into the file
    for the refusal message.
    """

    # `is_held` probes with a shared lock for an instant; a daemon starting
    # in that instant retries instead of refusing.
    _ATTEMPTS = 20
    _PAUSE = 0.01

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self._fd: int | None = None

    @classmethod
    def for_store(cls, db_path: Path | str | None = None) -> StateLock:
        return cls(lock_path_for(Path(db_path) if db_path is not None else default_path()))

    def acquire(self) -> None:
        if self._fd is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        for attempt in range(self._ATTEMPTS):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    os.close(fd)
                    raise
                if attempt == self._ATTEMPTS - 1:
                    os.close(fd)
                    pid = self.holder_pid(self.path)
                    who = f"pid {pid}" if pid is not None else "pid unknown"
                    raise StoreError(f"another afd is already running on {self.path.parent} ({who})") from None
                time.sleep(self._PAUSE)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        # Closing the descriptor releases the lock; the pid line stays but
        # means nothing once nobody holds the lock.
        os.close(fd)

    def __enter__(self) -> StateLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    # The probes live beside the file names, so `afd status` can ask without importing the store.
    is_held = staticmethod(lock_is_held)
    holder_pid = staticmethod(lock_holder_pid)
