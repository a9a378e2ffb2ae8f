"""Who may use the dashboard: one-time login tokens and the session tokens they buy.

Both live only in the daemon's memory, so they die with it. A login token
is good once, for a few minutes; redeeming it makes a session token, which
the page keeps in its own tab's storage and sends in an `Authorization`
header (afd/web/guard.py says why not a cookie). Every comparison is
constant-time (`hmac.compare_digest`), and goes over every candidate, so
neither a prefix nor which entry matched shows in the timing.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time

TOKEN_TTL = 600.0  # seconds a printed login URL stays good
MAX_OUTSTANDING = 32  # unused tokens kept; the oldest is dropped after that
MAX_SESSIONS = 256  # browsers logged in at once; the oldest is logged out after that


def _matches(candidate: str, known) -> str | None:
    found = None
    for value in known:
        if hmac.compare_digest(candidate.encode(), value.encode()):
            found = value
    return found


class Logins:
    def __init__(self, clock=time.monotonic):
        self._clock = clock
        self._tokens: dict[str, float] = {}  # token -> when it expires
        self._sessions: dict[str, float] = {}  # session token -> when it was made
        self._lock = threading.Lock()

    def mint_token(self) -> str:
        token = secrets.token_urlsafe(32)
        with self._lock:
            self._tokens[token] = self._clock() + TOKEN_TTL
            while len(self._tokens) > MAX_OUTSTANDING:
                del self._tokens[next(iter(self._tokens))]
        return token

    def redeem(self, token: str) -> str | None:
        """A new session token for a good, unused login token (which is then spent); None otherwise."""
        now = self._clock()
        with self._lock:
            self._tokens = {t: until for t, until in self._tokens.items() if until > now}
            found = _matches(token, self._tokens)
            if found is None:
                return None
            del self._tokens[found]
            session = secrets.token_urlsafe(32)
            self._sessions[session] = now
            while len(self._sessions) > MAX_SESSIONS:
                del self._sessions[next(iter(self._sessions))]
            return session

    def valid(self, session: str | None) -> bool:
        if not session:
            return False
        with self._lock:
            return _matches(session, self._sessions) is not None
