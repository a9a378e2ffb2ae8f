"""The second witness end to end: fake agents that write their own records as well as banners, on real tmux."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest

from afd.cli.status import render
from afd.config.settings import Config
from afd.daemon.status import build_status
from afd.daemon.supervisor import Supervisor
from afd.observe.watch import MAX_CAPTURE_AGE
from afd.pluginset import load_plugins
from afd.record.store import Store
from afd.testing import records as R
from afd.world.tmux import ServerRef
from harness import start_fake, wait_for

pytestmark = pytest.mark.tmux


def real_now() -> datetime:
    # The fakes stamp their records with the real time; a record newer than
    # the judging instant is not evidence, so the supervisor judges by it too.
    return datetime.now(timezone.utc)


@pytest.fixture
def supervise(tmux_server, xdg_dirs):
    stores = []

    def make(config: Config | None = None) -> Supervisor:
        store = Store(xdg_dirs["XDG_STATE_HOME"] / "afd" / "state.db")
        stores.append(store)
        plugins = load_plugins(None, entry_points=False)
        return Supervisor(config or Config(poll_interval=0.05), plugins, store, ServerRef(socket_name=tmux_server.name), clock=real_now)

    yield make
    for store in stores:
        store.close()


def settle(sup: Supervisor, pane: str, predicate, message: str):
    def step():
        sup.poll()
        rec = next((r for r in sup.store.list_sessions() if r.pane_id == pane), None)
        return rec if rec is not None and predicate(rec) else None

    return wait_for(step, timeout=20, message=message)


def test_banner_the_transcript_confirms_is_limited_with_the_records_reset(tmux_server, supervise, capsys):
    scenario = {"limit_now": True, "records": "agree", "record_reset_seconds": 8220}
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, scenario=scenario, prompt="go")
    fake.wait_for_event("limit")
    sup = supervise()
    rec = settle(sup, fake.pane, lambda r: r.state == "limited", "limited")
    assert rec.witnesses == "pane+record"
    assert abs(rec.reset_at - (real_now() + timedelta(hours=2, minutes=17))) < timedelta(minutes=1)  # the record's, not the banner's
    report = build_status(sup.store, sup.plugins.agents, {"running": False})
    assert report["sessions"][0]["state"] == "limited" and report["sessions"][0]["witnesses"] == "pane+record"
    render(report, as_json=False)
    assert "pane+record" in capsys.readouterr().out


def test_banner_the_rollout_contradicts_is_disputed_not_limited(tmux_server, supervise):
    scenario = {"limit_now": True, "records": "dispute"}
    fake = start_fake(tmux_server, "codex", cwd=tmux_server.scratch, scenario=scenario, prompt="show me the banner")
    fake.wait_for_event("limit")
    sup = supervise()
    rec = settle(sup, fake.pane, lambda r: r.witnesses == "disputed", "disputed")
    for _ in range(3):
        sup.poll()
    rec = next(r for r in sup.store.list_sessions() if r.pane_id == fake.pane)
    assert rec.state == "idle" and rec.witnesses == "disputed" and rec.reset_at is None
    kinds = [e.event.kind for e in sup.store.recent_events(50)]
    assert kinds.count("session.disputed") == 1 and "session.limited" not in kinds
    assert sup.store.load_limits().get("codex") is None or sup.store.load_limits()["codex"].state.value != "limited"


def test_records_alone_make_an_idle_pane_limited(tmux_server, supervise):
    # A pattern that matches nothing: the pane shows no banner afd can read,
    # but the agent's rollout says its turn ended at the weekly limit.
    config = Config(poll_interval=0.05, limit_patterns={"codex": "no such banner anywhere"})
    scenario = {"limit_now": True, "records": "agree", "record_window": "weekly", "record_reset_seconds": 86400}
    fake = start_fake(tmux_server, "codex", cwd=tmux_server.scratch, scenario=scenario, prompt="go")
    fake.wait_for_event("limit")
    sup = supervise(config)
    rec = settle(sup, fake.pane, lambda r: r.state == "limited", "limited by the records")
    assert rec.witnesses == "record" and rec.last_banner is None
    assert abs(rec.reset_at - (real_now() + timedelta(days=1))) < timedelta(minutes=5)
    assert sup.store.load_limits()["codex"].state.value == "limited"


def test_a_fake_without_records_is_limited_by_the_pane_alone(tmux_server, supervise):
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, scenario={"limit_now": True}, prompt="go")
    fake.wait_for_event("limit")
    sup = supervise()
    rec = settle(sup, fake.pane, lambda r: r.state == "limited", "limited")
    assert rec.witnesses == "pane"


def test_two_agents_in_one_directory_fall_back_to_the_pane(tmux_server, supervise):
    # Records are found by directory and recency; the working one's newer
    # transcript must not be taken as the walled one's and dispute its wall.
    walled = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, scenario={"limit_now": True, "records": "agree"}, prompt="a")
    walled.wait_for_event("limit")
    busy = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, scenario={"records": "agree"}, prompt="b")
    busy.wait_for_event("work")
    sup = supervise()
    rec = settle(sup, walled.pane, lambda r: r.state == "limited", "limited")
    assert rec.witnesses == "pane"


def test_records_that_go_on_later_withdraw_the_limit_they_confirmed(tmux_server, supervise, xdg_dirs):
    fake = start_fake(tmux_server, "codex", cwd=tmux_server.scratch, scenario={"limit_now": True, "records": "agree"}, prompt="go")
    fake.wait_for_event("limit")
    sup = supervise()
    rec = settle(sup, fake.pane, lambda r: r.state == "limited", "limited")
    assert rec.witnesses == "pane+record" and sup.store.load_limits()["codex"].state.value == "limited"
    # The thread goes on (say, another client of the same thread), the banner stays on screen.
    (rollout,) = (xdg_dirs["HOME"] / ".codex" / "sessions").rglob("rollout-*.jsonl")
    R.append_jsonl(rollout, R.codex_reply(real_now(), "carried on"))
    # An unchanged limited pane is looked at again, records and all, on its backstop capture.
    sup.monotonic = lambda: time.monotonic() + MAX_CAPTURE_AGE
    rec = settle(sup, fake.pane, lambda r: r.witnesses == "disputed", "disputed")
    assert rec.state == "idle"
    assert sup.store.load_limits()["codex"].state.value == "unknown"
    assert "agent.unknown" in [e.event.kind for e in sup.store.recent_events(20)]
