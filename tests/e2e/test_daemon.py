"""`afd run` as a process: readiness and watchdog, reload, stop, the lock, the control socket, sessions."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from daemon_harness import Daemon, afd, run_daemon, status, write_config  # noqa: F401 (run_daemon is a fixture)
from harness import commits_by, read_log, start_fake, wait_for

pytestmark = pytest.mark.tmux


@pytest.fixture
def notify_socket(xdg_dirs):
    path = xdg_dirs["XDG_RUNTIME_DIR"] / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(0.2)
    messages: list[str] = []

    def receive() -> list[str]:
        while True:
            try:
                messages.append(sock.recv(4096).decode())
            except TimeoutError:
                return messages

    yield str(path), receive
    sock.close()


def test_notify_protocol_ready_watchdog_reload_and_stop(run_daemon, notify_socket, xdg_dirs):
    # Polls far apart and a short watchdog: pings must come from the wait between polls,
    # or systemd would kill afd long before the next poll.
    write_config(xdg_dirs, 'poll_interval = "45s"\n')
    path, receive = notify_socket
    d = run_daemon(env={"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "1000000"})
    wait_for(lambda: any("READY=1" in m for m in receive()), message="READY=1")
    wait_for(lambda: sum(m.startswith("WATCHDOG=1") for m in receive()) >= 4, timeout=30, message="4 WATCHDOG=1 within one poll")
    assert any(m.startswith("STATUS=") for m in receive())
    d.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: any("RELOADING=1" in m for m in receive()), message="RELOADING=1")
    reloading = next(i for i, m in enumerate(receive()) if "RELOADING=1" in m)
    wait_for(lambda: any("READY=1" in m for m in receive()[reloading:]), message="READY=1 after the reload")
    assert d.stop() == 0
    assert any("STOPPING=1" in m for m in receive())


def test_ready_is_sent_even_when_no_tmux_server_runs(xdg_dirs, notify_socket):
    path, receive = notify_socket
    proc = subprocess.Popen(
        [sys.executable, "-m", "afd", "run", "-L", "afd-test-nothing-here"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "NOTIFY_SOCKET": path},
    )
    try:
        wait_for(lambda: any("READY=1" in m for m in receive()), message="READY=1")
        assert any("no tmux server" in m for m in receive() if m.startswith("STATUS="))
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0


def test_second_daemon_on_the_same_state_refuses(run_daemon, tmux_server):
    run_daemon()
    done = afd("run", "-L", tmux_server.name)
    assert done.returncode == 1
    assert "another afd is already running" in done.stderr


def test_invalid_config_at_start_exits_78_with_its_line(xdg_dirs, tmux_server):
    write_config(xdg_dirs, 'tail_lines = 3\nlimit_action = "handoff"\n')
    done = afd("run", "-L", tmux_server.name)
    assert done.returncode == 78
    assert "config.toml:2: limit_action" in done.stderr and "handoff_order" in done.stderr


def _count(kind: str) -> int:
    return sum(e["kind"] == kind for e in status()["events"])


def test_sighup_with_a_broken_config_keeps_the_last_good_one(run_daemon, xdg_dirs, tmux_server):
    # The good config ignores every pane, so the old config in force shows as nothing adopted.
    config = write_config(xdg_dirs, 'poll_interval = "300ms"\nwatch_ignore = ["*"]\n')
    d = run_daemon()
    config.write_text('poll_interval = "300ms"\nwatch_ignore = ["*"]\ntail_lines = "three"\n')
    d.proc.send_signal(signal.SIGHUP)

    def invalid_reported():
        return next((e for e in status()["events"] if e["kind"] == "config.invalid"), None)

    event = wait_for(invalid_reported, timeout=20, message="config.invalid event")
    assert "config.toml:3: tail_lines" in event["message"] and "last good config stays in force" in event["message"]
    assert d.proc.poll() is None and status()["daemon"]["running"] is True
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, prompt="fix the login redirect")
    fake.wait_ready()
    broken = {
        "tail-lines": 'poll_interval = "300ms"\ntail_lines = "three"\n',
        "deep": "watch_ignore = " + "[" * 5000 + "]" * 5000 + "\n",
        "not-utf8": b"\xff\xfe watch_ignore = []\n",
    }
    for text in broken.values():
        before = _count("config.invalid")
        (config.write_bytes if isinstance(text, bytes) else config.write_text)(text)
        d.proc.send_signal(signal.SIGHUP)  # each reload fails, and polls run on the old config
        wait_for(lambda: _count("config.invalid") > before, timeout=20, message="this reload to be refused")  # noqa: B023 (waited for here)
        assert d.proc.poll() is None
    assert status()["sessions"] == []
    # The control: a good config that watches every pane adopts the fake at once.
    before = _count("config.reloaded")
    config.write_text('poll_interval = "300ms"\n')
    d.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: status()["sessions"], timeout=20, message="adoption under the good config")
    assert "Traceback" not in d.log()


def test_status_when_the_daemon_is_down(xdg_dirs, run_daemon, tmux_server):
    done = afd("status", "--json")
    assert done.returncode == 3 and "no state yet" in done.stderr
    empty = json.loads(done.stdout)  # a script still gets the schema, never empty input
    assert empty["schema"] == 1 and empty["sessions"] == [] and empty["daemon"]["running"] is False
    assert {a["name"]: a["state"] for a in empty["agents"]} == {name: "unknown" for name in ("claude", "codex", "copilot", "devin", "gemini", "opencode")}
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, prompt="fix the login redirect")
    fake.wait_ready()
    d = run_daemon()
    wait_for(lambda: status()["sessions"], timeout=20, message="adoption")
    assert d.stop() == 0
    done = afd("status", "--json")
    assert done.returncode == 3
    report = json.loads(done.stdout)
    assert report["schema"] == 1 and report["daemon"]["running"] is False
    assert report["sessions"][0]["mission"] == "fix the login redirect"
    assert {a["name"] for a in report["agents"]} >= {"claude", "codex", "devin"}
    human = afd("status")
    assert human.returncode == 3 and "not running" in human.stdout


def test_adopt_a_wrapper_on_the_users_word(run_daemon, tmux_server):
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, command_name="my-wrapper", prompt="x")
    fake.wait_ready()
    run_daemon()
    refused = afd("sessions", "adopt", fake.pane)
    assert refused.returncode == 2 and "pass --agent" in refused.stderr
    done = afd("sessions", "adopt", fake.pane, "--agent", "claude", "--name", "wrapped", "--mission", "port the parser", "--json")
    assert done.returncode == 0, done.stderr
    session = next(s for s in status()["sessions"] if s["name"] == "wrapped")
    assert session["identity_source"] == "user" and session["mission"] == "port the parser"
    assert session["identity"] == "unknown" and session["agent"] == "claude"  # the user's word, not afd's knowledge
    again = afd("sessions", "adopt", fake.pane, "--agent", "claude")
    assert again.returncode == 2 and "already session" in again.stderr


def test_sessions_create_starts_the_agent_in_a_new_worktree(run_daemon, tmux_server, git_repo, xdg_dirs):
    fake_claude = tmux_server.scratch / "bin" / "claude"
    start_fake(tmux_server, "codex", cwd=tmux_server.scratch).wait_ready()  # installs the fake bin
    write_config(xdg_dirs, f'[agents.claude]\ncommand = ["{fake_claude}"]\n')
    log = tmux_server.scratch / "created.jsonl"
    # A new tmux session gets the server's environment, not the daemon's.
    tmux_server.run("set-environment", "-g", "AFD_FAKE_LOG", str(log))
    tmux_server.run("set-option", "-g", "base-index", "1")
    run_daemon()
    done = afd("sessions", "create", "fix-login", "--agent", "claude", "--repo", str(git_repo), "--prompt", "fix the login redirect", "--json")
    assert done.returncode == 0, done.stderr
    created = json.loads(done.stdout)
    assert created["branch"] == "afd/fix-login"
    worktree = Path(created["worktree"])
    assert worktree.is_dir() and worktree.is_relative_to(xdg_dirs["XDG_DATA_HOME"])
    wait_for(lambda: any(e["event"] == "work" for e in read_log(log)), timeout=20, message="the agent's first work")
    start = next(e for e in read_log(log) if e["event"] == "start")
    assert start["argv"][-1] == "fix the login redirect" and Path(start["cwd"]) == worktree
    assert commits_by(worktree, "claude", "main..HEAD")
    session = wait_for(lambda: next((s for s in status()["sessions"] if s["name"] == "fix-login" and s["state"] != "exited"), None))
    assert session["mission"] == "fix the login redirect" and session["branch"] == "afd/fix-login"
    assert session["pane"] == created["pane"]
    # Where tmux put it (this server counts windows from 1), not an assumed ":0.0".
    assert session["location"] == "afd-fix-login:1.0"
    taken = afd("sessions", "create", "fix-login", "--agent", "claude", "--repo", str(git_repo), "--prompt", "again")
    assert taken.returncode == 2 and "already exists" in taken.stderr
    not_repo = afd("sessions", "create", "other", "--agent", "claude", "--repo", str(xdg_dirs["HOME"]), "--prompt", "p")
    assert not_repo.returncode == 2 and "not a git repository" in not_repo.stderr
    unknown = afd("sessions", "create", "third", "--agent", "gemni", "--repo", str(git_repo), "--prompt", "p")
    assert unknown.returncode == 2 and "not an agent" in unknown.stderr


def test_set_mission_and_forget(run_daemon, tmux_server):
    fake = start_fake(tmux_server, "codex", cwd=tmux_server.scratch, prompt="first goal here")
    fake.wait_ready()
    run_daemon()
    name = wait_for(lambda: next((s["name"] for s in status()["sessions"]), None), timeout=20)
    assert afd("sessions", "set-mission", name, "the real goal").returncode == 0
    assert status()["sessions"][0]["mission"] == "the real goal"
    live = afd("sessions", "forget", name)
    assert live.returncode == 2 and "still running" in live.stderr  # it would only be adopted again
    tmux_server.run("kill-pane", "-t", fake.pane)
    wait_for(lambda: status()["sessions"][0]["state"] == "gone", timeout=20, message="gone")
    assert afd("sessions", "forget", name).returncode == 0
    assert all(s["name"] != name for s in status()["sessions"])
    missing = afd("sessions", "forget", "nope")
    assert missing.returncode == 2 and "no session named" in missing.stderr


def test_run_once_polls_and_prints_the_status(tmux_server, xdg_dirs):
    write_config(xdg_dirs, 'poll_interval = "200ms"\n')
    fake = start_fake(tmux_server, "codex", cwd=tmux_server.scratch, scenario={"limit_now": True}, prompt="fix the flaky test")
    fake.wait_for_event("limit")
    done = afd("run", "-L", tmux_server.name, "--once", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [(s["agent"], s["state"], s["mission"]) for s in report["sessions"]] == [("codex", "limited", "fix the flaky test")]
    assert "poll 2/2" in done.stderr


def test_run_once_with_one_stability_poll_reports_the_limit(tmux_server, xdg_dirs):
    write_config(xdg_dirs, 'poll_interval = "200ms"\nstability_polls = 1\n')
    fake = start_fake(tmux_server, "codex", cwd=tmux_server.scratch, scenario={"limit_now": True}, prompt="go")
    fake.wait_for_event("limit")
    done = afd("run", "-L", tmux_server.name, "--once", "--json")
    assert done.returncode == 0, done.stderr
    assert [s["state"] for s in json.loads(done.stdout)["sessions"]] == ["limited"]


def test_pending_intent_from_a_crash_is_inspected_and_reported(tmux_server, xdg_dirs, git_repo):
    from afd.record.store import Store

    with Store(xdg_dirs["XDG_STATE_HOME"] / "afd" / "state.db") as store:
        store.journal_begin("fix-login", "create", {"repo": str(git_repo), "branch": "afd/fix-login",
                                                    "worktree": str(git_repo.parent / "wt"), "tmux_session": "afd-fix-login"})
    done = afd("run", "-L", tmux_server.name, "--once", "--json")
    assert done.returncode == 0, done.stderr
    events = [e for e in json.loads(done.stdout)["events"] if e["kind"] == "journal.rolled-back"]
    # It looked: no branch, worktree or tmux session was there, and it says so.
    assert events and events[0]["session"] == "fix-login" and "nothing had been made" in events[0]["message"]
    with Store(xdg_dirs["XDG_STATE_HOME"] / "afd" / "state.db") as store:
        assert store.pending_journal() == []


def test_corrupt_state_is_moved_aside_and_reported(tmux_server, xdg_dirs):
    db = xdg_dirs["XDG_STATE_HOME"] / "afd" / "state.db"
    db.parent.mkdir(parents=True)
    db.write_bytes(b"this is not a database" * 100)
    done = afd("run", "-L", tmux_server.name, "--once", "--json")
    assert done.returncode == 0, done.stderr
    event = next(e for e in json.loads(done.stdout)["events"] if e["kind"] == "store.corrupt")
    aside = [p for p in db.parent.iterdir() if p.name.startswith("state.db.corrupt-")]
    assert len(aside) == 1 and aside[0].read_bytes().startswith(b"this is not a database")
    assert str(aside[0]) in event["message"]


def test_events_follow_streams_new_events(run_daemon, tmux_server):
    run_daemon()
    follower = subprocess.Popen([sys.executable, "-m", "afd", "events", "--follow", "--json", "-n", "0"],
                                stdout=subprocess.PIPE, text=True)
    try:
        # The follower may connect after a first pane's adoption (a loaded machine starts
        # it slowly): another pane, another event, until one streams.
        ready = []
        for i in range(8):
            start_fake(tmux_server, "claude", cwd=tmux_server.scratch, prompt=f"write the docs {i}").wait_ready()
            ready, _, _ = select.select([follower.stdout], [], [], 5)
            if ready:
                break
        assert ready, "no event streamed"
        line = follower.stdout.readline()
        event = json.loads(line)
        assert event["kind"] in {"session.adopted", "tmux.up"}
    finally:
        follower.terminate()
        follower.wait(timeout=10)


def test_doctor_reports_each_check(xdg_dirs, tmux_server):
    done = afd("doctor", "--json")
    checks = {c["check"]: c["status"] for c in json.loads(done.stdout)}
    assert checks["tmux"] == "ok" and checks["config"] == "ok" and checks["daemon"] == "warn"
    assert {"agent claude", "agent codex", "agent devin", "state dir", "systemd unit"} <= set(checks)
    write_config(xdg_dirs, "tail_lines = 0\n")
    bad = afd("doctor", "--json")
    assert bad.returncode == 1
    assert {c["check"]: c["status"] for c in json.loads(bad.stdout)}["config"] == "fail"


def test_doctor_lists_every_known_agent_with_whether_its_command_is_found(xdg_dirs, tmp_path):
    """Built-in agents and the shipped manifests' alike: found on PATH (where), or not (a warning, not a failure)."""
    from afd.pluginset import load_plugins

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub = bin_dir / "opencode"
    stub.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    stub.chmod(0o755)
    done = subprocess.run([sys.executable, "-m", "afd", "doctor", "--json"], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "PATH": str(bin_dir)})
    checks = {c["check"]: c for c in json.loads(done.stdout)}
    known = set(load_plugins(None, entry_points=False).agents)
    assert known >= {"claude", "codex", "devin", "gemini", "opencode", "copilot"}
    assert {name.removeprefix("agent ") for name in checks if name.startswith("agent ")} == known
    assert checks["agent opencode"]["status"] == "ok" and checks["agent opencode"]["detail"] == str(stub)
    for name in known - {"opencode"}:
        assert checks[f"agent {name}"]["status"] == "warn", checks[f"agent {name}"]
        assert checks[f"agent {name}"]["detail"].endswith("is not on PATH"), checks[f"agent {name}"]
    assert checks["agent copilot"]["detail"] == "copilot is not on PATH"


def test_a_config_file_edit_reloads_without_a_signal(run_daemon, xdg_dirs, tmux_server):
    config = write_config(xdg_dirs, 'poll_interval = "300ms"\nwatch_ignore = ["*"]\n')
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, prompt="fix the login redirect")
    fake.wait_ready()
    run_daemon()
    wait_for(lambda: _count("daemon.started") and status()["sessions"] == [], timeout=20, message="a poll with every pane ignored")
    config.write_text('poll_interval = "400ms"\n')
    # The new value is in force: the pane ignored so far is adopted now.
    wait_for(lambda: status()["sessions"], timeout=20, message="adoption under the edited config")
    assert _count("config.reloaded") >= 1


def test_the_config_watch_survives_its_directory_being_replaced(run_daemon, xdg_dirs, tmux_server):
    import shutil

    config = write_config(xdg_dirs, 'poll_interval = "300ms"\nwatch_ignore = ["*"]\n')
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, prompt="fix the login redirect")
    fake.wait_ready()
    run_daemon()
    # The watch starts beside the loop: an edit it reports shows it is in place before the folder goes.
    config.write_text('poll_interval = "300ms"\nwatch_ignore = ["*"]\n# edited\n')
    wait_for(lambda: _count("config.reloaded"), timeout=30, message="the watch in place")
    seen = _count("config.invalid") + _count("config.reloaded")
    shutil.rmtree(config.parent)
    wait_for(lambda: _count("config.invalid") + _count("config.reloaded") > seen, timeout=20,
             message="the deletion noticed")
    config.parent.mkdir()
    config.write_text('poll_interval = "300ms"\n')
    wait_for(lambda: status()["sessions"], timeout=30, message="adoption under the config written into the new directory")


def test_the_config_watch_is_not_recursive(xdg_dirs, monkeypatch):
    import threading

    import watchfiles

    from afd.daemon.loop import Daemon

    config = write_config(xdg_dirs, 'poll_interval = "300ms"\n')
    calls = []

    def recording_watch(*paths, **kwargs):
        calls.append((paths, kwargs))
        kwargs["stop_event"].set()
        return iter(())

    monkeypatch.setattr(watchfiles, "watch", recording_watch)
    d = Daemon(config)
    d.config = type("C", (), {"path": config})()
    d._watch_stop = threading.Event()
    d._watch(config)
    [(paths, kwargs)] = calls
    assert kwargs["recursive"] is False
    assert set(paths) == {config.parent, config.parent.parent}


def test_a_reload_that_names_another_tmux_server_is_refused_and_the_rest_applies(xdg_dirs, tmux_server):
    config = write_config(xdg_dirs, f'poll_interval = "300ms"\nwatch_ignore = ["*"]\n[tmux]\nsocket_name = "{tmux_server.name}"\n')
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, prompt="fix the login redirect")
    fake.wait_ready()
    err = xdg_dirs["HOME"] / "daemon.log"
    proc = subprocess.Popen([sys.executable, "-m", "afd", "run"], stdout=subprocess.DEVNULL, stderr=err.open("wb"))
    try:
        wait_for(lambda: afd("status", "--json").returncode == 0, timeout=20, message="the daemon answering")
        config.write_text('poll_interval = "300ms"\n[tmux]\nsocket_name = "afd-test-some-other-server"\n')
        proc.send_signal(signal.SIGHUP)
        wait_for(lambda: _count("config.refused-key"), timeout=20, message="the server change refused")
        event = next(e for e in status()["events"] if e["kind"] == "config.refused-key")
        assert "restart afd to watch another server" in event["message"]
        # watch_ignore went away (that part applied) and the pane is seen on the server still watched.
        wait_for(lambda: [s["state"] for s in status()["sessions"]] in (["working"], ["idle"]), timeout=20, message="adoption")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)


def test_a_control_socket_that_cannot_be_bound_is_one_clean_line(xdg_dirs, tmux_server):
    (xdg_dirs["XDG_RUNTIME_DIR"] / "afd").write_text("a file where afd's runtime directory belongs\n")
    done = afd("run", "-L", tmux_server.name)
    assert done.returncode == 1
    assert "is not a directory" in done.stderr and "Traceback" not in done.stderr


def test_a_control_socket_someone_else_listens_on_is_one_clean_line(xdg_dirs, tmux_server):
    folder = xdg_dirs["XDG_RUNTIME_DIR"] / "afd"
    folder.mkdir(mode=0o700)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as squatter:
        squatter.bind(str(folder / "control.sock"))
        squatter.listen(1)
        done = afd("run", "-L", tmux_server.name)
    assert done.returncode == 1
    assert "already listening" in done.stderr and "Traceback" not in done.stderr


def test_a_newer_schema_database_exits_78(xdg_dirs, tmux_server):
    import sqlite3

    from afd.record.store import SCHEMA_VERSION, Store

    db = xdg_dirs["XDG_STATE_HOME"] / "afd" / "state.db"
    Store(db).close()
    with sqlite3.connect(db) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    done = afd("run", "-L", tmux_server.name)
    assert done.returncode == 78 and "newer than this afd" in done.stderr


def test_a_config_that_cannot_be_read_exits_78_at_start(xdg_dirs, tmux_server):
    write_config(xdg_dirs, "watch_ignore = " + "[" * 5000 + "]" * 5000 + "\n")
    done = afd("run", "-L", tmux_server.name)
    assert done.returncode == 78 and "nested too deeply" in done.stderr and "Traceback" not in done.stderr


def test_status_of_a_busy_daemon_is_running_not_down(xdg_dirs):
    from afd.record.store import StateLock, Store

    db = xdg_dirs["XDG_STATE_HOME"] / "afd" / "state.db"
    # A daemon that holds its lock but does not answer on the socket (mid-poll, tmux hung).
    with StateLock.for_store(db), Store(db):
        done = afd("status", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["daemon"]["running"] is True


def test_sixty_concurrent_status_calls_all_succeed(run_daemon, tmux_server):
    import contextlib
    import io
    import threading

    from afd.cli.main import main

    d = run_daemon()
    # The daemon is made busy (stopped) while the 60 connect, so they queue in its backlog.
    # `afd status` itself, run in threads: sixty interpreters would cost more than they prove.
    codes: list[int] = []
    barrier = threading.Barrier(61)

    def one() -> None:
        barrier.wait()
        codes.append(main(["status", "--json"]))

    threads = [threading.Thread(target=one) for _ in range(60)]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        for t in threads:
            t.start()
        d.proc.send_signal(signal.SIGSTOP)
        try:
            barrier.wait()
            threading.Event().wait(0.3)
        finally:
            d.proc.send_signal(signal.SIGCONT)
        for t in threads:
            t.join(timeout=120)
    assert codes == [0] * 60


def test_a_persistent_poll_error_is_logged_once_then_counted(xdg_dirs, caplog):
    import logging

    from afd.daemon.loop import Daemon

    d = Daemon(None)
    with caplog.at_level(logging.INFO, logger="afd.daemon"):
        for _ in range(5):
            try:
                raise OSError("tmux exploded")
            except OSError as exc:
                d._poll_failed(exc)
        d._poll_worked()
    tracebacks = [r for r in caplog.records if r.exc_info]
    assert len(tracebacks) == 1
    messages = [r.getMessage() for r in caplog.records]
    assert any("4 repeats" in m for m in messages) and not any("3 repeats" in m for m in messages)
    assert "polls work again after 5 failures of: OSError: tmux exploded" in messages[-1]


def test_status_answers_while_tmux_hangs(run_daemon, tmux_server):
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, prompt="fix the login redirect")
    fake.wait_ready()
    run_daemon()
    wait_for(lambda: status()["sessions"], timeout=20, message="adoption")
    pid = int(tmux_server.run("display-message", "-p", "#{pid}").stdout)
    os.kill(pid, signal.SIGSTOP)
    try:
        done = wait_for(lambda: (d := afd("status", "--json", timeout=60)).returncode == 0 and d, timeout=40)
        assert json.loads(done.stdout)["sessions"][0]["mission"] == "fix the login redirect"
        wait_for(lambda: status()["sessions"][0]["state"] == "unknown", timeout=40, message="unknown while tmux hangs")
    finally:
        os.kill(pid, signal.SIGCONT)
    wait_for(lambda: status()["sessions"][0]["state"] != "unknown", timeout=40, message="back from unknown")


def test_tmux_server_killed_under_the_daemon(run_daemon, tmux_server):
    fake = start_fake(tmux_server, "codex", cwd=tmux_server.scratch, prompt="fix the flaky test")
    fake.wait_ready()
    d = run_daemon()
    wait_for(lambda: status()["sessions"], timeout=20, message="adoption")
    tmux_server.kill()
    wait_for(lambda: status()["sessions"][0]["state"] == "gone", timeout=20, message="gone")
    assert d.proc.poll() is None
    assert any(e["kind"] == "tmux.down" for e in status()["events"])
    assert "Traceback" not in d.log()


def test_bad_input_to_create_and_adopt_changes_nothing(run_daemon, tmux_server, git_repo):
    run_daemon()
    from harness import git

    git(git_repo, "branch", "afd/taken")
    before = git(git_repo, "worktree", "list")
    done = afd("sessions", "create", "taken", "--agent", "claude", "--repo", str(git_repo), "--prompt", "p")
    assert done.returncode == 2 and "already exists" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    bad_base = afd("sessions", "create", "fresh", "--agent", "claude", "--repo", str(git_repo), "--prompt", "p", "--base", "nope")
    assert bad_base.returncode == 2 and "not a commit" in bad_base.stderr
    assert git(git_repo, "worktree", "list") == before and "afd/fresh" not in git(git_repo, "branch")
    missing = afd("sessions", "adopt", "%999")
    assert missing.returncode == 2 and "not found" in missing.stderr
    assert status()["sessions"] == []


def _fake_claude_config(tmux_server, xdg_dirs, command: list[str] | None = None) -> Path:
    fake_claude = tmux_server.scratch / "bin" / "claude"
    start_fake(tmux_server, "codex", cwd=tmux_server.scratch).wait_ready()  # installs the fake bin
    write_config(xdg_dirs, f'poll_interval = "200ms"\n[agents.claude]\ncommand = {json.dumps(command or [str(fake_claude)])}\n')
    tmux_server.run("set-environment", "-g", "AFD_FAKE_LOG", str(tmux_server.scratch / "created.jsonl"))
    return fake_claude


def test_create_keeps_the_daemon_answering_while_git_works(run_daemon, tmux_server, git_repo, xdg_dirs):
    _fake_claude_config(tmux_server, xdg_dirs)
    started, release = tmux_server.scratch / "hook-started", tmux_server.scratch / "hook-release"
    hook = git_repo / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch {started}\nwhile [ ! -e {release} ]; do sleep 0.05; done\n")
    hook.chmod(0o755)
    run_daemon()
    creating = subprocess.Popen([sys.executable, "-m", "afd", "sessions", "create", "slow", "--agent", "claude",
                                 "--repo", str(git_repo), "--prompt", "fix it", "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(started.exists, timeout=30, message="the post-checkout hook running")
        answered = afd("status", "--json")  # the loop is not stuck in git
        assert answered.returncode == 0, answered.stderr
        assert creating.poll() is None  # and the create is still waiting for its hook
    finally:
        release.touch()
    out, err = creating.communicate(timeout=120)
    assert creating.returncode == 0, err
    assert json.loads(out)["branch"] == "afd/slow"


def test_a_created_sessions_prompt_ending_in_a_semicolon_arrives_whole(run_daemon, tmux_server, git_repo, xdg_dirs):
    _fake_claude_config(tmux_server, xdg_dirs)
    log = tmux_server.scratch / "created.jsonl"
    run_daemon()
    done = afd("sessions", "create", "semi", "--agent", "claude", "--repo", str(git_repo), "--prompt", "fix it;")
    assert done.returncode == 0, done.stderr
    start = wait_for(lambda: next((e for e in read_log(log) if e["event"] == "start"), None), timeout=20, message="the agent's start")
    assert start["argv"][-1] == "fix it;"
