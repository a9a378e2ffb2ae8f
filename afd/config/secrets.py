"""What of the config is a secret, and text with those secrets taken out.

A notifier's secrets are its bearer token (read from `token_file` at each
send, never kept), its URL's path and query (a Slack- or Discord-style
webhook's path is its key; an ntfy topic is its path, and anyone who knows
it can read the topic) and any user or password in the URL. afd names a
notifier by its type and its URL's scheme and host, and every answer an
endpoint gives goes through `redact` before anything stores, logs or shows
it: an endpoint may echo the token or the path in its error text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, urlsplit

REDACTED = "<redacted>"
# A path segment or query value shorter than this is hidden only as part of the
# whole path; alone it is an ordinary word ("api", "v1") that text uses too.
MIN_PART = 4

# Any URL in free text: its origin is kept, everything after it is cut.
_URL = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*)://(?P<netloc>[^/\s?#\"'<>]+)(?P<rest>[^\s\"'<>]*)", re.IGNORECASE)


_PLAIN = re.compile(r"[A-Za-z0-9_-]+")


def url_origin(url: str) -> str:
    """`scheme://host[:port]` of `url`, without a user or password: what may be shown of it."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    return f"{parts.scheme}://{host}" + (f":{port}" if port is not None else "")


def url_shown(url: str) -> str:
    """`url` as afd shows it: its origin, and REDACTED in place of a path, query or fragment."""
    parts = urlsplit(url)
    secret = parts.path not in ("", "/") or parts.query or parts.fragment
    return url_origin(url) + (f"/{REDACTED}" if secret else parts.path)


@dataclass(frozen=True, slots=True)
class Secrets:
    """Text to take out: `exact` wherever it occurs, `words` only where one stands alone."""

    exact: tuple[str, ...] = ()
    words: tuple[str, ...] = ()

    def __add__(self, other: Secrets) -> Secrets:
        return Secrets(self.exact + other.exact, self.words + other.words)


def url_secrets(url: str | None) -> Secrets:
    """The secret pieces of `url`: path and query (whole, and each segment and value), fragment, user, password."""
    if not url:
        return Secrets()
    parts = urlsplit(url)
    pieces: list[str] = []
    path = parts.path.strip("/")
    if path:
        pieces += [path, unquote(path), *path.split("/"), *(unquote(seg) for seg in path.split("/"))]
    if parts.query:
        pieces += [parts.query, *(value for _, value in parse_qsl(parts.query, keep_blank_values=True))]
    if parts.fragment:
        pieces.append(parts.fragment)
    if "@" in parts.netloc:
        pieces += [parts.netloc.rpartition("@")[0], *(p for p in (parts.username, parts.password) if p)]
    exact: list[str] = []
    words: list[str] = []
    for piece in dict.fromkeys(pieces):
        if len(piece) < MIN_PART:
            continue
        # A long piece, or one with punctuation in it, is hidden wherever it occurs; a short plain one
        # ("alerts") only where it stands alone, so that ordinary words around it stay readable.
        (exact if len(piece) >= 16 or not _PLAIN.fullmatch(piece) else words).append(piece)
    return Secrets(tuple(exact), tuple(words))


def _cut_url(match: re.Match[str]) -> str:
    url = match.group(0)
    # Punctuation that ends the sentence around a URL is not part of it ("redirect to https://x/y; …").
    tail = url[len(url.rstrip(".,;:!?)]")):]
    url = url[:len(url) - len(tail)]
    try:
        origin = url_origin(url)
    except ValueError:  # not a URL urlsplit can read: nothing of it is kept
        return REDACTED + tail
    rest = url[len(match.group("scheme")) + 3 + len(match.group("netloc")):]
    return origin + (f"/{REDACTED}" if rest.strip("/") else "") + tail


def redact(text: str, secrets: Secrets = Secrets()) -> str:
    """`text` with every URL cut to its origin and each secret replaced by REDACTED.

    Longer secrets go first, so a path is replaced whole before its segments.
    """
    text = _URL.sub(_cut_url, text)
    for secret in sorted({s for s in secrets.exact if s}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    for word in sorted({w for w in secrets.words if w}, key=len, reverse=True):
        text = re.sub(rf"(?<![A-Za-z0-9_-]){re.escape(word)}(?![A-Za-z0-9_-])", REDACTED, text)
    return text
