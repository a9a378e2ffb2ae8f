"""How the pane and the agent's own records combine, offline (`afd detect --record`) and as a rule."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from afd.judge import sessions
from afd.judge.gates import Verdict
from afd.judge.witness import combine, handoff_witnessed
from afd.model import Detection, IdentityKind, IdentitySource, SessionState, WitnessState, WitnessVerdict
from afd.record.types import SessionRecord, Witnesses
from afd.testing import records as R

T0 = datetime(2026, 7, 13, 9, 0, tzinfo=timezone.utc)
PANE_RESET = T0 + timedelta(hours=3)
RECORD_RESET = T0 + timedelta(hours=2, minutes=17)
LIMITED = WitnessVerdict(WitnessState.LIMITED, "the transcript's latest record is a usage-limit rejection", RECORD_RESET, "five_hour")
LIMITED_NO_RESET = WitnessVerdict(WitnessState.LIMITED, "a wall", None, None)
NOT_LIMITED = WitnessVerdict(WitnessState.NOT_LIMITED, "the conversation went on")
UNKNOWN = WitnessVerdict(WitnessState.UNKNOWN, "no transcript")

# (pane limited, record verdict, pane idle) -> (limited, witnesses, reset)
RULES = {
    "both-say-limited-record-reset-wins": ((True, LIMITED, True), (True, Witnesses.BOTH, RECORD_RESET)),
    "both-say-limited-record-has-no-reset": ((True, LIMITED_NO_RESET, True), (True, Witnesses.BOTH, PANE_RESET)),
    "pane-limited-record-unknown": ((True, UNKNOWN, True), (True, Witnesses.PANE, PANE_RESET)),
    "pane-limited-no-witness-plugin": ((True, None, True), (True, Witnesses.PANE, PANE_RESET)),
    "pane-limited-record-disputes": ((True, NOT_LIMITED, True), (False, Witnesses.DISPUTED, None)),
    "record-limited-idle-pane-without-banner": ((False, LIMITED, True), (True, Witnesses.RECORD, RECORD_RESET)),
    "record-limited-pane-still-working": ((False, LIMITED, False), (False, None, None)),
    "neither": ((False, UNKNOWN, True), (False, None, None)),
    "record-not-limited-no-banner": ((False, NOT_LIMITED, True), (False, None, None)),
}


@pytest.mark.parametrize("given,expected", list(RULES.values()), ids=list(RULES))
def test_combination_rule(given, expected):
    pane_limited, record, idle = given
    out = combine(pane_limited, PANE_RESET if pane_limited else None, record, pane_idle=idle)
    assert (out.limited, out.witnesses, out.reset_at) == expected
    assert out.why


@pytest.mark.parametrize(
    "witnesses,has_witness,requires,allowed",
    [
        (Witnesses.BOTH, True, True, True),
        (Witnesses.PANE, True, True, False),
        (Witnesses.RECORD, True, True, False),
        (Witnesses.PANE, False, True, True),  # devin: the pane is all there is
        (Witnesses.PANE, True, False, True),
        (Witnesses.DISPUTED, True, False, False),
        (None, False, False, False),
    ],
)
def test_handoff_needs_both_witnesses_only_where_the_agent_has_one(witnesses, has_witness, requires, allowed):
    assert handoff_witnessed(witnesses, has_witness, requires) is allowed


# --- afd detect --record ------------------------------------------------------------

NOW = "2026-07-13T09:00:00Z"
CWD = "/home/me/src/app"
SCREEN = "● Working on it.\n\n  ⎿  You've hit your limit · resets 12pm (UTC)\n\n" + "─" * 20 + "\n❯ \n" + "─" * 20 + "\n"
QUIET = "● All done: the tests pass.\n\n" + "─" * 20 + "\n❯ \n" + "─" * 20 + "\n"


def detect(*args: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "afd", "detect", "--now", NOW, "--json", *args],
        capture_output=True, text=True, env={**os.environ, "TZ": "UTC"}, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def captures(tmp_path):
    def make(text: str) -> list[str]:
        files = []
        for n in (1, 2):
            f = tmp_path / f"{n}.txt"
            f.write_text(text)
            files.append(str(f))
        return files

    return make


def transcript(tmp_path, *records) -> str:
    return str(R.append_jsonl(tmp_path / "t.jsonl", records))


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def test_detect_record_confirms_the_banner_and_its_reset_wins(xdg_dirs, tmp_path, captures):
    rec = transcript(tmp_path, R.claude_user(at(-2), CWD, "s", "go"), R.claude_wall(at(-1), CWD, "s", RECORD_RESET))
    out = detect("--agent", "claude", "--record", rec, *captures(SCREEN))
    assert out["pane_limited"] and out["limited"] and out["witnesses"] == "pane+record"
    assert out["reset_at"] == "2026-07-13T11:17:00Z" and out["banner_reset_at"] == "2026-07-13T12:00:00Z"
    assert out["record"]["state"] == "limited" and out["record"]["window"] == "five_hour"


def test_detect_record_that_went_on_disputes_the_banner(xdg_dirs, tmp_path, captures):
    rec = transcript(tmp_path, R.claude_user(at(-2), CWD, "s", "cat banner.txt"), R.claude_reply(at(-1), CWD, "s", "That file holds a banner."))
    out = detect("--agent", "claude", "--record", rec, *captures(SCREEN))
    assert out["pane_limited"] and not out["limited"] and out["witnesses"] == "disputed"
    assert out["reset_at"] is None and out["record"]["state"] == "not_limited"


def test_detect_codex_rollout_alone_on_an_idle_pane(xdg_dirs, tmp_path, captures):
    window = R.codex_window("weekly", 100, RECORD_RESET)
    rec = R.append_jsonl(
        tmp_path / "r.jsonl",
        [R.codex_meta(at(-3), CWD, "t"), R.codex_token_count(at(-1), window, None), R.codex_wall(at(-1))],
    )
    out = detect("--agent", "codex", "--record", str(rec), *captures(QUIET))
    assert not out["pane_limited"] and out["limited"] and out["witnesses"] == "record"
    assert out["reset_at"] == "2026-07-13T11:17:00Z" and out["record"]["window"] == "weekly"


def test_detect_record_for_an_agent_without_a_witness_is_a_usage_error(xdg_dirs, tmp_path, captures):
    rec = transcript(tmp_path, R.claude_wall(at(-1), CWD, "s", RECORD_RESET))
    done = subprocess.run(
        [sys.executable, "-m", "afd", "detect", "--agent", "devin", "--record", rec, *captures(QUIET)],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "devin" in done.stderr and "records" in done.stderr


# --- the hook ---------------------------------------------------------------------------


def test_builtin_witnesses_are_claude_codex_and_gemini_and_their_helpers_are_not_plugins():
    from afd.pluginset import load_plugins

    plugins = load_plugins(None, entry_points=False)
    # Python built-ins, then the shipped manifests (plugins/agents/*.toml); no `_helper` module is a plugin.
    assert [p.name for p in plugins.plugins] == ["claude", "codex", "devin", "copilot", "gemini", "opencode"]
    assert not plugins.failures
    assert [a for a in sorted(plugins.agents) if plugins.has_witness(a)] == ["claude", "codex", "gemini"]
    hooks = {p.name: p.hooks for p in plugins.plugins}
    assert "afd_witness" in hooks["claude"] and "afd_witness" not in hooks["devin"]


def test_a_witness_that_raises_counts_as_unknown(tmp_path):
    from afd.model import AgentProcess
    from afd.pluginset import load_plugins

    (tmp_path / "broken.py").write_text(
        "from afd import hookimpl\n"
        "from afd.model import AgentSpec\n"
        "@hookimpl\n"
        "def afd_agents():\n"
        "    return [AgentSpec(name='broken', executables=('broken',), command=('broken',))]\n"
        "@hookimpl\n"
        "def afd_witness(agent, process, since, until, record):\n"
        "    raise RuntimeError('boom')\n"
    )
    plugins = load_plugins(tmp_path, entry_points=False, builtins=False)
    found = plugins.witness("broken", AgentProcess(None, "/x", None), None, T0)
    assert found.state is WitnessState.UNKNOWN and "RuntimeError" in found.why


# --- the rule inside the session rulebook -------------------------------------------------

SEEN = T0 - timedelta(minutes=1)
BANNER = Detection("claude", 3, 3, PANE_RESET, "claude.session-limit", "You've hit your limit · resets 12pm (UTC)")
SESSION = SessionRecord(
    name="main:0.0", pane_id="%3", server_socket="/tmp/tmux-1/default", server_pid=100, agent="claude",
    identity=IdentityKind.KNOWN, identity_source=IdentitySource.PROCESS, state=SessionState.IDLE,
    created_at=T0, updated_at=T0, agent_pid=4242, agent_started_at=1000.0, account="claude",
)
WALL_AT = WitnessVerdict(WitnessState.LIMITED, "a wall", RECORD_RESET, "five_hour", "t.jsonl", SEEN)


def looked(*, idle=True, banner=True, record=None) -> sessions.Looked:
    verdict = Verdict("claude", banner, banner, banner, BANNER if banner else None, "limited" if banner else "no banner")
    sighting = sessions.BannerSighting(SEEN, PANE_RESET) if banner else None
    return sessions.Looked(idle, BANNER if banner else None, sighting, verdict if idle else None, False, record)


def session(**changes) -> SessionRecord:
    return replace(SESSION, **changes)


# (record, observation) -> (state, witnesses, reset, note kinds, sighting types)
TRANSITIONS = {
    "both-witnesses": ((session(), looked(record=WALL_AT)),
                       (SessionState.LIMITED, "pane+record", RECORD_RESET, ["session.limited"], [sessions.SeenLimited])),
    "pane-alone": ((session(), looked(record=UNKNOWN)),
                   (SessionState.LIMITED, "pane", PANE_RESET, ["session.limited"], [sessions.SeenLimited])),
    "disputed": ((session(), looked(record=NOT_LIMITED)),
                 (SessionState.IDLE, "disputed", None, ["session.disputed"], [sessions.SeenDisputed])),
    "disputed-told-once": ((session(witnesses="disputed", banner_first_seen_at=SEEN), looked(record=NOT_LIMITED)),
                           (SessionState.IDLE, "disputed", None, [], [])),
    "a-limit-already-told-is-disputed-later": (
        (session(state=SessionState.LIMITED, witnesses="pane+record", banner_first_seen_at=SEEN), looked(record=NOT_LIMITED)),
        (SessionState.IDLE, "disputed", None, ["session.disputed"], [sessions.SeenDisputed]),
    ),
    "records-alone-on-an-idle-pane": ((session(), looked(banner=False, record=WALL_AT)),
                                      (SessionState.LIMITED, "record", RECORD_RESET, ["session.limited"], [sessions.SeenLimited])),
    "records-alone-while-working": ((session(), looked(idle=False, banner=False, record=None)),
                                    (SessionState.WORKING, None, None, [], [])),
    "the-records-confirm-a-limit-the-pane-saw-first": (
        (session(state=SessionState.LIMITED, witnesses="pane", banner_first_seen_at=SEEN), looked(record=WALL_AT)),
        (SessionState.LIMITED, "pane+record", RECORD_RESET, ["session.witnessed"], [sessions.SeenLimited]),
    ),
}


@pytest.mark.parametrize("given,expected", list(TRANSITIONS.values()), ids=list(TRANSITIONS))
def test_session_transitions_with_the_second_witness(given, expected):
    t = sessions.transition(*given, T0)
    state, witnesses, reset, kinds, sightings = expected
    assert (t.record.state, t.record.witnesses, t.record.reset_at) == (state, witnesses, reset)
    assert [n.kind for n in t.notes] == kinds
    assert [type(s) for s in t.sightings] == sightings
    if witnesses == "record":
        assert t.record.last_banner is None and t.record.banner_first_seen_at == SEEN
