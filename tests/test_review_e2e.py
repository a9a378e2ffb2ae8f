"""End-to-end behaviour on a real tmux server that the supervisor must get right."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from afd.config import Config
from afd.limits import LimitState
from afd.loader import load_plugins
from afd.store import Store
from afd.supervisor import Supervisor
from afd.tmux import ServerRef
from harness import start_fake, wait_for

pytestmark = pytest.mark.tmux

T0 = datetime(2026, 7, 13, 9, 0, tzinfo=timezone.utc)
BANNER = "You've hit your usage limit. Try again in 2 minutes."


class Clock:
    def __init__(self, now: datetime = T0):
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def supervisor(tmux_server, xdg_dirs):
    store = Store(xdg_dirs["XDG_STATE_HOME"] / "afd" / "state.db")
    clock = Clock()
    sup = Supervisor(
        Config(poll_interval=0.05),
        load_plugins(None, entry_points=False),
        store,
        ServerRef(socket_name=tmux_server.name),
        clock=clock,
    )
    yield sup, clock
    store.close()


def poll_until(sup: Supervisor, predicate, message: str):
    def step():
        sup.poll()
        return predicate()

    return wait_for(step, timeout=20.0, interval=0.05, message=message)


def test_the_same_banner_printed_again_after_the_agent_worked_is_a_new_limit(tmux_server, supervisor):
    # The user retries after the reset: the agent works, then prints the same
    # sentence again. That is a new banner (a new observation), so its
    # relative reset is read against the moment it appeared — not the first
    # banner's lapsed time — and the limit map is limited again.
    sup, clock = supervisor
    scenario = {"limit_now": True, "banner": "codex.usage-limit", "banner_params": {"form": "in", "reset": "2 minutes"}}
    fake = start_fake(tmux_server, "codex", cwd=tmux_server.scratch, scenario=scenario)
    fake.wait_for_event("limit")

    def session():
        return next((r for r in sup.store.list_sessions() if r.pane_id == fake.pane), None)

    poll_until(sup, lambda: (r := session()) and r.state == "limited", message="first limit")
    assert session().reset_at == T0 + timedelta(minutes=2)

    clock.now = T0 + timedelta(minutes=3)
    sup.poll()
    assert sup.store.load_limits()["codex"].state is LimitState.UNKNOWN

    fake.type("try again please")
    fake.wait_for_screen(lambda text: text.count(BANNER) == 2, message="the banner printed again")
    saw = {"working": False}

    def limited_again():
        rec = session()
        saw["working"] = saw["working"] or rec.state == "working"
        return saw["working"] and rec.state == "limited"

    poll_until(sup, limited_again, message="the pane worked, then is limited again")
    assert session().reset_at == T0 + timedelta(minutes=5)
    fact = sup.store.load_limits()["codex"]
    assert fact.state is LimitState.LIMITED and fact.reset_at == T0 + timedelta(minutes=5)
