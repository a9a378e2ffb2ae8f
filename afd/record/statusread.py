"""What `afd status` shows, read from the state database in a fixed number of queries.

Rows, not record types: the report is built straight from them, and the CLI
reading the store with the daemon down must not pay for importing the
writer's machinery (psutil, policy, the record types) before it can print.
Seven queries whatever the number of sessions: the ledger of every session
comes in one, not one per session.
"""

from __future__ import annotations

import json
import sqlite3
import urllib.parse
from pathlib import Path
from typing import NamedTuple

from afd.record.schema import SCHEMA_VERSION

_SQLITE_MAGIC = b"SQLite format 3\x00"


class StatusRows(NamedTuple):
    """Everything the status report is made of, as stored.

    A NamedTuple rather than the usual frozen dataclass: the dataclasses
    module is a millisecond and more of the CLI's start that nothing else
    on this path needs.
    """

    sessions: tuple[sqlite3.Row, ...]  # ordered by name
    ledger: dict[str, tuple[sqlite3.Row, ...]]  # session -> its handoffs, oldest first
    resuming: frozenset[str]  # sessions with a resume under way (a pending journal entry)
    limits: tuple[sqlite3.Row, ...]  # ordered by account
    events: tuple[sqlite3.Row, ...]  # the most recent ones, oldest first
    agents: tuple[str, ...] | None  # the agents the daemon last had plugins for; None if it never said
    # The accounts the daemon's config names, (name, agent); None if it never said.
    accounts: tuple[tuple[str, str], ...] | None = None
    # session -> (since, until) of its pause as stored (until None: until unpaused).
    pauses: dict[str, tuple[str, str | None]] = {}
    usage: object = None  # afd.judge.usage.UsageInputs, read in the same transaction
    usage_stale_after: float | None = None  # the daemon's usage_stale_after; None if it never said


def read_status_rows(conn: sqlite3.Connection, events: int) -> StatusRows:
    """One consistent read (one transaction) of what status shows; `conn` must yield sqlite3.Row."""
    began = not conn.in_transaction
    if began:
        conn.execute("BEGIN")  # a snapshot: a daemon committing meanwhile cannot tear the report
    try:
        sessions = tuple(conn.execute("SELECT * FROM sessions ORDER BY name"))
        ledger: dict[str, list[sqlite3.Row]] = {}
        for row in conn.execute("SELECT * FROM ledger ORDER BY session, id"):
            ledger.setdefault(row["session"], []).append(row)
        resuming = frozenset(
            r[0] for r in conn.execute("SELECT DISTINCT session FROM journal WHERE state = 'pending' AND action = 'resume'")
        )
        limits = tuple(conn.execute("SELECT * FROM limits ORDER BY account"))
        recent = conn.execute("SELECT * FROM events ORDER BY id DESC LIMIT ?", (events,)).fetchall()
        named = conn.execute("SELECT value FROM meta WHERE key = 'agents'").fetchone()
        configured = conn.execute("SELECT value FROM meta WHERE key = 'accounts'").fetchone()
        pauses = {r["session"]: (r["since"], r["until"]) for r in conn.execute("SELECT * FROM pauses")}
        from afd.record.usage_book import read_inputs

        usage = read_inputs(lambda sql: conn.execute(sql).fetchall())  # samples as of now: the report is made now
        stale = conn.execute("SELECT value FROM meta WHERE key = 'usage_stale_after'").fetchone()
    finally:
        if began:
            conn.execute("COMMIT")
    return StatusRows(
        sessions=sessions,
        ledger={k: tuple(v) for k, v in ledger.items()},
        resuming=resuming,
        limits=limits,
        events=tuple(reversed(recent)),
        agents=tuple(json.loads(named[0])) if named else None,
        accounts=tuple((str(n), str(a)) for n, a in json.loads(configured[0])) if configured else None,
        pauses=pauses,
        usage=usage,
        usage_stale_after=float(stale[0]) if stale else None,
    )


def open_checked(path: Path) -> sqlite3.Connection | None:
    """A read-only connection to a state file this afd reads as it is, or None for anything else.

    None (missing, not SQLite, corrupt, another schema version) sends the
    caller to `Store.open_readonly`, which says what is wrong in the words
    it always has; this function never explains, only vouches.
    """
    try:
        with path.open("rb") as f:
            if f.read(len(_SQLITE_MAGIC)) != _SQLITE_MAGIC:
                return None
        uri = "file:" + urllib.parse.quote(str(path.resolve())) + "?mode=ro"
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=5.0)
    except (OSError, sqlite3.Error):
        return None
    try:
        conn.row_factory = sqlite3.Row
        # The same checks the store makes before it reads, so a damaged file
        # is reported, never half shown.
        if [tuple(r) for r in conn.execute("PRAGMA quick_check")] != [("ok",)]:
            raise sqlite3.DatabaseError("quick_check")
        if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
            raise sqlite3.DatabaseError("version")
    except sqlite3.Error:
        conn.close()
        return None
    return conn
