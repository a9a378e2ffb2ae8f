"""Handoff end to end: a real tmux server, fake agents, real git, `afd run` as a process."""

from __future__ import annotations

import json

import pytest
from harness import git, process_alive, read_log, start_fake, wait_for
from test_daemon import afd, run_daemon, status, write_config  # noqa: F401 (run_daemon is a fixture)

pytestmark = pytest.mark.tmux

FAST = 'poll_interval = "200ms"\nhandoff_stop_timeout = "1s"\n'


def session_named(pane: str) -> dict:
    return wait_for(lambda: next((s for s in status()["sessions"] if s["pane"] == pane), None), message=f"a session for {pane}")


def wait_state(name: str, *states: str, timeout: float = 20) -> dict:
    def check():
        s = next((s for s in status()["sessions"] if s["name"] == name), None)
        return s if s and s["state"] in states else None

    try:
        return wait_for(check, timeout=timeout, message=f"{name} in {states}")
    except AssertionError:
        print(afd("events", "-n", "40").stdout)  # shown by pytest with the failure
        raise


def events_of(fake, agent: str, kind: str) -> list[dict]:
    return [e for e in read_log(fake.log) if e["agent"] == agent and e["event"] == kind]


def test_prompted_handoff_swaps_codex_into_the_same_pane_with_the_brief(run_daemon, tmux_server, xdg_dirs, worktree):
    wt = worktree("feature")
    base = git(wt, "rev-parse", "HEAD")
    write_config(xdg_dirs, FAST)
    run_daemon()
    claude = start_fake(tmux_server, "claude", cwd=wt, prompt="Fix the login test", scenario={"agents": {"claude": {"limit_after_prompts": 1}}})
    name = session_named(claude.pane)["name"]
    wait_state(name, "limited")
    head = git(wt, "rev-parse", "HEAD")
    assert head != base

    done = afd("handoff", name, "--to", "codex", "--json", timeout=60)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["state"] == "done"

    codex_start = wait_for(lambda: events_of(claude, "codex", "start"), message="codex started")[0]
    brief = codex_start["prompt"]
    assert "Fix the login test" in brief
    assert f"git log --oneline {base}..HEAD" in brief and f"git diff {base}...HEAD" in brief
    assert "previous agent (claude)" in brief
    assert not process_alive(claude.pid)
    assert tmux_server.pane_exists(claude.pane)
    s = wait_state(name, "idle", "working")
    assert s["pane"] == claude.pane and s["agent"] == "codex" and s["handoffs"] == 1
    assert s["ledger"][0]["head_sha"] == head and s["ledger"][0]["automatic"] is False

    ledger = json.loads(afd("ledger", name, "--json").stdout)
    assert [r["agent"] for r in ledger["ranges"]] == ["claude", "codex"]
    assert ledger["ranges"][0]["range"] == f"{base}..{head}"
    md = afd("ledger", name, "--markdown").stdout
    assert f"`{base[:12]}..{head[:12]}` | claude" in md
