"""Exactly once on a real tmux server: what each pane-typing action delivered, counted by the fake agent itself.

`afd run` at `poll_interval` 0.5 s and 1 s, with agents that take a second to show they took
the text and think before their first output: a resume's continuation, a handoff's brief (a
launch argument for claude and codex), a brief that waits for its agent, a job's envelope. Each
reaches its agent once. And a daemon killed with SIGKILL right after an action's row closed,
before it planned again, still leaves one copy after its restart.
"""

from __future__ import annotations

import time

import pytest

from afd.act.deliver import DEFAULT_MESSAGE
from afd.jobs.book import JobBook
from afd.record.store import Store
from afd.testing.fake_agent import write_launcher
from daemon_harness import afd, events, run_daemon, session_for, status, wait_session, write_config  # noqa: F401 (run_daemon is a fixture)
from harness import BRIEF, CODEX_PAST, MYCLI, read_log, start_fake, wait_for

pytestmark = pytest.mark.tmux

POLLS = ("0.5s", "1s")
# Agents as slow as real ones: the typed text shows a second before it is taken, the first output later.
SLOW = {"take_seconds": 1.0, "think_seconds": 3.0}


def inputs(log, needle: str) -> list[dict]:
    """Every input a fake agent took (typed, pasted, or as its launch argument) that holds `needle`."""
    return [e for e in read_log(log) if e["event"] == "input" and needle in e.get("text", "")]


def settle(poll: str) -> None:
    # Nothing is left to act on: three more polls may not deliver anything either.
    time.sleep(3 * float(poll.removesuffix("s")) + 1)


def story() -> str:
    return "\n".join(f"{e['at']} {e['kind']}: {e['message']}" for e in status()["events"])


# --- each action, at each tempo ------------------------------------------------------------


def resume_world(tmux_server, run_daemon, xdg_dirs, poll: str, **daemon):
    write_config(xdg_dirs, f'poll_interval = "{poll}"\nlimit_auto_resume = true\nresume_grace = "0s"\n')
    scenario = {"limit_now": True, "limit_lasts_seconds": 0.5, "banner_params": CODEX_PAST, "records": "agree",
                "record_reset_seconds": -60, **SLOW}
    fake = start_fake(tmux_server, "codex", cwd=tmux_server.scratch, scenario=scenario)
    fake.wait_ready()
    return fake, run_daemon(**daemon)


@pytest.mark.parametrize("poll", POLLS)
def test_a_resume_types_one_continuation(tmux_server, run_daemon, xdg_dirs, poll):
    fake, _ = resume_world(tmux_server, run_daemon, xdg_dirs, poll)
    wait_for(lambda: events("resume.confirmed"), timeout=40, message="the continuation confirmed")
    wait_for(lambda: fake.events("work"), timeout=30, message="the agent's answer")
    name = session_for(fake.pane)["name"]
    wait_session(name, lambda s: s["state"] == "idle", "idle after its answer")
    settle(poll)
    assert len(inputs(fake.log, DEFAULT_MESSAGE)) == 1, story()
    begun = [e for e in events("resume.scheduled") if e["message"].startswith("resuming now")]
    assert len(begun) == 1 and len(events("resume.sent")) == 1, story()


def handoff_world(tmux_server, run_daemon, xdg_dirs, worktree, poll: str, outgoing: str, target: str, **daemon):
    write_config(xdg_dirs, f'poll_interval = "{poll}"\nhandoff_stop_timeout = "1s"\nlimit_action = "handoff"\n'
                           f'handoff_order = ["{target}"]\nhandoff_requires_witness = false\n')
    agents = {outgoing: {"limit_after_prompts": 1}, target: SLOW}
    fake = start_fake(tmux_server, outgoing, cwd=worktree("feature"), prompt="Fix the login test", scenario={"agents": agents})
    fake.wait_ready()
    return fake, run_daemon(**daemon)


@pytest.mark.parametrize("poll", POLLS)
@pytest.mark.parametrize("outgoing, target", [("claude", "codex"), ("codex", "claude")], ids=["claude-to-codex", "codex-to-claude"])
def test_a_handoff_launches_its_brief_once(tmux_server, run_daemon, xdg_dirs, worktree, poll, outgoing, target):
    fake, _ = handoff_world(tmux_server, run_daemon, xdg_dirs, worktree, poll, outgoing, target)
    wait_for(lambda: events("session.handoff"), timeout=40, message="the handoff settled")
    wait_for(lambda: [e for e in read_log(fake.log) if e["agent"] == target and e["event"] == "work"], timeout=30,
             message=f"{target}'s answer")
    settle(poll)
    started = [e for e in read_log(fake.log) if e["agent"] == target and e["event"] == "start"]
    assert len(started) == 1 and BRIEF in started[0]["prompt"], story()  # one launch, the brief its argument
    assert len(inputs(fake.log, BRIEF)) == 1, story()
    assert len(events("handoff.started")) == 1


@pytest.mark.parametrize("poll", POLLS)
def test_a_brief_that_waits_for_its_agent_is_typed_once(tmux_server, run_daemon, xdg_dirs, worktree, poll):
    plugins = xdg_dirs["XDG_CONFIG_HOME"] / "afd" / "plugins"
    plugins.mkdir(parents=True)
    (plugins / "mycli.toml").write_text(MYCLI, encoding="utf-8")
    write_config(xdg_dirs, f'poll_interval = "{poll}"\nhandoff_stop_timeout = "1s"\nlimit_action = "handoff"\n'
                           'handoff_order = ["mycli"]\nhandoff_requires_witness = false\n')
    # mycli takes its first prompt typed, and starts at a wall of its own that it gets past by itself.
    wall = "■ Mycli quota used up. It comes back at 11:45 PM (UTC)."
    mycli = {"style": "codex", "limit_now": True, "banner_rows": [wall], "limit_lasts_seconds": 2.0,
             "native_resume_after_seconds": 8.0, **SLOW}
    scenario = {"agents": {"claude": {"limit_after_prompts": 1}, "mycli": mycli}}
    fake = start_fake(tmux_server, "claude", cwd=worktree("feature"), prompt="Fix the login test", scenario=scenario)
    write_launcher(fake.bin_dir, "mycli", "mycli")
    fake.wait_ready()
    run_daemon()
    wait_for(lambda: events("handoff.brief"), timeout=60, message="the waiting brief delivered")
    wait_for(lambda: inputs(fake.log, BRIEF), timeout=30, message="mycli took the brief")
    settle(poll)
    assert len(inputs(fake.log, BRIEF)) == 1, story()
    assert not [e for e in read_log(fake.log) if e["agent"] == "mycli" and e["event"] == "start" and e.get("prompt")]


def envelope_world(tmux_server, run_daemon, xdg_dirs, poll: str, **daemon):
    write_config(xdg_dirs, f'poll_interval = "{poll}"\n')
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, scenario=SLOW)
    fake.wait_ready()
    started = run_daemon(**daemon)
    name = wait_for(lambda: (s := session_for(fake.pane)) and s["state"] == "idle" and s["name"], timeout=20, message="idle")
    with Store(xdg_dirs["XDG_STATE_HOME"] / "afd" / "state.db") as store:
        assert JobBook(store).enqueue("note:plan", "note", "read the plan first", to_session=name)
        [env] = JobBook(store).envelopes()
    return fake, env.nonce, started


@pytest.mark.parametrize("poll", POLLS)
def test_a_job_envelope_is_typed_once(tmux_server, run_daemon, xdg_dirs, poll):
    fake, nonce, _ = envelope_world(tmux_server, run_daemon, xdg_dirs, poll)
    wait_for(lambda: events("job.envelope-consumed"), timeout=40, message="the envelope taken")
    settle(poll)
    assert len(inputs(fake.log, nonce)) == 1, story()


# --- a stop of afd between an action's end and the next plan ------------------------------------


@pytest.mark.parametrize("action", ["resume", "handoff", "envelope"])
def test_sigkill_right_after_an_action_finished_then_restart_still_delivers_one(tmux_server, run_daemon, xdg_dirs, worktree,
                                                                               action):
    crash = {"env": {"AFD_TEST_CRASH_AT_STEP": "finished"}}
    if action == "resume":
        fake, daemon = resume_world(tmux_server, run_daemon, xdg_dirs, "1s", **crash)
        marker, log = DEFAULT_MESSAGE, fake.log
    elif action == "handoff":
        fake, daemon = handoff_world(tmux_server, run_daemon, xdg_dirs, worktree, "1s", "claude", "codex", **crash)
        marker, log = BRIEF, fake.log
    else:
        fake, marker, daemon = envelope_world(tmux_server, run_daemon, xdg_dirs, "1s", **crash)
        log = fake.log
    wait_for(lambda: daemon.proc.poll() is not None, timeout=60, message="the daemon killed right after the action finished")
    assert daemon.proc.returncode == -9
    assert len(inputs(log, marker)) == 1  # delivered before the kill

    run_daemon()
    name = session_for(fake.pane)["name"]
    wait_session(name, lambda s: s["state"] == "idle", "the session idle again after the restart")
    settle("1s")
    assert len(inputs(log, marker)) == 1, story()
    assert not events("journal.recovered")  # nothing was left pending: the kill came after the row closed
    assert afd("status", "--json").returncode == 0
