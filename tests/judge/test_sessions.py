"""Every session transition, as a table: record and observation in, record, events and sightings out."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from afd.judge import sessions
from afd.judge.gates import Verdict
from afd.judge.sessions import (
    BannerSighting,
    CaptureUnanswered,
    Looked,
    PaneClosed,
    PaneSeen,
    SeenLimited,
    SeenWorking,
    ServerReplaced,
    ServerUnanswered,
    transition,
)
from afd.model import Detection, Identity, IdentityKind, IdentitySource, SessionState, WitnessState
from afd.pluginset import load_plugins
from afd.record.types import NextAction, PlanKind, SessionRecord, Witnesses

T0 = datetime(2026, 7, 13, 9, 0, tzinfo=timezone.utc)
NOW = T0 + timedelta(minutes=5)
S = SessionState

BASE = SessionRecord(
    name="main:0.0",
    pane_id="%3",
    server_socket="/tmp/tmux-1/default",
    server_pid=100,
    agent="codex",
    identity=IdentityKind.KNOWN,
    identity_source=IdentitySource.PROCESS,
    state=S.IDLE,
    created_at=T0,
    updated_at=T0,
    mission="fix the flaky test",
    agent_pid=4242,
    agent_started_at=1000.0,
    location="main:0.0",
    account="codex",
)


def ident(kind: IdentityKind, agent: str | None = None, pid: int | None = None) -> Identity:
    return Identity(kind, agent, pid, None if pid is None else 2000.0, (), f"{kind.value} for the test")


SHELL = ident(IdentityKind.NONE)
LESS = ident(IdentityKind.UNKNOWN, pid=5151)
CODEX = ident(IdentityKind.KNOWN, "codex", 6161)
BANNER = Detection("codex", 3, 3, T0 + timedelta(hours=1), "codex.usage-limit", "You've hit your usage limit.")


def rec(**changes) -> SessionRecord:
    return replace(BASE, **changes)


def seen(identity: Identity, *, own: bool = False, dead: bool = False, location: str = "main:0.0") -> PaneSeen:
    return PaneSeen(identity, own, dead, location)


def verdict(limited: bool) -> Verdict:
    return Verdict("codex", limited, limited, limited, BANNER if limited else None, "why" if not limited else "limited")


def look(*, idle, found=None, first_seen=NOW, limited=False, busy=False) -> Looked:
    sighting = BannerSighting(first_seen, BANNER.reset_at) if found else None
    return Looked(idle, found, sighting, verdict(limited) if idle else None, busy)


# (id, record, observation, expected state, expected event kinds, sightings kinds, same pid kept?)
CASES = [
    ("own agent still runs: nothing changes", rec(), seen(CODEX, own=True), S.IDLE, [], []),
    ("first look cannot tell idle from working", rec(), look(idle=None), S.IDLE, [], []),
    ("changed pane is working", rec(), look(idle=False, busy=True), S.WORKING, [], [SeenWorking]),
    ("idle pane without a banner is idle", rec(state=S.WORKING), look(idle=True), S.IDLE, [], []),
    ("a banner through both gates is a limit", rec(), look(idle=True, found=BANNER, limited=True), S.LIMITED,
     ["session.limited"], [SeenLimited]),
    ("the same banner still on screen is told once",
     rec(state=S.LIMITED, last_banner=BANNER.banner, banner_first_seen_at=NOW),
     look(idle=True, found=BANNER, limited=True), S.LIMITED, [], [SeenLimited]),
    ("a limited pane that changes works again", rec(state=S.LIMITED, last_banner=BANNER.banner),
     look(idle=False, busy=True), S.WORKING, ["session.working"], [SeenWorking]),
    ("a limited pane whose banner fails the gates is idle", rec(state=S.LIMITED, last_banner=BANNER.banner),
     look(idle=True), S.IDLE, ["session.idle"], []),
    ("the agent exits to its shell", rec(), seen(SHELL), S.EXITED, ["session.exited"], []),
    ("an exited session stays exited, told once", rec(state=S.EXITED, agent_pid=None), seen(SHELL), S.EXITED, [], []),
    ("a live pane running less is exited, never gone", rec(state=S.EXITED, agent_pid=None), seen(LESS), S.EXITED, [], []),
    ("the agent replaced by less is exited, never gone", rec(), seen(LESS), S.EXITED, ["session.exited"], []),
    ("an agent starting in an exited pane is the same session started again", rec(state=S.EXITED, agent_pid=None),
     seen(CODEX), S.IDLE, ["session.started"], []),
    ("after an afd restart a new agent in the pane is this session started again", rec(state=S.LIMITED),
     seen(CODEX), S.IDLE, ["session.started"], []),
    ("a user-vouched agent's successor is theirs too",
     rec(state=S.EXITED, agent_pid=None, identity=IdentityKind.UNKNOWN, identity_source=IdentitySource.USER),
     seen(LESS), S.IDLE, ["session.started"], []),
    ("a closed pane is gone", rec(), PaneClosed("the pane was closed"), S.GONE, ["session.gone"], []),
    ("gone is told once", rec(state=S.GONE), PaneClosed("again"), S.GONE, [], []),
    ("let go after a tmux server restart", rec(), ServerReplaced(100, 200), S.GONE, ["session.gone"], []),
    ("tmux not answering makes it unknown", rec(), ServerUnanswered(), S.UNKNOWN, [], []),
    ("a capture without an answer makes it unknown", rec(), CaptureUnanswered("timeout"), S.UNKNOWN,
     ["pane.unanswered"], []),
    ("an exited session back from a tmux outage is not exited again", rec(state=S.UNKNOWN, agent_pid=None),
     seen(SHELL), S.EXITED, [], []),
    ("an agent that exited during a tmux outage is told", rec(state=S.UNKNOWN), seen(SHELL), S.EXITED,
     ["session.exited"], []),
]


@pytest.mark.parametrize("record, observation, state, kinds, sighting_kinds",
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_transition_table(record, observation, state, kinds, sighting_kinds):
    t = transition(record, observation, NOW)
    assert t.record.state is state
    assert [n.kind for n in t.notes] == kinds
    assert [type(s) for s in t.sightings] == sighting_kinds
    assert t.record.name == record.name and t.record.pane_id == record.pane_id
    if t.record == record:
        assert t.record.updated_at == record.updated_at
    else:
        assert t.record.updated_at == NOW


def test_started_again_binds_the_new_process_and_drops_the_old_limit():
    t = transition(rec(state=S.LIMITED, last_banner="x", reset_at=T0), seen(CODEX), NOW)
    r = t.record
    assert (r.agent_pid, r.agent_started_at, r.last_banner, r.reset_at) == (6161, 2000.0, None, None)
    assert r.identity is IdentityKind.KNOWN and r.identity_source is IdentitySource.PROCESS
    assert t.clear_banner and t.forget_watch and "pid 4242" in t.notes[0].message


def test_a_moved_pane_updates_its_location():
    t = transition(rec(), seen(CODEX, own=True, location="work:2.1"), NOW)
    assert t.record.location == "work:2.1" and t.record.updated_at == NOW


def test_created_session_waits_for_its_agent_behind_a_launcher():
    created = rec(agent_pid=None, agent_started_at=None, awaiting_since=NOW - timedelta(seconds=30))
    shim = ident(IdentityKind.UNKNOWN, pid=777)
    t = transition(created, seen(shim), NOW)
    assert t.record == created and not t.notes
    t = transition(created, seen(SHELL), NOW)
    assert t.record == created


def test_created_session_binds_its_agent_when_it_appears_and_stops_waiting():
    created = rec(agent_pid=None, agent_started_at=None, awaiting_since=NOW - timedelta(seconds=30))
    t = transition(created, seen(CODEX), NOW)
    assert t.record.agent_pid == 6161 and t.record.state is S.IDLE and t.record.awaiting_since is None
    assert [n.kind for n in t.notes] == ["session.started"] and "again" not in t.notes[0].message


def test_created_session_stops_waiting_after_the_grace_and_says_so():
    created = rec(agent_pid=None, agent_started_at=None, awaiting_since=NOW - sessions.AGENT_START_GRACE)
    shim = ident(IdentityKind.UNKNOWN, pid=777)
    t = transition(created, seen(shim), NOW)
    assert t.record.state is S.EXITED and [n.kind for n in t.notes] == ["session.exited"]
    assert t.record.awaiting_since is None


def test_a_session_no_action_started_takes_a_launcher_for_its_agents_exit():
    t = transition(rec(), seen(ident(IdentityKind.UNKNOWN, pid=777)), NOW)
    assert t.record.state is S.EXITED


def test_created_makes_a_session_that_awaits_its_agent():
    t = sessions.created(name="fix", pane_id="%4", server_socket="/s", server_pid=1, agent="codex", mission="fix it",
                         worktree="/w", branch="afd/fix", location="afd-fix:0.0", now=NOW)
    assert t.record.awaiting_since == NOW and t.record.state is S.IDLE and t.record.identity is IdentityKind.UNKNOWN
    assert t.record.agent_pid is None and t.record.mission == "fix it"


def test_a_session_recorded_before_its_server_answered_takes_the_first_pid_only():
    t = transition(rec(server_pid=None), sessions.ServerNamed(77), NOW)
    assert t.record.server_pid == 77 and t.record.updated_at == NOW
    assert transition(t.record, sessions.ServerNamed(78), NOW).record.server_pid == 77


# --- what an action did: the rulebook writes it ------------------------------


def test_an_agent_afd_started_is_awaited_and_the_old_process_forgotten():
    t = transition(rec(state=S.EXITED), sessions.AgentStarted(), NOW)
    assert (t.record.agent_pid, t.record.agent_started_at, t.record.awaiting_since) == (None, None, NOW)
    assert t.forget_watch


def test_a_plan_is_written_only_when_it_changes():
    shown = NextAction(PlanKind.RESUME, "reset", T0, 1, 3)
    t = transition(rec(), sessions.Planned(shown), NOW)
    assert t.record.next_action == shown and t.record.updated_at == NOW
    same = rec(next_action=shown)
    assert transition(same, sessions.Planned(shown), NOW).record is same


def test_a_handoff_owns_the_session_until_it_settles_on_the_target():
    begun = transition(rec(state=S.LIMITED, witnesses=Witnesses.BOTH), sessions.HandoffBegun(NextAction(PlanKind.HANDOFF, "to claude")), NOW)
    assert begun.record.state is S.HANDING_OFF and begun.record.next_action.action is PlanKind.HANDOFF
    settled = transition(begun.record, sessions.HandoffSettled("claude", "claude-work", 99, 5.0), NOW)
    r = settled.record
    assert (r.agent, r.account, r.agent_pid, r.state, r.next_action, r.witnesses) == ("claude", "claude-work", 99, S.IDLE, None, None)
    assert settled.clear_banner and settled.forget_watch


def test_a_handoff_onto_a_walled_agent_leaves_the_session_limited_with_its_brief_pending():
    pending = NextAction(PlanKind.BRIEF_PENDING, "brief pending (claude is at its usage limit)")
    t = transition(rec(state=S.HANDING_OFF), sessions.HandoffSettled("claude", "claude", 99, 5.0, BANNER, pending), NOW)
    assert t.record.state is S.LIMITED and t.record.last_banner == BANNER.banner and t.record.next_action == pending


@pytest.mark.parametrize("restarted", [False, True])
def test_a_rolled_back_handoff_puts_the_session_back(restarted):
    t = transition(rec(state=S.HANDING_OFF), sessions.HandoffRolledBack(S.LIMITED, restarted), NOW)
    assert t.record.state is S.LIMITED and t.record.next_action is None
    assert (t.record.agent_pid is None) is restarted and (t.record.awaiting_since == NOW) is restarted


def test_adopted_is_a_known_idle_session_with_its_mission():
    t = sessions.adopted(name="main:0.0", pane_id="%3", server_socket="/s", server_pid=1, identity=CODEX,
                         mission="tidy", worktree="/w", branch="b", location="main:0.0", now=NOW)
    assert t.record.state is S.IDLE and t.record.agent_pid == 6161 and t.record.mission == "tidy"
    assert [n.kind for n in t.notes] == ["session.adopted"]


# --- what counts as the agent working (limit-map evidence) -------------------


@pytest.fixture(scope="module")
def specs():
    return load_plugins(None, entry_points=False).agents


BUSY_ROWS = {
    "claude": "✻ Thinking… (12s · ↑ 1.2k tokens · esc to interrupt)",
    "codex": "• Working (5s • esc to interrupt)",
    "devin": "⠋ Working… (12s)",
}
RETRY_ROWS = {
    "claude": "✻ Thinking… (12s · esc to interrupt · retrying in 12s · attempt 6/10)",
    "codex": "• Reconnecting... 2/5 (4s • esc to interrupt)",
    "devin": "⠋ Retrying… (4s)",
}


@pytest.mark.parametrize("agent", sorted(BUSY_ROWS))
def test_a_spinner_on_a_request_is_busy(specs, agent):
    spec = specs[agent]
    rows = ["some reply text", BUSY_ROWS[agent], ""]
    assert sessions.seen_busy(rows, spec.busy, spec.chrome, tail_lines=8)


@pytest.mark.parametrize("agent", sorted(RETRY_ROWS))
def test_a_spinner_on_a_failing_request_is_not_busy(specs, agent):
    spec = specs[agent]
    rows = ["some reply text", RETRY_ROWS[agent], ""]
    assert not sessions.seen_busy(rows, spec.busy, spec.chrome, tail_lines=8)


def test_a_spinner_row_high_in_the_transcript_is_not_busy_now(specs):
    spec = specs["codex"]
    rows = [BUSY_ROWS["codex"]] + [f"line {i}" for i in range(20)]
    assert not sessions.seen_busy(rows, spec.busy, spec.chrome, tail_lines=8)


REPLY = "• I updated the parser so that quoted fields keep their commas and added two tests for it."
NON_EVIDENCE = {
    # the same reply re-wrapped when the pane was resized: different rows, no request
    "a resize that re-wraps": (
        [REPLY, "", "› "],
        [REPLY[:40], REPLY[40:80], REPLY[80:], "", "› "],
    ),
    # a tool the agent started keeps printing after the turn ended
    "a child tool's output": (
        ["• Ran npm test", "  PASS src/a.test.js", "› "],
        ["• Ran npm test", "  PASS src/a.test.js", "  PASS src/b.test.js", "› "],
    ),
    # the spinner ticks while a request is retried after a 429
    "a spinner on a failing request": (
        ["• Reconnecting... 1/5 (2s • esc to interrupt)", "› "],
        ["• Reconnecting... 2/5 (4s • esc to interrupt)", "› "],
    ),
}


@pytest.mark.parametrize("before, after", list(NON_EVIDENCE.values()), ids=list(NON_EVIDENCE))
def test_a_changing_pane_without_a_busy_marker_is_no_evidence_of_capacity(specs, before, after):
    spec = specs["codex"]
    content = [r for r in before if r.strip()], [r for r in after if r.strip()]
    assert content[0] != content[1]  # the pane did change between the two captures
    busy = sessions.seen_busy(after, spec.busy, spec.chrome, tail_lines=8)
    t = transition(rec(state=S.LIMITED, last_banner=BANNER.banner), look(idle=False, busy=busy), NOW)
    assert t.record.state is S.WORKING and t.sightings == ()


def test_busy_with_a_banner_on_screen_is_no_evidence_either():
    t = transition(rec(), look(idle=False, found=BANNER, busy=True), NOW)
    assert t.sightings == ()


def test_every_state_is_its_stored_string():
    assert {s.value for s in SessionState} >= {"working", "idle", "limited", "exited", "gone", "unknown"}
    assert SessionState.LIMITED == "limited" and f"{IdentitySource.USER}" == "user"


@pytest.mark.parametrize("agent", sorted(BUSY_ROWS))
def test_the_fake_agents_spinner_is_busy(specs, agent):
    from afd.testing import screens

    spec = specs[agent]
    rows = ["reply", screens.spinner(agent, 3.3), ""]
    assert sessions.seen_busy(rows, spec.busy, spec.chrome, tail_lines=8)


# --- evidence from before the continuation the agent took ------------------------------------------

CONTINUED = NOW - timedelta(minutes=1)  # the agent took afd's continuation then
WALL_AT = NOW - timedelta(minutes=2)  # the wall it answered: first seen, and recorded, before it
LATER = NOW - timedelta(seconds=10)  # a wall drawn after it


def record(state, at, reset=None):
    from afd.model import WitnessVerdict

    return WitnessVerdict(state, "the agent's latest record is a usage-limit rejection" if state.value == "limited" else "x",
                          reset, None, "t.jsonl", at)


@pytest.mark.parametrize(
    "observation, state, kinds",
    [
        pytest.param(look(idle=True, found=BANNER, first_seen=WALL_AT, limited=True), S.IDLE, ["session.idle"],
                     id="the-banner-above-the-continuation-is-history"),
        pytest.param(look(idle=True, found=BANNER, first_seen=CONTINUED, limited=True), S.IDLE, ["session.idle"],
                     id="a-banner-first-seen-as-it-went-in-is-history"),
        pytest.param(look(idle=True, found=BANNER, first_seen=LATER, limited=True), S.LIMITED, ["session.limited"],
                     id="a-banner-drawn-after-it-is-a-wall"),
        pytest.param(replace(look(idle=True), record=record(WitnessState.LIMITED, WALL_AT)), S.IDLE, ["session.idle"],
                     id="a-rejection-recorded-before-it-is-history"),
        pytest.param(replace(look(idle=True), record=record(WitnessState.LIMITED, LATER)), S.LIMITED,
                     ["session.limited"], id="a-rejection-recorded-after-it-is-a-wall"),
        pytest.param(look(idle=False, found=BANNER, first_seen=WALL_AT, busy=True), S.WORKING, ["session.working"],
                     id="working-under-the-old-banner"),
    ],
)
def test_no_evidence_from_before_the_continuation_puts_the_session_back_at_its_wall(observation, state, kinds):
    before = rec(state=S.LIMITED, last_banner=BANNER.banner, banner_first_seen_at=WALL_AT, reset_at=BANNER.reset_at,
                 witnesses="pane", continued_at=CONTINUED)
    t = transition(before, observation, NOW)
    assert t.record.state is state
    assert [n.kind for n in t.notes] == kinds
    if observation.found is not None:
        assert not t.clear_banner  # the old sighting stays, so the next look does not take it for a new banner
    if state is S.IDLE and observation.found is not None:
        assert t.notes[0].message == "no longer at a usage limit: the agent took afd's continuation, and no wall was drawn after it"
    if state is S.WORKING:
        assert [type(x) for x in t.sightings] == [SeenWorking]  # the old banner does not hide the working sighting


def test_a_still_pane_showing_its_spinner_is_not_limited_by_its_records_alone():
    still = replace(look(idle=True, busy=True), record=record(WitnessState.LIMITED, LATER))
    assert transition(rec(state=S.WORKING), still, NOW).record.state is S.IDLE
    quiet = replace(look(idle=True), record=record(WitnessState.LIMITED, LATER))
    assert transition(rec(state=S.WORKING), quiet, NOW).record.state is S.LIMITED
