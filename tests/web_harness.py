"""Helpers for the dashboard's tests: a free loopback port, a daemon serving it, a plain HTTP client.

The client is `http.client`, so a test can send any Host header, any body
and no session at all, exactly as a hostile page or a careless script would.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from urllib.parse import urlsplit

FAST = 'poll_interval = "200ms"\nhandoff_stop_timeout = "1s"\n'


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def web_config(port: int, extra: str = FAST) -> str:
    return f"{extra}\n[web]\nenabled = true\nport = {port}\n"


def afd(*args: str, timeout: float = 30, env: dict | None = None) -> subprocess.CompletedProcess:
    import os

    base = {k: v for k, v in os.environ.items() if k not in ("TMUX_PANE", "TMUX")}
    return subprocess.run([sys.executable, "-m", "afd", *args], capture_output=True, text=True, timeout=timeout,
                          env={**base, **(env or {})})


def login_url() -> str:
    done = afd("web", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["login_url"]


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes
    cookies: list[str] = field(default_factory=list)

    def json(self):
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


@dataclass
class Client:
    port: int
    session: str | None = None  # the session token a login bought, sent as Authorization: Bearer
    host: str | None = None  # the Host header; None: 127.0.0.1:PORT

    def request(self, method: str, path: str, body: bytes | str | dict | None = None, headers: dict | None = None,
                timeout: float = 120) -> Reply:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            sent = dict(headers or {})
            sent.setdefault("Host", self.host or f"127.0.0.1:{self.port}")
            if self.session and "Authorization" not in sent:
                sent["Authorization"] = f"Bearer {self.session}"
            if isinstance(body, dict):
                body = json.dumps(body)
                sent.setdefault("Content-Type", "application/json")
            conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            for key, value in sent.items():
                conn.putheader(key, value)
            data = body.encode() if isinstance(body, str) else body
            if data is not None and "Transfer-Encoding" not in sent:
                conn.putheader("Content-Length", str(len(data)))
            conn.endheaders()
            if data is not None:
                if sent.get("Transfer-Encoding") == "chunked":
                    for i in range(0, len(data), 8192):
                        piece = data[i:i + 8192]
                        conn.send(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                    conn.send(b"0\r\n\r\n")
                else:
                    conn.send(data)
            resp = conn.getresponse()
            return Reply(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read(),
                         resp.headers.get_all("Set-Cookie") or [])
        finally:
            conn.close()

    def get(self, path: str, **kw) -> Reply:
        return self.request("GET", path, **kw)

    def post(self, path: str, body=None, afd_header: bool = True, **kw) -> Reply:
        headers = {"x-afd": "1"} if afd_header else {}
        headers.update(kw.pop("headers", {}))
        return self.request("POST", path, body if body is not None else {}, headers=headers, **kw)

    def log_in(self, url: str | None = None) -> Reply:
        """What the page does with a login address: the token from its fragment, traded for a session token."""
        reply = self.post("/api/login", {"token": token_of(url or login_url())})
        assert reply.status == 200, (reply.status, reply.text)
        self.session = reply.json()["session"]
        return reply


def token_of(url: str) -> str:
    """The one-time token in a login address's fragment."""
    from urllib.parse import parse_qs

    return parse_qs(urlsplit(url).fragment)["token"][0]
