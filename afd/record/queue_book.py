"""The held prompts of `afd queue`, on afd's store: written by the daemon only, read by `queue list` too.

A row goes waiting → delivering (handed to one delivery: an outbox
envelope, or a resume's journal row, in the same commit as that delivery's
own first row) → delivered or unconfirmed; or waiting → cancelled. Once
delivering, it is never handed to another delivery unless the one it was
handed to rolled back with nothing typed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from afd.decide.queue import QueuedPrompt, QueueState

if TYPE_CHECKING:
    from afd.record.store import Store

Query = Callable[..., Sequence]


def _iso(value: datetime) -> str:
    return value.astimezone(timezone.utc).isoformat(timespec="microseconds")


def _item(r) -> QueuedPrompt:
    return QueuedPrompt(id=r["id"], session=r["session"], text=r["text"], at_kind=r["at_kind"],
                        due_at=datetime.fromisoformat(r["due_at"]), state=QueueState(r["state"]),
                        created_at=datetime.fromisoformat(r["created_at"]), route=r["route"], ref=r["ref"],
                        outcome=r["outcome"])


def read_all(query: Query) -> list[QueuedPrompt]:
    """Every held prompt, oldest first (any connection whose rows read by name)."""
    return [_item(r) for r in query("SELECT * FROM queue ORDER BY id")]


class QueueBook:
    def __init__(self, store: Store):
        self.store = store
        self._open: tuple[tuple[int, int], list[QueuedPrompt]] | None = None

    def add(self, session: str, text: str, at_kind: str, due_at: datetime, now: datetime) -> int:
        with self.store.transaction():
            cur = self.store.execute(
                "INSERT INTO queue (session, text, at_kind, due_at, state, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, 'waiting', ?, ?)", (session, text, at_kind, _iso(due_at), _iso(now), _iso(now)))
            assert cur.lastrowid is not None
            return cur.lastrowid

    def all(self) -> list[QueuedPrompt]:
        return read_all(self.store.query)

    def get(self, item: int) -> QueuedPrompt | None:
        rows = self.store.query("SELECT * FROM queue WHERE id = ?", (item,))
        return _item(rows[0]) if rows else None

    def open(self) -> list[QueuedPrompt]:
        """Waiting and delivering rows, read again only after anyone wrote to the store (most polls: no one)."""
        marker = self.store.change_marker()
        if self._open is None or self._open[0] != marker:
            rows = self.store.query("SELECT * FROM queue WHERE state IN ('waiting', 'delivering') ORDER BY id")
            self._open = (marker, [_item(r) for r in rows])
        return self._open[1]

    def move(self, item: int, state: QueueState, now: datetime, *, route: str | None = None, ref: int | None = None,
             outcome: str | None = None) -> None:
        self.store.execute("UPDATE queue SET state = ?, route = ?, ref = ?, outcome = COALESCE(?, outcome), updated_at = ?"
                           " WHERE id = ?", (state.value, route, ref, outcome, _iso(now), item))

    def postpone(self, item: int, due_at: datetime, now: datetime) -> None:
        self.store.execute("UPDATE queue SET due_at = ?, updated_at = ? WHERE id = ?", (_iso(due_at), _iso(now), item))
