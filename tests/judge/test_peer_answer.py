"""What `afd remote` answers and how an answer is read back: whole, or not at all."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from afd.judge.peer_answer import (
    MAX_ANSWER_BYTES,
    REQUESTS,
    AnswerError,
    answer,
    parse_requests,
    read_answer,
)
from afd.record.types import LimitFact, LimitState

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
WALL = LimitFact("claude", LimitState.LIMITED, NOW + timedelta(hours=1), NOW, "s1", banner="limit reached",
                 account="claude-work")
SESSION = {"name": "api:1.0", "agent": "claude", "account": "claude-work", "state": "limited",
           "reset_at": "2026-03-01T13:00:00Z", "location": "api:1.0", "branch": "afd/api", "next_action": "resume at 13:00"}


def told(**kw) -> dict:
    made = answer(asked=kw.pop("asked", REQUESTS), version="0.2.0", hostname="ws", now=NOW, running=True,
                  sessions=kw.pop("sessions", [SESSION]), facts=kw.pop("facts", [WALL]), usage=None,
                  shared=kw.pop("shared", {"claude-work": "claude"}))
    return made.to_json()


def raw(value: object) -> bytes:
    return json.dumps(value).encode()


def test_an_answer_reads_back_whole():
    back = read_answer(raw(told()), REQUESTS)
    assert back.version == "0.2.0" and back.hostname == "ws" and back.time == NOW and back.running
    assert back.sessions is not None and back.sessions[0].name == "api:1.0" and back.sessions[0].state == "limited"
    assert back.facts == (WALL,)


def test_only_shared_accounts_and_only_this_hosts_own_facts_go_out():
    heard = LimitFact("claude", LimitState.LIMITED, NOW, NOW, "s", account="claude-work", source_host="other")
    mine = LimitFact("codex", LimitState.LIMITED, NOW, NOW, "s")
    out = told(facts=[heard, mine, WALL])
    assert [f["account"] for f in out["limits"]] == ["claude-work"] and out["limits"][0]["session"] == "s1"


def test_an_honest_answer_neutralises_its_text():
    hostile = dict(SESSION, name="api\x1b[2J", next_action="go\x07")
    back = read_answer(raw(told(sessions=[hostile])), REQUESTS)
    assert back.sessions is not None and "\x1b" not in back.sessions[0].name


def test_what_was_not_asked_is_not_told():
    out = told(asked=("version",))
    assert set(out) == {"schema", "afd", "host", "time", "daemon"}


def _mutated(path: tuple, value: object) -> bytes:
    data = told()
    node = data
    for key in path[:-1]:
        node = node[key]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return raw(data)


@pytest.mark.parametrize("path, value, where", [
    (("schema",), 2, "schema"),
    (("schema",), "1", "schema"),
    (("afd",), 3, "afd"),
    (("afd",), "0.2\x1b]0;x\x07", "afd: carries control characters"),
    (("host",), KeyError, "host"),
    (("time",), "yesterday", "time"),
    (("time",), "2026-03-01T12:00:00", "has no zone"),
    (("daemon",), [], "daemon"),
    (("status", "sessions"), {}, "status.sessions"),
    (("status", "sessions", 0, "name"), "x" * 300, "status.sessions[0].name"),
    (("status", "sessions", 0, "state"), "Limited!", "status.sessions[0].state"),
    (("status", "sessions", 0, "branch"), "a\nb", "status.sessions[0].branch"),
    (("limits", 0, "state"), "free", "limits[0].state"),
    (("limits", 0, "reset_at"), 5, "limits[0].reset_at"),
    (("limits", 0, "banner"), "\u202eevil", "limits[0].banner"),
    (("limits",), [{}] * 201, "limits"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_a_wrong_value_refuses_the_whole_answer_saying_where(path, value, where):
    with pytest.raises(AnswerError, match=None) as caught:
        read_answer(_mutated(path, value), REQUESTS)
    assert where.split(":")[0] in str(caught.value)


@pytest.mark.parametrize("data, why", [
    (b"x" * (MAX_ANSWER_BYTES + 1), "KiB"),
    (b'{"schema": 1, "afd": ', "not JSON"),
    (b"\xff\xfe", "not UTF-8"),
    (b"[" * 100_000, "nested too deeply"),
    (b"[]", "expected an object"),
])
def test_what_is_not_an_answer_is_refused(data, why):
    with pytest.raises(AnswerError) as caught:
        read_answer(data, REQUESTS)
    assert why in str(caught.value)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2000) | st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                                                lambda c: st.lists(c) | st.dictionaries(st.text(), c)).map(raw))
def test_arbitrary_bytes_are_read_or_refused_never_crash(data):
    try:
        read_answer(data, REQUESTS)
    except AnswerError:
        pass


@pytest.mark.parametrize("words", [["status"], ["version", "limits", "usage", "status"], ["limits", "limits"]])
def test_the_read_set_is_answered(words):
    assert set(parse_requests(words)) == set(words)


@pytest.mark.parametrize("words", [[], ["sh"], ["scp", "-t", "/tmp"], ["internal-sftp"], ["status;id"],
                                   ["status", "rm"], ["VERSION"], ["\x1b[2J"]])
def test_anything_else_is_refused(words):
    with pytest.raises(ValueError) as caught:
        parse_requests(words)
    assert "\x1b" not in str(caught.value)
