"""Notifiers in a running daemon, on a real tmux server with fake agents, against local endpoints."""

from __future__ import annotations

import json

import pytest
from endpoint import free_port, start_endpoint

from daemon_harness import afd, run_daemon, status, write_config  # noqa: F401
from harness import start_fake, wait_for

pytestmark = pytest.mark.tmux

FAST = 'poll_interval = "200ms"\n'


@pytest.fixture
def endpoint():
    ep = start_endpoint()
    yield ep
    ep.stop()


def all_events() -> list[dict]:
    done = afd("events", "--json", "-n", "500")
    return [json.loads(line) for line in done.stdout.splitlines()]


def kinds(requests) -> list[str]:
    return [r.json()["kind"] for r in requests]


def session_of(pane: str) -> dict | None:
    return next((s for s in status()["sessions"] if s["pane"] == pane), None)


def adopted(fake) -> str:
    return wait_for(lambda: (s := session_of(fake.pane)) and s["name"], timeout=30, message="the pane adopted")


def test_a_spend_cap_is_exactly_one_webhook_post_with_session_agent_kind_and_message(tmux_server, run_daemon, xdg_dirs, endpoint):
    # session.mission only as a marker: everything stored before it has been through the lane.
    write_config(xdg_dirs, FAST + f'[[notify]]\ntype = "webhook"\nurl = "{endpoint.url()}"\n'
                 'events = ["session.needs_human", "session.mission"]\n')
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, scenario={"limit_now": True, "banner": "claude.spend-cap"})
    fake.wait_ready()
    daemon = run_daemon()
    [post] = wait_for(lambda: endpoint.on("/hook"), timeout=30, message="the webhook POST")
    body = post.json()
    name = session_of(fake.pane)["name"]
    assert body["session"] == name and body["agent"] == "claude" and body["kind"] == "session.needs_human"
    assert body["message"] == "needs you: add credits (spend cap)"
    assert body["text"] == f"{name} (claude) needs you: spend cap — add credits; then: afd resume {name}"
    assert body["account"] == "claude" and body["host"]  # the default account, named after its agent
    assert body["host"] and body["where"].startswith(f"{session_of(fake.pane)['location']} ({fake.pane})")
    assert post.headers["Content-Type"] == "application/json"

    assert afd("sessions", "set-mission", name, "add credits first").returncode == 0
    wait_for(lambda: "session.mission" in kinds(endpoint.requests), timeout=30, message="the marker")
    assert kinds(endpoint.requests) == ["session.needs_human", "session.mission"]
    assert daemon.proc.poll() is None


def test_an_endpoint_that_stalls_delays_neither_detection_nor_status(tmux_server, run_daemon, xdg_dirs, endpoint):
    endpoint.behaviour["/slow"] = "hold"  # no answer until the test lets go (or 30 s)
    write_config(xdg_dirs, FAST + f'[[notify]]\ntype = "webhook"\nurl = "{endpoint.url("/slow")}"\n'
                 'events = ["session.limited"]\ntimeout = "60s"\nmin_interval = "0"\n')
    first = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, scenario={"limit_now": True})
    first.wait_ready()
    daemon = run_daemon()
    wait_for(lambda: endpoint.on("/slow"), timeout=30, message="the first POST, held")

    second = start_fake(tmux_server, "codex", cwd=tmux_server.scratch, scenario={"limit_now": True})
    second.wait_ready()
    wait_for(lambda: (s := session_of(second.pane)) and s["state"] == "limited", timeout=30, message="the second limit")
    name = session_of(second.pane)["name"]
    assert any(e["kind"] == "session.limited" and e["session"] == name for e in all_events())
    # All of that while the first POST still waits for its answer.
    assert endpoint.answered == 0 and len(endpoint.on("/slow")) == 1
    assert afd("status", "--json").returncode == 0

    endpoint.release.set()
    wait_for(lambda: len(endpoint.on("/slow")) == 2, timeout=30, message="the second POST after the first")
    assert [r.json()["agent"] for r in endpoint.on("/slow")] == ["claude", "codex"]
    assert daemon.proc.poll() is None


def test_a_refused_connection_is_one_notify_failed_event_until_it_works_again(tmux_server, run_daemon, xdg_dirs):
    port = free_port()
    write_config(xdg_dirs, FAST + f'[[notify]]\ntype = "webhook"\nurl = "http://127.0.0.1:{port}/hook"\n'
                 'events = ["session.mission"]\nmin_interval = "0"\nretry_for = "1s"\ntimeout = "2s"\n')
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch)
    fake.wait_ready()
    daemon = run_daemon("-v")
    name = adopted(fake)
    for n in range(3):
        assert afd("sessions", "set-mission", name, f"mission {n}").returncode == 0
    wait_for(lambda: daemon.log().count("still failing") == 2, timeout=30, message="all three given up on")
    failed = [e for e in all_events() if e["kind"] == "notify.failed"]
    assert len(failed) == 1 and "connection refused" in failed[0]["message"]
    assert daemon.log().count("notify.failed") == 1  # one log line too, not one per poll or message

    ep = start_endpoint(port)
    try:
        assert afd("sessions", "set-mission", name, "mission 3").returncode == 0
        wait_for(lambda: any(e["kind"] == "notify.recovered" for e in all_events()), timeout=30, message="notify.recovered")
        assert [r.json()["message"] for r in ep.requests] == ["mission set by the user"]
    finally:
        ep.stop()
    recovered = next(e for e in all_events() if e["kind"] == "notify.recovered")
    assert "2 messages could not be sent meanwhile" in recovered["message"]
    assert [e["kind"] for e in all_events()].count("notify.failed") == 1
    assert daemon.proc.poll() is None


def test_repeats_within_min_interval_are_one_message_and_a_command_gets_each_on_stdin(tmux_server, run_daemon, xdg_dirs, endpoint, tmp_path):
    got = tmp_path / "events.jsonl"
    write_config(xdg_dirs, FAST + f'[[notify]]\ntype = "webhook"\nurl = "{endpoint.url()}"\n'
                 'events = ["session.mission"]\nmin_interval = "10s"\n\n'
                 f'[[notify]]\ntype = "command"\nargv = ["/bin/sh", "-c", "cat >> {got}"]\n'
                 'events = ["session."]\nmin_interval = "0"\n')
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch)
    fake.wait_ready()
    daemon = run_daemon()
    name = adopted(fake)
    for n in range(3):
        assert afd("sessions", "set-mission", name, f"mission {n}").returncode == 0
    wait_for(lambda: len(endpoint.requests) == 2, timeout=40, message="the first message and the summary")
    first, summary = (r.json() for r in endpoint.requests)
    assert first["message"] == "mission set by the user" and "repeats" not in first
    assert summary["repeats"] == 2 and "(2 times since" in summary["text"]

    lines = wait_for(lambda: [json.loads(x) for x in got.read_text().splitlines()
                              if json.loads(x)["kind"] == "session.mission"] if got.exists() else None,
                     timeout=30, message="the command's stdin")
    wait_for(lambda: len([x for x in got.read_text().splitlines() if '"session.mission"' in x]) == 3, timeout=30)
    assert lines[0]["session"] == name and lines[0]["agent"] == "claude" and lines[0]["account"] == "claude"
    assert daemon.proc.poll() is None


def test_a_notifier_whose_endpoint_echoes_its_secrets_leaves_them_in_nothing_afd_stores_or_shows(
        tmux_server, run_daemon, xdg_dirs, endpoint, tmp_path):
    from web_harness import Client, web_config
    from web_harness import free_port as free_web_port

    key, token = "abcdefghijklmnopqrstuvwx", "tk_9Zq7Lm2Xw4Vb8Nc1"
    path = f"/services/T0AAAAAAA/{key}"
    # A 401 that repeats the path and the Authorization header, between escape sequences that would drive a terminal.
    endpoint.behaviour[path] = "echo-hostile"
    token_file = tmp_path / "token"
    token_file.write_text(token + "\n")
    token_file.chmod(0o600)
    port = free_web_port()
    write_config(xdg_dirs, web_config(port, FAST + f'[[notify]]\ntype = "webhook"\nurl = "{endpoint.url(path)}"\n'
                                      f'token_file = "{token_file}"\nevents = ["session.mission"]\nmin_interval = "0"\n'))
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch)
    fake.wait_ready()
    daemon = run_daemon("-v")
    name = adopted(fake)
    assert afd("sessions", "set-mission", name, "a mission").returncode == 0
    [failed] = wait_for(lambda: [e for e in all_events() if e["kind"] == "notify.failed"], timeout=30, message="notify.failed")
    assert endpoint.on(path)[0].headers["Authorization"] == f"Bearer {token}"  # sent, and echoed back
    assert failed["message"].startswith(f"webhook http://127.0.0.1:{endpoint.port} could not be told (HTTP 401: ")

    client = Client(port)
    client.log_in()
    shown = {
        "afd events": afd("events", "-n", "100").stdout + afd("events", "--json", "-n", "100").stdout,
        "afd status": afd("status", "--json").stdout + afd("status").stdout,
        "afd plugins": afd("plugins").stdout,
        "afd config show": afd("config", "show", "--json").stdout,
        "the dashboard": client.get("/api/status").text,
        "the log": daemon.log(),
    }
    state = xdg_dirs["XDG_STATE_HOME"] / "afd"
    shown["the store"] = b"".join(p.read_bytes() for p in state.glob("state.db*")).decode("latin-1")
    for where, text in shown.items():
        assert key not in text and token not in text, where
    # What reaches a person's terminal has the endpoint's escape sequences shown as text, not obeyed.
    for where in ("afd events", "afd status", "afd plugins", "the log"):
        assert "\x1b" not in shown[where] and "\x07" not in shown[where], where
    assert "\\x1b]0;pwned" in afd("events", "-n", "100").stdout
    assert "could not be told" in shown["the dashboard"] and "could not be told" in shown["the log"]
