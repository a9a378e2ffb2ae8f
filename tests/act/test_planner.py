"""The planner (afd/act/planner.py): what policy decides for a limited session, written and begun.

A real store and the built-in plugins; no tmux: a handoff that needs the pane is refused for want of one.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import pytest

from afd.act import planner
from afd.act.context import ActionContext, Workers
from afd.config.settings import Config
from afd.decide import policy
from afd.decide.policy import LimitAction
from afd.model import Detection, IdentityKind, IdentitySource, SessionState
from afd.pluginset import load_plugins
from afd.record.store import Store
from afd.record.types import LimitFact, LimitState, PlanKind, ResumeHistory, SessionRecord, Witnesses

S = SessionState
NOW = datetime(2026, 7, 13, 12, 0, tzinfo=timezone.utc)
RESET = NOW + timedelta(hours=2)
SEEN = NOW - timedelta(minutes=1)
BANNER = "You've hit your session limit · resets 2pm"
PLUGINS = load_plugins(None, entry_points=False)
LIMITED = SessionRecord(
    name="fix", pane_id="%3", server_socket="/s", server_pid=1, agent="claude", identity=IdentityKind.KNOWN,
    identity_source=IdentitySource.PROCESS, state=S.LIMITED, created_at=NOW, updated_at=NOW, mission="fix the test",
    worktree="/w", last_banner=BANNER, banner_first_seen_at=SEEN, reset_at=RESET, witnesses=Witnesses.BOTH,
    account="claude", agent_pid=4242,
)


def watch(*rows: str):
    """What the poll kept of the pane: its last capture and the detection in it."""
    found = Detection("claude", 0, 0, RESET, "claude.session-limit", BANNER)
    return SimpleNamespace(detections=[found], captures=[list(rows) or [BANNER]])


@pytest.fixture
def world(tmp_path):
    store = Store(tmp_path / "state.db")
    events: list = []
    clock = {"now": NOW}

    def make(**config) -> ActionContext:
        settings = Config(limit_auto_resume=True, resume_grace=60.0, **config)
        return ActionContext(store, _absent(), settings, PLUGINS, lambda: clock["now"], "run", _record(events), Workers())

    yield SimpleNamespace(store=store, events=events, clock=clock, ctx=make)
    store.close()


def _absent():
    from afd.world.tmux import ServerRef

    return ServerRef(socket_name="afd-test-no-such-server")


def _record(events):
    return lambda kind, message, session=None, **data: events.append((kind, message))


def kinds(world) -> list[str]:
    return [k for k, _ in world.events]


def test_a_session_with_no_wall_and_nothing_shown_writes_nothing(world):
    idle = replace(LIMITED, state=S.IDLE, last_banner=None, banner_first_seen_at=None, reset_at=None)
    world.store.upsert_session(idle)
    before = world.store.total_changes()
    planner.plan_wait(world.ctx(), idle, None, NOW)
    assert world.store.total_changes() == before and world.events == []


def test_a_wall_with_a_reset_shows_when_afd_resumes_and_says_it_once(world):
    world.store.upsert_session(LIMITED)
    planner.plan_wait(world.ctx(), LIMITED, watch(), NOW)
    rec = world.store.get_session("fix")
    assert rec.next_action.action is PlanKind.RESUME and rec.next_action.at == RESET + timedelta(seconds=60)
    assert world.store.resume_history("fix").episode is not None
    assert kinds(world) == ["resume.scheduled"]
    before = world.store.total_changes()
    planner.plan_wait(world.ctx(), rec, watch(), NOW + timedelta(seconds=5))
    assert world.store.total_changes() == before and kinds(world) == ["resume.scheduled"]


def test_once_the_reset_and_grace_have_passed_a_resume_begins(world):
    world.store.upsert_session(LIMITED)
    later = RESET + timedelta(seconds=61)
    world.clock["now"] = later
    planner.plan_wait(world.ctx(), LIMITED, watch(), later)
    [row] = world.store.pending_journal()
    assert row.action == "resume" and row.intent["step"] == "scheduled" and row.intent["attempt"] == 1
    assert world.store.get_session("fix").next_action.action is PlanKind.RESUMING
    assert kinds(world) == ["resume.scheduled"] and "resuming now" in world.events[0][1]


def test_the_agents_own_auto_continue_is_waited_out_not_typed_over(world):
    world.store.upsert_session(LIMITED)
    armed = watch(BANNER, "  ⎿  set to continue automatically at 2pm · /rate-limit-options")
    planner.plan_wait(world.ctx(), LIMITED, armed, NOW)
    assert world.store.get_session("fix").next_action.action is PlanKind.AUTO_CONTINUE


def test_a_wall_its_agent_exited_at_is_still_waited_out(world):
    exited = replace(LIMITED, state=S.EXITED, last_banner=None, banner_first_seen_at=None, reset_at=None, agent_pid=None)
    world.store.save_resume_history("fix", ResumeHistory(episode="wall@1", first_seen_at=SEEN, reset_at=RESET))
    limit = planner.limit_of(world.ctx(), exited, None, NOW)
    assert (limit.kind, limit.reset_at, limit.reset_unstated) == ("exited", RESET, True)
    assert planner.limit_of(world.ctx(), replace(exited, name="other"), None, NOW) is None  # no wall on record


def test_with_every_account_limited_the_session_parks_and_is_not_tried_again(world):
    ctx = world.ctx(limit_action=LimitAction.HANDOFF, handoff_order=("codex",))
    world.store.upsert_session(LIMITED)
    world.store.save_limit(LimitFact("codex", LimitState.LIMITED, RESET + timedelta(hours=1), NOW, "other"))
    planner.start_handoffs(ctx, set())
    rec = world.store.get_session("fix")
    assert rec.state is S.ALL_LIMITED and rec.next_action.action is PlanKind.PARK
    wall = policy.wall_key(SEEN, Witnesses.BOTH)
    assert policy.tried_for(world.store.resume_history("fix"), wall) is policy.HandoffTry.DECLINED
    assert kinds(world) == ["session.all_limited"]
    planner.start_handoffs(ctx, set())
    assert kinds(world) == ["session.all_limited"] and world.store.pending_journal() == []


def test_a_refused_handoff_is_said_and_leaves_the_wall_to_the_wait_path(world):
    ctx = world.ctx(limit_action=LimitAction.HANDOFF, handoff_order=("codex",))
    world.store.upsert_session(LIMITED)
    planner.start_handoffs(ctx, set())
    assert kinds(world) == ["handoff.refused"] and "the session's pane is gone" in world.events[0][1]
    assert world.store.get_session("fix").state is S.LIMITED and world.store.pending_journal() == []
    history = world.store.resume_history("fix")
    assert planner.path_of(ctx, LIMITED, history, None) is policy.Path.WAIT


def test_a_session_with_an_action_under_way_is_not_handed_off(world):
    ctx = world.ctx(limit_action=LimitAction.HANDOFF, handoff_order=("codex",))
    world.store.upsert_session(LIMITED)
    planner.start_handoffs(ctx, {"fix"})
    assert world.events == [] and world.store.resume_history("fix") == ResumeHistory()
