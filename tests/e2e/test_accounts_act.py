"""Accounts acting: a walled account handed to another account of the same agent, in place, and back.

`afd run` as a process, a real tmux server, fake Claude Codes whose
`CLAUDE_CONFIG_DIR` says which account they run on, and real git.
"""

from __future__ import annotations

import json

import psutil
import pytest

from daemon_harness import afd, logged, run_daemon, session_for, status, wait_session, write_config  # noqa: F401 (run_daemon is a fixture)
from harness import git, process_alive, read_log, start_fake, wait_for

pytestmark = pytest.mark.tmux

ACCOUNTS = """
[accounts.claude-work]
agent = "claude"
env = { CLAUDE_CONFIG_DIR = "~/.claude-work" }
"""
HANDOFF = 'poll_interval = "200ms"\nhandoff_stop_timeout = "1s"\nlimit_action = "handoff"\nhandoff_order = ["claude-work"]\n'


def environ(pid: int) -> dict[str, str]:
    return psutil.Process(pid).environ()


def test_the_walled_default_account_is_handed_to_the_work_account_in_the_same_pane_and_back(
    run_daemon, tmux_server, xdg_dirs, worktree
):
    home = xdg_dirs["HOME"]
    work_dir = str(home / ".claude-work")
    wt = worktree("feature")
    base = git(wt, "rev-parse", "HEAD")
    write_config(xdg_dirs, HANDOFF + ACCOUNTS)
    run_daemon()
    # Its pane names the default directory outright: still the default account, and what a launch
    # on another account must override (and a launch on the default one must drop).
    scenario = {
        "agents": {"claude": {"limit_after_prompts": 1, "records": "agree"}},
        "when_env": {f"CLAUDE_CONFIG_DIR={work_dir}": {"limit_after_prompts": None, "records": "agree"}},
    }
    walled = start_fake(tmux_server, "claude", cwd=wt, prompt="Fix the login test", scenario=scenario,
                        env={"CLAUDE_CONFIG_DIR": str(home / ".claude")})
    other_dir = tmux_server.scratch / "other"
    other_dir.mkdir()
    busy = start_fake(tmux_server, "claude", cwd=other_dir, prompt="Write the docs", scenario={"work_seconds": 300},
                      env={"CLAUDE_CONFIG_DIR": work_dir})
    name = session_for(walled.pane)["name"]
    other = session_for(busy.pane)["name"]

    s = wait_session(name, lambda s: s["handoffs"] == 1 and s["state"] in ("idle", "working"), "handed to claude-work",
                     timeout=60)
    assert s["pane"] == walled.pane and s["agent"] == "claude" and s["account"] == "claude-work"
    assert not process_alive(walled.pid)
    [first, second] = logged(walled, "claude", "start")
    assert first["pid"] == walled.pid
    brief = second["prompt"]
    assert "Fix the login test" in brief and "previous agent (claude)" in brief
    assert f"git log --oneline {base}..HEAD" in brief
    assert environ(second["pid"])["CLAUDE_CONFIG_DIR"] == work_dir  # the new process runs on the work account
    # The swap's commit: the last the default account's agent made.
    head = [e for e in logged(walled, "claude", "work") if e["pid"] == walled.pid][-1]["commit"]
    [entry] = s["ledger"]
    assert (entry["from"], entry["to"], entry["from_account"], entry["to_account"]) == ("claude", "claude", "claude", "claude-work")
    assert entry["automatic"] is True and entry["head_sha"] == head

    report = status()
    accounts = {a["name"]: a["state"] for a in report["accounts"]}
    assert accounts["claude"] == "limited" and accounts["claude-work"] != "limited"
    # The other pane, on the work account all along, was never touched.
    assert process_alive(busy.pid) and len(logged(busy, "claude", "start")) == 1
    untouched = next(x for x in report["sessions"] if x["name"] == other)
    assert untouched["account"] == "claude-work" and untouched["handoffs"] == 0

    ledger = json.loads(afd("ledger", name, "--json").stdout)
    assert [(r["agent"], r["account"]) for r in ledger["ranges"]] == [("claude", "claude"), ("claude", "claude-work")]
    assert "| claude (claude-work) | working now |" in afd("ledger", name, "--markdown").stdout

    # Back to the default account: it worked here before, so it resumes its own conversation,
    # and the pane's CLAUDE_CONFIG_DIR is dropped rather than inherited.
    back = afd("handoff", name, "--to", "claude", "--force", "--json", timeout=60)
    assert back.returncode == 0, back.stderr
    third = wait_for(lambda: (lambda s: s[2] if len(s) > 2 else None)(logged(walled, "claude", "start")),
                     message="claude started again on its default account")
    assert third["resume"] and "CLAUDE_CONFIG_DIR" not in environ(third["pid"])
    s = wait_session(name, lambda s: s["handoffs"] == 2, "the hand-back in the ledger")
    assert (s["ledger"][1]["from_account"], s["ledger"][1]["to_account"]) == ("claude-work", "claude")
    assert s["account"] == "claude"


def test_a_handoff_to_the_account_running_there_is_refused_and_an_unknown_target_names_the_accounts(
    run_daemon, tmux_server, xdg_dirs, worktree
):
    home = xdg_dirs["HOME"]
    wt = worktree("feature")
    write_config(xdg_dirs, 'poll_interval = "200ms"\n' + ACCOUNTS)
    run_daemon()
    fake = start_fake(tmux_server, "claude", cwd=wt, prompt="Fix the login test", scenario={"limit_now": True},
                      env={"CLAUDE_CONFIG_DIR": str(home / ".claude-work")})
    name = session_for(fake.pane)["name"]
    wait_session(name, lambda s: s["account"] == "claude-work", "the work account told")

    same = afd("handoff", name, "--to", "claude-work")
    assert same.returncode == 1 and "claude-work is the account running there now" in same.stderr
    typo = afd("handoff", name, "--to", "claude-wrok")
    assert typo.returncode == 1 and "nor an account of the config" in typo.stderr
    assert process_alive(fake.pid)


def test_sessions_create_starts_an_account_and_routes_to_the_least_limited_one(
    run_daemon, tmux_server, xdg_dirs, git_repo
):
    home = xdg_dirs["HOME"]
    walled_dir = tmux_server.scratch / "walled"
    walled_dir.mkdir()
    # The default account hits its wall first: a new claude session then goes to the work account.
    walled = start_fake(tmux_server, "claude", cwd=walled_dir, prompt="x", scenario={"limit_now": True})
    fake_claude = tmux_server.scratch / "bin" / "claude"
    log = tmux_server.scratch / "created.jsonl"
    tmux_server.run("set-environment", "-g", "AFD_FAKE_LOG", str(log))  # a new tmux session gets the server's environment
    write_config(xdg_dirs, f'poll_interval = "200ms"\nroute_new_sessions = "least-limited"\n'
                           f'[agents.claude]\ncommand = ["{fake_claude}"]\n' + ACCOUNTS)
    run_daemon()
    session_for(walled.pane)
    wait_for(lambda: {a["name"]: a["state"] for a in status()["accounts"]}.get("claude") == "limited",
             message="the default account limited")

    made = afd("sessions", "create", "routed", "--agent", "claude", "--repo", str(git_repo), "--prompt", "Add a test",
               "--json", timeout=60)
    assert made.returncode == 0, made.stderr
    answer = json.loads(made.stdout)
    assert answer["account"] == "claude-work" and "least-limited" in answer["routed"]
    wait_session("routed", lambda s: s["account"] == "claude-work", "the created session on the work account")
    started = wait_for(lambda: [e for e in read_log(log) if e["event"] == "start"], message="the created agent started")
    assert environ(started[0]["pid"])["CLAUDE_CONFIG_DIR"] == str(home / ".claude-work")

    named = afd("sessions", "create", "named", "--agent", "claude-work", "--repo", str(git_repo), "--prompt", "Add another",
                timeout=60)
    assert named.returncode == 0, named.stderr
    assert "claude on account claude-work" in named.stdout
    wait_session("named", lambda s: s["account"] == "claude-work", "the named account started")
    assert process_alive(walled.pid)
