"""Resuming the same agent at its reset, on a real tmux server with the fake agents."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest

from afd.config.settings import AgentOverride, Config
from afd.daemon.supervisor import Supervisor
from afd.pluginset import load_plugins
from afd.record.store import Store
from afd.record.types import JournalState
from afd.world.tmux import ServerRef
from harness import start_fake, wait_for

pytestmark = pytest.mark.tmux

MESSAGE = "Limit over: carry on with the task."


class ShiftClock:
    """Real time plus a shift the test moves forward, so waits inside afd still pass."""

    def __init__(self):
        self.shift = timedelta(0)

    def __call__(self) -> datetime:
        return datetime.now(timezone.utc) + self.shift

    def jump_to(self, when: datetime) -> None:
        self.shift += when - self()


@pytest.fixture
def supervisor(tmux_server, xdg_dirs):
    stores = []

    def make(clock, **settings):
        store = Store(xdg_dirs["XDG_STATE_HOME"] / "afd" / "state.db")
        stores.append(store)
        config = Config(**{
            "poll_interval": 0.05,
            "limit_auto_resume": True,
            "resume_grace": 60.0,
            "agents": {a: AgentOverride(resume_message=MESSAGE) for a in ("claude", "codex")},
            **settings,
        })
        return Supervisor(config, load_plugins(None, entry_points=False), store, ServerRef(socket_name=tmux_server.name), clock=clock)

    yield make
    for store in stores:
        store.close()


def session(sup, pane):
    return next((r for r in sup.store.list_sessions() if r.pane_id == pane), None)


def poll_until(sup, predicate, timeout=15.0, message="condition"):
    def step():
        sup.poll()
        return predicate()

    return wait_for(step, timeout=timeout, interval=0.05, message=message)


def wall_lifted(fake, lasts: float = 1.0) -> None:
    """Until the fake's own wall (``limit_lasts_seconds``) is over, so a continuation can do work."""
    wait_for(lambda: time.time() - fake.events("limit")[0]["t"] > lasts + 0.2, message="the fake's wall to lift")


def continuations(fake) -> list[dict]:
    return [e for e in fake.events("input") if MESSAGE in e["text"]]


def resume_entries(sup) -> list:
    rows = sup.store._rows("SELECT id FROM journal WHERE action = 'resume' ORDER BY id")
    return [sup.store.journal_entry(r["id"]) for r in rows]


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_limited_agent_is_resumed_once_at_reset_plus_grace_not_before(tmux_server, supervisor, agent):
    fake = start_fake(tmux_server, agent, cwd=tmux_server.scratch, scenario={"limit_now": True, "limit_lasts_seconds": 1})
    fake.wait_ready()
    clock = ShiftClock()
    sup = supervisor(clock)
    rec = poll_until(sup, lambda: (r := session(sup, fake.pane)) and r.state == "limited" and r, message="limited")
    assert rec.reset_at is not None and rec.reset_at > clock()
    plan = poll_until(sup, lambda: (r := session(sup, fake.pane)).next_action and r.next_action, message="a plan")
    assert plan.action == "resume" and plan.why == "reset"

    clock.jump_to(rec.reset_at + timedelta(seconds=50))  # past the reset, inside the grace
    for _ in range(5):
        sup.poll()
    assert continuations(fake) == [] and resume_entries(sup) == []

    wall_lifted(fake)
    clock.jump_to(rec.reset_at + timedelta(seconds=61))
    poll_until(sup, lambda: continuations(fake), message="the continuation in the fake's log")
    entry = poll_until(sup, lambda: (e := resume_entries(sup)) and e[-1].state is not JournalState.PENDING and e[-1], message="the resume settled")
    assert entry.state is JournalState.DONE and entry.outcome.startswith("confirmed")
    fake.wait_idle(works=1)
    for _ in range(10):
        sup.poll()
    assert len(continuations(fake)) == 1 and continuations(fake)[0]["via"] == "paste"
    kinds = [e.event.kind for e in sup.store.recent_events(200)]
    assert kinds.count("resume.sent") == 1 and kinds.count("resume.confirmed") == 1
    assert fake.events("key") == []  # no Escape, ever


def test_auto_resume_off_sends_nothing_and_says_how_to_resume(tmux_server, supervisor):
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, scenario={"limit_now": True})
    fake.wait_ready()
    clock = ShiftClock()
    sup = supervisor(clock)
    sup.config = Config(**{**{f: getattr(sup.config, f) for f in ("poll_interval", "resume_grace", "agents")}, "limit_auto_resume": False})
    rec = poll_until(sup, lambda: (r := session(sup, fake.pane)) and r.state == "limited" and r, message="limited")
    clock.jump_to(rec.reset_at + timedelta(hours=1))
    for _ in range(15):
        sup.poll()
    assert continuations(fake) == [] and resume_entries(sup) == []
    assert f"afd resume {rec.name}" in session(sup, fake.pane).next_action.why


class Crash(BaseException):
    """Stands for SIGKILL: the process stops between two statements, nothing runs after it."""


@pytest.mark.parametrize(
    ("step", "when"),
    [("scheduled", "after"), ("text_pasted", "before"), ("text_pasted", "after"), ("submitted", "before"), ("submitted", "after")],
    ids=["after-scheduled", "pasted-recorded-not-done", "pasted-done", "submitted-recorded-not-done", "submitted-done"],
)
def test_a_crash_at_any_journal_step_still_sends_exactly_one_continuation(tmux_server, supervisor, monkeypatch, step, when):
    from afd.act import runner

    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, scenario={"limit_now": True, "limit_lasts_seconds": 1})
    fake.wait_ready()
    clock = ShiftClock()
    sup = supervisor(clock)
    rec = poll_until(sup, lambda: (r := session(sup, fake.pane)) and r.state == "limited" and r, message="limited")
    wall_lifted(fake)
    clock.jump_to(rec.reset_at + timedelta(minutes=5))

    real_begin, real_perform = runner.begin, runner._perform

    def crashing_begin(*args, **kwargs):
        real_begin(*args, **kwargs)
        raise Crash(step)

    def crashing_perform(sup_, pane_id, move):
        if move.step != step:
            return real_perform(sup_, pane_id, move)
        if when == "after":
            real_perform(sup_, pane_id, move)
        raise Crash(step)

    if step == "scheduled":
        monkeypatch.setattr(runner, "begin", crashing_begin)
    else:
        monkeypatch.setattr(runner, "_perform", crashing_perform)
    with pytest.raises(Crash):
        poll_until(sup, lambda: False, timeout=15, message="the crash")
    monkeypatch.undo()
    pending = sup.store.pending_journal()
    assert [e.intent["step"] for e in pending] == [step]

    # A new daemon: nothing in memory, the same state file.
    restarted = supervisor(clock)
    entry = poll_until(restarted, lambda: (e := resume_entries(restarted)) and e[-1].state is not JournalState.PENDING and e[-1],
                       message="the resume settled after the restart")
    assert entry.state is JournalState.DONE, entry.outcome
    fake.wait_idle(works=1)
    for _ in range(10):
        restarted.poll()
    assert len(continuations(fake)) == 1
    assert len(resume_entries(restarted)) == 1
    assert session(restarted, fake.pane).state in ("working", "idle")


def plan_of(sup, fake) -> dict:
    shown = session(sup, fake.pane).next_action
    return shown.as_json() if shown is not None else {}


def test_banner_without_a_time_is_retried_after_the_retry_interval(tmux_server, supervisor):
    scenario = {"limit_now": True, "limit_lasts_seconds": 1, "banner_params": {"form": "later"}}
    fake = start_fake(tmux_server, "codex", cwd=tmux_server.scratch, scenario=scenario)
    fake.wait_ready()
    clock = ShiftClock()
    sup = supervisor(clock, limit_retry_interval=600.0)
    rec = poll_until(sup, lambda: (r := session(sup, fake.pane)) and r.state == "limited" and r, message="limited")
    assert rec.reset_at is None
    plan = poll_until(sup, lambda: plan_of(sup, fake).get("why") == "retry" and plan_of(sup, fake), message="a retry plan")
    assert plan["at"] == (rec.banner_first_seen_at + timedelta(seconds=600)).strftime("%Y-%m-%dT%H:%M:%SZ")
    wall_lifted(fake)
    clock.jump_to(rec.banner_first_seen_at + timedelta(seconds=590))
    for _ in range(5):
        sup.poll()
    assert continuations(fake) == []
    clock.jump_to(rec.banner_first_seen_at + timedelta(seconds=601))
    poll_until(sup, lambda: continuations(fake), message="the retry")
    fake.wait_idle(works=1)
    for _ in range(5):
        sup.poll()
    assert len(continuations(fake)) == 1


def test_immediate_relimit_backs_off_across_a_restart_and_the_attempt_cap_stops_for_a_human(tmux_server, supervisor):
    # The wall never lifts: every continuation meets it again at once.
    scenario = {"limit_now": True, "banner_params": {"form": "later"}}
    fake = start_fake(tmux_server, "codex", cwd=tmux_server.scratch, scenario=scenario)
    fake.wait_ready()
    clock = ShiftClock()
    sup = supervisor(clock, limit_retry_interval=1.0, resume_max_attempts=2)
    poll_until(sup, lambda: len(continuations(fake)) == 1, message="the first continuation")
    plan = poll_until(sup, lambda: (p := plan_of(sup, fake)).get("why") == "backoff" and p, message="a backoff")
    assert plan["attempt"] == 2 and plan["of"] == 2
    first_seen = sup.store.resume_history(session(sup, fake.pane).name).relimited_at
    assert plan["at"] == (first_seen + timedelta(seconds=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    for _ in range(5):
        sup.poll()
    assert len(continuations(fake)) == 1

    restarted = supervisor(clock, limit_retry_interval=1.0, resume_max_attempts=2)
    for _ in range(5):
        restarted.poll()
    assert plan_of(restarted, fake)["at"] == plan["at"] and len(continuations(fake)) == 1

    clock.jump_to(first_seen + timedelta(seconds=31))
    poll_until(restarted, lambda: len(continuations(fake)) == 2, message="the second continuation")
    final = poll_until(restarted, lambda: (p := plan_of(restarted, fake)).get("action") == "needs-human" and p, message="the cap")
    assert "2 resumes did not get past this limit" in final["why"]
    clock.jump_to(clock() + timedelta(hours=3))
    for _ in range(10):
        restarted.poll()
    assert len(continuations(fake)) == 2


@pytest.mark.parametrize("how", ["dead-pane", "shell-prompt", "dead-pane-crash-after-respawn"])
def test_agent_that_exited_at_its_limit_is_started_again_with_its_resume_args(tmux_server, supervisor, monkeypatch, how):
    import os
    import signal

    from afd.act import runner

    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, scenario={"limit_now": True},
                      remain_on_exit=how.startswith("dead-pane"), in_shell=how == "shell-prompt")
    fake.wait_ready()
    clock = ShiftClock()
    sup = supervisor(clock, agents={"claude": AgentOverride(command=(str(fake.bin_dir / "claude"),), resume_message=MESSAGE)})
    rec = poll_until(sup, lambda: (r := session(sup, fake.pane)) and r.state == "limited" and r, message="limited")
    poll_until(sup, lambda: plan_of(sup, fake).get("action") == "resume", message="a plan")
    os.kill(fake.pid, signal.SIGTERM)
    poll_until(sup, lambda: session(sup, fake.pane).state == "exited", message="the agent exited")
    clock.jump_to(rec.reset_at + timedelta(minutes=3))
    if how.endswith("crash-after-respawn"):
        real_perform = runner._perform

        def crashing_perform(sup_, pane_id, move):
            result = real_perform(sup_, pane_id, move)
            if move.step == "respawned":
                raise Crash(move.step)
            return result

        monkeypatch.setattr(runner, "_perform", crashing_perform)
        with pytest.raises(Crash):
            poll_until(sup, lambda: False, timeout=15, message="the crash")
        monkeypatch.undo()
        sup = supervisor(clock, agents={"claude": AgentOverride(command=(str(fake.bin_dir / "claude"),), resume_message=MESSAGE)})
    poll_until(sup, lambda: continuations(fake), timeout=20, message="the continuation to the resumed agent")
    starts = fake.events("start")
    assert len(starts) == 2 and starts[1]["resume"] is True and starts[1]["argv"][-1] == "--continue"
    assert continuations(fake)[0]["pid"] == starts[1]["pid"]
    fake.wait_for_event("work")
    for _ in range(5):
        sup.poll()
    assert len(continuations(fake)) == 1 and session(sup, fake.pane).name == rec.name
    kinds = [e.event.kind for e in sup.store.recent_events(100)]
    assert "resume.confirmed" in kinds
    assert ("resume.respawned" in kinds) is not how.endswith("crash-after-respawn")  # that run died before saying it
