"""The limit map: what afd knows about each account's plan limit.

A plan limit belongs to the account, not to the session that hit it, nor
to the program: once one codex session shows the wall, every session on
that codex account is limited, while one on another account
(`CODEX_HOME=~/.codex-team`) is not (afd.judge.accounts says how an account
is told). Each account has one `LimitFact`, three-valued:

* ``limited``   — a usage-limit banner was seen; ``reset_at`` when it lifts
  (None when the banner gave no time: then it holds until the agent is seen
  working, or a different banner replaces it);
* ``available`` — the agent was seen working without a banner. Only evidence
  makes an agent available;
* ``unknown``   — never observed, no detector for it, or its limit's reset
  has passed. A passed reset does not prove capacity, so it never turns a
  limit into ``available``.

These functions are pure: facts and instants in, a new fact out. The
supervisor feeds them, per poll and per session, one of:

* ``observe_limited(..., first_seen=True)`` — a banner that passed both gates
  and that this session was not showing before (a new banner, or a different
  one);
* ``observe_limited(..., first_seen=False)`` — the same banner still on
  screen. It is not a new observation: it keeps a limit in force until its
  reset, and once the reset has passed it proves nothing, so the agent stays
  ``unknown`` however long the stale banner sits there;
* ``observe_working(...)`` — the agent's pane changed while it ran, with no
  banner;
* nothing — an idle agent without a banner. Sitting at a prompt has not
  spent anything from the plan, so it says nothing about the limit.

and calls ``expire`` on every fact with the poll's instant.

``observed_at`` is the instant of the evidence the fact rests on: for a
limit, when its banner was first seen; for ``available``, the latest time
the agent was seen working (``available`` means "ran recently"). An expired
fact keeps the limit's reset, banner and session, so status can say which
limit lapsed and when.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from afd.record.types import LimitFact, LimitState

# "Available" is evidence that an agent ran without a banner *recently*;
# older than this, it is no longer evidence of anything.
AVAILABLE_FOR = timedelta(hours=1)


def unknown_fact(agent: str, account: str | None = None) -> LimitFact:
    """The fact for an account never observed (or one no detector can observe); `account` None: the default one."""
    return LimitFact(agent=agent, state=LimitState.UNKNOWN, reset_at=None, observed_at=None, source_session=None,
                     account=account if account != agent else None)


def _reset_passed(reset_at: datetime | None, now: datetime) -> bool:
    return reset_at is not None and now >= reset_at


def observe_limited(
    fact: LimitFact,
    *,
    reset_at: datetime | None,
    at: datetime,
    session: str,
    banner: str,
    first_seen: bool,
    evidence_at: datetime | None = None,
) -> LimitFact:
    """The fact after `session` shows a limit banner at instant `at`.

    `reset_at` is the banner's reset as parsed once, against the time it was
    first seen. With `first_seen` False the banner was already on screen at
    an earlier poll; see the module docstring for why that is weaker.
    `evidence_at` is when the wall appeared (its banner's first sighting, its
    record): a wall older than the account's last working sighting is over.
    """
    if (fact.state is LimitState.AVAILABLE and evidence_at is not None and fact.observed_at is not None
            and evidence_at < fact.observed_at):
        return expire(fact, at)
    if first_seen:
        # A new banner whose stated reset is already behind it (a past date)
        # still counts against "available", so it lands as a lapsed limit.
        return expire(replace(fact, state=LimitState.LIMITED, reset_at=reset_at, observed_at=at, source_session=session,
                              banner=banner), at)
    if _reset_passed(reset_at, at):
        # The same banner left on screen past its reset says nothing about
        # now: it can only let an old limit lapse.
        return expire(fact, at)
    if fact.state is LimitState.UNKNOWN:
        # A banner still in force re-establishes the limit the map lost
        # (another session's earlier reset lapsed, or the map was never
        # saved). Its first sighting is not known here, so `at` stands in.
        return replace(fact, state=LimitState.LIMITED, reset_at=reset_at, observed_at=at, source_session=session,
                       banner=banner)
    # Limited already (keep the fact the map holds) or available from a
    # working sighting newer than this banner's first appearance: an old
    # banner left on screen must not flip the map back on every poll.
    return expire(fact, at)


def observe_working(fact: LimitFact, *, at: datetime, session: str) -> LimitFact:
    """The fact after `session` was seen working, with no banner, at `at`."""
    return replace(fact, state=LimitState.AVAILABLE, reset_at=None, observed_at=at, source_session=session, banner=None)


def expire(fact: LimitFact, now: datetime, *, available_for: timedelta | None = None) -> LimitFact:
    """The fact as it stands at `now`.

    A limit whose reset has passed becomes ``unknown`` (never ``available``).
    With `available_for`, an ``available`` older than that also becomes
    ``unknown``: "ran recently" stops being true; without it, it stays.
    """
    if fact.state is LimitState.LIMITED and _reset_passed(fact.reset_at, now):
        return replace(fact, state=LimitState.UNKNOWN)
    if (
        fact.state is LimitState.AVAILABLE
        and available_for is not None
        and fact.observed_at is not None
        and now - fact.observed_at >= available_for
    ):
        return replace(fact, state=LimitState.UNKNOWN)
    return fact
