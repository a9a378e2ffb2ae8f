"""The jobs' durable records, on afd's store: jobs, masters, ownership history, receipts, the outbox.

Everything here runs inside the store's transactions, so a caller that
wraps several calls in `store.transaction()` commits them together — the
handoff's owner change, history, receipt, masters and messages are one
commit, before any delivery effect (the seed's "journal before delivery").
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from datetime import datetime, timezone

from afd.jobs.rules import brief_lines
from afd.record.store import Store, instant_from_text, instant_to_text
from afd.record.types import Envelope, EnvelopeState, Job, JobStatus


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _job(row) -> Job:
    return Job(
        name=row["name"], title=row["title"], owner=row["owner"], parent=row["parent"], agent=row["agent"],
        status=JobStatus(row["status"]), summary=row["summary"],
        created_at=instant_from_text(row["created_at"]), updated_at=instant_from_text(row["updated_at"]),
    )


def _envelope(row) -> Envelope:
    return Envelope(
        id=row["id"], key=row["key"], job=row["job"], to_session=row["to_session"], kind=row["kind"],
        text=row["text"], nonce=row["nonce"], state=EnvelopeState(row["state"]), recipient=row["recipient"],
        attempts=row["attempts"],
    )


class JobBook:
    def __init__(self, store: Store):
        self.store = store

    def _exec(self, sql: str, params: Sequence = ()):
        return self.store.execute(sql, params)

    # --- jobs

    def add_job(self, name: str, title: str, owner: str, parent: str | None, agent: str, *, at: datetime | None = None) -> None:
        stamp = instant_to_text(at or _now())
        with self.store.transaction():
            self._exec(
                "INSERT INTO jobs (name, title, owner, parent, agent, status, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, 'running', ?, ?)",
                (name, title, owner, parent, agent, stamp, stamp),
            )
            self._exec("INSERT INTO job_masters (job, master, rank) VALUES (?, ?, 0)", (name, owner))
            self._exec("INSERT INTO ownership_history (job, at, from_owner, to_owner) VALUES (?, ?, NULL, ?)", (name, stamp, owner))

    def job(self, name: str) -> Job | None:
        rows = self.store.query("SELECT * FROM jobs WHERE name = ?", (name,))
        return _job(rows[0]) if rows else None

    def jobs(self) -> dict[str, Job]:
        return {r["name"]: _job(r) for r in self.store.query("SELECT * FROM jobs ORDER BY owner, name")}

    def supervised_by(self, owner: str) -> list[Job]:
        return [_job(r) for r in self.store.query("SELECT * FROM jobs WHERE owner = ? ORDER BY name", (owner,))]

    def set_status(self, name: str, status: JobStatus, summary: str | None = None, *, at: datetime | None = None) -> None:
        self._exec("UPDATE jobs SET status = ?, summary = COALESCE(?, summary), updated_at = ? WHERE name = ?",
                   (status.value, summary, instant_to_text(at or _now()), name))

    def masters(self, job: str) -> list[str]:
        return [r["master"] for r in self.store.query("SELECT master FROM job_masters WHERE job = ? ORDER BY rank", (job,))]

    def history(self, job: str) -> list[dict]:
        rows = self.store.query("SELECT * FROM ownership_history WHERE job = ? ORDER BY id", (job,))
        return [{"at": r["at"], "from": r["from_owner"], "to": r["to_owner"], "receipt": r["receipt"]} for r in rows]

    # --- handoff

    def transfer(self, moved: Sequence[str], source: str, target: str, note: str | None,
                 masters: dict[str, list[str]], *, at: datetime | None = None) -> int:
        """Owner, history, masters and the receipt for every moved job; returns the receipt id. Caller holds the transaction."""
        stamp = instant_to_text(at or _now())
        with self.store.transaction():
            receipt = self._exec(
                "INSERT INTO handoff_receipts (at, from_owner, to_owner, jobs, note) VALUES (?, ?, ?, ?, ?)",
                (stamp, source, target, json.dumps(list(moved)), note),
            ).lastrowid
            for name in moved:
                old = self.job(name)
                self._exec("UPDATE jobs SET owner = ?, updated_at = ? WHERE name = ?", (target, stamp, name))
                self._exec("INSERT INTO ownership_history (job, at, from_owner, to_owner, receipt) VALUES (?, ?, ?, ?, ?)",
                           (name, stamp, old.owner if old else None, target, receipt))
                self._exec("DELETE FROM job_masters WHERE job = ?", (name,))
                for rank, master in enumerate(masters[name]):
                    self._exec("INSERT INTO job_masters (job, master, rank) VALUES (?, ?, ?)", (name, master, rank))
            return receipt

    def receipts(self) -> list[dict]:
        rows = self.store.query("SELECT * FROM handoff_receipts ORDER BY id")
        return [{"id": r["id"], "at": r["at"], "from": r["from_owner"], "to": r["to_owner"],
                 "jobs": json.loads(r["jobs"]), "note": r["note"]} for r in rows]

    # --- the outbox

    def enqueue(self, key: str, kind: str, text: str, *, job: str | None = None, to_session: str | None = None,
                at: datetime | None = None) -> bool:
        """Queue an envelope under a stable key; False when that key was queued before (never twice)."""
        stamp = instant_to_text(at or _now())
        cur = self._exec(
            "INSERT INTO outbox (key, job, to_session, kind, text, nonce, state, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?) ON CONFLICT (key) DO NOTHING",
            (key, job, to_session, kind, text, secrets.token_hex(3), stamp, stamp),
        )
        return cur.rowcount == 1

    def open_envelopes(self) -> list[Envelope]:
        return [_envelope(r) for r in self.store.query("SELECT * FROM outbox WHERE state != 'consumed' ORDER BY id")]

    def envelopes(self) -> list[Envelope]:
        return [_envelope(r) for r in self.store.query("SELECT * FROM outbox ORDER BY id")]

    def move(self, envelope_id: int, state: EnvelopeState, *, recipient: str | None = None, attempt: bool = False,
             at: datetime | None = None) -> None:
        self._exec(
            "UPDATE outbox SET state = ?, recipient = COALESCE(?, recipient), attempts = attempts + ?, updated_at = ?"
            " WHERE id = ?",
            (state.value, recipient, int(attempt), instant_to_text(at or _now()), envelope_id),
        )

    def release(self, envelope_id: int) -> None:
        """Back to pending with no recipient: nothing of it reached the pane, so routing picks again."""
        self._exec("UPDATE outbox SET state = 'pending', recipient = NULL, updated_at = ? WHERE id = ?",
                   (instant_to_text(_now()), envelope_id))


def supervised_lines(store: Store, session: str) -> list[str]:
    """What a handoff's brief says of the jobs `session` supervises (they stay with the session)."""
    return brief_lines(JobBook(store).supervised_by(session))
