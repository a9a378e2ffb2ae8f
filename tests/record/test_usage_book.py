"""The usage record book: what is kept of each report, what the figures read back, and what survives a restart."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from afd.judge import usage
from afd.judge.usage import Stop
from afd.model import UsageReading, UsageWindow
from afd.record.store import Store
from afd.record.usage_book import PromptCache, UsageBook

T0 = datetime(2026, 7, 13, 12, 0, tzinfo=timezone.utc)
RESET = T0 + timedelta(hours=3)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def reading(minutes: float, used: float | None, reset=RESET, limit_id=None) -> UsageReading:
    return UsageReading("claude", at(minutes), (UsageWindow("five_hour", used, reset, 300, limit_id),), "statusline")


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "state.db") as s:
        yield s


def samples(store) -> list[tuple]:
    return [(r["at"][11:16], r["used_percent"]) for r in store.query("SELECT at, used_percent FROM usage_samples ORDER BY id")]


def test_a_moving_figure_is_sampled_once_a_minute_and_the_window_keeps_the_latest(store):
    book = UsageBook(store)
    assert book.record("claude", reading(0, 40.0))
    assert book.record("claude", reading(0.5, 40.5))  # changed, kept on the window's row
    assert not book.record("claude", reading(0.7, 40.5))  # unchanged: nothing written
    assert book.record("claude", reading(1.5, 41.0))
    assert samples(store) == [("12:00", 40.0), ("12:01", 41.0)]
    (w,) = usage.figures(book.inputs(at(2)), [], at(2), stale_after=900).account("claude").windows
    assert (w.used_percent, w.observed_at) == (41.0, at(1.5).replace(microsecond=0))


def test_a_report_older_than_the_one_kept_is_ignored(store):
    book = UsageBook(store)
    book.record("codex", reading(5, 30.0))
    assert not book.record("codex", reading(2, 10.0))  # another session's older records
    (w,) = usage.figures(book.inputs(at(6)), [], at(6), stale_after=900).account("codex").windows
    assert w.used_percent == 30.0


def test_the_figures_read_only_the_samples_the_burn_rate_needs(store):
    book = UsageBook(store)
    for m in range(0, 120, 2):
        book.record("claude", reading(m, 10 + m / 4))
    inputs = book.inputs(at(120))
    (series,) = inputs.samples.values()
    assert len(series) <= 20 and series[0].at < at(120) - usage.RECENT  # the one before the recent span, then the span


def test_what_is_kept_survives_a_new_book_on_the_same_store(store, tmp_path):
    book = UsageBook(store)
    book.record("claude", reading(0, 81.0))
    book.mark_alerts(["claude||five_hour|x|80"], at(0))
    book.add_stop(Stop("codex", "codex", at(-60), 7200.0))
    book.save_prompt_cache(PromptCache("claude", "s1", "/w", "/t.jsonl", False, None, 48000, at(0)))
    again = UsageBook(store)
    assert again.alerts_given() == {"claude||five_hour|x|80"}
    assert [s.busy_seconds for s in again.stops()["codex"]] == [7200.0]
    assert again.prompt_caches("claude")[0].recache_tokens == 48000
    assert not again.record("claude", reading(0.2, 81.0))


def test_stops_keep_the_last_ten_per_account(store):
    book = UsageBook(store)
    for i in range(14):
        book.add_stop(Stop("codex", "codex", at(i), 100.0 + i))
    assert [s.busy_seconds for s in book.stops()["codex"]] == [100.0 + i for i in range(4, 14)]


def test_prune_drops_what_is_older_than_the_longest_window(store):
    book = UsageBook(store)
    book.record("claude", reading(0, 5.0))
    book.mark_alerts(["k"], at(0))
    book.prune(at(9 * 24 * 60))
    assert samples(store) == [] and book.alerts_given() == set()
    assert usage.figures(book.inputs(at(9 * 24 * 60)), [], at(9 * 24 * 60), stale_after=900).accounts == ()
