"""What afd will and will not type: menus by their text, walls for a human, panes a person is using."""

from __future__ import annotations

from datetime import timedelta

import pytest
from test_resume import ShiftClock, continuations, poll_until, resume_entries, session, supervisor, wall_lifted  # noqa: F401

from afd.daemon.status import build_status
from afd.pluginset import load_plugins
from harness import start_fake, wait_for

pytestmark = pytest.mark.tmux

STOP = "Stop and wait for limit to reset"


def limited_fake(tmux_server, supervisor, scenario, agent="claude", **settings):
    fake = start_fake(tmux_server, agent, cwd=tmux_server.scratch, scenario={"limit_now": True, "limit_lasts_seconds": 1, **scenario})
    fake.wait_ready()
    clock = ShiftClock()
    sup = supervisor(clock, **settings)
    rec = poll_until(sup, lambda: (r := session(sup, fake.pane)) and r.state == "limited" and r, message="limited")
    return fake, sup, clock, rec


def plan(sup, fake) -> dict:
    shown = session(sup, fake.pane).next_action
    return shown.as_json() if shown is not None else {}


@pytest.mark.parametrize(
    "params",
    [
        {"selected": 1},
        {"selected": 4, "options": [STOP, "Don’t continue automatically", "Switch to usage credits", "Upgrade your plan"]},
        {"selected": 2},
    ],
    ids=["upgrade-highlighted", "four-options-wanted-first", "stop-highlighted"],
)
def test_limit_menu_is_answered_stop_and_wait_by_its_text_then_resumed_once(tmux_server, supervisor, params):
    fake, sup, clock, rec = limited_fake(tmux_server, supervisor, {"banner": "claude.limit-menu", "banner_params": params})
    wall_lifted(fake)
    clock.jump_to(rec.reset_at + timedelta(minutes=3))
    poll_until(sup, lambda: continuations(fake), message="the continuation")
    fake.wait_idle(works=1)
    for _ in range(5):
        sup.poll()
    assert [e["choice"] for e in fake.events("menu")] == [STOP]
    assert fake.events("menu")[0]["via"] == "enter"
    assert len(continuations(fake)) == 1
    assert fake.events("key") == []


def test_menu_without_stop_and_wait_is_left_for_a_human(tmux_server, supervisor):
    params = {"selected": 1, "options": ["Upgrade your plan", "Switch to usage credits"]}
    fake, sup, clock, rec = limited_fake(tmux_server, supervisor, {"banner": "claude.limit-menu", "banner_params": params})
    clock.jump_to(rec.reset_at + timedelta(minutes=3))
    poll_until(sup, lambda: plan(sup, fake).get("action") == "needs-human", message="needs a human")
    for _ in range(10):
        sup.poll()
    assert fake.events("menu") == [] and fake.events("menu_move") == [] and fake.events("paste") == []
    assert "no \"Stop and wait for limit to reset\" option" in plan(sup, fake)["why"]
    shown = build_status(sup.store, ["claude"], {"running": True}, 50)
    row = next(s for s in shown["sessions"] if s["pane"] == fake.pane)
    assert row["state"] == "needs_human" and row["next_action"].startswith("needs you: ")
    assert any(e["kind"] == "session.needs_human" for e in shown["events"])


def test_spend_cap_is_parked_for_a_human_and_nothing_is_typed(tmux_server, supervisor, tmp_path):
    # The built-in codex detector of this version does not name spend caps yet;
    # a drop-in reports them as their own kind, the way the detectors will.
    drop_in = tmp_path / "plugins"
    drop_in.mkdir()
    (drop_in / "spendcap.py").write_text(
        "from afd import hookimpl\n"
        "from afd.model import Detection\n"
        "@hookimpl\n"
        "def afd_detect(agent, lines, clock, pattern):\n"
        "    for i in range(len(lines) - 1, -1, -1):\n"
        "        if agent == 'codex' and ('spend cap' in lines[i] or 'out of credits' in lines[i]):\n"
        "            return Detection(agent, i, i, None, 'codex.spend-cap', lines[i].strip())\n"
        "    return None\n"
    )
    fake = start_fake(tmux_server, "codex", cwd=tmux_server.scratch, scenario={"limit_now": True, "banner": "codex.spend-cap"})
    fake.wait_ready()
    clock = ShiftClock()
    sup = supervisor(clock)
    sup.plugins = load_plugins(drop_in, entry_points=False)
    poll_until(sup, lambda: plan(sup, fake).get("action") == "needs-human", message="needs a human")
    clock.jump_to(clock() + timedelta(days=2))
    for _ in range(10):
        sup.poll()
    assert plan(sup, fake)["why"] == "add credits (spend cap)"
    assert fake.events("paste") == [] and fake.events("input") == [] and resume_entries(sup) == []


def hold_then_release(sup, fake, clock, rec, hold_words: str, release) -> None:
    wall_lifted(fake)
    clock.jump_to(rec.reset_at + timedelta(minutes=3))
    poll_until(sup, lambda: hold_words in (plan(sup, fake).get("why") or ""), message=f"the hold: {hold_words}")
    for _ in range(10):
        sup.poll()
    assert fake.events("paste") == [] and continuations(fake) == []
    release()
    poll_until(sup, lambda: continuations(fake), message="the continuation after the hold")
    assert len(continuations(fake)) == 1


def test_copy_mode_holds_the_resume_until_it_ends(tmux_server, supervisor):
    fake, sup, clock, rec = limited_fake(tmux_server, supervisor, {})
    tmux_server.run("copy-mode", "-t", fake.pane)
    hold_then_release(sup, fake, clock, rec, "copy mode", lambda: tmux_server.run("send-keys", "-t", fake.pane, "-X", "cancel"))


def test_text_a_person_left_in_the_input_row_holds_the_resume(tmux_server, supervisor):
    fake, sup, clock, rec = limited_fake(tmux_server, supervisor, {})
    fake.type("half a thought", enter=False)
    fake.wait_for_screen(lambda s: "❯ half a thought" in s, message="the typed text")

    def clear():
        tmux_server.send_keys(fake.pane, *["BSpace"] * len("half a thought"))

    hold_then_release(sup, fake, clock, rec, "your text is in the agent's input row", clear)
    assert "half a thought" not in continuations(fake)[0]["text"]


def test_a_client_typing_in_the_pane_holds_the_resume(tmux_server, supervisor):
    fake, sup, clock, rec = limited_fake(tmux_server, supervisor, {}, typing_guard=2.0)
    target = tmux_server.pane_field(fake.pane, "#{session_name}")
    viewer = tmux_server.new_pane(f"env -u TMUX tmux -L {tmux_server.name} attach -t {target}", cwd=tmux_server.scratch)
    wait_for(lambda: tmux_server.run("list-clients", "-t", target, "-F", "#{client_name}").stdout.strip(), message="an attached client")

    def typing():
        tmux_server.send_keys(viewer, "F5")  # a key the agent ignores, which still counts as activity

    typing()
    wall_lifted(fake)
    clock.jump_to(rec.reset_at + timedelta(minutes=3))
    poll_until(sup, lambda: (typing(), "you are typing" in (plan(sup, fake).get("why") or ""))[1], message="the typing hold")
    assert continuations(fake) == []
    poll_until(sup, lambda: continuations(fake), message="the continuation once the typing stopped")
    assert len(continuations(fake)) == 1


@pytest.mark.parametrize("resumes_itself", [True, False], ids=["it-resumes-itself", "it-does-not"])
def test_claude_native_auto_continue_is_left_alone_and_nudged_only_when_it_did_not_fire(tmux_server, supervisor, resumes_itself):
    scenario = {"banner": "claude.native-armed", "native_resume_after_seconds": 1.5 if resumes_itself else None}
    fake, sup, clock, rec = limited_fake(tmux_server, supervisor, scenario)
    first = poll_until(sup, lambda: (p := plan(sup, fake)).get("action") == "auto-continue" and p, message="waiting for Claude")
    assert first["at"] == (rec.reset_at + timedelta(seconds=90 + 60)).strftime("%Y-%m-%dT%H:%M:%SZ")
    wall_lifted(fake, 1.6)
    clock.jump_to(rec.reset_at + timedelta(seconds=100))  # Claude's own continue is due, afd's check is not
    for _ in range(10):
        sup.poll()
    assert continuations(fake) == []
    clock.jump_to(rec.reset_at + timedelta(seconds=151))
    if resumes_itself:
        fake.wait_for_event("work")
        for _ in range(15):
            sup.poll()
        assert continuations(fake) == [] and resume_entries(sup) == []
        assert [e["via"] for e in fake.events("input")] == ["auto-continue"]
    else:
        poll_until(sup, lambda: continuations(fake), message="the nudge")
        fake.wait_for_event("work")
        for _ in range(5):
            sup.poll()
        assert len(continuations(fake)) == 1 and len(fake.events("input")) == 1


def test_cancelled_native_auto_continue_gets_afds_own_wait(tmux_server, supervisor):
    fake, sup, clock, rec = limited_fake(tmux_server, supervisor, {"banner": "claude.native-cancelled"})
    assert poll_until(sup, lambda: plan(sup, fake).get("action"), message="a plan") == "resume"
    wall_lifted(fake)
    clock.jump_to(rec.reset_at + timedelta(seconds=61))
    poll_until(sup, lambda: continuations(fake), message="afd's resume")
    fake.wait_for_event("work")
    assert len(continuations(fake)) == 1
