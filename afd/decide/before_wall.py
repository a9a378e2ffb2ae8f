"""Deciding before the wall: a handoff at the turn boundary, and asking the person before a costly wake (pure).

**Handoff before the wall** (`handoff_before = "95%"`): when a session's
agent has ended its turn (idle at its prompt — never mid-turn), its
account's window is at or past the threshold by an exact, fresh figure, and
that window's reset is more than `handoff_before_min_wait` away, the work
goes to the next account of `handoff_order` now rather than at the wall.
There is no banner, so the once-only key is the account, the window and its
reset: one handoff per window, whichever session of the account gets it.
The record witness does not apply; the exact figure is the evidence.

**A wake that costs more than it is worth**: before a resume or handoff
continuation, when the session's prompt cache is cold and caching its
context again would cost more than `cold_cache_tokens`, or the account's
spend window is past `spend_warn_at`, afd asks the person instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo

from afd.judge.usage import SPEND, Provenance, UsageFigures, WindowFigure, iso
from afd.model import SessionState


@dataclass(frozen=True, slots=True)
class BeforeWall:
    key: str  # account | limit | window | reset: once per window
    account: str
    window: WindowFigure
    reason: str  # "approaching limit (96 % of the 5-hour window, resets 15:02)"


def before_wall_key(w: WindowFigure) -> str:
    return f"handoff-before|{w.account}|{w.limit_id or ''}|{w.window}|{iso(w.resets_at) or ''}"


def handoff_before(
    *,
    state: SessionState,
    turn_ended: bool,
    account: str | None,
    figures: UsageFigures,
    threshold: float | None,
    min_wait: float,
    now: datetime,
    done: Iterable[str],
    zone: tzinfo,
) -> BeforeWall | None:
    """The handoff before the wall due for a session now, or None.

    `turn_ended`: the pane has come to rest (two captures alike) with no busy marker in its tail: the
    agent is at its prompt, its turn over. An idle state alone is not enough: a session just adopted
    starts idle, and an agent thinking quietly behind its spinner leaves its screen unchanged.
    """
    if threshold is None or account is None or account == "unknown":
        return None
    if state is not SessionState.IDLE or not turn_ended:
        return None  # working is mid-turn; limited is the wall's own path; anything else has no turn to end
    found = figures.account(account)
    if found is None:
        return None
    given = set(done)
    due = [
        w for w in found.windows
        if w.provenance is Provenance.EXACT and not w.stale and w.used_percent is not None and w.window != SPEND
        and w.used_percent >= threshold and w.resets_at is not None
        and w.resets_at - now > timedelta(seconds=min_wait) and before_wall_key(w) not in given
    ]
    if not due:
        return None
    w = max(due, key=lambda x: (x.used_percent or 0.0, x.resets_at))
    assert w.resets_at is not None and w.used_percent is not None
    reason = f"approaching limit ({w.used_percent:g} % of the {w.label} window, resets {w.resets_at.astimezone(zone):%H:%M})"
    return BeforeWall(before_wall_key(w), account, w, reason)


@dataclass(frozen=True, slots=True)
class PromptCacheState:
    """A session's prompt cache as its status line last said (afd.record.usage_book.PromptCache, reduced)."""

    warm: bool | None
    expires_at: datetime | None
    recache_tokens: int | None


def wake_cost(
    *,
    cache: PromptCacheState | None,
    cold_cache_tokens: int,
    figures: UsageFigures | None,
    account: str | None,
    spend_warn_at: float | None,
    now: datetime,
) -> str | None:
    """Why waking the session now costs more than it is worth (one sentence for the person), or None.

    A cache the status line called warm whose expiry has passed is cold now. With no word on the
    cache, or no figure for the spend window, nothing is asked: afd does not guess a cost.
    """
    if cold_cache_tokens > 0 and cache is not None and cache.recache_tokens is not None:
        cold = cache.warm is False or (cache.expires_at is not None and cache.expires_at <= now)
        if cold and cache.recache_tokens > cold_cache_tokens:
            return (f"its prompt cache is cold: going on would cache {cache.recache_tokens:,} tokens again "
                    f"(cold_cache_tokens = {cold_cache_tokens:,})")
    if spend_warn_at is not None and figures is not None and account is not None:
        found = figures.account(account)
        for w in found.windows if found is not None else ():
            if w.window == SPEND and w.provenance is Provenance.EXACT and not w.stale and w.used_percent is not None \
                    and w.used_percent >= spend_warn_at:
                return f"its account's spend window is {w.used_percent:g} % used (spend_warn_at = {spend_warn_at:g} %)"
    return None
