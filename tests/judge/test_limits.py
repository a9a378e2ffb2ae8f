"""The per-agent limit map's transitions, as tables of observation sequences."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from afd.judge.limits import (
    LimitFact,
    LimitState,
    expire,
    observe_limited,
    observe_working,
    unknown_fact,
)

T0 = datetime(2025, 3, 1, 10, 0, tzinfo=timezone.utc)
RESET = T0 + timedelta(hours=2)


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def banner(minute: int, *, reset=RESET, first=True, session="s1", text="limit reached, resets 12pm"):
    def step(fact: LimitFact) -> LimitFact:
        return observe_limited(fact, reset_at=reset, at=at(minute), session=session, banner=text, first_seen=first)

    return step


def working(minute: int, *, session="s1"):
    def step(fact: LimitFact) -> LimitFact:
        return observe_working(fact, at=at(minute), session=session)

    return step


def tick(minute: int):
    def step(fact: LimitFact) -> LimitFact:
        return expire(fact, at(minute))

    return step


def run(steps) -> LimitFact:
    fact = unknown_fact("codex")
    for step in steps:
        fact = step(fact)
    return fact


AFTER_RESET = 121

CASES = [
    pytest.param([], LimitState.UNKNOWN, id="never-observed-is-unknown"),
    pytest.param([tick(5), tick(500)], LimitState.UNKNOWN, id="time-alone-never-makes-unknown-available"),
    pytest.param([banner(0)], LimitState.LIMITED, id="new-banner-limits"),
    pytest.param([working(0)], LimitState.AVAILABLE, id="working-without-banner-is-available"),
    pytest.param([working(0), banner(5)], LimitState.LIMITED, id="banner-after-working-limits"),
    pytest.param([banner(0), tick(60)], LimitState.LIMITED, id="limit-holds-before-reset"),
    pytest.param([banner(0), tick(120)], LimitState.UNKNOWN, id="limit-lapses-at-reset-instant"),
    pytest.param([banner(0), tick(AFTER_RESET)], LimitState.UNKNOWN, id="passed-reset-is-unknown-not-available"),
    pytest.param(
        [banner(0), tick(AFTER_RESET), banner(AFTER_RESET + 1, first=False), banner(300, first=False)],
        LimitState.UNKNOWN,
        id="same-banner-after-reset-stays-unknown",
    ),
    pytest.param(
        [banner(0), banner(AFTER_RESET, first=False)],
        LimitState.UNKNOWN,
        id="same-banner-past-reset-lapses-the-limit-itself",
    ),
    pytest.param(
        [banner(0), tick(AFTER_RESET), banner(AFTER_RESET + 5, reset=at(400), text="limit again")],
        LimitState.LIMITED,
        id="new-banner-after-reset-limits-again",
    ),
    pytest.param(
        [banner(0), tick(AFTER_RESET), working(AFTER_RESET + 5)],
        LimitState.AVAILABLE,
        id="working-after-reset-is-available",
    ),
    pytest.param([banner(0, reset=None), tick(10_000)], LimitState.LIMITED, id="reset-none-stays-limited"),
    pytest.param(
        [banner(0, reset=None), banner(10_000, reset=None, first=False)],
        LimitState.LIMITED,
        id="reset-none-same-banner-stays-limited",
    ),
    pytest.param([banner(0, reset=None), working(50)], LimitState.AVAILABLE, id="reset-none-ends-on-working"),
    pytest.param(
        [banner(0, reset=None), banner(50, text="other banner, resets 3pm", reset=at(300))],
        LimitState.LIMITED,
        id="reset-none-replaced-by-different-banner",
    ),
    pytest.param(
        [working(0), banner(5, first=False)],
        LimitState.AVAILABLE,
        id="old-banner-left-on-screen-does-not-undo-newer-working",
    ),
    pytest.param(
        [banner(0, first=False)],
        LimitState.LIMITED,
        id="banner-in-force-restores-a-lost-limit",
    ),
    pytest.param(
        [banner(0, reset=at(-5))],
        LimitState.UNKNOWN,
        id="new-banner-with-past-reset-is-a-lapsed-limit",
    ),
    pytest.param(
        [working(0), banner(5, reset=at(-5))],
        LimitState.UNKNOWN,
        id="new-banner-with-past-reset-still-ends-available",
    ),
    pytest.param(
        [banner(0, session="a"), tick(30), working(40, session="b")],
        LimitState.AVAILABLE,
        id="another-session-working-is-evidence-for-the-agent",
    ),
]


@pytest.mark.parametrize(("steps", "expected"), CASES)
def test_limit_map_transitions(steps, expected):
    assert run(steps).state is expected


def test_new_banner_records_its_evidence():
    fact = run([banner(3, session="work:1.0", text="usage limit, resets 12pm")])
    assert fact == LimitFact(
        agent="codex",
        state=LimitState.LIMITED,
        reset_at=RESET,
        observed_at=at(3),
        source_session="work:1.0",
        banner="usage limit, resets 12pm",
    )


def test_same_banner_keeps_the_first_sighting_as_observed_at():
    fact = run([banner(3), banner(10, first=False), banner(50, first=False)])
    assert fact.observed_at == at(3)
    assert fact.state is LimitState.LIMITED


def test_limit_seen_in_one_session_holds_for_another_sessions_stale_view():
    # Session b still shows an older banner; the limit session a saw stays.
    fact = run([banner(0, session="a", reset=at(200)), banner(5, session="b", first=False, reset=at(100))])
    assert (fact.source_session, fact.reset_at) == ("a", at(200))


def test_lapsed_limit_keeps_what_lapsed_for_status():
    fact = run([banner(0, session="a"), tick(AFTER_RESET)])
    assert fact.state is LimitState.UNKNOWN
    assert (fact.reset_at, fact.source_session, fact.banner) == (RESET, "a", "limit reached, resets 12pm")


def test_working_clears_reset_and_banner():
    fact = run([banner(0), working(5, session="b")])
    assert (fact.reset_at, fact.banner, fact.observed_at, fact.source_session) == (None, None, at(5), "b")


def test_working_refreshes_observed_at():
    assert run([working(0), working(30)]).observed_at == at(30)


@pytest.mark.parametrize(
    ("minutes_later", "expected"),
    [
        pytest.param(59, LimitState.AVAILABLE, id="recent-working-stays-available"),
        pytest.param(60, LimitState.UNKNOWN, id="old-working-becomes-unknown"),
    ],
)
def test_available_can_age_into_unknown(minutes_later, expected):
    fact = run([working(0)])
    assert expire(fact, at(minutes_later), available_for=timedelta(hours=1)).state is expected


def test_available_does_not_age_without_a_window():
    assert expire(run([working(0)]), at(100_000)).state is LimitState.AVAILABLE


def test_unknown_fact_has_no_evidence():
    assert unknown_fact("devin") == LimitFact("devin", LimitState.UNKNOWN, None, None, None, None)


def test_a_wall_older_than_the_accounts_last_working_sighting_does_not_flip_it_back():
    from afd.judge.limits import LimitState, observe_limited, observe_working, unknown_fact

    t0 = datetime(2026, 7, 13, 9, 0, tzinfo=timezone.utc)
    working = observe_working(unknown_fact("claude"), at=t0 + timedelta(seconds=5), session="s")
    old_wall = dict(reset_at=t0 - timedelta(minutes=1), at=t0 + timedelta(seconds=6), session="s", banner="(records)",
                    first_seen=True)
    # Recorded at t0, before the account was seen working at t0+5s: that wall is over, whatever its reset said.
    assert observe_limited(working, **old_wall, evidence_at=t0) == working
    # Drawn after the working sighting: a wall now (its reset already behind it, so lapsed: unknown, never available).
    assert observe_limited(working, **old_wall, evidence_at=t0 + timedelta(seconds=6)).state is LimitState.UNKNOWN
    fresh = {**old_wall, "reset_at": t0 + timedelta(hours=1)}
    assert observe_limited(working, **fresh, evidence_at=t0 + timedelta(seconds=6)).state is LimitState.LIMITED
