"""Usage before the wall, end to end: what the agents report reaches `afd usage` as exact figures for their account.

Claude Code's figures come through `afd statusline` (run here as Claude Code
runs it: a JSON payload on stdin, in the account's environment); Codex's from
its rollout's `token_count` records, read for a live session on a real tmux
server. The daemon is the real `afd run`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from afd.testing import records as R
from daemon_harness import afd, events, run_daemon, session_for, write_config  # noqa: F401 (run_daemon is a fixture)
from harness import start_fake, wait_for

AFD = str(Path(sys.executable).with_name("afd"))
WORK = '[accounts.claude-work]\nagent = "claude"\nenv = { CLAUDE_CONFIG_DIR = "~/.claude-work" }\n'
FAST = 'poll_interval = "200ms"\n'


def payload(used: float, resets_at: datetime, weekly: float = 13.0) -> bytes:
    reset = int(resets_at.timestamp())
    return json.dumps({
        "session_id": "s-1", "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp/shop",
        "model": {"id": "claude-opus-4-5", "display_name": "Opus 4.5"},
        "rate_limits": {"five_hour": {"used_percentage": used, "resets_at": reset},
                        "seven_day": {"used_percentage": weekly, "resets_at": reset + 4 * 86400}},
        "prompt_cache": {"warm": True, "expires_at": reset - 3600, "recache_tokens_if_cold": 48000},
    }).encode()


def status_line(data: bytes, config_dir: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ}
    if config_dir is not None:
        env["CLAUDE_CONFIG_DIR"] = str(config_dir)
    return subprocess.run([AFD, "statusline", "--", "sh", "-c", "echo 'my own line'"], input=data, capture_output=True,
                          env=env, timeout=30)


def usage_json() -> tuple[dict, int]:
    done = afd("usage", "--json")
    return json.loads(done.stdout), done.returncode


def windows_of(figures: dict, account: str) -> list[dict]:
    return next(a for a in figures["accounts"] if a["account"] == account)["windows"]


def wait_figure(account: str, window: str, used: float, timeout: float = 20) -> dict:
    def found():
        figures, _ = usage_json()
        return next((w for w in windows_of(figures, account) if w["window"] == window and w["used_percent"] == used), None)

    return wait_for(found, timeout=timeout, message=f"{account}'s {window} at {used} %")


def soon(minutes: float) -> datetime:
    return (datetime.now(timezone.utc) + timedelta(minutes=minutes)).replace(microsecond=0)


def test_status_line_figures_reach_afd_usage_as_exact_figures_for_the_account(run_daemon, xdg_dirs):
    write_config(xdg_dirs, FAST + WORK)
    run_daemon()
    reset = soon(150)
    done = status_line(payload(42.3, reset), xdg_dirs["HOME"] / ".claude-work")
    assert (done.returncode, done.stdout) == (0, b"my own line\n")
    five = wait_figure("claude-work", "five_hour", 42.3)
    assert (five["provenance"], five["resets_at"], five["stale"], five["source"]) == (
        "exact", reset.strftime("%Y-%m-%dT%H:%M:%SZ"), False, "statusline")
    assert five["age_seconds"] < 20
    figures, code = usage_json()
    assert code == 0 and figures["schema"] == 1
    assert [w["window"] for w in windows_of(figures, "claude-work")] == ["five_hour", "seven_day"]
    # The default account reported nothing: no figure, never a guess.
    assert windows_of(figures, "claude") == []
    # The same panel is in the status report.
    report = json.loads(afd("status", "--json").stdout)
    assert windows_of(report["usage"], "claude-work")[0]["used_percent"] == 42.3
    shown = afd("usage").stdout
    assert "claude-work" in shown and "42.3 %" in shown and "exact" in shown


def test_figures_written_while_the_daemon_is_down_are_read_when_it_starts_and_shown_after_it_stops(run_daemon, xdg_dirs):
    write_config(xdg_dirs, FAST)
    assert status_line(payload(61.0, soon(100))).returncode == 0  # no daemon: the status line still works
    daemon = run_daemon()
    wait_figure("claude", "five_hour", 61.0)
    daemon.stop()
    figures, code = usage_json()
    assert code == 3 and windows_of(figures, "claude")[0]["used_percent"] == 61.0


def test_high_usage_is_told_once_per_window_and_a_restart_does_not_tell_it_again(run_daemon, xdg_dirs):
    write_config(xdg_dirs, FAST)
    daemon = run_daemon()
    reset = soon(5)  # the window opened 4 h 55 ago: at its average burn it resets before it runs out
    status_line(payload(96.0, reset))
    wait_for(lambda: events("usage.high"), timeout=20, message="a usage.high event")
    (told,) = events("usage.high")
    assert told["message"].startswith("claude: 96 % of the 5-hour window used (exact,")
    status_line(payload(96.5, reset))
    wait_figure("claude", "five_hour", 96.5)
    daemon.stop()
    daemon = run_daemon()
    status_line(payload(97.0, reset))
    wait_figure("claude", "five_hour", 97.0)
    time.sleep(1)  # a few polls after the figure was kept
    assert len(events("usage.high")) == 1
    # The next window is another window: told again.
    status_line(payload(85.0, reset + timedelta(hours=5)))
    wait_for(lambda: len(events("usage.high")) == 2, timeout=20, message="the next window's usage.high")


def test_codex_rollout_figures_reach_afd_usage_for_the_sessions_account(run_daemon, tmux_server, xdg_dirs, worktree):
    write_config(xdg_dirs, FAST)
    wt = worktree("codex-usage")
    codex_home = xdg_dirs["HOME"] / ".codex"
    run_daemon()
    fake = start_fake(tmux_server, "codex", cwd=wt, env={"CODEX_HOME": str(codex_home)})
    assert session_for(fake.pane)["account"] == "codex"
    # What Codex writes once its process runs: the thread's meta, then a token_count after each answer.
    now = datetime.now(timezone.utc)
    path = R.codex_rollout_path(codex_home, now, "thread-1")
    reset = soon(200)
    R.append_jsonl(path, [R.codex_meta(now, str(wt), "thread-1"),
                          R.codex_token_count(now, R.codex_window("five_hour", 37.0, reset),
                                              R.codex_window("weekly", 8.0, reset + timedelta(days=3)))])
    five = wait_figure("codex", "five_hour", 37.0, timeout=40)
    assert (five["provenance"], five["source"], five["limit_id"]) == ("exact", "rollout", "codex")
    # A later report in the rollout (the session worked on) is read within the session's read interval.
    R.append_jsonl(path, [R.codex_token_count(datetime.now(timezone.utc), R.codex_window("five_hour", 44.0, reset), None)])
    wait_figure("codex", "five_hour", 44.0, timeout=40)


def test_a_new_session_is_routed_to_the_account_with_the_most_headroom(run_daemon, tmux_server, xdg_dirs, git_repo):
    home = xdg_dirs["HOME"]
    start_fake(tmux_server, "claude", cwd=tmux_server.scratch, prompt="x")  # installs the fake claude
    fake_claude = tmux_server.scratch / "bin" / "claude"
    write_config(xdg_dirs, FAST + 'route_new_sessions = "most-headroom"\n'
                 f'[agents.claude]\ncommand = ["{fake_claude}"]\n' + WORK)
    run_daemon()
    status_line(payload(90.0, soon(100)))
    status_line(payload(20.0, soon(100)), home / ".claude-work")
    wait_figure("claude-work", "five_hour", 20.0)
    wait_figure("claude", "five_hour", 90.0)
    made = afd("sessions", "create", "routed", "--agent", "claude", "--repo", str(git_repo), "--prompt", "Add a test",
               "--json", timeout=60)
    assert made.returncode == 0, made.stderr
    answer = json.loads(made.stdout)
    assert answer["account"] == "claude-work"
    assert answer["routed"] == 'route_new_sessions = "most-headroom": claude-work, the most headroom: 80 % left in its fullest window'


def test_a_handoff_before_the_wall_waits_for_the_turn_to_end_and_happens_once_per_window(
        run_daemon, tmux_server, xdg_dirs, worktree):
    from daemon_harness import logged, session, wait_session

    write_config(xdg_dirs, FAST + 'handoff_stop_timeout = "1s"\nhandoff_before = "90%"\nhandoff_order = ["codex"]\n')
    daemon = run_daemon()
    reset = soon(180)
    status_line(payload(95.0, reset))
    wait_figure("claude", "five_hour", 95.0)
    wt = worktree("before-the-wall")
    done_file = tmux_server.scratch / "turn-done"
    agents = {"claude": {"work_until_file": str(done_file)}, "codex": {}}
    claude = start_fake(tmux_server, "claude", cwd=wt, prompt="Fix the login test", scenario={"agents": agents})
    name = session_for(claude.pane)["name"]
    # Mid-turn: the agent thinks behind its spinner (its screen otherwise still, as afd's idle gate sees it).
    wait_for(lambda: "esc to interrupt" in tmux_server.capture(claude.pane), message="claude's spinner")
    time.sleep(2)  # ten polls mid-turn, at 95 % of the window
    assert "esc to interrupt" in tmux_server.capture(claude.pane)
    assert events("handoff.started") == [] and session(name)["agent"] == "claude"

    done_file.write_text("done")  # the turn ends: the agent is idle at its prompt
    s = wait_session(name, lambda s: s["agent"] == "codex" and s["handoffs"] == 1, "handed to codex at the turn boundary")
    local = reset.astimezone().strftime("%H:%M")
    assert s["ledger"][0]["reason"] == f"approaching limit (95 % of the 5-hour window, resets {local})"
    assert s["ledger"][0]["automatic"] is True
    brief = logged(claude, "codex", "start")[0]["prompt"]
    assert "Fix the login test" in brief and "before it hit its provider usage limit" in brief
    (started,) = events("handoff.started")
    assert started["message"].endswith(f"approaching limit (95 % of the 5-hour window, resets {local})")

    # Once per window: another session of the account, idle at its prompt after a restart, is not handed off.
    daemon.stop()
    run_daemon()
    other = start_fake(tmux_server, "claude", cwd=worktree("second"), prompt="Add a test", scenario={"agents": agents})
    other_name = session_for(other.pane)["name"]
    wait_session(other_name, lambda s: s["state"] == "idle", "the second claude idle")
    time.sleep(2)
    assert len(events("handoff.started")) == 1 and session(other_name)["agent"] == "claude"
