"""The checks every request to the dashboard passes, in front of the app (plain ASGI).

In order: the `Host` header must name this server on loopback (a page on
another site that rebinds its DNS name to 127.0.0.1 still sends its own
name: 403); a one-time token in `/?token=…` is exchanged for the session
cookie; without a valid cookie nothing but a 401 is answered; a request that
changes state must carry `x-afd: 1` (a header no form can send and no
cross-site script can add without a CORS preflight, which is never
answered: 403) and a body of at most 64 KiB (400). No CORS header is ever
sent, and every answer forbids framing, sniffing and caching.
"""

from __future__ import annotations

import json
from http.cookies import SimpleCookie
from urllib.parse import parse_qs

from afd.web.auth import Logins

MAX_BODY = 64 * 1024
SAFE_METHODS = ("GET", "HEAD")
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
SECURITY_HEADERS = [
    (b"content-security-policy",
     b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
     b"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
]
LOGGED_OUT_PAGE = """<!doctype html><html lang="en"><meta charset="utf-8"><title>afd: log in</title>
<h1>afd dashboard</h1><p>{why}</p><p>Run <code>afd web</code> in a terminal and open the address it prints.</p></html>"""


def cookie_name(port: int) -> str:
    # Browsers keep cookies per host, not per port: two daemons on one machine
    # (yours and `afd demo --web`) must not overwrite each other's login.
    return f"afd_session_{port}"


def allowed_hosts(port: int) -> frozenset[str]:
    return frozenset(f"{name}:{port}" for name in LOOPBACK_NAMES)


class Guard:
    def __init__(self, app, port: int, logins: Logins):
        self.app = app
        self.port = port
        self.logins = logins
        self.hosts = allowed_hosts(port)
        self.cookie = cookie_name(port)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            return  # no websockets here: the connection is refused
        send = _with_headers(send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        api = scope["path"].startswith("/api/")
        if headers.get("host") not in self.hosts:
            await _answer(send, 403, api, "this dashboard answers only to 127.0.0.1, localhost or [::1] with its port")
            return
        token = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token")
        if scope["path"] == "/" and token:
            await self._log_in(token[0], send)
            return
        if not self.logins.valid(_cookie(headers.get("cookie", ""), self.cookie)):
            await _answer(send, 401, api, "not logged in")
            return
        if scope["method"] not in SAFE_METHODS:
            if headers.get("x-afd") != "1":
                await _answer(send, 403, api, "a request that changes anything must carry the header x-afd: 1")
                return
            body = await _body(receive, headers.get("content-length"))
            if body is None:
                await _answer(send, 400, api, f"the request body is over {MAX_BODY // 1024} KiB")
                return
            receive = _replay(body)
        await self.app(scope, receive, send)

    async def _log_in(self, token: str, send) -> None:
        cookie = self.logins.redeem(token)
        if cookie is None:
            await _answer(send, 401, False, "this login link was used already or has expired")
            return
        # No Max-Age: the browser forgets it when closed, the daemon when it stops.
        value = f"{self.cookie}={cookie}; Path=/; HttpOnly; SameSite=Strict".encode()
        await send({"type": "http.response.start", "status": 303,
                    "headers": [(b"location", b"/"), (b"set-cookie", value), (b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})


def _cookie(header: str, name: str) -> str | None:
    jar = SimpleCookie()
    try:
        jar.load(header)
    except Exception:  # a malformed Cookie header is no login
        return None
    morsel = jar.get(name)
    return morsel.value if morsel is not None else None


async def _body(receive, length: str | None) -> bytes | None:
    """The whole body, or None once it is over MAX_BODY (said by Content-Length or found while reading)."""
    try:
        if length is not None and int(length) > MAX_BODY:
            return None
    except ValueError:
        return None
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"".join(chunks)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


def _replay(body: bytes):
    sent = False

    async def receive():
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


def _with_headers(send):
    async def wrapped(message):
        if message["type"] == "http.response.start":
            names = {k.lower() for k, _ in message.get("headers", [])}
            message = {**message, "headers": [*message.get("headers", []),
                                               *(h for h in SECURITY_HEADERS if h[0] not in names)]}
        await send(message)

    return wrapped


async def _answer(send, status: int, api: bool, why: str) -> None:
    if api:
        body, kind = json.dumps({"error": why}).encode(), b"application/json"
    else:
        body, kind = LOGGED_OUT_PAGE.format(why=why[:1].upper() + why[1:] + ".").encode(), b"text/html; charset=utf-8"
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", kind), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
