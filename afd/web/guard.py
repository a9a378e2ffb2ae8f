"""The checks every request to the dashboard passes, in front of the app (plain ASGI).

Nothing a browser attaches to a request on its own may authorise anything.
Browsers keep cookies per host, not per port, so a cookie set by this
server would go with every request a page on another loopback port makes
to its own server (an agent's dev server, a notebook, another user's
server), which could replay it. So there is no cookie: the page, its script
and its styles are served to anyone (they hold no data), and every `/api/`
request must carry `Authorization: Bearer SESSION`, a session token the page
keeps in its tab's `sessionStorage`, which is per origin, and so per port.
The page gets it from `POST /api/login` with the one-time login token,
which `afd web` puts in the address's fragment (`/#token=…`): a fragment
is never sent to any server.

In order: the `Host` header must name this server on loopback (a page on
another site that rebinds its DNS name to 127.0.0.1 still sends its own
name: 403); an `/api/` request the browser says comes from another origin
(`Sec-Fetch-Site` other than same-origin or none, or an `Origin` that is
not this server's: 403) is refused whatever it carries; without a valid
session token nothing but a 401 is answered; a request that changes state
must carry `x-afd: 1` (403) and a body of at most 64 KiB (400) that arrives
within BODY_TIMEOUT (408). No CORS header is ever sent, and every answer
forbids framing, sniffing and caching, and closes its connection (the
accept layer in afd/web/gate.py bounds each connection's first request;
a second one on the same connection would not be).
"""

from __future__ import annotations

import asyncio
import json

from afd.web.auth import Logins

MAX_BODY = 64 * 1024
BODY_TIMEOUT = 10.0  # seconds for a request's whole body, once its head has arrived
SAFE_METHODS = ("GET", "HEAD")
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
# What a browser's own page sends (same-origin), or a person typing the address (none);
# a script without the header is no browser, and needs the session token anyway.
OWN_FETCH_SITES = ("same-origin", "none")
LOGIN_PATH = "/api/login"
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
    (b"connection", b"close"),
]
REFUSED_PAGE = """<!doctype html><html lang="en"><meta charset="utf-8"><title>afd: refused</title>
<h1>afd dashboard</h1><p>{why}</p></html>"""


def allowed_hosts(port: int) -> frozenset[str]:
    return frozenset(f"{name}:{port}" for name in LOOPBACK_NAMES)


def bearer(header: str | None) -> str | None:
    """The token of an `Authorization: Bearer TOKEN` header, or None."""
    scheme, _, token = (header or "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


class Guard:
    def __init__(self, app, port: int, logins: Logins):
        self.app = app
        self.port = port
        self.logins = logins
        self.hosts = allowed_hosts(port)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            return  # no websockets here: the connection is refused
        send = _with_headers(send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        api = scope["path"].startswith("/api/")
        host = headers.get("host")
        if host not in self.hosts:
            await _answer(send, 403, api, "this dashboard answers only to 127.0.0.1, localhost or [::1] with its port")
            return
        if not api:
            await self.app(scope, receive, send)  # the page and its files: no data in them
            return
        why = _foreign(headers, host)
        if why is not None:
            await _answer(send, 403, True, why)
            return
        login = scope["path"] == LOGIN_PATH
        if not login and not self.logins.valid(bearer(headers.get("authorization"))):
            await _answer(send, 401, True, "not logged in")
            return
        if scope["method"] not in SAFE_METHODS or login:
            if scope["method"] in SAFE_METHODS:
                await _answer(send, 405, True, "log in with POST")
                return
            if headers.get("x-afd") != "1":
                await _answer(send, 403, True, "a request that changes anything must carry the header x-afd: 1")
                return
            try:
                body = await asyncio.wait_for(_body(receive, headers.get("content-length")), BODY_TIMEOUT)
            except TimeoutError:
                await _answer(send, 408, True, f"the request body did not arrive within {BODY_TIMEOUT:g}s")
                return
            if body is None:
                await _answer(send, 400, True, f"the request body is over {MAX_BODY // 1024} KiB")
                return
            if login:
                await self._log_in(body, send)
                return
            receive = _replay(body)
        await self.app(scope, receive, send)

    async def _log_in(self, body: bytes, send) -> None:
        try:
            token = json.loads(body or b"{}").get("token")
        except (ValueError, AttributeError, RecursionError):
            token = None
        if not isinstance(token, str) or not token:
            await _answer(send, 400, True, 'the body must be {"token": "…"}, the token of a login address')
            return
        session = self.logins.redeem(token)
        if session is None:
            await _answer(send, 401, True, "this login address was used already or has expired; run afd web for a new one")
            return
        await _json(send, 200, {"session": session})


def _foreign(headers: dict[str, str], host: str) -> str | None:
    """Why the browser's own word says this request comes from a page of another origin, or None."""
    site = headers.get("sec-fetch-site")
    if site is not None and site not in OWN_FETCH_SITES:
        return f"refused: the request comes from another site or port (Sec-Fetch-Site: {site})"
    origin = headers.get("origin")
    if origin is not None and origin != f"http://{host}":
        return "refused: the request comes from a page of another origin"
    return None


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


async def _json(send, status: int, value: object) -> None:
    body = json.dumps(value).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def _answer(send, status: int, api: bool, why: str) -> None:
    if api:
        await _json(send, status, {"error": why})
        return
    body = REFUSED_PAGE.format(why=why[:1].upper() + why[1:] + ".").encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/html; charset=utf-8"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
