"""The fleet's merge table (docs/fleet.md): how a fact another host saw merges with this host's. A peer only adds caution."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from afd.judge.accounts import Account
from afd.judge.fleet import (
    CLOCK_TOLERANCE,
    UNSTATED_HOLDS,
    PeerFacts,
    is_skewed,
    matchable,
    merge_fact,
    merged,
    peer_fact_now,
    shared_accounts,
    skew_of,
)
from afd.record.types import LimitFact, LimitState

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
L, A, U = LimitState.LIMITED, LimitState.AVAILABLE, LimitState.UNKNOWN


def fact(state: LimitState, *, reset: int | None = None, seen: int = -10, host: str | None = None,
         banner: str | None = None) -> LimitFact:
    """A fact of claude-work: `reset` and `seen` in minutes from NOW."""
    return LimitFact(agent="claude", state=state, reset_at=NOW + timedelta(minutes=reset) if reset is not None else None,
                     observed_at=NOW + timedelta(minutes=seen), source_session="s", account="claude-work",
                     banner=banner if banner is not None else ("limit reached" if state is L else None), source_host=host)


# The table of docs/fleet.md, row by row: (here, peer) -> which one is in force.
HERE, PEER = "here", "peer"
TABLE = [
    # here limited
    pytest.param(fact(L, reset=60), fact(L, reset=90, host="b"), PEER, id="limited-limited-peer-lasts-longer"),
    pytest.param(fact(L, reset=90), fact(L, reset=60, host="b"), HERE, id="limited-limited-here-lasts-longer"),
    pytest.param(fact(L, reset=90), fact(L, reset=None, host="b"), PEER, id="limited-limited-unstated-outlasts"),
    pytest.param(fact(L, reset=None), fact(L, reset=90, host="b"), HERE, id="limited-unstated-here-outlasts"),
    pytest.param(fact(L, reset=60), fact(A, host="b"), HERE, id="limited-available-peer-never-clears"),
    pytest.param(fact(L, reset=60), fact(U, host="b"), HERE, id="limited-unknown"),
    # here available
    pytest.param(fact(A, seen=-30), fact(L, reset=60, seen=-5, host="b"), PEER, id="available-limited-peer-wall-newer"),
    pytest.param(fact(A, seen=-5), fact(L, reset=60, seen=-30, host="b"), HERE, id="available-then-limited-wall-older"),
    pytest.param(fact(A, seen=-10), fact(L, reset=60, seen=-10.5, host="b"), PEER,  # type: ignore[arg-type]
                 id="available-limited-within-clock-tolerance-is-a-wall"),
    pytest.param(fact(A), fact(A, host="b"), HERE, id="available-available"),
    pytest.param(fact(A, seen=-30), fact(U, seen=-5, host="b", banner="limit reached"), PEER,
                 id="available-unknown-peer-lapsed-wall-newer"),
    pytest.param(fact(A, seen=-5), fact(U, seen=-30, host="b", banner="limit reached"), HERE,
                 id="available-unknown-peer-lapsed-wall-older"),
    pytest.param(fact(A), fact(U, host="b"), HERE, id="available-unknown-never-seen"),
    # here unknown, or never seen here
    pytest.param(fact(U), fact(L, reset=60, host="b"), PEER, id="unknown-limited"),
    pytest.param(fact(U), fact(A, host="b"), HERE, id="unknown-available-never-authorises"),
    pytest.param(fact(U), fact(U, host="b"), HERE, id="unknown-unknown"),
    pytest.param(None, fact(L, reset=60, host="b"), PEER, id="none-limited"),
    pytest.param(None, fact(A, host="b"), None, id="none-available-stays-none"),
    pytest.param(None, fact(U, host="b"), None, id="none-unknown-stays-none"),
]


@pytest.mark.parametrize("here, peer, winner", TABLE)
def test_the_merge_table(here, peer, winner):
    out = merge_fact(here, peer)
    expected = {HERE: here, PEER: peer, None: None}[winner]
    assert out == expected


@pytest.mark.parametrize("here", [fact(L, reset=60), fact(A), fact(U), None], ids=["limited", "available", "unknown", "none"])
@pytest.mark.parametrize("peer", [fact(L, reset=30, host="b"), fact(L, host="b"), fact(A, host="b"), fact(U, host="b"),
                                  fact(U, host="b", banner="x", seen=5)],
                         ids=["limited", "limited-unstated", "available", "unknown", "unknown-lapsed"])
def test_a_peer_only_adds_caution(here, peer):
    out = merge_fact(here, peer)
    caution = {L: 2, U: 1, A: 0}
    level = caution[out.state] if out is not None else 1
    before = caution[here.state] if here is not None else 1
    assert level >= before
    if peer.state is A:
        assert out is here  # a peer's available changes nothing, ever


def test_a_peers_fact_expires_like_a_local_one():
    passed = fact(L, reset=-1, host="b")
    assert peer_fact_now(passed, NOW, NOW).state is U
    kept = fact(L, reset=60, host="b")
    assert peer_fact_now(kept, NOW - timedelta(days=1), NOW).state is L  # an absolute reset holds, answered or not
    unstated = fact(L, reset=None, host="b")
    assert peer_fact_now(unstated, NOW - timedelta(minutes=5), NOW).state is L
    assert peer_fact_now(unstated, NOW - UNSTATED_HOLDS, NOW).state is U
    assert peer_fact_now(unstated, None, NOW).state is U
    old = fact(A, seen=-61, host="b")
    assert peer_fact_now(old, NOW, NOW).state is U


SHARED = {"claude-work": "claude", "claude": "claude"}


def peer(facts, *, host="b", skewed=False):
    return PeerFacts(host, {f.account_name: f for f in facts}, NOW, skewed)


def test_merged_takes_only_shared_accounts_of_the_same_agent_and_names_the_host():
    here = {"claude-work": fact(A, seen=-30)}
    wall = LimitFact("claude", L, NOW + timedelta(hours=1), NOW - timedelta(minutes=5), "s", account="claude-work")
    other = LimitFact("codex", L, NOW + timedelta(hours=1), NOW, "s", account="codex-team")
    wrong_agent = LimitFact("codex", L, NOW + timedelta(hours=1), NOW, "s")  # "codex" is not shared here
    out = merged(here, [peer([wall, other, wrong_agent])], SHARED, NOW)
    assert out["claude-work"].state is L and out["claude-work"].source_host == "b"
    assert "codex-team" not in out and "codex" not in out


def test_a_skewed_peer_is_not_used():
    wall = LimitFact("claude", L, NOW + timedelta(hours=1), NOW, "s", account="claude-work")
    assert merged({}, [peer([wall], skewed=True)], SHARED, NOW) == {}


def test_no_peer_leaves_the_map_as_it_is():
    here = {"claude": fact(U)}
    assert merged(here, [], SHARED, NOW) == here


def test_two_peers_the_longer_wall_wins_whatever_their_order():
    short = LimitFact("claude", L, NOW + timedelta(minutes=30), NOW, "s", account="claude-work")
    long = LimitFact("claude", L, NOW + timedelta(hours=2), NOW, "s", account="claude-work")
    for peers in ([peer([short], host="a1"), peer([long], host="z9")], [peer([long], host="a1"), peer([short], host="z9")]):
        out = merged({}, peers, SHARED, NOW)
        assert out["claude-work"].reset_at == NOW + timedelta(hours=2)


@pytest.mark.parametrize("account, ok", [("claude-work", True), ("claude", True), ("unknown", False),
                                         ("claude@/home/u/.claude-x", False), ("", False)])
def test_unnamed_accounts_never_match(account, ok):
    assert matchable(account) is ok


def test_shared_accounts_are_opt_in():
    accounts = [Account("claude-work", "claude", (), share=True), Account("codex-team", "codex", (), share=False)]
    assert shared_accounts(["claude", "codex"], accounts, share_defaults=False) == {"claude-work": "claude"}
    assert shared_accounts(["claude", "codex"], accounts, share_defaults=True) == {
        "claude": "claude", "codex": "codex", "claude-work": "claude"}


@pytest.mark.parametrize("ahead, trip, skewed", [
    (0, 0.2, False), (59, 0.2, False), (-59, 0.2, False), (61, 0.2, True), (-61, 0.2, True),
    (61, 4.0, False),  # half a slow round trip is what the measure cannot tell
])
def test_clock_skew_past_sixty_seconds_is_skewed(ahead, trip, skewed):
    sent = NOW
    received = NOW + timedelta(seconds=trip)
    peer_time = sent + (received - sent) / 2 + timedelta(seconds=ahead)
    skew = skew_of(peer_time, sent, received)
    assert skew == pytest.approx(ahead)
    assert is_skewed(skew, trip) is skewed
    assert CLOCK_TOLERANCE == timedelta(seconds=60)
