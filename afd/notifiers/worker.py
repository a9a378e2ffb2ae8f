"""The notifier worker: the one thread on which every `afd_event` implementation runs.

The poll loop hands each stored event (with its notice) to `submit`, which
never blocks: a bounded queue, overflow dropped and logged. The worker calls
the plugins in order; afd's own notifiers only queue onto their lanes
there. What the lanes report (`notify.failed`, `notify.recovered`) comes
back through `reports`, which the loop drains and stores as events: the
loop stays the store's only writer.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable

from afd.config.notifiers import OWN_PREFIX
from afd.model import Event, Notice

log = logging.getLogger("afd.notify")

QUEUE_LIMIT = 1000
CLOSE_GRACE = 2.0  # seconds a stopping daemon gives queued messages
_STOP = object()


class NoticeWorker:
    def __init__(self, plugins, wake: Callable[[], None] = lambda: None):
        self._plugins = plugins
        self._wake = wake
        self._queue: queue.Queue = queue.Queue(maxsize=QUEUE_LIMIT)
        self._reports: queue.SimpleQueue = queue.SimpleQueue()
        self._dropped = 0
        self._bind(plugins)
        self._thread = threading.Thread(target=self._run, name="afd-notifier", daemon=True)
        self._thread.start()

    # --- the loop's side ---------------------------------------------------

    def submit(self, event: Event, notice: Notice) -> None:
        if event.kind.startswith(OWN_PREFIX):
            return  # a failing notifier must not feed itself
        try:
            self._queue.put_nowait((event, notice))
        except queue.Full:
            self._dropped += 1
            if self._dropped == 1:
                log.warning("the notifier worker is %d events behind; dropping events until it catches up", QUEUE_LIMIT)
        else:
            self._dropped = 0

    def reports(self) -> list[tuple[str, str, dict]]:
        """What the notifiers reported since the last call: (kind, message, data) to store as events."""
        out = []
        while True:
            try:
                out.append(self._reports.get_nowait())
            except queue.Empty:
                return out

    def use(self, plugins) -> None:
        """A reload: the new plugin set's notifiers carry on the lanes of identical old ones; the rest stop."""
        old = {n.settings: n for n in self._plugins.notifiers()}
        for notifier in plugins.notifiers():
            previous = old.pop(notifier.settings, None)
            if previous is not None:
                notifier.take_over(previous)
        self._bind(plugins)
        self._plugins = plugins
        for notifier in old.values():
            notifier.close()

    def close(self, grace: float = CLOSE_GRACE) -> None:
        """Hand on what is queued for up to `grace` seconds, then leave the rest (threads are daemons)."""
        deadline = time.monotonic() + grace
        try:
            self._queue.put(_STOP, timeout=grace)
        except queue.Full:
            pass
        self._thread.join(max(0.0, deadline - time.monotonic()))
        for notifier in self._plugins.notifiers():
            notifier.close(max(0.0, deadline - time.monotonic()))

    # --- the worker thread ---------------------------------------------------

    def _bind(self, plugins) -> None:
        for notifier in plugins.notifiers():
            notifier.report = self._report

    def _report(self, kind: str, message: str, data: dict) -> None:
        self._reports.put((kind, message, data))
        self._wake()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            event, notice = item
            try:
                self._plugins.emit(event, notice)
            except Exception:  # emit guards each plugin; this is a bug in afd itself
                log.exception("handing %s to the afd_event plugins failed", event.kind)
