"""The limit map with the fleet's facts in it: how a fact another host saw merges with what this host saw (pure).

A plan's wall belongs to the account, wherever the agent runs: `claude-work`
walled on the workstation is walled on the laptop too. Each host's afd
keeps its own map (afd.judge.limits); the facts a peer told are merged in
when the map is read, never written into it, so a peer can only ever add
caution to what this host saw:

| here \\ peer | limited | available | unknown |
|---|---|---|---|
| limited | limited, whichever lasts longer (a stated reset that is later; an unstated one outlasts any) | limited (here) | limited (here) |
| available | limited (peer), unless seen working here after the peer's wall | available (here) | available (here); unknown when the peer's lapsed wall is newer than the sighting here |
| unknown or none | limited (peer) | unknown (here) | unknown (here) |

"After" means by more than `CLOCK_TOLERANCE`, so two clocks that differ
within it never turn a wall into "over". A peer's `available` never clears
a local `limited` and never authorises a handoff: nothing in the table
lets it. The facts used are only those of accounts both hosts share
(`share = true`, `[fleet] share` for the agents' default accounts) under the
same name and agent; an account no one named (`claude@/path`) never
matches. A peer whose clock differs from ours by more than
`CLOCK_TOLERANCE` is skewed: its facts are shown, not used. A peer's fact
expires like a local one (a passed reset makes it unknown); a limit with no
stated reset holds only while its host answers, and for `UNSTATED_HOLDS`
after its last answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from afd.judge.accounts import UNKNOWN as UNKNOWN_ACCOUNT
from afd.judge.accounts import Account
from afd.judge.limits import AVAILABLE_FOR, expire
from afd.record.types import LimitFact, LimitState

# Two clocks further apart than this are not compared: the peer is skewed. Within it, an instant of one
# host's is "after" another's only when it is later by more than this.
CLOCK_TOLERANCE = timedelta(seconds=60)
# A peer's limit that states no reset holds until the agent is seen working there; once the peer stops
# answering, afd cannot hear that, so the limit holds this long past its last answer.
UNSTATED_HOLDS = AVAILABLE_FOR


@dataclass(frozen=True, slots=True)
class PeerFacts:
    """What one host of the fleet last told of its accounts, and what afd knows of that host."""

    host: str
    facts: Mapping[str, LimitFact]  # by account; each fact's `source_host` is `host`
    answered_at: datetime | None  # its last answer
    skewed: bool = False  # its clock differs from ours by more than CLOCK_TOLERANCE: shown, not used


def shared_accounts(agents: Iterable[str], accounts: Iterable[Account], *, share_defaults: bool) -> dict[str, str]:
    """The accounts this host shares with the fleet, each with its agent: the configured ones with `share = true`,
    and, with `[fleet] share`, every agent's default account."""
    shared = {name: name for name in agents} if share_defaults else {}
    shared.update((a.name, a.agent) for a in accounts if a.share)
    return {name: agent for name, agent in shared.items() if matchable(name)}


def matchable(account: str) -> bool:
    """Whether an account can match across hosts: a name a person gave it, or an agent's default one."""
    return bool(account) and account != UNKNOWN_ACCOUNT and "@" not in account


def skew_of(peer_time: datetime, sent_at: datetime, received_at: datetime) -> float:
    """Seconds the peer's clock runs ahead of ours: its time against the middle of the round trip."""
    middle = sent_at + (received_at - sent_at) / 2
    return (peer_time - middle).total_seconds()


def is_skewed(skew: float | None, round_trip: float = 0.0) -> bool:
    """Whether a measured skew is past the tolerance; half the round trip is what the measure cannot tell."""
    return skew is not None and abs(skew) - round_trip / 2 > CLOCK_TOLERANCE.total_seconds()


def _lasts_longer(a: LimitFact, b: LimitFact) -> bool:
    if a.reset_at is None:
        return b.reset_at is not None
    return b.reset_at is not None and a.reset_at > b.reset_at


def _after(a: datetime | None, b: datetime | None) -> bool:
    """`a` is later than `b` by more than the clocks may differ."""
    return a is not None and b is not None and a - b > CLOCK_TOLERANCE


def peer_fact_now(fact: LimitFact, answered_at: datetime | None, now: datetime) -> LimitFact:
    """A peer's fact as it stands at `now`: expired like a local one, an unstated limit held only so long."""
    fact = expire(fact, now, available_for=AVAILABLE_FOR)
    if fact.state is LimitState.LIMITED and fact.reset_at is None and (
            answered_at is None or now - answered_at >= UNSTATED_HOLDS):
        return replace(fact, state=LimitState.UNKNOWN)
    return fact


def merge_fact(here: LimitFact | None, peer: LimitFact) -> LimitFact | None:
    """The fact in force for one account: this host's (`here`, None: never seen here) with a peer's, by the table.

    `peer` is as it stands now (`peer_fact_now`). Returns `here` itself when the peer adds nothing.
    """
    if peer.state is LimitState.LIMITED:
        if here is None or here.state is LimitState.UNKNOWN:
            return peer
        if here.state is LimitState.LIMITED:
            return peer if _lasts_longer(peer, here) else here
        # Available here: seen working after the peer's wall (by more than the clocks may differ), the wall is over.
        return here if _after(here.observed_at, peer.observed_at) else peer
    if (peer.state is LimitState.UNKNOWN and here is not None and here.state is LimitState.AVAILABLE
            and peer.banner is not None and _after(peer.observed_at, here.observed_at)):
        # A wall the peer saw after the working sighting here, whose reset has passed since: what a sighting of it
        # here would have left (afd.judge.limits.observe_limited), unknown.
        return peer
    return here


def merged(here: Mapping[str, LimitFact], peers: Iterable[PeerFacts], shared: Mapping[str, str],
           now: datetime) -> dict[str, LimitFact]:
    """The limit map afd acts on: this host's, with each peer's facts merged in by the table, peers in name order.

    `shared`: account → agent, as `shared_accounts` says. With no peer (no host added), the map is this host's.
    """
    out = dict(here)
    for peer in sorted(peers, key=lambda p: p.host):
        if peer.skewed:
            continue
        for account, fact in peer.facts.items():
            if account not in shared or shared[account] != fact.agent or not matchable(account):
                continue
            fact = replace(fact, source_host=peer.host)
            result = merge_fact(out.get(account), peer_fact_now(fact, peer.answered_at, now))
            if result is not None:
                out[account] = result
    return out
