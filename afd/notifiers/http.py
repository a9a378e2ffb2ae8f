"""One HTTP POST that an endpoint cannot stretch, inflate or send elsewhere.

http.client, not urllib: nothing here follows a redirect, so a bearer token
goes to the configured host and nowhere else. The whole attempt — connect,
send, headers, the reply — has one deadline, enforced by shutting the
socket when it passes (a socket timeout alone bounds each read, and an
endpoint trickling a byte at a time could stretch it forever). Only the
first REPLY_LIMIT bytes of a reply are read; the rest is never fetched.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
from urllib.parse import urlsplit

from afd import __version__
from afd.config.secrets import Secrets, redact, url_secrets
from afd.kit.text import lowered_first_word
from afd.notifiers import answer
from afd.notifiers.answer import Answer

REPLY_LIMIT = 4096  # bytes of a reply read, for `afd notify test` to show


def post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> Answer:
    """POST `body` to `url`; 2xx is sent, a redirect or another 4xx failed, the rest worth a retry.

    What the answer says has the URL's secrets and the bearer token taken out
    (afd/config/secrets.py): an endpoint may echo either in its error text.
    """
    hide = url_secrets(url) + token_secret(headers)
    got = _post(url, body, headers, timeout)
    return Answer(got.outcome, redact(got.detail, hide))


def token_secret(headers: dict[str, str]) -> Secrets:
    scheme, _, token = headers.get("Authorization", "").partition(" ")
    return Secrets(exact=(token.strip(),)) if scheme and token.strip() else Secrets()


def _post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> Answer:
    parts = urlsplit(url)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if parts.scheme == "https":
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            parts.hostname or "", parts.port, timeout=timeout, context=ssl.create_default_context()
        )
    else:
        conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout)
    expired = threading.Event()
    # http.client hands the socket to the reply and forgets it when the reply
    # ends the connection: the deadline must still find it then.
    held: list[socket.socket] = []

    def cut() -> None:
        expired.set()
        for sock in (conn.sock, *held):
            if sock is None:
                continue
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    timer = threading.Timer(timeout, cut)
    timer.daemon = True
    timer.start()
    status: int | None = None
    location: str | None = None
    head = b""
    broken: BaseException | None = None  # what ended the reply after its status line, if anything did
    try:
        conn.request("POST", path, body=body, headers={"User-Agent": f"afd/{__version__}", **headers})
        if conn.sock is not None:
            held.append(conn.sock)
        reply = conn.getresponse()
        status, location = reply.status, reply.getheader("Location")
        head = reply.read(REPLY_LIMIT) if not reply.closed else b""
    except (OSError, http.client.HTTPException) as exc:
        if status is None:
            if expired.is_set() or isinstance(exc, TimeoutError | socket.timeout):
                return answer.retry(f"no answer within {timeout:g}s")
            return answer.retry(_reason(exc))
        broken = exc
    finally:
        timer.cancel()
        conn.close()
    said = _first_line(head)
    detail = f"HTTP {status}" + (f": {said}" if said else "")
    if 200 <= status < 300:
        if expired.is_set() or broken is not None:
            # The endpoint said yes, then its reply was cut: it may have taken the message or not.
            # Sending it again could deliver it twice, so it is not retried, and not called sent.
            why = f"afd's {timeout:g}s deadline" if expired.is_set() else _reason(broken)  # type: ignore[arg-type]
            return answer.unconfirmed(f"{detail}, then the reply was cut off ({why}): unconfirmed, not retried "
                                      "(a second try could deliver it twice)")
        return answer.sent(detail)
    if 300 <= status < 400:
        return answer.failed(f"HTTP {status} redirect to {location or '(no Location)'}; redirects are not followed")
    if status in (408, 425, 429) or status >= 500:
        return answer.retry(detail)
    return answer.failed(detail)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, socket.gaierror):
        return f"host not found ({exc.strerror or exc})"
    if isinstance(exc, ssl.SSLError):
        return f"TLS failed: {exc.reason or exc}"
    if isinstance(exc, http.client.RemoteDisconnected):
        return "the endpoint closed the connection without an answer"
    if isinstance(exc, http.client.BadStatusLine):
        return f"not an HTTP answer: {str(exc)[:80]!r}"
    if isinstance(exc, http.client.IncompleteRead):
        return "the reply ended early"
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return lowered_first_word(text)


def _first_line(data: bytes) -> str:
    text = data.decode("utf-8", "replace").strip()
    line = text.splitlines()[0] if text else ""
    return line[:200]


def header_value(text: str) -> str:
    """`text` as an HTTP header value: ASCII as is, anything else RFC 2047-encoded (ntfy reads both)."""
    import base64

    text = " ".join(text.split())
    if text.isascii():
        return text
    return "=?UTF-8?B?" + base64.b64encode(text.encode()).decode() + "?="
