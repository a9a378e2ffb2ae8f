"""The pure rules of jobs: handoff selection and refusals, routing, status, and the outbox's next move."""

from __future__ import annotations

import re
from datetime import datetime, timezone

import pytest

from afd.jobs.rules import (
    MAX_NOTE, Envelope, brief_lines, EnvelopeState, Job, JobStatus, Rejection, Selection, masters_after_handoff, observed_status,
    recipient, select_handoff, stamp,
)
from afd.jobs.outbox import PASTE_GRACE, Move, Seen, decide, seen

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


def env(state, recipient=None):
    return Envelope(1, "done:a", "a", None, "done", "job a is done", "n1", state, recipient, 0)


P, A, S = EnvelopeState.PENDING, EnvelopeState.ATTEMPTING, EnvelopeState.SENT
NONE, INPUT, TRANSCRIPT = Seen(False, False), Seen(True, False), Seen(False, True)


@pytest.mark.parametrize(
    ("envelope", "who", "state", "held", "look", "since", "move"),
    [
        (env(P), "boss", "idle", None, None, None, Move.PASTE),
        (env(P), "boss", "working", None, None, None, Move.HOLD),
        (env(P), "boss", "idle", "copy mode", None, None, Move.HOLD),
        (env(P), None, None, None, None, None, Move.HOLD),
        (env(A, "boss"), "boss", "working", None, INPUT, 0.1, Move.ENTER),
        (env(A, "boss"), "boss", "working", None, TRANSCRIPT, None, Move.CONSUMED),
        (env(A, "boss"), "boss", "idle", None, NONE, 0.1, Move.WAIT),
        (env(A, "boss"), "boss", "idle", None, NONE, None, Move.PASTE),  # after a restart: not there, send again
        (env(A, "boss"), "boss", "working", None, NONE, None, Move.HOLD),
        (env(A, "boss"), "boss", "gone", None, None, None, Move.RELEASE),
        (env(S, "boss"), "boss", "working", None, TRANSCRIPT, 0.1, Move.CONSUMED),
        (env(S, "boss"), "boss", "working", None, INPUT, 0.1, Move.HOLD),
        (env(S, "boss"), "boss", "idle", None, INPUT, PASTE_GRACE + 1, Move.HOLD),  # never a second Enter
        (env(S, "boss"), "boss", "gone", None, None, None, Move.HOLD),  # sent is never sent again
    ],
    ids=["pending-idle", "pending-busy", "pending-person", "pending-nobody", "attempting-in-input",
         "attempting-taken", "attempting-just-pasted", "attempting-lost", "attempting-lost-busy", "attempting-gone",
         "sent-taken", "sent-still-showing", "sent-not-answered-yet", "sent-gone"],
)
def test_outbox_moves(envelope, who, state, held, look, since, move):
    assert decide(envelope, who, state, held, look, since) is move


def test_brief_lines_list_the_jobs_a_session_supervises():
    assert brief_lines([]) == []
    lines = brief_lines([JOBS["a"], job("b", status=JobStatus.DONE)])
    assert lines[0].startswith("This session supervises 2 jobs") and lines[1:] == ["  a: title a (running)", "  b: title b (done)"]
