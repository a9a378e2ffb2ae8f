"""The limit map's one writer: an account's fact saved when it changed, and a change of state told as an event.

The rules that make a new fact (a sighting, an expiry) are pure, in
afd/judge/limits.py; they hand this module `LimitChange` values. Nothing
else writes the map, so every change of an account's state is said once,
in the same words, wherever the evidence came from.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from afd.record.types import LimitChange, LimitFact, LimitState, unknown_fact

if TYPE_CHECKING:
    from afd.record.store import Store

Say = Callable[..., None]  # (kind, message, session, **data): the supervisor's event


def fact(store: Store, agent: str, account: str) -> LimitFact:
    """The account's fact as stored (unknown when it was never observed)."""
    return store.load_limits().get(account) or unknown_fact(agent, account)


def write(store: Store, changes: Iterable[LimitChange | None], say: Say) -> None:
    """Save each changed fact; a change of state is an event that says what happened (`why`, for unknown)."""
    for change in changes:
        if change is None or change.new == change.old:
            continue
        old, new = change.old, change.new
        store.save_limit(new)
        if new.state == old.state:
            continue
        if new.state is LimitState.LIMITED:
            when = new.reset_at.strftime("%Y-%m-%dT%H:%M:%SZ") if new.reset_at else "no reset time stated"
            msg = f"{new.account_name} is limited for every session ({when}), seen in {new.source_session}"
        elif new.state is LimitState.AVAILABLE:
            msg = f"{new.account_name} is available: seen working without a banner in {new.source_session}"
        else:
            why = change.why or "its limit's reset time has passed"
            msg = f"{new.account_name} is unknown again: {why}"
        say(f"agent.{new.state.value}", msg, change.session, agent=new.agent, account=new.account_name)
