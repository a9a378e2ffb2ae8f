"""The pure rules of jobs: handoff selection and refusals, routing, status, and an envelope delivery's next move."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest

from afd.act import Finish, Go, Key, Paste, Result, Wait
from afd.jobs.delivery import PASTE_GRACE, EnvelopeFacts, EnvelopeStep, Seen, seen, step
from afd.jobs.outbox import held_because
from afd.jobs.rules import (
    MAX_NOTE,
    Rejection,
    Selection,
    brief_lines,
    masters_after_handoff,
    observed_status,
    recipient,
    select_handoff,
    stamp,
)
from afd.record.types import Job, JobStatus

T = datetime(2026, 1, 1, tzinfo=timezone.utc)


def job(name, owner="boss", parent=None, status=JobStatus.RUNNING):
    return Job(name, f"title {name}", owner, parent, "claude", status, None, T, T)


JOBS = {j.name: j for j in (job("a"), job("a1", parent="a"), job("a11", parent="a1"), job("b"), job("c", owner="other"))}


def pick(names=None, note=None, caller="boss", target="heir", live=True, known=True):
    return select_handoff(JOBS, caller, target, names, note, live, known)


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        (dict(caller="nobody"), "has no jobs to hand off"),
        (dict(names=["zzz"]), "no job named 'zzz'"),
        (dict(names=["c"]), "supervised by other"),
        (dict(names=["a1"]), "select its top-level job"),
        (dict(live=False), "not a live session"),
        (dict(known=False), "does not know which agent"),
        (dict(target="boss"), "to itself"),
        (dict(target="a11"), "cannot supervise itself"),
        (dict(note="x" * (MAX_NOTE + 1)), f"{MAX_NOTE + 1} characters"),
    ],
    ids=["empty", "unknown", "another-supervisors", "not-top-level", "offline", "unknown-agent", "self", "into-own-job", "long-note"],
)
def test_handoff_refusals(kwargs, reason):
    got = pick(**kwargs)
    assert isinstance(got, Rejection) and reason in got.reason


def test_all_selects_every_own_top_level_job_with_descendants():
    assert pick() == Selection(top=("a", "b"), moved=("a", "a1", "a11", "b"))
    assert pick(["all"]) == pick()


def test_a_named_job_takes_its_descendants_and_nothing_else():
    assert pick(["a"]) == Selection(top=("a",), moved=("a", "a1", "a11"))


def test_a_note_of_exactly_the_limit_is_accepted():
    assert isinstance(pick(["b"], note="x" * MAX_NOTE), Selection)


@pytest.mark.parametrize(
    ("masters", "live", "want"),
    [
        (["heir", "boss"], {"heir", "boss"}, "heir"),
        (["heir", "boss"], {"boss"}, "boss"),
        (["heir", "boss", "old"], {"old"}, "old"),
        (["heir", "boss"], set(), None),
    ],
    ids=["primary-live", "first-fallback", "next-live", "none-live"],
)
def test_one_recipient_the_first_live_master(masters, live, want):
    assert recipient(masters, live) == want


def test_after_a_handoff_the_target_is_primary_and_the_former_supervisor_first_fallback():
    assert masters_after_handoff(["boss", "old"], "boss", "heir") == ["heir", "boss", "old"]
    assert masters_after_handoff(["heir", "boss"], "heir", "boss") == ["boss", "heir"]


@pytest.mark.parametrize(
    ("stored", "state", "want"),
    [
        (JobStatus.RUNNING, "working", JobStatus.RUNNING),
        (JobStatus.RUNNING, "limited", JobStatus.LIMITED),
        (JobStatus.LIMITED, "idle", JobStatus.RUNNING),
        (JobStatus.RUNNING, "gone", JobStatus.GONE),
        (JobStatus.RUNNING, None, JobStatus.GONE),
        (JobStatus.RUNNING, "creating", JobStatus.RUNNING),
        (JobStatus.DONE, "gone", JobStatus.DONE),
        (JobStatus.FAILED, "working", JobStatus.FAILED),
    ],
)
def test_status_from_the_session_state_keeps_the_agents_word(stored, state, want):
    if state == "creating":  # no record yet, a create in flight
        assert observed_status(stored, None, creating=True) is want
    else:
        assert observed_status(stored, state) is want


def test_the_stamp_is_one_line_with_the_nonce_first():
    assert stamp("ab12cd", "job a\nis done") == "[afd ab12cd] job a is done"


CHROME = (re.compile(r"^\s*[❯›]"), re.compile(r"^\s*─+$"), re.compile(r"for shortcuts"))


@pytest.mark.parametrize(
    ("rows", "want"),
    [
        (["> [afd n1] hello", "", "⏺ I'll take care of that.", "─────", "❯ ", "─────"], Seen(False, True)),
        (["⏺ ok", "─────", "❯ [afd n1] hello", "─────"], Seen(True, False)),
        # codex draws a submitted prompt with its input row's glyph: what follows tells them apart
        (["› [afd n1] hello", "", "• I'll take care of that.", "› Ask Codex", "", "  ? for shortcuts"], Seen(False, True)),
        (["• done", "› [afd n1] hello", "", "  ? for shortcuts"], Seen(True, False)),
        (["❯ [afd n2] other"], Seen(False, False)),
    ],
    ids=["claude-taken", "claude-input", "codex-taken", "codex-input", "another-nonce"],
)
def test_seen_tells_the_input_row_from_the_transcript(rows, want):
    assert seen("n1", rows, CHROME) == want


STAMPED = "[afd n1] job a is done"
NOW = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)
R, P, E = EnvelopeStep.ROUTED, EnvelopeStep.PASTED, EnvelopeStep.ENTERED
NONE, INPUT, TRANSCRIPT = Seen(False, False), Seen(True, False), Seen(False, True)
GONE = None  # the pane was not captured, and it is gone


def row(step, ago=0.0, run="this-run", **kw) -> dict:
    """A delivery's journal row at `step`, recorded `ago` seconds before NOW by `run`."""
    at = NOW - timedelta(seconds=ago)
    base = {"envelope": 1, "nonce": "n1", "text": STAMPED, "kind": "done", "pane": "%3", "step": step.value,
            "step_at": at.isoformat(), "run": run}
    if step is E:
        base |= {"entered_at": at.isoformat(), "enters": 1}
    return {**base, **kw}


def facts(state, look, held=None) -> EnvelopeFacts:
    return EnvelopeFacts(now=NOW, run="this-run", state=state, look=look, pane_gone=look is GONE, held=held)


LATE = PASTE_GRACE.total_seconds() + 1
RELEASED, TAKEN = Result.ROLLED_BACK, Result.CONFIRMED


@pytest.mark.parametrize(
    ("journal", "found", "move"),
    [
        (row(R), facts("idle", NONE), Go(P, Paste(STAMPED))),
        (row(R), facts("working", NONE), RELEASED),  # nothing typed: back to the outbox, routed again later
        (row(R), facts("idle", NONE, held="the pane is in copy mode"), Wait(hold="the pane is in copy mode")),
        (row(R), facts("gone", GONE), RELEASED),
        (row(P, 0.1), facts("working", INPUT), Go(E, Key("Enter"), {"entered_at": NOW.isoformat(), "enters": 1})),
        (row(P), facts("working", TRANSCRIPT), TAKEN),
        (row(P, 0.1), facts("idle", NONE), Wait("waiting for the pasted envelope to show")),
        (row(P, LATE), facts("idle", NONE), Go(P, Paste(STAMPED))),  # never showed: paste it again
        (row(P, 0.1, run="a-killed-run"), facts("idle", NONE), Go(P, Paste(STAMPED))),  # after a restart: not there, send again
        (row(P, LATE), facts("working", NONE), Wait("the recipient is working")),
        (row(P, LATE), facts("gone", GONE), RELEASED),
        (row(E, 0.1), facts("working", TRANSCRIPT), TAKEN),
        (row(E, 0.1), facts("working", INPUT), Wait("waiting for the agent to take the envelope")),
        (row(E, LATE), facts("idle", INPUT), Wait("waiting for the agent to take the envelope")),  # never a second Enter
        (row(E, LATE, run="a-killed-run"), facts("idle", INPUT),  # the run that recorded Enter may have died before it
         Go(E, Key("Enter"), {"entered_at": (NOW - timedelta(seconds=LATE)).isoformat(), "enters": 2})),
        (row(E, LATE, run="a-killed-run", enters=2), facts("idle", INPUT), Wait("waiting for the agent to take the envelope")),
        (row(E, 0.1), facts("gone", GONE), Result.ABANDONED),  # entered is never sent again
        (row(E, 31), facts("idle", NONE), Result.UNCONFIRMED),
        (row(R), EnvelopeFacts(NOW, "this-run", "unknown", None, pane_gone=False), Wait("the recipient's pane could not be looked at")),
    ],
    ids=["routed-idle", "routed-busy-now", "routed-person", "routed-gone", "pasted-in-input", "pasted-taken",
         "pasted-just-now", "pasted-lost", "pasted-lost-after-restart", "pasted-lost-busy", "pasted-gone",
         "entered-taken", "entered-still-showing", "entered-not-answered-yet", "entered-by-a-killed-run",
         "entered-twice-already", "entered-gone", "entered-not-seen-taken", "tmux-silent"],
)
def test_delivery_moves(journal, found, move):
    got = step(journal, found)
    if isinstance(move, Result):
        assert isinstance(got, Finish) and got.result is move
    else:
        assert got == move


@pytest.mark.parametrize(
    ("who", "state", "held", "why"),
    [("boss", "working", None, "boss is working"), (None, None, None, "no recipient is live"),
     ("boss", "idle", "another envelope is on its way into this pane", "boss: another envelope")],
)
def test_a_pending_envelope_says_why_it_waits(who, state, held, why):
    assert held_because(who, state, held).startswith(why)


def test_brief_lines_list_the_jobs_a_session_supervises():
    assert brief_lines([]) == []
    lines = brief_lines([JOBS["a"], job("b", status=JobStatus.DONE)])
    assert lines[0].startswith("This session supervises 2 jobs") and lines[1:] == ["  a: title a (running)", "  b: title b (done)"]
