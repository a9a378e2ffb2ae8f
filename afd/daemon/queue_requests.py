"""What the daemon does for `afd queue …` requests: a group of commands afd/daemon/requests.py's table holds.

Only the daemon writes the store: a held prompt is added, listed and
cancelled here, on the poll loop's thread. Bad input is one line, before
anything is written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from afd.decide import queue as rules
from afd.errors import EXIT_FAIL, EXIT_USAGE, UserError
from afd.kit.resettime import local_zone
from afd.record.queue_book import QueueBook
from afd.record.types import QueueState

MAX_TEXT = 8000  # characters of a held prompt


class QueueRequests:
    """`session` finds a session by the name a person gave (the daemon's one resolution)."""

    def __init__(self, daemon: Any, session: Callable[[str], Any]):
        self.daemon = daemon
        self._session = session

    @property
    def sup(self) -> Any:
        return self.daemon.supervisor

    def commands(self) -> dict[str, Callable[..., object]]:
        return {"queue.add": self.do_queue_add, "queue.list": self.do_queue_list, "queue.cancel": self.do_queue_cancel}

    def do_queue_add(self, session: str, text: str, at: str = rules.RESET) -> dict:
        """Hold `text` for `session` until its account's reset (`at` "reset") or the time given."""
        rec = self._session(session)
        if not isinstance(text, str) or not text.strip():
            raise UserError("the prompt to hold is empty", EXIT_USAGE)
        if len(text) > MAX_TEXT:
            raise UserError(f"the prompt is over {MAX_TEXT} characters", EXIT_USAGE)
        now = self.sup.clock()
        try:
            kind, when = rules.parse_at(at, now, local_zone())
        except ValueError as exc:
            raise UserError(str(exc), EXIT_USAGE) from None
        if kind == rules.RESET:
            account = rec.account or rec.agent
            fact = self.sup.store.limit_map().get(account) if account else None
            when = rules.reset_due(fact, self.sup.usage_figures(), account, self.daemon.config.resume_grace, now)
            if when is None:
                raise UserError(f"no reset is known for {rec.name}'s account {account or 'unknown'}: it is not limited "
                                "and has no exact usage figures; give --at HH:MM or an ISO 8601 time", EXIT_FAIL)
        assert when is not None
        book = QueueBook(self.sup.store)
        item = book.add(rec.name, text.strip(), kind, when, now)
        self.sup.event("queue.added", f"prompt {item} held for {rec.name} until "
                                      f"{'its account resets, ' if kind == rules.RESET else ''}{when:%Y-%m-%dT%H:%M:%SZ}",
                       rec.name, queued=item)
        found = book.get(item)
        assert found is not None
        return found.to_json()

    def do_queue_list(self) -> list[dict]:
        return [item.to_json() for item in QueueBook(self.sup.store).all()]

    def do_queue_cancel(self, item: int) -> dict:
        book = QueueBook(self.sup.store)
        found = book.get(int(item))
        if found is None:
            raise UserError(f"no queued prompt {item} (`afd queue list` shows them)", EXIT_USAGE)
        if found.state is not QueueState.WAITING:
            raise UserError(f"queued prompt {item} is {found.state.value}; only a waiting one can be cancelled", EXIT_FAIL)
        now = self.sup.clock()
        with self.sup.store.transaction():
            book.move(found.id, QueueState.CANCELLED, now, outcome="cancelled by the user")
        self.sup.event("queue.cancelled", f"queued prompt {found.id} cancelled", found.session, queued=found.id)
        done = book.get(found.id)
        assert done is not None
        return done.to_json()
