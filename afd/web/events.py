"""Live events for every open page: one subscription to the daemon, fanned out.

The subscription is a blocking socket read, so it runs on its own thread and
hands each event to the server's event loop; each page's stream has a
bounded queue, and a page that stops reading loses its oldest events rather
than holding the daemon's.
"""

from __future__ import annotations

import asyncio
import logging
import threading

from afd.web.link import DaemonLink

log = logging.getLogger("afd.web")
QUEUE_SIZE = 256
RETRY_SECONDS = 1.0


class EventHub:
    def __init__(self, link: DaemonLink):
        self.link = link
        self._queues: set[asyncio.Queue] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop = threading.Event()

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        threading.Thread(target=self._follow, name="afd-web-events", daemon=True).start()

    def stop(self) -> None:
        """End every page's stream; the subscription ends when the daemon closes its socket."""
        self._stop.set()
        if self._loop is not None and not self._loop.is_closed():
            try:
                self._loop.call_soon_threadsafe(self._fan_out, None)
            except RuntimeError:
                pass  # the loop has just closed

    def listen(self) -> asyncio.Queue:
        queue: asyncio.Queue = asyncio.Queue(QUEUE_SIZE)
        self._queues.add(queue)
        return queue

    def forget(self, queue: asyncio.Queue) -> None:
        self._queues.discard(queue)

    def _follow(self) -> None:
        while not self._stop.is_set():
            try:
                with self.link.subscribe("events", {"follow": True, "limit": 0}) as sub:
                    for item in sub:
                        if self._stop.is_set():
                            return
                        if self._loop is not None:
                            self._loop.call_soon_threadsafe(self._fan_out, item)
            except Exception as exc:  # the daemon is restarting its socket, or stopping
                log.debug("web: event subscription ended: %s", exc)
            self._stop.wait(RETRY_SECONDS)

    def _fan_out(self, item) -> None:
        for queue in list(self._queues):
            if queue.full():
                queue.get_nowait()
            queue.put_nowait(item)
