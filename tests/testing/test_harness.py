"""The test harness itself: private tmux servers, git fixtures, fake launchers, waiting."""

from __future__ import annotations

import os
import secrets
import subprocess

import psutil
import pytest

from harness import (
    TEST_EMAIL,
    TmuxServer,
    WaitTimeout,
    git,
    process_alive,
    read_log,
    start_fake,
    wait_for,
)

pytestmark = pytest.mark.tmux


def test_tmux_server_uses_a_private_socket(tmux_server):
    assert tmux_server.name.startswith("afd-test-")
    assert tmux_server.socket_path.exists()
    pane = tmux_server.new_pane("sleep 30", cwd="/")
    listed = tmux_server.run("list-panes", "-a", "-F", "#{pane_id} #{socket_path}").stdout.split()
    assert listed == [pane, str(tmux_server.socket_path)]


def test_killing_a_server_removes_its_socket(xdg_dirs):
    server = TmuxServer(name=f"afd-test-{secrets.token_hex(6)}", env=dict(os.environ))
    server.run("-f", "/dev/null", "new-session", "-d", "sleep 30")
    assert server.socket_path.exists()
    server.kill()
    assert not server.socket_path.exists()
    assert server.run("list-sessions", check=False).returncode != 0


def test_server_does_not_read_the_users_tmux_config(tmux_server, xdg_dirs):
    assert tmux_server.env["HOME"] == str(xdg_dirs["HOME"])
    # `-f /dev/null`: the defaults are in force, nothing from ~/.tmux.conf.
    assert tmux_server.run("show-options", "-gv", "status").stdout.strip() == "on"


def test_xdg_dirs_are_private_and_short_enough_for_unix_sockets(xdg_dirs):
    for key in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "HOME"):
        assert os.environ[key] == str(xdg_dirs[key])
        assert str(xdg_dirs[key]).startswith("/tmp/afd-")
    assert len(str(xdg_dirs["XDG_RUNTIME_DIR"] / "afd" / "control.sock")) < 108


def test_wait_for_returns_the_first_truthy_value():
    calls = iter([None, 0, "", "found"])
    assert wait_for(lambda: next(calls), timeout=5, interval=0) == "found"


def test_wait_for_fails_with_its_message_at_the_deadline():
    with pytest.raises(WaitTimeout, match="the moon"):
        wait_for(lambda: False, timeout=0.05, message="the moon")


def test_git_repo_has_commits_by_the_test_identity(git_repo):
    assert git(git_repo, "rev-parse", "--abbrev-ref", "HEAD") == "main"
    authors = git(git_repo, "log", "--format=%ae").split()
    assert authors == [TEST_EMAIL] * 3


def test_worktree_is_a_new_branch_of_the_repo(git_repo, worktree):
    path = worktree("afd/feature")
    assert git(path, "rev-parse", "--abbrev-ref", "HEAD") == "afd/feature"
    assert git(path, "rev-parse", "HEAD") == git(git_repo, "rev-parse", "HEAD")
    assert str(path) in git(git_repo, "worktree", "list")


def test_launchers_are_named_after_agents_and_run_as_interpreter_scripts(fake_bin, tmp_path):
    for name in ("claude", "codex", "devin", "my-wrapper"):
        assert os.access(fake_bin / name, os.X_OK)
    log = tmp_path / "log.jsonl"
    proc = subprocess.run(
        [str(fake_bin / "codex"), "exec", "say hello"],
        cwd=tmp_path,
        env={**os.environ, "AFD_FAKE_LOG": str(log), "AFD_FAKE_WORK_SECONDS": "0"},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr
    start = read_log(log)[0]
    # What psutil sees: `<python> <bin>/codex exec 'say hello'`, as for `node …/bin/codex`.
    assert os.path.basename(start["cmdline"][0]).startswith("python")
    assert start["cmdline"][1:] == [str(fake_bin / "codex"), "exec", "say hello"]
    assert start["agent"] == "codex"


def test_start_fake_runs_the_agent_in_a_pane_with_its_name_in_argv(tmux_server, git_repo):
    fake = start_fake(tmux_server, "claude", cwd=git_repo, prompt="fix the test")
    start = fake.wait_ready() and fake.events("start")[0]
    assert start["cwd"] == str(git_repo)
    assert start["prompt"] == "fix the test"
    cmdline = psutil.Process(start["pid"]).cmdline()
    assert os.path.basename(cmdline[1]) == "claude"
    assert cmdline[2:] == ["fix the test"]
    assert tmux_server.pane_field(fake.pane, "#{pane_start_command}").strip('"') == "claude 'fix the test'"


def test_a_wrapper_hides_the_agent_name_from_argv(tmux_server, git_repo):
    fake = start_fake(tmux_server, "claude", cwd=git_repo, command_name="my-wrapper", prompt="go")
    fake.wait_ready()
    cmdline = psutil.Process(fake.pid).cmdline()
    assert os.path.basename(cmdline[1]) == "my-wrapper"
    assert not any(os.path.basename(arg) in ("claude", "codex", "devin") for arg in cmdline)


def test_teardown_reaps_fakes_that_ignore_hangup_and_terminate(xdg_dirs, git_repo):
    server = TmuxServer(name=f"afd-test-{secrets.token_hex(6)}", env=dict(os.environ), scratch=xdg_dirs["HOME"].parent / "t2")
    server.scratch.mkdir()
    server.run("-f", "/dev/null", "start-server", ";", "set-option", "-g", "exit-empty", "off", check=False)
    try:
        fake = start_fake(server, "codex", cwd=git_repo, scenario={"ignore_sigterm": True, "spawn_child": True})
        child = fake.wait_for_event("child")["child_pid"]
        fake.wait_ready()
    finally:
        server.kill()
    wait_for(lambda: not process_alive(fake.pid) and not process_alive(child), message="fake and child gone")
