"""The dashboard's logins: one-time tokens, the session tokens they buy, compared in constant time."""

from __future__ import annotations

import hmac

from afd.web import auth
from afd.web.auth import TOKEN_TTL, Logins


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_token_buys_one_session_token_once():
    logins = Logins()
    token = logins.mint_token()
    session = logins.redeem(token)
    assert session and session != token and logins.valid(session)
    assert logins.redeem(token) is None
    assert not logins.valid(token) and not logins.valid("") and not logins.valid(None)
    assert not logins.valid(session[:-1] + ("A" if session[-1] != "A" else "B"))


def test_a_token_expires_unused():
    clock = Clock()
    logins = Logins(clock)
    token = logins.mint_token()
    clock.now += TOKEN_TTL + 1
    assert logins.redeem(token) is None


def test_every_candidate_is_compared_in_constant_time(monkeypatch):
    logins = Logins()
    tokens = [logins.mint_token() for _ in range(5)]
    calls = []
    real = hmac.compare_digest

    def counting(a, b):
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", counting)
    assert logins.redeem(tokens[0]) is not None
    assert len(calls) == 5  # the match came first, and the other four were still compared


def test_old_tokens_and_sessions_make_room_for_new_ones(monkeypatch):
    monkeypatch.setattr(auth, "MAX_OUTSTANDING", 2)
    monkeypatch.setattr(auth, "MAX_SESSIONS", 1)
    logins = Logins()
    first, second, third = (logins.mint_token() for _ in range(3))
    assert logins.redeem(first) is None
    a = logins.redeem(second)
    b = logins.redeem(third)
    assert not logins.valid(a) and logins.valid(b)
