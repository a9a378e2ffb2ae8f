"""The limit map's one writer (afd.record.limit_map) fed by its pure rules (afd.judge.limits.after_sighting, expiries)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from afd.judge import limits
from afd.judge.sessions import SeenDisputed, SeenLimited, SeenWorking
from afd.record import limit_map
from afd.record.store import Store
from afd.record.types import LimitState

T0 = datetime(2026, 7, 13, 9, 0, tzinfo=timezone.utc)


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "state.db") as s:
        yield s


class Said(list):
    def __call__(self, kind, message, session=None, **data):
        self.append((kind, message, session, data))


def seen(store, sighting, now, say):
    """What the poll does with one sighting of the sessions rulebook: the rule, then the one writer."""
    limit_map.write(store, [limits.after_sighting(limit_map.fact(store, sighting.agent, sighting.account), sighting, now)], say)


def test_the_limit_maps_events_say_what_happened(store):
    said = Said()
    # Seen working a moment ago, then a wall recorded before that: nothing changes, nothing is said.
    seen(store, SeenWorking("claude", "s", "claude"), T0, said)
    now = T0 + timedelta(seconds=1)
    lapsed = dict(agent="claude", session="s", account="claude", banner="(records)", reset_at=T0 - timedelta(minutes=5),
                  first_seen=True)
    seen(store, SeenLimited(**lapsed, seen_at=T0 - timedelta(seconds=30)), now, said)
    assert limit_map.fact(store, "claude", "claude").state is LimitState.AVAILABLE
    # A wall drawn after it whose reset has already passed: unknown, and said so, not "not seen working".
    seen(store, SeenLimited(**lapsed, seen_at=now), now, said)
    assert said[-1][1] == "claude is unknown again: a usage limit whose reset had already passed was seen in s"
    # Seen working again, then left alone past AVAILABLE_FOR: now it is said that it was not seen working.
    seen(store, SeenWorking("claude", "s", "claude"), now, said)
    now += timedelta(hours=1, seconds=1)
    limit_map.write(store, limits.expiries(store.load_limits().values(), now), said)
    assert said[-1][1] == "claude is unknown again: last seen working at 2026-07-13T09:00:01Z, over 1:00:00 ago"
    assert [m.split(":")[0] for _, m, _, _ in said] == ["claude is available", "claude is unknown again", "claude is available",
                                                       "claude is unknown again"]
    assert [k for k, *_ in said] == ["agent.available", "agent.unknown", "agent.available", "agent.unknown"]
    assert said[0][2:] == ("s", {"agent": "claude", "account": "claude"})
    assert limit_map.fact(store, "claude", "claude").state is LimitState.UNKNOWN


def test_a_limit_is_told_for_every_session_and_a_disputed_one_is_taken_back(store):
    said = Said()
    reset = T0 + timedelta(hours=2)
    seen(store, SeenLimited("codex", "a", "codex-team", "You've hit your usage limit", reset, first_seen=True), T0, said)
    assert said == [("agent.limited", "codex-team is limited for every session (2026-07-13T11:00:00Z), seen in a", "a",
                     {"agent": "codex", "account": "codex-team"})]
    # Another session's records disputing nothing it set: the limit stands, nothing is written.
    changes = store.total_changes()
    seen(store, SeenDisputed("codex", "b", "codex-team"), T0, said)
    assert store.total_changes() == changes and len(said) == 1
    # Its own session's records dispute it: unknown again, said with why.
    seen(store, SeenDisputed("codex", "a", "codex-team"), T0, said)
    assert said[-1][1] == "codex-team is unknown again: the limit seen in a is disputed by its own records"
    assert limit_map.fact(store, "codex", "codex-team").state is LimitState.UNKNOWN
    # A limit whose reset passes lapses to unknown, never to available.
    seen(store, SeenLimited("codex", "a", "codex-team", "You've hit your usage limit", reset, first_seen=True), T0, said)
    limit_map.write(store, limits.expiries(store.load_limits().values(), reset), said)
    assert said[-1][1] == "codex-team is unknown again: its limit's reset time has passed"


def test_an_agent_seen_working_every_poll_is_written_available_once_a_minute(store):
    said = Said()
    seen(store, SeenWorking("codex", "s1", "codex"), T0, said)
    changes = store.total_changes()
    for second in range(1, 60):
        seen(store, SeenWorking("codex", "s1", "codex"), T0 + timedelta(seconds=second), said)
    assert store.total_changes() == changes
    seen(store, SeenWorking("codex", "s1", "codex"), T0 + limits.AVAILABLE_REFRESH, said)
    fact = store.load_limits()["codex"]
    assert store.total_changes() == changes + 1
    assert fact.state is LimitState.AVAILABLE and fact.observed_at == T0 + limits.AVAILABLE_REFRESH
    assert len(said) == 1  # told once: available, not again at each refresh
