"""The dashboard's server: uvicorn running the app on its own thread and event loop.

The poll loop never waits on it: it runs beside the loop, and reaches the
daemon through the control socket like any client. The listening socket is
bound here, on the caller's thread, so a port in use is an error the caller
can report at once, naming the port and the key that sets it. Connections
pass afd's own accept layer (afd/web/gate.py) before uvicorn sees them, so
the dashboard holds a bounded number of descriptors, each for a bounded
time before it has asked for something.

Why a thread and not a child process: the logins live in this process's
memory (they die with the daemon), `web.jobs-handoff` trusts the kernel's
word that a request came from this very process, and once the gate bounds
the dashboard's connections what it can take from the poll is a few
descriptors and short bursts of CPU. scripts/bench.py measures the poll
with 1,100 idle connections held open against the dashboard.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import threading
from typing import Any

from afd.errors import AfdError
from afd.web.auth import Logins
from afd.web.events import EventHub
from afd.web.gate import LISTEN_QUEUE, Acceptor, Gate
from afd.web.link import DaemonLink

log = logging.getLogger("afd.web")
STOP_WAIT = 5.0  # seconds to let open pages' streams close on stop


class WebError(AfdError):
    """The dashboard cannot be served; the message is one line for the user."""


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(LISTEN_QUEUE)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise WebError(f"port {port} on {host} is already in use; choose another with [web] port in the config") from None
        raise WebError(f"cannot listen on {host} port {port}: {exc.strerror or exc} ([web] bind and port in the config)") from None
    sock.set_inheritable(False)
    return sock


class WebServer:
    def __init__(self, control_socket, host: str, port: int):
        self.host = host
        self.port = port
        self.logins = Logins()
        self.link = DaemonLink(control_socket)
        self.hub = EventHub(self.link)
        self.gate = Gate()
        self._server: Any = None  # a uvicorn.Server once serving; uvicorn is imported only then
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{'[::1]' if self.host == '::1' else self.host}:{self.port}/"

    def login_url(self) -> str:
        # In the fragment: the browser never sends it to any server, nor a Referer, nor a log line.
        return f"{self.url}#token={self.logins.mint_token()}"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Bind (WebError when that fails) and serve on a new thread."""
        import uvicorn

        from afd.web.app import build_app
        from afd.web.guard import Guard

        sock = bind(self.host, self.port)
        self.port = sock.getsockname()[1]  # port 0 asks for any free one
        app = Guard(build_app(self.link, self.hub), self.port, self.logins)
        config = uvicorn.Config(
            app, log_config=None, access_log=False, lifespan="off", server_header=False, date_header=False,
            http="h11", ws="none", loop="asyncio", timeout_graceful_shutdown=1,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._serve, args=(sock,), name="afd-web", daemon=True)
        self._thread.start()

    def _serve(self, sock: socket.socket) -> None:
        from uvicorn.protocols.http.h11_impl import H11Protocol

        server = self._server

        def h11() -> H11Protocol:
            return H11Protocol(config=server.config, server_state=server.server_state, app_state=server.lifespan.state)

        acceptor = Acceptor(sock, self.gate, h11)

        async def accept_once_started() -> None:
            while not server.started and not server.should_exit:
                await asyncio.sleep(0.01)
            if server.started:
                acceptor.start(asyncio.get_running_loop())

        async def serve() -> None:
            self.hub.start(asyncio.get_running_loop())
            starting = asyncio.create_task(accept_once_started())
            try:
                # No sockets for uvicorn: afd's acceptor hands it each admitted connection (afd/web/gate.py).
                await server.serve(sockets=[])
            finally:
                starting.cancel()
                acceptor.stop()
                self.gate.close_waiting()

        try:
            asyncio.run(serve())
        except Exception:
            log.exception("web: the dashboard server stopped")
        finally:
            sock.close()

    def stop(self) -> None:
        self.hub.stop()
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(STOP_WAIT)
