"""An event of the poll: stored, logged, published, and handed with its notice to the notifier worker.

The store row and the log line are afd's own record, and the socket publish
feeds `afd events --follow`: they are made here, in order, on the loop, so no
notifier can delay them. Telling people (every `afd_event` plugin) happens on
the notifier worker.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable

from afd.kit.resettime import local_zone
from afd.model import Event, Notice
from afd.record.store import Store

log = logging.getLogger("afd.supervisor")

# Events a person should notice in the journal.
WARNING_KINDS = frozenset({"invalid", "unanswered", "corrupt", "partial", "rolled-back", "limited", "unchecked", "create-failed",
                           "disputed", "failed"})


def record(store: Store, event: Event, *, emit: Callable[[Event, int], None],
           announce: Callable[[Event, Notice], None] | None) -> None:
    """Store, log and publish `event`; `announce`: the notifier worker's hand, None when no plugin tells events."""
    event_id = store.add_event(event)
    level = logging.WARNING if event.kind.split(".")[-1] in WARNING_KINDS else logging.INFO
    log.log(level, "%s%s: %s", f"[{event.session}] " if event.session else "", event.kind, event.message)
    if announce is not None:
        announce(event, notice(store, event, event_id))
    emit(event, event_id)


def notice(store: Store, event: Event, event_id: int) -> Notice:
    """The event told for a person, from the session's record as it stands now, in the user's zone."""
    from afd.notifiers.message import About, compose

    rec = store.get_session(event.session) if event.session else None
    about = None if rec is None else About(agent=rec.agent, location=rec.location, pane=rec.pane_id, worktree=rec.worktree,
                                           branch=rec.branch, reset_at=rec.reset_at, account=rec.account)
    return compose(event, about, now=event.at, zone=local_zone(), host=socket.gethostname(), event_id=event_id)
