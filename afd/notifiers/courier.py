"""One notifier's delivery lane: a bounded queue, a thread, collapsing, retries with backoff.

Each configured notifier has its own lane, so a dead or slow endpoint holds
up only its own messages. A message is tried, and tried again after 1, 2,
4 … s (at most 30 s apart) while `retry_for` has not run out; an answer that
trying again cannot change (a redirect, a 4xx) ends it at once. The first
message given up on is reported once (`notify.failed`); until a message gets
through again, later ones get a single attempt each and are counted, not
reported, and the one that gets through is reported (`notify.recovered`).

Nothing is persisted: a restart drops what is queued. A notice is about the
moment it was made ("needs you now", "resets in 1h"); sent late after a
restart it would be stale or wrong, and the events stay in afd's store for
`afd events`.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone

from afd.config.notifiers import NotifierSettings
from afd.config.secrets import redact
from afd.kit.resettime import local_zone
from afd.model import Event, Notice
from afd.notifiers.answer import Answer, Outcome
from afd.notifiers.collapse import Collapser
from afd.notifiers.message import repeated

log = logging.getLogger("afd.notify")

QUEUE_LIMIT = 200  # messages waiting for one notifier; more are dropped (and counted)
FIRST_BACKOFF, MAX_BACKOFF = 1.0, 30.0

Send = Callable[[NotifierSettings, Notice], Answer]
Report = Callable[[str, str, dict], None]  # (event kind, message, data) for the loop to store
_STOP = object()


class Courier:
    def __init__(self, settings: NotifierSettings, send: Send, report: Report, *, monotonic=time.monotonic):
        self.settings = settings
        self._send = send
        self.report = report
        self._monotonic = monotonic
        self._queue: queue.Queue = queue.Queue(maxsize=QUEUE_LIMIT)
        self._collapser: Collapser[Notice] = Collapser(settings.min_interval)
        self._stop = threading.Event()
        self._failing = False
        self._unsure = False  # an unconfirmed delivery was reported and none was plainly sent since
        self._lost = 0  # messages given up on since the failure was reported
        self._dropped = 0
        self._thread = threading.Thread(target=self._run, name=f"afd-notify-{settings.number}", daemon=True)
        self._thread.start()

    # --- the hook worker's side ------------------------------------------------

    def offer(self, event: Event, notice: Notice) -> None:
        """Queue `notice` for delivery; never blocks. A full queue drops it, said once per overflow."""
        try:
            self._queue.put_nowait((event, notice))
        except queue.Full:
            self._dropped += 1
            if self._dropped == 1:
                log.warning("%s: %d messages wait already; dropping new ones until it catches up", self.settings.label, QUEUE_LIMIT)

    def close(self, grace: float = 0.0) -> None:
        """Stop taking messages; deliver what waits for up to `grace` seconds, then leave it."""
        self._stop.set()
        try:
            self._queue.put_nowait(_STOP)
        except queue.Full:
            pass
        if grace > 0:
            self._thread.join(grace)

    # --- the lane's own thread -----------------------------------------------

    def _run(self) -> None:
        while True:
            due = self._collapser.next_due()
            wait = None if due is None else max(0.0, due - self._monotonic())
            try:
                item = self._queue.get(timeout=wait)
            except queue.Empty:
                item = None
            if item is _STOP:
                return
            if item is not None:
                self._dropped = 0
                event, notice = item
                now = self._monotonic()
                out = self._collapser.offer((event.kind, event.session), notice, now, stamp=event.at)
                if out is not None:
                    self._deliver(out)
            for held in self._collapser.due(self._monotonic()):
                since = held.since if isinstance(held.since, datetime) else datetime.now(timezone.utc)
                self._deliver(repeated(held.message, held.count, since, local_zone()))
            if self._stop.is_set() and self._queue.empty():
                return

    def _deliver(self, notice: Notice) -> None:
        label = self.settings.label
        started = self._monotonic()
        pause = FIRST_BACKOFF
        attempts = 0
        while True:
            attempts += 1
            try:
                got = self._send(self.settings, notice)
            except Exception as exc:  # a bug in a sender must not end the lane
                # Its text (and its traceback's) may hold the URL: said redacted, the traceback only at debug.
                said = redact(f"{type(exc).__name__}: {exc}", self.settings.secrets)
                log.error("%s: sending failed: %s", label, said)
                log.debug("%s: the failure's traceback", label, exc_info=True)
                got = Answer(Outcome.FAILED, said)
            log.debug("%s: attempt %d: %s (%s)", label, attempts, got.outcome.value, got.detail)
            if got.sent:
                self._worked(got)
                return
            if got.outcome is Outcome.UNCONFIRMED:
                self._unconfirmed(notice, got)
                return
            left = self.settings.retry_for - (self._monotonic() - started)
            if got.outcome is Outcome.FAILED or self._failing or left <= 0 or self._stop.is_set():
                self._gave_up(notice, got, attempts)
                return
            if self._stop.wait(min(pause, left)):
                self._gave_up(notice, got, attempts)
                return
            pause = min(pause * 2, MAX_BACKOFF)

    def _unconfirmed(self, notice: Notice, got: Answer) -> None:
        """Said once, until a message is plainly sent again: an endpoint that always cuts its replies would repeat it."""
        if self._unsure:
            log.debug("%s: unconfirmed again (%s): %s", self.settings.label, got.detail, notice.text)
            return
        self._unsure = True
        self.report(
            "notify.unconfirmed",
            f"{self.settings.label} may or may not have been told ({got.detail}): {notice.text}. "
            "Further unconfirmed messages are not reported until one is plainly sent",
            {"notifier": self.settings.label, "detail": got.detail},
        )

    def _worked(self, got: Answer) -> None:
        self._unsure = False
        if self._failing:
            lost = self._lost
            self._failing, self._lost = False, 0
            self.report(
                "notify.recovered",
                f"{self.settings.label} works again ({got.detail}); {lost} message{'s' if lost != 1 else ''} "
                "could not be sent meanwhile",
                {"notifier": self.settings.label, "lost": lost},
            )

    def _gave_up(self, notice: Notice, got: Answer, attempts: int) -> None:
        if self._failing:
            self._lost += 1
            log.debug("%s: still failing (%s); message not sent: %s", self.settings.label, got.detail, notice.text)
            return
        self._failing, self._lost = True, 0
        tries = f"after {attempts} attempts" if attempts > 1 else "at the first attempt"
        self.report(
            "notify.failed",
            f"{self.settings.label} could not be told ({got.detail}; gave up {tries}): {notice.text}. "
            "Further failures are not reported until a message gets through",
            {"notifier": self.settings.label, "detail": got.detail, "attempts": attempts},
        )
