"""The usage model: what the agents report, the provenance ladder, the forecast, and the early warnings (tables)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from afd.judge import usage
from afd.judge.usage import Busy, Provenance, Sample, Stop, UsageFigures, UsageInputs

T0 = datetime(2026, 7, 13, 12, 0, tzinfo=timezone.utc)
RESET = T0 + timedelta(hours=3)  # a 5-hour window that opened at 10:00
STALE = 15 * 60.0


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def sample(minutes: float, used: float | None, *, window="five_hour", reset=RESET, account="claude", limit_id=None,
           window_minutes=300, source="statusline") -> Sample:
    return Sample(account=account, agent=account.partition("@")[0].partition("-")[0], window=window, used_percent=used,
                  resets_at=reset, at=at(minutes), source=source, limit_id=limit_id, window_minutes=window_minutes)


def figures_of(*samples: Sample, now_minutes: float = 0, stops=(), busy=None, accounts=()) -> UsageFigures:
    by_key: dict = {}
    for s in samples:
        by_key.setdefault(s.key, []).append(s)
    inputs = UsageInputs(samples=by_key, stops={s.account: [x for x in stops if x.account == s.account] for s in stops},
                         busy={b.account: b for b in ([busy] if busy else [])})
    return usage.figures(inputs, accounts, at(now_minutes), stale_after=STALE)


# --- reading Claude Code's status line ------------------------------------------------

EPOCH = int(RESET.timestamp())


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        pytest.param({"session_id": "s"}, None, id="no-rate-limits-before-the-first-answer"),
        pytest.param({"rate_limits": None}, None, id="rate-limits-null"),
        pytest.param({"rate_limits": {"five_hour": None, "seven_day": None}}, None, id="every-window-null"),
        pytest.param({"rate_limits": {"five_hour": {"used_percentage": 42.5, "resets_at": EPOCH}}},
                     [("five_hour", 42.5, RESET, 300)], id="one-window"),
        pytest.param({"rate_limits": {"five_hour": None, "seven_day": {"used_percentage": 13, "resets_at": EPOCH}}},
                     [("seven_day", 13.0, RESET, 10080)], id="a-null-window-is-left-out"),
        pytest.param({"rate_limits": {"five_hour": {"used_percentage": EPOCH, "resets_at": EPOCH}}},
                     [("five_hour", None, RESET, 300)], id="used-percentage-equal-to-the-reset-epoch-is-no-figure"),
        pytest.param({"rate_limits": {"spend_limit": {"used_percentage": 112.0, "resets_at": EPOCH, "used_usd": 56}}},
                     [("spend_limit", 112.0, RESET, None)], id="a-spend-window-past-100"),
        pytest.param({"rate_limits": {"five_hour": {"used_percentage": "lots", "resets_at": "soon"}}},
                     [("five_hour", None, None, 300)], id="garbage-values-are-no-figures"),
    ],
)
def test_status_line_payload_to_windows(payload, expected):
    reading = usage.reading_from_statusline(payload, T0, "claude")
    if expected is None:
        assert reading is None
        return
    assert reading is not None and reading.source == "statusline" and reading.agent == "claude"
    assert [(w.window, w.used_percent, w.resets_at, w.window_minutes) for w in reading.windows] == expected


# --- the provenance ladder --------------------------------------------------------------


def test_an_exact_figure_carries_its_age_and_no_stale_flag_while_fresh():
    found = figures_of(sample(0, 40.0), now_minutes=5)
    (w,) = found.account("claude").windows
    assert (w.provenance, w.used_percent, w.resets_at, w.age_seconds, w.stale) == (Provenance.EXACT, 40.0, RESET, 300.0, False)
    assert w.provenance_words == "exact, 5m old"


def test_an_exact_figure_older_than_usage_stale_after_is_stale_and_forecasts_nothing():
    found = figures_of(sample(-30, 20.0), sample(0, 40.0), now_minutes=16)
    (w,) = found.account("claude").windows
    assert w.provenance is Provenance.EXACT and w.stale and w.forecast is None
    assert w.provenance_words.endswith("(stale)")


def test_a_window_whose_reset_has_passed_has_no_figure():
    found = figures_of(sample(0, 90.0), now_minutes=3 * 60 + 5)
    account = found.account("claude")
    assert account.windows == () and "reset" in account.note


def test_calibrated_from_the_accounts_own_walls_when_no_exact_figure():
    stops = [Stop("codex", "codex", at(-600), 3 * 3600.0), Stop("codex", "codex", at(-300), 2 * 3600.0)]
    found = figures_of(stops=stops, busy=Busy("codex", at(-60), 3600.0), accounts=[("codex", "codex")])
    (w,) = found.account("codex").windows
    assert (w.provenance, w.stops, w.window) == (Provenance.CALIBRATED, 2, "walls")
    assert w.provenance_words == "calibrated from 2 stops"
    assert w.used_percent == 40.0  # an hour of work against the median wall at 2.5 hours
    assert w.forecast is not None and (w.forecast.earliest, w.forecast.latest) == (at(60), at(120))


def test_exact_figures_win_over_calibration():
    stops = [Stop("claude", "claude", at(-600), 3 * 3600.0)]
    found = figures_of(sample(0, 10.0), stops=stops, busy=Busy("claude", at(-60), 600.0))
    assert [w.provenance for w in found.account("claude").windows] == [Provenance.EXACT]


def test_walls_hit_within_a_minute_of_work_calibrate_nothing():
    found = figures_of(stops=[Stop("codex", "codex", at(-10), 30.0)], accounts=[("codex", "codex")])
    assert found.account("codex").windows == ()


def test_an_account_with_neither_has_no_figure_at_all():
    found = figures_of(accounts=[("gemini", "gemini")])
    account = found.account("gemini")
    assert account.windows == () and account.note.startswith("no figure")


def test_a_switched_limit_id_keeps_each_limits_figures_apart():
    # Codex reported its own limit, then switched to a model's limit whose windows were null: the model's
    # limit has no samples (nothing measured), and the codex limit's figure stands with its own age.
    codex = sample(0, 30.0, account="codex", limit_id="codex", source="rollout")
    spark = sample(2, 70.0, account="codex", limit_id="codex_spark", source="rollout", window="seven_day",
                   window_minutes=10080, reset=at(3 * 24 * 60))
    found = figures_of(codex, spark, now_minutes=4)
    windows = found.account("codex").windows
    assert [(w.limit_id, w.window, w.used_percent, w.age_seconds) for w in windows] == [
        ("codex", "five_hour", 30.0, 240.0), ("codex_spark", "seven_day", 70.0, 120.0)]
    assert windows[1].label == "7-day (codex_spark)"


# --- the forecast -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("history", "now", "expected"),
    [
        # 10 % in the last 30 minutes (20 %/h) and 50 % over the 2 hours since 10:00 (25 %/h): from 50 %, two and a half
        # hours at the slower rate, an hour and a half at the faster.
        pytest.param([(-30, 40.0), (0, 50.0)], 0, (at(120), at(150), (20.0, 25.0)), id="two-rates-give-a-range"),
        pytest.param([(-30, 80.0), (0, 90.0)], 0, (at(40 / 3), at(30), (20.0, 45.0)), id="runs-out-soon"),
        # 2 %/h recently and 30 %/h on average: the slow bound falls past the reset, so it is no bound.
        pytest.param([(-30, 59.0), (0, 60.0)], 0, (at(80), None, (2.0, 30.0)), id="the-slow-bound-is-past-the-reset"),
        # Half a percent in two hours: whichever rate, the window resets first.
        pytest.param([(-30, 1.0), (0, 1.0)], 0, (None, None, (0.5, 0.5)), id="lasts-to-the-reset"),
        pytest.param([(0, 0.0)], 0, None, id="nothing-used-no-rate"),
        pytest.param([(0, 100.0)], 0, None, id="used-up-nothing-to-forecast"),
        pytest.param([(0, None)], 0, None, id="no-figure-no-forecast"),
    ],
)
def test_forecast_at_the_recent_burn_rate_as_a_range(history, now, expected):
    samples = [sample(m, u) for m, u in history]
    (w,) = figures_of(*samples, now_minutes=now).account("claude").windows
    if expected is None:
        assert w.forecast is None
        return
    earliest, latest, per_hour = expected
    f = w.forecast
    assert f is not None
    assert (f.earliest, f.latest) == (earliest, latest) or (
        _close(f.earliest, earliest) and _close(f.latest, latest)), (f.earliest, f.latest)
    assert f.per_hour == pytest.approx(per_hour, abs=0.01)


def _close(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return abs((a - b).total_seconds()) < 60


def test_the_forecast_reads_only_the_current_window_not_the_one_before():
    old = sample(-200, 95.0, reset=at(-100))
    new = [sample(-30, 5.0), sample(0, 10.0)]
    (w,) = figures_of(old, *new).account("claude").windows
    assert w.used_percent == 10.0
    assert w.forecast.per_hour == pytest.approx((5.0, 10.0))


def test_a_window_without_a_length_forecasts_from_the_recent_rate_alone():
    spend = [sample(-30, 40.0, window="spend_limit", window_minutes=None, reset=at(10 * 24 * 60)),
             sample(0, 60.0, window="spend_limit", window_minutes=None, reset=at(10 * 24 * 60))]
    (w,) = figures_of(*spend).account("claude").windows
    assert w.forecast.per_hour == pytest.approx((40.0, 40.0))
    assert _close(w.forecast.earliest, at(60)) and _close(w.forecast.latest, at(60))


# --- the value that leaves afd ----------------------------------------------------------


def test_figures_round_trip_through_their_json_with_a_schema_version():
    stops = [Stop("codex", "codex", at(-600), 3 * 3600.0)]
    found = figures_of(sample(-30, 40.0), sample(0, 50.0), stops=stops, busy=Busy("codex", at(-60), 600.0),
                       accounts=[("codex", "codex"), ("gemini", "gemini")])
    data = found.to_json()
    assert data["schema"] == usage.SCHEMA
    assert UsageFigures.from_json(data) == found


def test_figures_of_a_newer_schema_are_refused_not_half_read():
    with pytest.raises(ValueError, match="schema"):
        UsageFigures.from_json({"schema": usage.SCHEMA + 1, "at": "2026-07-13T12:00:00Z", "accounts": []})


# --- usage.high ----------------------------------------------------------------------------


def alerts(found, done=(), warn_at=(80, 95), spend=None):
    return usage.alerts_due(found, warn_at=warn_at, spend_warn_at=spend, runout_within=timedelta(minutes=30), done=done,
                            zone=timezone.utc)


SOON = at(30)  # a window near its end, opened 4.5 hours ago: its average burn rate is slow


def test_high_usage_alerts_once_per_window_and_level():
    first = alerts(figures_of(sample(-30, 70.0, reset=SOON), sample(0, 81.0, reset=SOON)))
    assert [a.level for a in first] == ["80"]
    assert first[0].message == "claude: 81 % of the 5-hour window used (exact, 0s old), resets 12:30"
    done = {a.key for a in first}
    assert alerts(figures_of(sample(-30, 70.0, reset=SOON), sample(1, 82.0, reset=SOON), now_minutes=1), done) == []
    # Straight from 81 to 96 in half an hour: the rate runs it out within minutes. Both said, once each.
    later = alerts(figures_of(sample(-30, 81.0, reset=SOON), sample(0, 96.0, reset=SOON)), done)
    assert sorted(a.level for a in later) == ["95", "runout"]
    assert [a.message for a in later if a.level == "runout"] == [
        "claude: the 5-hour window runs out in about 8 min at the recent burn rate (96 % used, exact, 0s old), "
        "resets 12:30"]
    done |= {a.key for a in later}
    assert alerts(figures_of(sample(-30, 81.0, reset=SOON), sample(0, 97.0, reset=SOON)), done) == []


def test_a_new_window_alerts_again():
    done = {a.key for a in alerts(figures_of(sample(0, 85.0, reset=SOON)))}
    next_window = sample(5 * 60, 85.0, reset=at(5 * 60 + 30))
    assert [a.level for a in alerts(figures_of(next_window, now_minutes=5 * 60), done)] == ["80"]


def test_a_jump_past_both_levels_is_one_event_and_both_count_as_told():
    first = alerts(figures_of(sample(0, 97.0, reset=at(5))))
    assert [a.level for a in first] == ["95"]
    assert alerts(figures_of(sample(1, 97.0, reset=at(5)), now_minutes=1), {a.key for a in first}) == []


def test_stale_and_calibrated_figures_never_alert():
    assert alerts(figures_of(sample(0, 99.0), now_minutes=20)) == []
    stops = [Stop("codex", "codex", at(-600), 3600.0)]
    assert alerts(figures_of(stops=stops, busy=Busy("codex", at(-60), 3500.0), accounts=[("codex", "codex")])) == []


def test_the_spend_window_alerts_at_spend_warn_at_only():
    spend = sample(0, 85.0, window="spend_limit", window_minutes=None, reset=at(10 * 24 * 60))
    assert alerts(figures_of(spend)) == []
    assert [a.level for a in alerts(figures_of(spend), spend=75.0)] == ["75"]
