"""Held prompts (`afd queue`), on a real tmux server with the fake agents: delivered once, after a reset or at a time,
through the envelope executor or with the resume (one paste), and once again after a kill -9 at each journal step."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone

import pytest

from afd.config.settings import AgentOverride, Config
from afd.daemon.supervisor import Supervisor
from afd.decide.queue import QueueState
from afd.pluginset import load_plugins
from afd.record.queue_book import QueueBook
from afd.record.store import Store
from afd.world.tmux import ServerRef
from daemon_harness import afd, events, run_daemon, session_for, wait_session, write_config  # noqa: F401 (run_daemon is a fixture)
from harness import start_fake, wait_for

pytestmark = pytest.mark.tmux

MESSAGE = "Limit over: carry on with the task."
HELD = "Then run the whole test suite and fix what fails."


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
        config = Config(**{"poll_interval": 0.05, "limit_auto_resume": True, "resume_grace": 60.0,
                           "agents": {a: AgentOverride(resume_message=MESSAGE) for a in ("claude", "codex")}, **settings})
        return Supervisor(config, load_plugins(None, entry_points=False), store, ServerRef(socket_name=tmux_server.name),
                          clock=clock)

    yield make
    for store in stores:
        store.close()


def poll_until(sup, predicate, timeout=15.0, message="condition"):
    def step():
        sup.poll()
        return predicate()

    return wait_for(step, timeout=timeout, interval=0.05, message=message)


def typed(fake, needle: str) -> list[dict]:
    return [e for e in fake.events("input") if needle in e["text"]]


@pytest.mark.parametrize("auto_resume", [True, False], ids=["with-the-resume-one-paste", "alone-as-the-wake"])
def test_a_prompt_held_for_the_reset_goes_in_once_at_the_reset(tmux_server, supervisor, auto_resume):
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, scenario={"limit_now": True, "limit_lasts_seconds": 1})
    fake.wait_ready()
    clock = ShiftClock()
    sup = supervisor(clock, limit_auto_resume=auto_resume)
    rec = poll_until(sup, lambda: next((r for r in sup.store.list_sessions() if r.pane_id == fake.pane and r.state == "limited"),
                                       None), message="limited")
    book = QueueBook(sup.store)
    held = book.add(rec.name, HELD, "reset", rec.reset_at + timedelta(seconds=60), clock())

    clock.jump_to(rec.reset_at + timedelta(seconds=30))  # past the reset, inside the grace: nothing yet
    for _ in range(5):
        sup.poll()
    assert typed(fake, HELD) == [] and book.get(held).state is QueueState.WAITING

    wait_for(lambda: time.time() - fake.events("limit")[0]["t"] > 1.2, message="the fake's wall to lift")
    clock.jump_to(rec.reset_at + timedelta(seconds=61))
    poll_until(sup, lambda: book.get(held).state is QueueState.DELIVERED, timeout=30, message="the held prompt delivered")
    fake.wait_idle(works=1)
    for _ in range(10):
        sup.poll()
    (paste,) = typed(fake, HELD)
    assert paste["via"] == "paste"
    # One paste: the resume's own words with it when the wait path would resume now, never a second paste.
    assert (MESSAGE in paste["text"]) is auto_resume
    assert len(typed(fake, MESSAGE)) == (1 if auto_resume else 0)
    kinds = [e.event.kind for e in sup.store.recent_events(200)]
    assert kinds.count("resume.sent") == 1 and kinds.count("queue.delivered") == 1


def queue_list() -> list[dict]:
    done = afd("queue", "list", "--json")
    assert done.returncode in (0, 3), done.stderr
    return json.loads(done.stdout)


def soon(seconds: float) -> str:
    return (datetime.now(timezone.utc) + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def idle_claude(tmux_server, xdg_dirs, run_daemon, env=None):
    write_config(xdg_dirs, 'poll_interval = "200ms"\n')
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, prompt="Fix the login test")
    fake.wait_idle(works=1)
    daemon = run_daemon(env=env)
    name = session_for(fake.pane)["name"]
    wait_session(name, lambda s: s["state"] == "idle", "the agent idle at its prompt")
    return fake, daemon, name


def test_a_prompt_held_until_a_time_goes_in_once_as_an_envelope_and_is_listed(run_daemon, tmux_server, xdg_dirs):
    fake, daemon, name = idle_claude(tmux_server, xdg_dirs, run_daemon)
    added = afd("queue", "add", name, HELD, "--at", soon(2), "--json")
    assert added.returncode == 0, added.stderr
    item = json.loads(added.stdout)
    assert (item["session"], item["state"], item["at"]) == (name, "waiting", "time")
    wait_for(lambda: queue_list()[0]["state"] == "delivered", timeout=30, message="delivered")
    assert len(typed(fake, HELD)) == 1
    shown = afd("queue", "list").stdout
    assert "delivered" in shown and str(item["id"]) in shown
    # Kept across a restart, and never delivered again.
    daemon.stop()
    assert queue_list()[0]["state"] == "delivered"
    run_daemon()
    time.sleep(1.5)
    assert len(typed(fake, HELD)) == 1


@pytest.mark.parametrize("step", ["routed", "pasted", "entered"])
def test_daemon_killed_at_each_delivery_step_delivers_the_held_prompt_once(run_daemon, tmux_server, xdg_dirs, step):
    fake, daemon, name = idle_claude(tmux_server, xdg_dirs, run_daemon, env={"AFD_TEST_CRASH_AT_STEP": step})
    assert afd("queue", "add", name, HELD, "--at", soon(1)).returncode == 0
    daemon.proc.wait(timeout=30)
    assert daemon.proc.returncode == -9  # killed right after writing `step`, before its effect
    assert queue_list()[0]["state"] == "delivering"
    run_daemon()
    wait_for(lambda: queue_list()[0]["state"] == "delivered", timeout=40, message="delivered after the restart")
    assert len(typed(fake, HELD)) == 1
    assert any(e["kind"] == "journal.recovered" for e in json.loads(afd("status", "--json", "--events", "100").stdout)["events"])


def test_queue_add_says_why_it_cannot_and_a_waiting_prompt_can_be_cancelled(run_daemon, tmux_server, xdg_dirs):
    fake, daemon, name = idle_claude(tmux_server, xdg_dirs, run_daemon)
    no_reset = afd("queue", "add", name, HELD)
    assert no_reset.returncode == 1 and "no reset is known for" in no_reset.stderr and "--at HH:MM" in no_reset.stderr
    bad = afd("queue", "add", name, HELD, "--at", "soonish")
    assert bad.returncode == 2 and '--at takes "reset", HH:MM' in bad.stderr
    missing = afd("queue", "add", "no-such-session", HELD, "--at", soon(60))
    assert missing.returncode == 2 and "no session named" in missing.stderr
    later = json.loads(afd("queue", "add", name, HELD, "--at", soon(3600), "--json").stdout)
    cancelled = afd("queue", "cancel", str(later["id"]), "--json")
    assert cancelled.returncode == 0 and json.loads(cancelled.stdout)["state"] == "cancelled"
    again = afd("queue", "cancel", str(later["id"]))
    assert again.returncode == 1 and "only a waiting one can be cancelled" in again.stderr
    daemon.stop()
    down = afd("queue", "add", name, HELD, "--at", soon(60))
    assert down.returncode == 3 and "the daemon is not running" in down.stderr
    assert [i["state"] for i in queue_list()] == ["cancelled"]
    assert typed(fake, HELD) == []


# --- a wake that costs more than it is worth (cold_cache_tokens) --------------------------


@pytest.mark.parametrize(("limit", "asks"), [(10_000, True), (100_000, False)], ids=["costly-asks", "cheap-resumes"])
def test_a_resume_onto_a_cold_cache_that_costs_too_much_asks_the_person_instead(tmux_server, supervisor, limit, asks):
    from afd.record.usage_book import PromptCache, UsageBook

    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, scenario={"limit_now": True, "limit_lasts_seconds": 1})
    fake.wait_ready()
    clock = ShiftClock()
    sup = supervisor(clock, cold_cache_tokens=limit)
    rec = poll_until(sup, lambda: next((r for r in sup.store.list_sessions() if r.pane_id == fake.pane and r.state == "limited"),
                                       None), message="limited")
    # What the session's status line said of its cache: cold, 48,000 tokens to cache again.
    UsageBook(sup.store).save_prompt_cache(PromptCache("claude", "s-1", rec.worktree, "/t.jsonl", False, None, 48_000, clock()))
    wait_for(lambda: time.time() - fake.events("limit")[0]["t"] > 1.2, message="the fake's wall to lift")
    clock.jump_to(rec.reset_at + timedelta(seconds=61))
    if asks:
        plan = poll_until(sup, lambda: (r := sup.store.get_session(rec.name)).next_action and "needs-human" in r.next_action
                          and r.next_action, message="a plan that asks the person")
        assert "its prompt cache is cold: going on would cache 48,000 tokens again" in plan
        for _ in range(10):
            sup.poll()
        assert typed(fake, MESSAGE) == []
        told = [e.event for e in sup.store.recent_events(100) if e.event.kind == "session.needs_human"]
        assert len(told) == 1 and "afd resume" in told[0].message
    else:
        poll_until(sup, lambda: typed(fake, MESSAGE), timeout=30, message="the continuation")
