"""Headroom: how much room an account has left by its exact figures, and ranking accounts by it (pure).

An account's headroom is the room left in its fullest plan window (the
spend window aside: money is not a plan's window), by exact figures that
are fresh. An account with no such figure has no headroom figure at all,
and never ranks above one that has one: afd does not guess an entitlement.
A window exactly used up (100 %) counts as no room: such an account is
treated like a limited one, wherever it is ranked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from afd.judge.limits import LimitFact, LimitState
from afd.judge.usage import SPEND, Provenance, UsageFigures

RANKS = ("order", "headroom")


def headroom(figures: UsageFigures | None, account: str) -> float | None:
    """Percent left in the account's fullest plan window by fresh exact figures; None without one."""
    if figures is None:
        return None
    found = figures.account(account)
    if found is None:
        return None
    room = [100.0 - w.used_percent for w in found.windows
            if w.provenance is Provenance.EXACT and not w.stale and w.used_percent is not None and w.window != SPEND]
    return max(0.0, min(room)) if room else None


def _limited(account: str, facts: Mapping[str, LimitFact], room: float | None) -> bool:
    fact = facts.get(account)
    return (fact is not None and fact.state is LimitState.LIMITED) or room == 0.0


def rank_targets(order: Sequence[str], outgoing: str | None, facts: Mapping[str, LimitFact], figures: UsageFigures | None,
                 rank: str = "order") -> list[tuple[str, float | None]]:
    """The handoff targets of `order` that may be tried, best first, each with its headroom (None: no figure).

    `rank = "order"`: the user's `handoff_order` is the ranking. `rank = "headroom"`: the most headroom
    first; accounts without figures after every account with one; the order breaks ties.
    """
    out = []
    for index, account in enumerate(order):
        if account == outgoing:
            continue
        room = headroom(figures, account)
        if _limited(account, facts, room):
            continue
        out.append((index, account, room))
    if rank == "headroom":
        out.sort(key=lambda item: (item[2] is None, -(item[2] or 0.0), item[0]))
    return [(account, room) for _, account, room in out]


def route_most_headroom(candidates: Sequence[str], facts: Mapping[str, LimitFact], figures: UsageFigures | None) -> tuple[str, str]:
    """`route_new_sessions = "most-headroom"`: the account a new session starts on, and why.

    The account not limited with the most headroom by exact figures; one without figures only when
    no account has any (then the first in order, the agent's default first); every account limited:
    the first in order (the session waits for its reset like any other).
    """
    assert candidates, "an agent always has its default account"
    ranked = rank_targets(candidates, None, facts, figures, "headroom")
    if len(candidates) == 1:
        return candidates[0], "its only account"
    if not ranked:
        return candidates[0], "every account is limited"
    name, room = ranked[0]
    if room is None:
        return name, "no account has usage figures; the first not limited"
    return name, f"the most headroom: {room:g} % left in its fullest window"
