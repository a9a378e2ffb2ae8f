"""After a resume, one coherent story: nothing older than the continuation puts the session back at its wall.

A fake claude with its own records (a transcript) is resumed by `afd run` on a real tmux
server; its first answer takes 20 s, during which its screen stands still under the prompt it
took and its records end in the wall, then the continuation (Claude Code writes the answer only
when a content block completes). Between `resume.confirmed` and that answer: no
`session.limited`, and the account's limit map does not flip.
"""

from __future__ import annotations

import json

import pytest

from daemon_harness import afd, run_daemon, session_for, wait_session, write_config  # noqa: F401 (run_daemon is a fixture)
from harness import start_fake, wait_for

pytestmark = pytest.mark.tmux

FIRST_ANSWER = 20.0  # seconds the agent thinks before its first output


def all_events() -> list[dict]:
    return json.loads(afd("status", "--json", "--events", "500").stdout)["events"]


@pytest.mark.parametrize("poll", ["0.5s", "1s"])
def test_a_resumed_claude_thinking_for_20s_is_not_limited_again_by_its_old_wall(tmux_server, run_daemon, xdg_dirs, worktree,
                                                                                   poll):
    write_config(xdg_dirs, f'poll_interval = "{poll}"\nlimit_auto_resume = true\nresume_grace = "0s"\n')
    # At its wall with a reset a minute past (its records say so), which lifts inside the agent at once.
    scenario = {"limit_now": True, "limit_lasts_seconds": 0.5, "records": "agree", "record_reset_seconds": -60,
                "think_seconds": FIRST_ANSWER, "take_seconds": 1.0}
    fake = start_fake(tmux_server, "claude", cwd=worktree("feature"), scenario=scenario)
    fake.wait_ready()
    run_daemon()
    name = session_for(fake.pane)["name"]
    wait_for(lambda: any(e["kind"] == "resume.confirmed" for e in all_events()), timeout=40, message="the resume confirmed")
    wait_for(lambda: fake.events("work"), timeout=FIRST_ANSWER + 30, message="the agent's first answer")
    wait_session(name, lambda s: s["state"] == "idle", "idle after its answer")

    events = all_events()
    story = "\n".join(f"{e['at']} {e['kind']}: {e['message']}" for e in events)
    confirmed = next(i for i, e in enumerate(events) if e["kind"] == "resume.confirmed")
    before = [e["kind"] for e in events[:confirmed]]
    after = [e["kind"] for e in events[confirmed + 1:]]
    assert before.count("session.limited") == 1 and "resume.sent" in before, story
    assert "session.limited" not in after, story  # no phantom wall from the records or the banner above the prompt
    flips = [k for k in after if k.startswith("agent.")]
    assert flips in ([], ["agent.available"]), story  # at most: seen working, once
    assert len([e for e in fake.events("input") if "usage limit has reset" in e["text"]]) == 1
