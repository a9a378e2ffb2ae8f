"""For the person who is away: what afd tells them, the names they type, and their holds on a session.

A real daemon on a real tmux server with the fake agents, through the `afd` command a person runs, and a
local HTTP endpoint standing for their phone.
"""

from __future__ import annotations

import json
import subprocess
from datetime import datetime

import pytest
from endpoint import start_endpoint

from daemon_harness import afd, run_daemon, status, write_config  # noqa: F401
from harness import start_fake, wait_for

pytestmark = pytest.mark.tmux

FAST = 'poll_interval = "200ms"\n'
MESSAGE = "Limit over: carry on with the task."
# A wall with no time on it, retried after an interval: a resume that comes due in seconds.
RETRY = FAST + f'limit_auto_resume = true\nlimit_retry_interval = "1s"\n[agents.codex]\nresume_message = "{MESSAGE}"\n'
NO_TIME = {"limit_after_prompts": 1, "limit_lasts_seconds": 1, "banner_params": {"form": "later"}}


@pytest.fixture
def endpoint():
    ep = start_endpoint()
    yield ep
    ep.stop()


def session_of(pane: str) -> dict | None:
    return next((s for s in status()["sessions"] if s["pane"] == pane), None)


def wait_row(pane: str, predicate, message: str, timeout: float = 30) -> dict:
    def row():
        s = session_of(pane)
        return s if s is not None and predicate(s) else None

    try:
        return wait_for(row, timeout=timeout, message=message)
    except AssertionError:
        print(afd("events", "-n", "40").stdout)  # shown by pytest with the failure
        raise


def events(kind: str) -> list[dict]:
    done = afd("events", "--json", "-n", "500")
    return [e for e in map(json.loads, done.stdout.splitlines()) if e["kind"] == kind]


def continuations(fake) -> list[dict]:
    return [e for e in fake.events("input") if MESSAGE in e["text"]]


def ok(*args: str) -> subprocess.CompletedProcess:
    done = afd(*args)
    assert done.returncode == 0, done.stderr
    return done


# --- item 1: with the defaults, a wall afd leaves to you reaches you ----------------------------


def test_a_weekly_wall_with_the_default_config_reaches_the_one_notifier(tmux_server, run_daemon, xdg_dirs, endpoint):
    # The defaults (no limit_action, no auto-resume, the default event set) and one notifier.
    write_config(xdg_dirs, FAST + f'[[notify]]\ntype = "ntfy"\nurl = "{endpoint.url("/afd-laptop")}"\n')
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, scenario={"limit_now": True, "banner": "claude.weekly"})
    fake.wait_ready()
    run_daemon()
    row = wait_row(fake.pane, lambda s: s["state"] == "limited" and (s["next"] or {}).get("action") == "report", "the wall reported")
    name = row["name"]
    assert row["next"]["reason"] == "report" and row["next_action"].startswith(f"resume with: afd resume {name}")

    [post] = wait_for(lambda: endpoint.on("/afd-laptop"), timeout=30, message="the ntfy message")
    assert post.headers["Title"] == f"{name} waits for you" and post.headers["Priority"] == "4"
    text = post.body.decode().splitlines()[0]
    assert text.startswith(f"{name} (claude) is at its usage limit (resets ")
    assert text.endswith(f"afd will not act on this wall; it waits for you: resume with: afd resume {name}")
    [waiting] = events("session.waiting")
    assert waiting["session"] == name and waiting["message"] == (
        f"afd will not act on this wall; it waits for you: resume with: afd resume {name}")
    # Told once a wall: later polls of the same wall send nothing more.
    ok("sessions", "set-mission", name, "marker")  # handled between polls, after the ones that saw the wall
    assert len(events("session.waiting")) == 1 and len(endpoint.on("/afd-laptop")) == 1


# --- item 5: the names a person types ----------------------------------------------------------


def test_every_command_takes_any_unambiguous_name_for_a_session(tmux_server, run_daemon, xdg_dirs):
    write_config(xdg_dirs, FAST)
    walled = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, scenario={"limit_now": True})
    left = start_fake(tmux_server, "claude", cwd=tmux_server.scratch)
    right = start_fake(tmux_server, "claude", cwd=tmux_server.scratch)
    for fake in (walled, left, right):
        fake.wait_ready()
    # `shop-api` holds one pane; `web` two, side by side in one window.
    tmux_server.run("rename-session", "-t", walled.pane, "shop-api")
    tmux_server.run("rename-session", "-t", left.pane, "web")
    tmux_server.run("join-pane", "-d", "-s", right.pane, "-t", left.pane)
    daemon = run_daemon()
    shop = wait_row(walled.pane, lambda s: s["state"] == "limited", "shop-api limited")["name"]
    assert shop == "shop-api:0.0"
    web_left = wait_row(left.pane, lambda s: s["location"] == "web:0.0", "web:0.0")["name"]
    web_right = wait_row(right.pane, lambda s: s["location"] == "web:0.1", "web:0.1")["name"]

    # The tmux session name, `session:window.pane`, and the pane id each find their one session.
    assert json.loads(ok("sessions", "pause", "shop-api", "--json").stdout)["name"] == shop
    assert json.loads(ok("sessions", "unpause", "web:0.1", "--json").stdout)["name"] == web_right
    assert json.loads(ok("sessions", "set-mission", left.pane, "write the blog", "--json").stdout)["name"] == web_left
    assert "no handoffs recorded" in ok("ledger", "shop-api").stdout

    # A name two sessions answer to is an error naming both; nothing is changed.
    for command in (("sessions", "pause", "web"), ("resume", "web:0"), ("ledger", "web")):
        done = afd(*command)
        assert done.returncode == 2, (command, done.stderr)
        assert f"'{command[-1]}' names 2 sessions" in done.stderr and web_left in done.stderr and web_right in done.stderr
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert all(s["paused"] is None for s in status()["sessions"] if s["name"] in (web_left, web_right))

    # The person's own resume goes through a pause, by the tmux session name.
    resumed = afd("resume", "shop-api", "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["name"] == shop

    # With the daemon down the store answers the same names.
    daemon.stop()
    assert f"{shop}: no handoffs recorded" in afd("ledger", "shop-api").stdout
    assert afd("ledger", walled.pane).returncode == 0
    down = afd("ledger", "web")
    assert down.returncode == 2 and "names 2 sessions" in down.stderr


# --- item 6: pause, unpause, cancel -----------------------------------------------------------


def test_a_pause_holds_a_due_resume_across_a_restart_and_unpause_lets_it_go(tmux_server, run_daemon, xdg_dirs):
    write_config(xdg_dirs, RETRY)
    fake = start_fake(tmux_server, "codex", cwd=tmux_server.scratch, scenario=NO_TIME)
    fake.wait_ready()
    daemon = run_daemon()
    name = wait_row(fake.pane, lambda s: True, "adopted")["name"]
    paused = json.loads(ok("sessions", "pause", name, "--json").stdout)
    assert paused["paused"] is True and paused["until"] is None

    fake.type("fix the login test")  # its wall comes after this turn
    held = wait_row(fake.pane, lambda s: (s["next"] or {}).get("action") == "paused"
                    and s["next"]["held"]["action"] == "resume" and s["next"]["held"]["at"] is None,
                    "a resume due now, held")  # fmt: skip
    assert held["state"] == "limited" and held["paused"]["until"] is None
    assert held["next_action"].startswith("paused by you: retry now is held")
    table = ok("status").stdout
    assert "paused" in table
    assert continuations(fake) == []

    # The pause is the store's: a restart keeps it, and the due resume stays held.
    daemon.stop()
    run_daemon()
    wait_for(lambda: [e for e in status()["events"] if e["kind"] == "tmux.up"][1:], message="the second daemon polling")
    again = wait_row(fake.pane, lambda s: (s["next"] or {}).get("action") == "paused", "held after the restart")
    assert again["paused"] == held["paused"]
    assert continuations(fake) == []

    done = json.loads(ok("sessions", "unpause", name, "--json").stdout)
    assert done == {"name": name, "paused": False, "was_paused": True}
    wait_for(lambda: continuations(fake), timeout=30, message="the resume once unpaused")
    assert len(continuations(fake)) == 1
    assert session_of(fake.pane)["paused"] is None
    assert [e["session"] for e in events("session.paused")] == [name]


def test_a_pause_for_a_while_ends_by_itself(tmux_server, run_daemon, xdg_dirs):
    write_config(xdg_dirs, RETRY)
    fake = start_fake(tmux_server, "codex", cwd=tmux_server.scratch, scenario=NO_TIME)
    fake.wait_ready()
    run_daemon()
    name = wait_row(fake.pane, lambda s: True, "adopted")["name"]
    paused = json.loads(ok("sessions", "pause", name, "--for", "3s", "--json").stdout)
    assert paused["until"] is not None
    fake.type("fix the login test")
    [sent] = wait_for(lambda: continuations(fake), timeout=30, message="the resume once the pause ran out")
    until = datetime.fromisoformat(paused["until"].replace("Z", "+00:00"))
    assert sent["t"] >= until.timestamp()  # held while the pause lasted (its end is stored to the second)
    assert any(e["kind"] == "session.unpaused" and "pause ended" in e["message"] for e in events("session.unpaused"))
    bad = afd("sessions", "pause", name, "--for", "soon")
    assert bad.returncode == 2 and "--for" in bad.stderr


def test_a_cancelled_wall_is_not_planned_again_while_another_is_resumed(tmux_server, run_daemon, xdg_dirs):
    write_config(xdg_dirs, RETRY)
    fakes = [start_fake(tmux_server, "codex", cwd=tmux_server.scratch, scenario=NO_TIME) for _ in range(2)]
    for fake in fakes:
        fake.wait_ready()
    run_daemon()
    cancelled, control = fakes
    names = [wait_row(f.pane, lambda s: True, "adopted")["name"] for f in fakes]
    for name in names:
        ok("sessions", "pause", name)
    refused = afd("sessions", "cancel", names[0])
    assert refused.returncode == 1 and "not at a usage limit" in refused.stderr

    for fake in fakes:
        fake.type("fix the login test")
    for fake in fakes:
        wait_row(fake.pane, lambda s: (s["next"] or {}).get("action") == "paused" and s["next"]["held"]["at"] is None,
                 "a resume due now, held")
    answer = json.loads(ok("sessions", "cancel", names[0], "--json").stdout)
    assert answer["cancelled"] is True and answer["was"].startswith("paused by you")
    assert answer["next"]["reason"] == "cancelled"
    [event] = events("resume.cancelled")
    assert event["session"] == names[0]

    for name in names:
        ok("sessions", "unpause", name)
    # The control session is resumed by a poll that planned both: the cancelled one got nothing.
    wait_for(lambda: continuations(control), timeout=30, message="the control session resumed")
    assert continuations(cancelled) == []
    row = session_of(cancelled.pane)
    assert row["state"] == "limited" and row["next"]["reason"] == "cancelled"
    assert row["next_action"] == f"you cancelled afd's resume for this wall; resume with: afd resume {names[0]}"

    # The person's own resume still goes.
    ok("resume", names[0])
    wait_for(lambda: continuations(cancelled), timeout=30, message="the manual resume")


# --- item 7: a wall only the agent's records show ------------------------------------------------


def test_a_records_only_wall_with_every_account_limited_says_why_afd_does_nothing(tmux_server, run_daemon, xdg_dirs, endpoint):
    # The pane shows no wall afd can read (a pattern matching nothing); the agent's own records say weekly limit.
    write_config(xdg_dirs, FAST + 'limit_action = "handoff"\nhandoff_order = ["codex"]\n'
                 "[limit_patterns]\ncodex = 'no such banner anywhere'\n"
                 f'[[notify]]\ntype = "webhook"\nurl = "{endpoint.url()}"\nmin_interval = "0"\n')
    scenario = {"limit_now": True, "records": "agree", "record_window": "weekly", "record_reset_seconds": 86400}
    fake = start_fake(tmux_server, "codex", cwd=tmux_server.scratch, scenario=scenario, prompt="go")
    fake.wait_for_event("limit")
    run_daemon()
    row = wait_row(fake.pane, lambda s: s["state"] == "all_limited" and (s["next"] or {}).get("reason") == "records-only",
                   "all limited, with its reason")
    assert row["witnesses"] == "record" and row["next"]["action"] == "report"
    assert row["next_action"].startswith("the wall is in the agent's own records, not on screen, and afd does not type "
                                         "into a pane that shows none")
    kinds = wait_for(lambda: (k := [r.json()["kind"] for r in endpoint.on("/hook")]) and "session.waiting" in k and k,
                     timeout=30, message="the waiting message")
    assert "session.all_limited" in kinds and "session.limited" not in kinds
