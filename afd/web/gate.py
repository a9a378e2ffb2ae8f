"""afd's own accept layer in front of uvicorn: how many connections the dashboard holds, and how long one may take to ask.

uvicorn's h11 protocol starts no timer before a connection's first request
(its keep-alive timer runs only between requests), and its
`limit_concurrency` answers only once a request has arrived. So connections
that send nothing were never closed: 1,100 of them filled the daemon's file
table at the usual limit of 1,024, the control socket could no longer
accept, and `afd status` said the daemon did not answer. And asyncio's own
accept loop takes up to `backlog` connections a turn before any protocol
sees one (uvicorn's default, 2,048): enough to empty the table in one turn.

So afd accepts the dashboard's connections itself (`Acceptor`), at most
ACCEPT_BURST a turn, and none while `limit` connections are open: those
wait in the kernel's listen queue. When the new descriptor's number says
the file table is within RESERVE of full, the connection is answered 503
and closed at once, before anything else is made for it; the rest of the
table stays for the poll, its tmux calls, the store and the control socket. An admitted connection must send a whole
request head within HEAD_TIMEOUT, or it is answered 408 and closed; then
uvicorn's protocol takes it over. Every answer closes its connection
(afd/web/guard.py), so each connection carries one request, and the timer
here bounds every request's head; the guard bounds its body.

Everything here runs on the server's event loop: no locks.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import resource
import socket
from collections.abc import Callable

log = logging.getLogger("afd.web")

MAX_CONNECTIONS = 64  # a dashboard tab holds one event stream and a fetch or two at a time
RESERVE = 256  # descriptors kept for everything but the dashboard
HEAD_TIMEOUT = 5.0  # seconds from accepting a connection to the end of its request's head
MAX_HEAD = 16 * 1024  # bytes of a request head (h11's own limit)
ACCEPT_BURST = 32  # connections accepted in one turn of the event loop
LISTEN_QUEUE = 128  # connections the kernel holds for the acceptor, handshake done


def _reply(status: str, why: str) -> bytes:
    body = why.encode() + b"\n"
    return (f"HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {len(body)}\r\n"
            "connection: close\r\ncache-control: no-store\r\n\r\n").encode() + body


BUSY = _reply("503 Service Unavailable", "the dashboard has as many connections as it serves at once; try again")
SLOW = _reply("408 Request Timeout", f"no whole request within {HEAD_TIMEOUT:g} seconds")
TOO_BIG = _reply("431 Request Header Fields Too Large", "the request's head is too large")


def descriptor_ceiling() -> int:
    """The highest descriptor number the dashboard may hold: the soft limit, less the reserve."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(0, soft - RESERVE) if soft != resource.RLIM_INFINITY else 1 << 30


class Gate:
    """The connections one dashboard server holds, and what it turned away."""

    def __init__(self, limit: int = MAX_CONNECTIONS, head_timeout: float = HEAD_TIMEOUT, ceiling: int | None = None):
        self.limit = limit
        self.head_timeout = head_timeout
        self.ceiling = descriptor_ceiling() if ceiling is None else ceiling
        self.active = 0
        self.refused = 0  # answered 503 because the file table was nearly full
        self.full = 0  # times accepting stopped because `limit` connections were open
        self.timed_out = 0
        self.waiting: set[GatedProtocol] = set()  # admitted, their request not yet whole
        self.on_free: Callable[[], None] = lambda: None  # the acceptor's: a slot is free again

    @property
    def is_full(self) -> bool:
        return self.active >= self.limit

    def admit(self, fd: int) -> bool:
        # Descriptors are numbered lowest-free first: a high number means a nearly full table.
        if fd > self.ceiling:
            self.refused += 1
            if self.refused in (1, 10, 100, 1000, 10000, 100000):
                log.warning("web: turned a connection away: the file table is within %d of its limit (%d so far)",
                            RESERVE, self.refused)
            return False
        self.active += 1
        return True

    def left(self) -> None:
        self.active -= 1
        if self.active == self.limit - 1:
            self.on_free()

    def close_waiting(self) -> None:
        """Close the connections that have not asked anything yet (the server is stopping)."""
        for proto in list(self.waiting):
            proto.close()


class Acceptor:
    """Accepts on the listening socket for the server's event loop, through `gate`, and hands each
    admitted connection to a GatedProtocol in front of the protocol `inner` makes.

    With `limit` connections open it stops accepting until one closes: the
    next ones wait in the kernel's listen queue (and past it, the kernel
    drops their handshakes), which costs afd nothing. Accepting only to
    refuse would cost a turn of the event loop for each, and a client that
    reconnects at once would make that a busy loop in afd's process.
    """

    def __init__(self, sock: socket.socket, gate: Gate, inner: Callable[[], asyncio.Protocol]):
        self.sock = sock
        self.gate = gate
        self.inner = inner
        self.loop: asyncio.AbstractEventLoop | None = None
        self.reading = False
        self._later: asyncio.TimerHandle | None = None
        self._starting: set[asyncio.Task] = set()  # held, or the loop may drop a task it only references weakly
        gate.on_free = self._resume

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.sock.setblocking(False)
        self._resume()

    def stop(self) -> None:
        if self._later is not None:
            self._later.cancel()
        self._pause()
        self.loop = None

    def _resume(self) -> None:
        self._later = None
        if self.loop is not None and not self.reading and not self.loop.is_closed():
            self.loop.add_reader(self.sock.fileno(), self._accept)
            self.reading = True

    def _pause(self, seconds: float | None = None) -> None:
        if self.loop is not None and self.reading and not self.loop.is_closed():
            self.loop.remove_reader(self.sock.fileno())
            self.reading = False
            if seconds is not None:
                self._later = self.loop.call_later(seconds, self._resume)

    def _accept(self) -> None:
        assert self.loop is not None
        for _ in range(ACCEPT_BURST):
            if self.gate.is_full:
                self.gate.full += 1
                if self.gate.full in (1, 10, 100, 1000, 10000, 100000):
                    log.warning("web: %d connections open, as many as the dashboard serves at once; new ones wait "
                                "(%d times so far)", self.gate.active, self.gate.full)
                self._pause()  # until a connection closes (Gate.left)
                return
            try:
                conn, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    # The table is full for now (something else holds it): wait a moment, in the queue.
                    log.warning("web: cannot accept a connection now (%s); trying again in a second", exc.strerror)
                    self._pause(1.0)
                    return
                if exc.errno in (errno.ECONNABORTED, errno.EPROTO):
                    continue  # it left before it was accepted
                raise
            if not self.gate.admit(conn.fileno()):
                # Answered and closed here and now: nothing else is made for it, its descriptor is free at once;
                # then a pause, so that a full table is not met again at once.
                try:
                    conn.setblocking(False)
                    conn.send(BUSY)
                except OSError:
                    pass
                conn.close()
                self._pause(1.0)
                return
            conn.setblocking(False)
            task = self.loop.create_task(self._serve(conn))
            self._starting.add(task)
            task.add_done_callback(self._starting.discard)

    async def _serve(self, conn: socket.socket) -> None:
        assert self.loop is not None
        try:
            await self.loop.connect_accepted_socket(lambda: GatedProtocol(self.gate, self.inner), conn)
        except Exception as exc:  # it went away while being set up
            log.debug("web: a connection failed to start: %s", exc)
            self.gate.left()
            conn.close()


class GatedProtocol(asyncio.Protocol):
    """One admitted connection: its request's head within the gate's time, then `inner`'s protocol takes it."""

    def __init__(self, gate: Gate, inner: Callable[[], asyncio.Protocol]):
        self.gate = gate
        self.make_inner = inner
        self.inner: asyncio.Protocol | None = None
        self.transport: asyncio.Transport | None = None
        self.head = bytearray()
        self.timer: asyncio.TimerHandle | None = None
        self.counted = True  # the acceptor admitted it

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.gate.waiting.add(self)
        self.timer = asyncio.get_running_loop().call_later(self.gate.head_timeout, self._too_slow)

    def data_received(self, data: bytes) -> None:
        if self.inner is not None:
            self.inner.data_received(data)
            return
        if self.transport is None or self.transport.is_closing():
            return
        self.head += data
        # Blank lines before a request line are allowed, and say nothing: only a whole head counts.
        start = len(self.head) - len(self.head.lstrip(b"\r\n"))
        if self.head.find(b"\r\n\r\n", start) != -1 or self.head.find(b"\n\n", start) != -1:
            self._hand_over()
        elif len(self.head) > MAX_HEAD:
            self._refuse(TOO_BIG)

    def _hand_over(self) -> None:
        self._stop_waiting()
        inner = self.make_inner()
        self.inner = inner
        head, self.head = bytes(self.head), bytearray()
        inner.connection_made(self.transport)  # type: ignore[arg-type]
        inner.data_received(head)

    def _too_slow(self) -> None:
        self.timer = None
        if self.inner is None:
            self.gate.timed_out += 1
            self._refuse(SLOW)

    def _refuse(self, answer: bytes) -> None:
        self._stop_waiting()
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(answer)
            self.transport.close()

    def close(self) -> None:
        self._stop_waiting()
        if self.transport is not None:
            self.transport.abort()

    def _stop_waiting(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.gate.waiting.discard(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_waiting()
        if self.counted:
            self.counted = False
            self.gate.left()
        if self.inner is not None:
            self.inner.connection_lost(exc)

    def eof_received(self) -> bool | None:
        if self.inner is not None:
            return self.inner.eof_received()
        return None  # nothing asked and nothing more coming: the transport closes

    def pause_writing(self) -> None:
        if self.inner is not None:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.inner is not None:
            self.inner.resume_writing()
