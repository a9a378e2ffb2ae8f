"""A local HTTP endpoint for notifier tests: binds 127.0.0.1 only, records every request, stops itself.

Each path answers as the test sets it (`ok`, `fail` (500), `hostile` (500
with escape sequences), `redirect` to another URL, `big` (a 50 MB reply),
`hold` (no answer until the test lets go, or 30 s), `echo` (a 401 whose
text repeats the request's path and Authorization header, as careless
servers do; `echo-hostile` with escape sequences around it), `trickle` (a 200 status line, then a byte of its body every
half second), `garbled` (half a status line, then the connection closed)).
Requests are recorded when they arrive, before the answer.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LIFETIME = 300.0  # a server a test forgot stops itself after this long
HOLD = 30.0  # how long `hold` keeps a request unanswered unless released


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> dict:
        return json.loads(self.body)


@dataclass
class Endpoint:
    server: ThreadingHTTPServer
    requests: list[Request] = field(default_factory=list)
    behaviour: dict[str, object] = field(default_factory=dict)  # path → "ok" | "fail" | "big" | "hold" | ("redirect", url) | [answers…]
    release: threading.Event = field(default_factory=threading.Event)
    answered: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def on(self, path: str) -> list[Request]:
        with self.lock:
            return [r for r in self.requests if r.path == path]

    def stop(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def start_endpoint(port: int = 0) -> Endpoint:
    holder: dict[str, Endpoint] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            ep = holder["ep"]
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            with ep.lock:
                ep.requests.append(Request(self.path, dict(self.headers), body))
                how = ep.behaviour.get(self.path, "ok")
                if isinstance(how, list):
                    how = how.pop(0) if len(how) > 1 else how[0]
            try:
                self.answer(how)
            except OSError:
                pass  # the client hung up (a cut-off or a short read): nothing to answer
            with ep.lock:
                ep.answered += 1

        def answer(self, how) -> None:
            ep = holder["ep"]
            if how == "hold":
                ep.release.wait(HOLD)
                how = "ok"
            if isinstance(how, tuple) and how[0] == "redirect":
                self.send_response(302)
                self.send_header("Location", how[1])
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif how == "fail":
                self.send_response(500)
                self.send_header("Content-Length", "6")
                self.end_headers()
                self.wfile.write(b"broken")
            elif how in ("echo", "echo-hostile"):
                said = f"unauthorized: {self.headers.get('Authorization')} may not post to {self.path}".encode()
                if how == "echo-hostile":  # and, printed raw, would retitle and clear the reader's terminal
                    said = b"\x1b]0;pwned\x07\x1b[2J" + said + b"\r"
                self.send_response(401)
                self.send_header("Content-Length", str(len(said)))
                self.end_headers()
                self.wfile.write(said)
            elif how == "trickle":
                self.send_response(200)
                self.send_header("Content-Length", "1000")
                self.end_headers()
                for _ in range(1000):
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    if ep.release.wait(0.5):
                        return
            elif how == "garbled":
                self.wfile.write(b"HTTP/1.1 20")
                self.wfile.flush()
                self.close_connection = True
            elif how == "hostile":  # a reply that, printed raw, would retitle and clear the reader's terminal
                body = b"\x1b]0;pwned\x07\x1b[2Jgone\rEVIL [red]x[/]"
                self.send_response(500)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            elif how == "big":
                chunk = b"x" * 65536
                self.send_response(200)
                self.send_header("Content-Length", str(50 * 1024 * 1024))
                self.end_headers()
                for _ in range(50 * 16):
                    self.wfile.write(chunk)
            else:
                self.send_response(200)
                self.send_header("Content-Length", "3")
                self.end_headers()
                self.wfile.write(b"ok\n")

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    ep = Endpoint(server)
    holder["ep"] = ep
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    stopper = threading.Timer(LIFETIME, ep.stop)
    stopper.daemon = True
    stopper.start()
    return ep


def free_port() -> int:
    """A loopback port nothing listens on (now): connecting to it is refused."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
