"""Codex's usage before the wall: its rollout's `token_count` records, read through the `afd_usage` hook."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from afd.model import AgentProcess, UsageReading, UsageWindow
from afd.pluginset import load_plugins
from afd.testing import records as R
from afd_plugins import _codex_records as codex

T0 = datetime(2026, 7, 13, 9, 0, tzinfo=timezone.utc)
RESET = T0 + timedelta(hours=2)
WEEK = T0 + timedelta(days=3)
CWD = "/home/me/src/shop"


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def five(used, reset=RESET):
    return R.codex_window("five_hour", used, reset)


def week(used, reset=WEEK):
    return R.codex_window("weekly", used, reset)


LAST = at(-1)


def w(window, used, reset, limit_id="codex", minutes=None, observed=LAST):
    minutes = minutes or {"five_hour": 300, "seven_day": 10080}[window]
    return UsageWindow(window, used, reset, minutes, limit_id, observed)


@pytest.mark.parametrize(
    ("records", "expected_windows", "unmeasured"),
    [
        pytest.param([R.codex_prompt(at(-2), "go")], None, (), id="no-token-count-no-reading"),
        pytest.param([R.codex_token_count(at(-1), five(42.5), week(13))],
                     [w("five_hour", 42.5, RESET), w("seven_day", 13.0, WEEK)], (), id="both-windows"),
        pytest.param([R.codex_token_count(at(-1), week(13), five(42.5))],
                     [w("seven_day", 13.0, WEEK), w("five_hour", 42.5, RESET)], (), id="by-length-not-by-position"),
        pytest.param([R.codex_token_count(at(-1), None, None)], [], ("codex",), id="null-windows-are-unmeasured-not-zero"),
        pytest.param([R.codex_token_count(at(-5), five(10), None), R.codex_token_count(at(-1), five(20), None)],
                     [w("five_hour", 20.0, RESET)], (), id="the-latest-report-wins"),
        # A snapshot switched to a model's own limit: each limit keeps its own latest windows, with its own time.
        pytest.param([R.codex_token_count(at(-5), five(30), week(12)),
                      R.codex_token_count(at(-1), five(100), None, limit_id="codex_spark", limit_name="GPT-5.3-Codex-Spark")],
                     [w("five_hour", 30.0, RESET, observed=at(-5)), w("seven_day", 12.0, WEEK, observed=at(-5)),
                      w("five_hour", 100.0, RESET, "codex_spark")], (), id="switched-limit-id"),
        pytest.param([R.codex_token_count(at(-5), five(30), None),
                      R.codex_token_count(at(-1), None, None, limit_id="codex_spark")],
                     [w("five_hour", 30.0, RESET, observed=at(-5))], ("codex_spark",), id="switched-to-null-windows"),
        pytest.param([R.codex_token_count(at(-1), R.codex_window(60.0, 7, RESET), None)],
                     [w("60m", 7.0, RESET, minutes=60)], (), id="another-length"),
        pytest.param([R.codex_token_count(at(-1), {"used_percent": 5, "window_minutes": None, "resets_at": None}, None)],
                     [], ("codex",), id="a-window-of-no-length-is-left-out"),
        pytest.param([R.codex_token_count(at(2), five(99), None)], None, (), id="written-after-the-judging-instant"),
    ],
)
def test_usage_from_token_count_records(records, expected_windows, unmeasured):
    reading = codex.usage_of(records, until=T0)
    if expected_windows is None:
        assert reading is None
        return
    assert reading is not None and (reading.agent, reading.source) == ("codex", "rollout")
    assert list(reading.windows) == expected_windows
    assert reading.unmeasured == unmeasured


def test_plan_type_is_read_when_the_record_states_it():
    reading = codex.usage_of([R.codex_token_count(at(-1), five(5), None, plan_type="pro")], until=T0)
    assert reading.plan_type == "pro"
    assert codex.usage_of([R.codex_token_count(at(-1), five(5), None)], until=T0).plan_type is None


def test_the_hook_reads_the_sessions_rollout_by_its_cwd(tmp_path):
    home = tmp_path / ".codex"
    now = datetime.now(timezone.utc)
    path = R.codex_rollout_path(home, now, "t1")
    R.append_jsonl(path, [R.codex_meta(now, CWD, "t1"), R.codex_token_count(now, R.codex_window("five_hour", 64, now + timedelta(hours=1)), None)])
    plugins = load_plugins(None)
    process = AgentProcess(pid=None, cwd=CWD, start_time=now - timedelta(minutes=5), account_env=(("CODEX_HOME", str(home)),))
    reading = plugins.usage("codex", process, now + timedelta(seconds=1))
    assert isinstance(reading, UsageReading) and [x.used_percent for x in reading.windows] == [64.0]
    assert plugins.has_usage("codex") and not plugins.has_usage("claude")
    elsewhere = AgentProcess(pid=None, cwd="/somewhere/else", start_time=process.start_time, account_env=process.account_env)
    assert plugins.usage("codex", elsewhere, now) is None


def test_a_usage_reader_that_fails_is_no_reading(tmp_path, caplog):
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "broken_usage.py").write_text(
        "from afd import hookimpl\n"
        "from afd.model import AgentSpec\n"
        "@hookimpl\ndef afd_agents():\n    return [AgentSpec(name='brokenagent', executables=('brokenagent',), command=('brokenagent',))]\n"
        "@hookimpl\ndef afd_usage(agent, process, until):\n    raise RuntimeError('boom')\n"
    )
    plugins = load_plugins(folder)
    process = AgentProcess(pid=None, cwd="/x", start_time=None)
    assert plugins.usage("brokenagent", process, T0) is None
    assert plugins.has_usage("brokenagent")
