"""The supervisor on a real tmux server with fake agents: adoption, identity, limits, the limit map."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest

from afd.config.settings import Config
from afd.daemon.status import build_status
from afd.daemon.supervisor import Supervisor
from afd.pluginset import load_plugins
from afd.record.store import Store
from afd.record.types import LimitState
from afd.world.tmux import ServerRef
from harness import start_fake, wait_for

pytestmark = pytest.mark.tmux

T0 = datetime(2026, 7, 13, 9, 0, tzinfo=timezone.utc)
REPEATED_BANNER = "You've hit your usage limit. Try again in 2 minutes."


class Clock:
    def __init__(self, now: datetime = T0):
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def plugins():
    return load_plugins(None, entry_points=False)


@pytest.fixture
def make_supervisor(tmux_server, plugins, xdg_dirs):
    stores = []

    def make(clock=None, config=None, store_path=None):
        store = Store(store_path or xdg_dirs["XDG_STATE_HOME"] / "afd" / "state.db")
        stores.append(store)
        return Supervisor(
            config or Config(poll_interval=0.05),
            plugins,
            store,
            ServerRef(socket_name=tmux_server.name),
            clock=clock or Clock(),
        )

    yield make
    for store in stores:
        store.close()


def session_of(sup: Supervisor, pane: str):
    return next((r for r in sup.store.list_sessions() if r.pane_id == pane), None)


def poll_until(sup: Supervisor, predicate, timeout: float = 15.0, message: str = "condition"):
    def step():
        sup.poll()
        return predicate()

    return wait_for(step, timeout=timeout, interval=0.05, message=message)


def test_known_agent_pane_is_adopted_with_the_mission_from_its_argv(tmux_server, make_supervisor):
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, prompt="fix the login redirect")
    fake.wait_ready()
    sup = make_supervisor()
    rec = poll_until(sup, lambda: session_of(sup, fake.pane), message="adoption")
    assert rec.agent == "claude" and rec.identity == "known" and rec.identity_source == "process"
    assert rec.mission == "fix the login redirect"
    assert rec.agent_pid == fake.pid
    assert any(e.event.kind == "session.adopted" for e in sup.store.recent_events())


def test_agent_behind_a_wrapper_script_is_not_adopted(tmux_server, make_supervisor):
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, command_name="my-wrapper", prompt="x")
    plain = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, prompt="y")  # the positive control
    fake.wait_ready()
    plain.wait_ready()
    sup = make_supervisor()
    poll_until(sup, lambda: session_of(sup, plain.pane), message="the plain claude adopted")
    for _ in range(2):
        sup.poll()
    assert session_of(sup, fake.pane) is None
    assert [r.pane_id for r in sup.store.list_sessions()] == [plain.pane]


def test_agent_started_through_an_interpreter_path_is_known(tmux_server, make_supervisor):
    # The fake bin scripts run as `<python> /…/bin/codex …`: the interpreter shows in tmux.
    fake = start_fake(tmux_server, "codex", cwd=tmux_server.scratch, prompt="tidy the config", in_shell=True)
    fake.wait_ready()
    sup = make_supervisor()
    rec = poll_until(sup, lambda: session_of(sup, fake.pane), message="adoption")
    assert rec.agent == "codex" and rec.mission == "tidy the config"


def test_limited_idle_fake_is_limited_with_a_reset_that_does_not_move(tmux_server, make_supervisor):
    scenario = {"limit_now": True, "banner": "codex.usage-limit", "banner_params": {"form": "in", "reset": "3 hours 2 minutes"}}
    fake = start_fake(tmux_server, "codex", cwd=tmux_server.scratch, scenario=scenario, prompt="go")
    fake.wait_for_event("limit")
    clock = Clock()
    sup = make_supervisor(clock)
    rec = poll_until(sup, lambda: (r := session_of(sup, fake.pane)) and r.state == "limited" and r, message="limited")
    expected = T0 + timedelta(hours=3, minutes=2)
    assert rec.reset_at == expected
    for minutes in range(1, 30, 3):  # a static "in 3 hours" must not be re-read every poll
        clock.now = T0 + timedelta(minutes=minutes)
        sup.poll()
    rec = session_of(sup, fake.pane)
    assert rec.state == "limited" and rec.reset_at == expected
    fact = sup.store.load_limits()["codex"]
    assert fact.state is LimitState.LIMITED and fact.reset_at == expected and fact.source_session == rec.name
    report = build_status(sup.store, sup.plugins.agents, {"running": False})
    assert [s["state"] for s in report["sessions"]] == ["limited"]
    assert report["sessions"][0]["reset_at"] == "2026-07-13T12:02:00Z"


def test_working_fake_is_never_judged(tmux_server, make_supervisor):
    # Long work with a banner-like line in its output: the spinner keeps the pane changing.
    scenario = {"work_seconds": 30, "work_output": ["■ You've hit your usage limit. Try again later."]}
    fake = start_fake(tmux_server, "codex", cwd=tmux_server.scratch, scenario=scenario, prompt="work")
    fake.wait_for_event("work_start")
    sup = make_supervisor()
    states = set()
    deadline = time.monotonic() + 4
    while time.monotonic() < deadline:
        sup.poll()
        rec = session_of(sup, fake.pane)
        if rec:
            states.add(rec.state)
        time.sleep(1.05)  # a poll interval longer than a second, as real ones are: the elapsed counter ticks
    assert "limited" not in states and "working" in states
    assert sup.store.load_limits().get("codex") is None or sup.store.load_limits()["codex"].state is not LimitState.LIMITED


def test_second_codex_session_sees_codex_limited_from_the_first(tmux_server, make_supervisor):
    walled = start_fake(tmux_server, "codex", cwd=tmux_server.scratch, scenario={"limit_now": True}, prompt="a")
    other = start_fake(tmux_server, "codex", cwd=tmux_server.scratch, prompt="b")
    walled.wait_for_event("limit")
    # Its first turn over: a codex seen busy on a request would rightly count the account available.
    other.wait_idle(1)
    sup = make_supervisor()
    poll_until(sup, lambda: (r := session_of(sup, walled.pane)) and r.state == "limited", message="first limited")
    second = session_of(sup, other.pane)
    assert second is not None and second.state != "limited"
    report = build_status(sup.store, sup.plugins.agents, {"running": False})
    codex = next(a for a in report["agents"] if a["name"] == "codex")
    assert codex["state"] == "limited" and codex["source_session"] == session_of(sup, walled.pane).name
    # every agent the plugins provide is listed; the ones never seen are unknown, not available
    assert {a["name"]: a["state"] for a in report["agents"]}["claude"] == "unknown"


def test_limit_map_turns_unknown_after_the_reset_and_the_same_banner_does_not_renew_it(tmux_server, make_supervisor):
    scenario = {"limit_now": True, "banner": "codex.usage-limit", "banner_params": {"form": "in", "reset": "1 hour"}}
    fake = start_fake(tmux_server, "codex", cwd=tmux_server.scratch, scenario=scenario, prompt="go")
    fake.wait_for_event("limit")
    clock = Clock()
    sup = make_supervisor(clock)
    poll_until(sup, lambda: sup.store.load_limits().get("codex") and sup.store.load_limits()["codex"].state is LimitState.LIMITED)
    clock.now = T0 + timedelta(hours=1, minutes=1)
    for _ in range(3):
        sup.poll()
    assert sup.store.load_limits()["codex"].state is LimitState.UNKNOWN
    assert any(e.event.kind == "agent.unknown" for e in sup.store.recent_events())


def test_pane_killed_between_polls_is_gone(tmux_server, make_supervisor):
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, prompt="x")
    fake.wait_ready()
    sup = make_supervisor()
    rec = poll_until(sup, lambda: session_of(sup, fake.pane), message="adoption")
    tmux_server.run("kill-pane", "-t", fake.pane)
    poll_until(sup, lambda: sup.store.get_session(rec.name).state == "gone", message="gone")
    assert any(e.event.kind == "session.gone" for e in sup.store.recent_events())


def test_tmux_server_killed_under_the_supervisor_is_reported_not_a_crash(tmux_server, make_supervisor):
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, prompt="x")
    fake.wait_ready()
    sup = make_supervisor()
    rec = poll_until(sup, lambda: session_of(sup, fake.pane), message="adoption")
    tmux_server.kill()
    summary = sup.poll()
    assert summary.answered and not summary.server_running
    assert sup.store.get_session(rec.name).state == "gone"
    assert any(e.event.kind == "tmux.down" for e in sup.store.recent_events())


def test_restart_keeps_sessions_and_the_limit_map_and_rebinds_the_same_process(tmux_server, make_supervisor, xdg_dirs):
    fake = start_fake(tmux_server, "codex", cwd=tmux_server.scratch, scenario={"limit_now": True}, prompt="go")
    fake.wait_for_event("limit")
    first = make_supervisor()
    poll_until(first, lambda: (r := session_of(first, fake.pane)) and r.state == "limited")
    name = session_of(first, fake.pane).name
    first.store.close()

    second = make_supervisor()
    assert second.store.load_limits()["codex"].state is LimitState.LIMITED
    for _ in range(3):
        second.poll()
    rec = second.store.get_session(name)
    assert rec.state == "limited" and rec.pane_id == fake.pane and rec.agent_pid == fake.pid
    assert len(second.store.list_sessions()) == 1


def test_pane_id_on_a_new_server_is_not_the_old_session(tmux_server, make_supervisor):
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, prompt="x")
    fake.wait_ready()
    sup = make_supervisor()
    rec = poll_until(sup, lambda: session_of(sup, fake.pane), message="adoption")
    tmux_server.kill()
    again = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, prompt="write the tests")  # pane ids restart at %0
    again.wait_ready()
    poll_until(sup, lambda: sup.store.get_session(rec.name).state == "gone", message="old session gone")
    new = poll_until(sup, lambda: next((r for r in sup.store.list_sessions() if r.state != "gone"), None))
    assert new.name != rec.name and new.mission == "write the tests"


def test_watch_ignore_skips_matching_panes(tmux_server, make_supervisor):
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, prompt="x")
    other = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, prompt="y")  # another tmux session: watched
    fake.wait_ready()
    other.wait_ready()
    location = tmux_server.pane_field(fake.pane, "#{session_name}:#{window_index}.#{pane_index}")
    sup = make_supervisor(config=Config(poll_interval=0.05, watch_ignore=(location.split(":")[0] + ":*",)))
    poll_until(sup, lambda: session_of(sup, other.pane), message="the pane outside the ignore pattern adopted")
    for _ in range(2):
        sup.poll()
    assert [r.pane_id for r in sup.store.list_sessions()] == [other.pane]


def test_agent_that_exits_leaves_an_exited_session_that_follows_its_next_start(tmux_server, make_supervisor):
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, prompt="write the changelog",
                      scenario={"exit_after_seconds": 1.5}, in_shell=True)
    fake.wait_ready()
    sup = make_supervisor()
    rec = poll_until(sup, lambda: session_of(sup, fake.pane), message="adoption")
    poll_until(sup, lambda: sup.store.get_session(rec.name).state == "exited", message="exited")
    tmux_server.send_keys(fake.pane, "claude 'write the release notes'", literal=True)
    tmux_server.send_keys(fake.pane, "Enter")
    again = poll_until(sup, lambda: (r := sup.store.get_session(rec.name)).state != "exited" and r.agent_pid and r,
                       message="the same session following the new agent")
    assert again.pane_id == fake.pane and again.agent_pid != rec.agent_pid
    assert len(sup.store.list_sessions()) == 1
    assert any(e.event.kind == "session.started" for e in sup.store.recent_events())


def test_sessions_of_another_server_are_left_alone_when_this_one_is_down(tmux_server, make_supervisor):
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, prompt="x")
    fake.wait_ready()
    sup = make_supervisor()
    rec = poll_until(sup, lambda: session_of(sup, fake.pane), message="adoption")
    other = make_supervisor()
    other.server = ServerRef(socket_name=tmux_server.name + "-absent")
    other.poll()
    assert other.store.get_session(rec.name).state != "gone"


def test_the_same_banner_printed_again_after_the_agent_worked_is_a_new_limit(tmux_server, make_supervisor):
    # The user retries after the reset: the agent works, then prints the same
    # sentence again. That is a new banner (a new observation), so its
    # relative reset is read against the moment it appeared — not the first
    # banner's lapsed time — and the limit map is limited again.
    clock = Clock()
    sup = make_supervisor(clock)
    scenario = {"limit_now": True, "banner": "codex.usage-limit", "banner_params": {"form": "in", "reset": "2 minutes"}}
    fake = start_fake(tmux_server, "codex", cwd=tmux_server.scratch, scenario=scenario)
    fake.wait_for_event("limit")

    def session():
        return next((r for r in sup.store.list_sessions() if r.pane_id == fake.pane), None)

    poll_until(sup, lambda: (r := session()) and r.state == "limited", message="first limit")
    assert session().reset_at == T0 + timedelta(minutes=2)

    clock.now = T0 + timedelta(minutes=3)
    sup.poll()
    assert sup.store.load_limits()["codex"].state is LimitState.UNKNOWN

    fake.type("try again please")
    fake.wait_for_screen(lambda text: text.count(REPEATED_BANNER) == 2, message="the banner printed again")
    def limited_again():
        rec = session()
        return rec.state == "limited" and rec.banner_first_seen_at == clock.now

    poll_until(sup, limited_again, message="limited again, at a banner first seen now")
    assert session().reset_at == T0 + timedelta(minutes=5)
    fact = sup.store.load_limits()["codex"]
    assert fact.state is LimitState.LIMITED and fact.reset_at == T0 + timedelta(minutes=5)


def test_a_live_pane_is_never_gone_and_its_next_agent_is_the_same_session(tmux_server, make_supervisor):
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, prompt="write the changelog",
                      scenario={"exit_after_seconds": 1.0}, in_shell=True)
    fake.wait_ready()
    sup = make_supervisor()
    rec = poll_until(sup, lambda: session_of(sup, fake.pane), message="adoption")
    poll_until(sup, lambda: sup.store.get_session(rec.name).state == "exited", message="exited")
    # The user runs something that is not an agent in the same pane.
    tmux_server.send_keys(fake.pane, "sleep 600", literal=True)
    tmux_server.send_keys(fake.pane, "Enter")
    wait_for(lambda: tmux_server.pane_field(fake.pane, "#{pane_current_command}") == "sleep", message="sleep running")
    for _ in range(3):
        sup.poll()
    assert sup.store.get_session(rec.name).state == "exited"
    tmux_server.send_keys(fake.pane, "C-c")
    tmux_server.send_keys(fake.pane, "claude 'write the release notes'", literal=True)
    tmux_server.send_keys(fake.pane, "Enter")
    again = poll_until(sup, lambda: (r := sup.store.get_session(rec.name)).agent_pid and r, message="started again")
    assert again.state != "gone" and again.mission == "write the changelog"
    assert [r.name for r in sup.store.list_sessions()] == [rec.name]
    kinds = [e.event.kind for e in sup.store.recent_events() if e.event.session == rec.name]
    assert "session.gone" not in kinds and kinds.count("session.exited") == 1
    assert any("started again" in e.event.message for e in sup.store.recent_events() if e.event.kind == "session.started")


def test_a_reloaded_config_judges_an_unchanged_pane_again_at_once(tmux_server, make_supervisor):
    # Under the first config the wall reads as no banner; the screen then never changes, so only the
    # reload can make afd look again (its once-a-minute backstop capture is far off).
    fake = start_fake(tmux_server, "codex", cwd=tmux_server.scratch, scenario={"limit_now": True}, prompt="go")
    fake.wait_for_event("limit")
    sup = make_supervisor(config=Config(poll_interval=0.05, limit_patterns={"codex": "no such banner anywhere"}))
    name = poll_until(sup, lambda: (r := session_of(sup, fake.pane)) and r.state == "idle" and r.name, message="idle")
    watch = sup.watches[name]
    poll_until(sup, lambda: not watch.needs_capture(watch.fingerprint, sup.monotonic()), message="nothing to capture again")
    sup.config = Config(poll_interval=0.05)
    poll_until(sup, lambda: session_of(sup, fake.pane).state == "limited", timeout=5, message="limited under the reloaded config")


def test_the_limit_maps_events_say_what_happened(make_supervisor):
    from afd.judge import limits
    from afd.judge.sessions import SeenLimited

    clock = Clock()
    sup = make_supervisor(clock=clock)
    said = []
    sup.emit = lambda event, event_id: said.append(event.message)
    # Seen working a moment ago, then a wall recorded before that: nothing changes, nothing is said.
    sup._observe_working("claude", "claude", "s", T0)
    clock.now = T0 + timedelta(seconds=1)
    lapsed = dict(agent="claude", session="s", account="claude", banner="(records)", reset_at=T0 - timedelta(minutes=5),
                  first_seen=True)
    sup._observe_limited(SeenLimited(**lapsed, seen_at=T0 - timedelta(seconds=30)), clock.now)
    assert sup._fact("claude", "claude").state is LimitState.AVAILABLE
    # A wall drawn after it whose reset has already passed: unknown, and said so, not "not seen working".
    sup._observe_limited(SeenLimited(**lapsed, seen_at=clock.now), clock.now)
    assert said[-1] == "claude is unknown again: a usage limit whose reset had already passed was seen in s"
    # Seen working again, then left alone past AVAILABLE_FOR: now it is said that it was not seen working.
    sup._observe_working("claude", "claude", "s", clock.now)
    clock.now += timedelta(hours=1, seconds=1)
    sup._expire_limits(clock.now)
    assert said[-1] == "claude is unknown again: last seen working at 2026-07-13T09:00:01Z, over 1:00:00 ago"
    assert [m.split(":")[0] for m in said] == ["claude is available", "claude is unknown again", "claude is available",
                                               "claude is unknown again"]
    assert limits.LimitState.UNKNOWN is sup._fact("claude", "claude").state
