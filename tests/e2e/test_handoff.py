"""Handoff end to end: a real tmux server, fake agents, real git, `afd run` as a process."""

from __future__ import annotations

import json

import pytest

from daemon_harness import (  # noqa: F401 (fixtures)
    AUTO,
    FAST,
    afd,
    events,
    limited_claude,
    logged,
    run_daemon,
    session,
    session_for,
    status,
    wait_session,
    wait_state,
    write_config,
)
from harness import git, process_alive, start_fake, wait_for

pytestmark = pytest.mark.tmux


def test_prompted_handoff_swaps_codex_into_the_same_pane_with_the_brief(limited_claude, tmux_server):
    wt, base, name, claude = limited_claude()
    head = git(wt, "rev-parse", "HEAD")
    assert head != base

    done = afd("handoff", name, "--to", "codex", "--json", timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["state"] == "done"

    brief = wait_for(lambda: logged(claude, "codex", "start"), message="codex started")[0]["prompt"]
    assert "Fix the login test" in brief and "previous agent (claude)" in brief
    assert f"git log --oneline {base}..HEAD" in brief and f"git diff {base}...HEAD" in brief
    assert not process_alive(claude.pid)
    s = wait_state(name, "idle", "working")
    assert s["pane"] == claude.pane and tmux_server.pane_exists(claude.pane)
    assert s["agent"] == "codex" and s["handoffs"] == 1
    assert s["ledger"][0]["head_sha"] == head and s["ledger"][0]["automatic"] is False
    assert s["ledger"][0]["reason"] == "usage limit"

    ledger = json.loads(afd("ledger", name, "--json").stdout)
    assert [(r["agent"], r["range"]) for r in ledger["ranges"]] == [("claude", f"{base}..{head}"), ("codex", f"{head}..HEAD")]
    assert f"`{base[:12]}..{head[:12]}` | claude" in afd("ledger", name, "--markdown").stdout


def test_automatic_handoff_then_the_loop_guard_stops_at_all_limited(limited_claude):
    # Both agents hit their wall after one prompt: exactly one handoff, then "all agents limited".
    wt, base, name, claude = limited_claude(
        AUTO, claude={"records": "agree"}, codex={"limit_after_prompts": 1, "records": "agree"}
    )
    s = wait_state(name, "all_limited")
    assert s["agent"] == "codex" and s["handoffs"] == 1 and s["ledger"][0]["automatic"] is True
    start = logged(claude, "codex", "start")
    assert len(start) == 1 and "Fix the login test" in start[0]["prompt"]
    assert f"git log --oneline {base}..HEAD" in start[0]["prompt"]
    assert not process_alive(claude.pid)
    [guard] = events("session.all_limited")
    assert "earliest reset" in guard["message"]
    assert len(logged(claude, "claude", "start")) == 1  # no round-robin back to claude


def test_an_automatic_handoff_waits_for_the_agents_own_records_to_confirm_the_wall(limited_claude):
    # The fake writes no records: the pane alone says limited, and handoff_requires_witness is on by default.
    wt, base, name, claude = limited_claude(AUTO)
    wait_for(lambda: events("handoff.refused"), message="the automatic handoff refused")
    assert "records do not confirm" in events("handoff.refused")[0]["message"]
    s = session(name)
    assert s["agent"] == "claude" and s["handoffs"] == 0 and s["witnesses"] == "pane"
    assert not logged(claude, "codex", "start")


def test_an_automatic_handoff_on_the_pane_alone_when_the_user_allows_it(limited_claude):
    wt, base, name, claude = limited_claude(AUTO + "handoff_requires_witness = false\n")
    s = wait_session(name, lambda s: s["agent"] == "codex" and s["handoffs"] == 1, "handed to codex")
    assert s["ledger"][0]["automatic"] is True


def test_a_fake_that_ignores_sigterm_and_has_a_child_is_killed_and_confirmed_gone(limited_claude):
    wt, base, name, claude = limited_claude(claude={"ignore_sigterm": True, "spawn_child": True})
    child = logged(claude, "claude", "child")[0]["child_pid"]
    done = afd("handoff", name, "--to", "codex", timeout=60)
    assert done.returncode == 0, done.stderr
    assert events("handoff.escalated")
    assert logged(claude, "claude", "signal")[0]["ignored"] is True
    assert not process_alive(claude.pid) and not process_alive(child)
    assert session(name)["agent"] == "codex"


def test_a_launch_that_fails_rolls_back_to_the_old_agent_with_its_resume_args(limited_claude):
    # `false` exists (the preflight passes) and exits at once.
    wt, base, name, claude = limited_claude(FAST + '[agents.codex]\ncommand = ["false"]\n')
    done = afd("handoff", name, "--to", "codex", "--json", timeout=60)
    assert done.returncode == 1
    assert json.loads(done.stdout)["state"] == "rolled_back"
    restarted = wait_for(lambda: logged(claude, "claude", "start")[1:], message="claude restarted")[0]
    assert restarted["resume"] is True
    s = wait_session(name, lambda s: s["agent"] == "claude" and s["state"] != "handing_off", "claude again")
    assert s["handoffs"] == 0 and not events("session.handoff")


def test_an_incoming_agent_already_at_its_limit_is_parked_and_the_map_learns_it(limited_claude):
    wt, base, name, claude = limited_claude(codex={"limit_now": True})
    done = afd("handoff", name, "--to", "codex", "--json", timeout=60)
    assert done.returncode == 0, done.stderr
    s = wait_state(name, "limited")
    assert s["agent"] == "codex" and s["handoffs"] == 1
    codex = next(a for a in status()["agents"] if a["name"] == "codex")
    # The map takes the limit from the session's judged wall (with a second witness where one is
    # required: the fakes write no agent records, so it may stay unknown); never "available".
    assert codex["state"] in ("limited", "unknown")


def test_hand_back_resumes_the_first_agent_and_the_per_session_bound_refuses_more(limited_claude):
    wt, base, name, claude = limited_claude(FAST + "handoff_max_per_session = 2\n")
    assert afd("handoff", name, "--to", "codex", timeout=60).returncode == 0
    wait_for(lambda: logged(claude, "codex", "work"), message="codex did its work")
    mid = git(wt, "rev-parse", "HEAD")
    wait_state(name, "idle")
    # claude is known-limited: refused without --force, saying when it resets.
    refused = afd("handoff", name, "--to", "claude", timeout=60)
    assert refused.returncode == 1 and "claude is at its usage limit until" in refused.stderr
    # codex's turn must be over for the swap: on a loaded machine a late repaint can show it
    # working for a poll after the refusal, so wait for idle again.
    wait_state(name, "idle")
    forced = afd("handoff", name, "--to", "claude", "--force", timeout=60)
    assert forced.returncode == 0, forced.stderr
    back = wait_for(lambda: logged(claude, "claude", "start")[1:], message="claude back")[0]
    assert back["resume"] is True
    assert "picking up again" in back["prompt"]
    assert f"git log --oneline {logged(claude, 'codex', 'start')[0] and session(name)['ledger'][0]['head_sha']}..HEAD" in back["prompt"]
    assert session(name)["ledger"][1]["head_sha"] == mid
    third = afd("handoff", name, "--to", "codex", timeout=60)
    assert third.returncode == 1 and "handoff_max_per_session = 2" in third.stderr


def test_refusals_touch_nothing_and_say_why(limited_claude, tmux_server, tmp_path):
    wt, base, name, claude = limited_claude(FAST + '[agents.devin]\ncommand = ["no-such-devin-cli"]\n')
    cases = {
        ("--to", "gemni"): "not an agent any plugin provides",
        ("--to", "claude"): "claude is the agent running there now",
        ("--to", "devin"): "devin's command was not found on the pane's PATH",
    }
    for args, why in cases.items():
        done = afd("handoff", name, *args, timeout=30)
        assert done.returncode == 1 and why in done.stderr, (args, done.stderr)
    # A pane outside git, with no mission.
    bare = start_fake(tmux_server, "claude", cwd=tmp_path)
    other = session_for(bare.pane)["name"]
    no_mission = afd("handoff", other, "--to", "codex", timeout=30)
    assert no_mission.returncode == 1 and "--brief" in no_mission.stderr
    not_git = afd("handoff", other, "--to", "codex", "--brief", "do it", timeout=30)
    assert not_git.returncode == 1 and "not a git work tree" in not_git.stderr
    assert len(events("handoff.refused")) == 5
    assert process_alive(claude.pid) and session(name)["agent"] == "claude" and session(name)["handoffs"] == 0


def test_a_banner_shown_by_cat_never_triggers_a_handoff(run_daemon, tmux_server, xdg_dirs, worktree):
    wt = worktree("docs")
    (wt / "limits.md").write_text("You've hit your session limit · resets 3pm (America/Bogota)\n■ You've hit your usage limit. Try again in 3 hours.\n")
    write_config(xdg_dirs, AUTO)
    run_daemon()
    fake = start_fake(tmux_server, "claude", cwd=wt, prompt="Explain the docs", scenario={"show_file": "limits.md"})
    name = session_for(fake.pane)["name"]
    fake.wait_idle(1)
    assert "You've hit your session limit" in fake.capture()
    # Judged idle: the idle gate compared captures with the banner text on screen, and the gates said no.
    wait_state(name, "idle")
    assert not events("handoff.started") and not events("session.limited") and session(name)["agent"] == "claude"


@pytest.mark.parametrize("step", ["stop", "stopping", "launch", "starting"])
def test_sigkill_of_the_daemon_after_each_journal_step_then_restart_completes_once(step, limited_claude, run_daemon):
    # The daemon dies (SIGKILL) right after it has written `step` to the journal, before the step's effect.
    wt, base, name, claude = limited_claude(daemon_env={"AFD_TEST_CRASH_AT_STEP": step})
    head = git(wt, "rev-parse", "HEAD")
    crashing = limited_claude.daemons[-1]
    afd("handoff", name, "--to", "codex", "--no-wait", timeout=30)
    wait_for(lambda: crashing.proc.poll() is not None, timeout=30, message="the daemon killed at the step")
    assert crashing.proc.returncode == -9
    run_daemon()
    s = wait_session(name, lambda s: s["agent"] == "codex" and s["state"] in ("idle", "working"), "the swap completed")
    assert s["handoffs"] == 1 and s["ledger"][0]["head_sha"] == head
    assert not process_alive(claude.pid)
    assert len(logged(claude, "codex", "start")) == 1  # never two agents, never two launches
    assert events("journal.recovered")
