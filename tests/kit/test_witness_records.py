"""The claude and codex witnesses: their verdicts over record files, reading tails only, and finding the file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from afd.kit.recordtail import TailCache, process_environment, read_tail
from afd.model import AgentProcess, WitnessState
from afd.testing import records as R
from afd_plugins import _claude_records as claude
from afd_plugins import _codex_records as codex
from harness import wait_for

T0 = datetime(2026, 7, 13, 9, 0, tzinfo=timezone.utc)
START = T0 - timedelta(hours=1)  # the agent process started then
RESET = T0 + timedelta(hours=2)
CWD = "/home/me/src/my.repo"
S = "0b7e1a52-5c55-4a49-9c1d-5a0e1f2d3c4b"
LIMITED, NOT_LIMITED, UNKNOWN = WitnessState.LIMITED, WitnessState.NOT_LIMITED, WitnessState.UNKNOWN


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def c_user(m, text="fix the test", **kw):
    return R.claude_user(at(m), CWD, S, text, **kw)


def c_reply(m, **kw):
    return R.claude_reply(at(m), CWD, S, "Done.", **kw)


def c_wall(m, **kw):
    return R.claude_wall(at(m), CWD, S, RESET, **kw)


# (records, expected state, expected window); the process started at START (T0 - 1 h)
CLAUDE_CASES = {
    "rejected-with-quota-limits": ([c_user(-2), c_reply(-1.9), c_user(-1), c_wall(-1)], LIMITED, "five_hour"),
    "429-without-quota-limits-is-no-wall": ([c_user(-1), c_wall(-1, quota=False)], UNKNOWN, None),
    "weekly-window": ([c_user(-1), c_wall(-1, window="weekly")], LIMITED, "weekly"),
    "opus-window-named-as-the-record-names-it": ([c_wall(-1, window="seven_day_opus")], LIMITED, "seven_day_opus"),
    "set-to-continue-is-still-the-wall": (
        [c_wall(-1), R.claude_system(at(-1), CWD, S, "Usage limit reached · set to continue automatically at 11:00am")],
        LIMITED, "five_hour",
    ),
    "auto-continued-after-the-reset": (
        [
            c_wall(-30),
            R.claude_system(at(-2), CWD, S, "Usage limit reset · Continuing automatically"),
            R.claude_auto_continuation(at(-2), CWD, S),
        ],
        NOT_LIMITED, None,
    ),
    "sidechain-wall-is-not-the-conversation": ([c_user(-2), c_wall(-1, isSidechain=True)], UNKNOWN, None),
    "sidechain-reply-is-not-the-conversation-going-on": ([c_wall(-2), c_reply(-1, isSidechain=True)], LIMITED, "five_hour"),
    "replies-and-no-wall-dispute-a-banner": ([c_user(-2), c_reply(-1)], NOT_LIMITED, None),
    "replies-before-the-process-started-say-nothing": ([c_user(-90), c_reply(-90)], UNKNOWN, None),
    "stale-wall-from-before-the-process-started": ([c_wall(-90)], UNKNOWN, None),
    "stale-wall-then-work-in-this-process": ([c_wall(-90), c_user(-2), c_reply(-1)], NOT_LIMITED, None),
    "wall-after-the-judging-instant-is-not-evidence": ([c_reply(-3), c_wall(1)], NOT_LIMITED, None),
    "wall-whose-reset-passed-long-ago": ([R.claude_wall(at(-1), CWD, S, at(-20))], UNKNOWN, None),
    "empty-file": ([], UNKNOWN, None),
}


@pytest.mark.parametrize("records,state,window", list(CLAUDE_CASES.values()), ids=list(CLAUDE_CASES))
def test_claude_transcript_verdicts(records, state, window):
    found = claude.verdict_of(records, Path("t.jsonl"), START, T0)
    assert found.state is state, found.why
    assert found.window == window
    assert claude.verdict_of([claude.slim(r) for r in records], Path("t.jsonl"), START, T0) == found  # what the cache keeps
    if state is LIMITED:
        assert found.reset_at == RESET and found.record == "t.jsonl"


def x_window(kind, used, resets_at=RESET, **kw):
    return R.codex_window(kind, used, resets_at, **kw)


CODEX_CASES = {
    "usage-limit-with-five-hour-window": (
        [R.codex_prompt(at(-1), "go"), R.codex_token_count(at(-1), x_window("five_hour", 100), x_window("weekly", 40)), R.codex_wall(at(-1))],
        LIMITED, "five_hour", RESET,
    ),
    "weekly-window-in-the-primary-position": (
        [R.codex_token_count(at(-1), x_window("weekly", 100), x_window("five_hour", 12, T0)), R.codex_wall(at(-1))],
        LIMITED, "weekly", RESET,
    ),
    "both-windows-spent-waits-for-the-later": (
        [R.codex_token_count(at(-1), x_window("five_hour", 100, T0 + timedelta(hours=1)), x_window("weekly", 100)), R.codex_wall(at(-1))],
        LIMITED, "weekly", RESET,
    ),
    "other-window-named-by-its-length": (
        [R.codex_token_count(at(-1), x_window(60.0, 100), None), R.codex_wall(at(-1))], LIMITED, "60m", RESET,
    ),
    "rate-limits-all-null": ([R.codex_token_count(at(-1), None, None), R.codex_wall(at(-1))], LIMITED, None, None),
    "resets-in-seconds-is-not-a-reset": (
        [R.codex_token_count(at(-1), x_window("five_hour", 100, None, resets_in_seconds=600), None), R.codex_wall(at(-1))],
        LIMITED, "five_hour", None,
    ),
    "generic-429-is-no-wall": (
        [R.codex_wall(at(-1), info={"response_too_many_failed_attempts": {"http_status_code": 429}})], UNKNOWN, None, None,
    ),
    "retry-rate-limit-is-no-wall": ([R.codex_wall(at(-1), info="rate_limit_exceeded")], UNKNOWN, None, None),
    "thread-went-on-after-the-wall": ([R.codex_wall(at(-3)), *R.codex_reply(at(-1), "done")], NOT_LIMITED, None, None),
    "stale-wall-from-before-the-process-started": ([R.codex_wall(at(-90))], UNKNOWN, None, None),
    "wall-whose-reset-passed-long-ago": (
        [R.codex_token_count(at(-1), x_window("five_hour", 100, at(-30)), None), R.codex_wall(at(-1))], UNKNOWN, None, None,
    ),
}


@pytest.mark.parametrize("records,state,window,reset", list(CODEX_CASES.values()), ids=list(CODEX_CASES))
def test_codex_rollout_verdicts(records, state, window, reset):
    found = codex.verdict_of(records, Path("r.jsonl"), START, T0)
    assert found.state is state, found.why
    assert codex.verdict_of([codex.slim(r) for r in records], Path("r.jsonl"), START, T0) == found  # what the cache keeps
    assert found.window == window and found.reset_at == reset


# --- reading tails ------------------------------------------------------------


def test_truncated_last_line_is_skipped_and_the_rest_read(tmp_path):
    path = R.append_jsonl(tmp_path / "t.jsonl", [c_user(-2), c_wall(-1)])
    with path.open("a") as fh:
        fh.write(json.dumps(c_reply(-0.5))[:40])  # still being written
    tail = read_tail(path)
    assert [r["type"] for r in tail.records] == ["user", "assistant"]
    assert claude.verdict_of(tail.records, path, START, T0).state is LIMITED


def test_huge_file_is_read_from_its_tail_only(tmp_path):
    path = tmp_path / "t.jsonl"
    filler = "x" * 2000
    R.append_jsonl(path, [c_user(-50, text="FIRST-RECORD")])
    R.append_jsonl(path, [R.claude_reply(at(-40), CWD, S, filler)] * 3000)
    R.append_jsonl(path, [c_user(-1), c_wall(-1)])
    size = path.stat().st_size
    assert size > 5_000_000
    tail = read_tail(path, max_bytes=64 * 1024)
    assert tail.bytes_read == 64 * 1024 and tail.size == size
    assert not any("FIRST-RECORD" in json.dumps(r) for r in tail.records)
    assert claude.verdict_of(tail.records, path, START, T0).state is LIMITED


def test_the_cache_reads_a_file_again_only_when_it_changed(tmp_path):
    path = R.append_jsonl(tmp_path / "t.jsonl", [c_user(-2)])
    cache = TailCache()
    first = cache.tail(path)
    assert cache.tail(path) is first and cache.reads == 1
    R.append_jsonl(path, [c_wall(-1)])
    assert len(cache.tail(path).records) == 2 and cache.reads == 2


# --- finding Claude's transcript ----------------------------------------------------


def process(cwd=CWD, start=START):
    return AgentProcess(pid=None, cwd=cwd, start_time=start)


def write_transcript(base: Path, cwd: str, session: str, records, mtime: datetime, folder: str | None = None) -> Path:
    path = R.claude_transcript_path(base, cwd, session)
    if folder is not None:
        path = base / "projects" / folder / f"{session}.jsonl"
    R.append_jsonl(path, records)
    os.utime(path, (mtime.timestamp(), mtime.timestamp()))
    return path


def test_transcript_is_found_under_the_encoded_cwd(tmp_path):
    path = write_transcript(tmp_path, CWD, S, [c_wall(-1)], at(-1))
    assert path.parent.name == "-home-me-src-my-repo"
    assert claude.find_transcript(process(), tmp_path) == path


def test_long_cwd_is_found_by_the_cut_name_glob(tmp_path):
    cwd = "/home/me/" + "/".join(["a-very-long-folder-name"] * 12)
    folder = claude.encode_cwd(cwd)[: claude.MAX_NAME] + "-1k2j3h"
    records = [R.claude_wall(at(-1), cwd, S, RESET)]
    path = write_transcript(tmp_path, cwd, S, records, at(-1), folder=folder)
    assert claude.find_transcript(process(cwd=cwd), tmp_path) == path


def test_stale_pid_file_after_clear_does_not_pick_the_old_conversation(tmp_path):
    old, new = "11111111-old", "22222222-new"
    write_transcript(tmp_path, CWD, old, [R.claude_wall(at(-20), CWD, old, RESET)], at(-20))
    newer = write_transcript(tmp_path, CWD, new, [R.claude_user(at(-2), CWD, new, "hi"), R.claude_reply(at(-1), CWD, new, "hello")], at(-1))
    pid_file = tmp_path / "sessions" / "4242.json"
    pid_file.parent.mkdir()
    pid_file.write_text(json.dumps({"pid": 4242, "sessionId": old, "cwd": CWD, "status": "idle"}))
    assert claude.find_transcript(AgentProcess(4242, CWD, START), tmp_path) == newer
    found = claude.witness(AgentProcess(None, CWD, START), START, T0, newer)
    assert found.state is NOT_LIMITED


def test_two_sessions_in_one_cwd_pick_the_most_recently_written(tmp_path):
    a = write_transcript(tmp_path, CWD, "aaaa", [R.claude_reply(at(-5), CWD, "aaaa", "x")], at(-5))
    b = write_transcript(tmp_path, CWD, "bbbb", [R.claude_wall(at(-1), CWD, "bbbb", RESET)], at(-1))
    assert claude.find_transcript(process(), tmp_path) == b
    os.utime(a, (at(0).timestamp(), at(0).timestamp()))
    assert claude.find_transcript(process(), tmp_path) == a


def test_a_conversation_started_after_a_lookup_is_found_at_once(tmp_path):
    write_transcript(tmp_path, CWD, "aaaa", [R.claude_reply(at(-5), CWD, "aaaa", "x")], at(-5))
    assert claude.find_transcript(process(), tmp_path).stem == "aaaa"
    write_transcript(tmp_path, CWD, "bbbb", [R.claude_wall(at(-1), CWD, "bbbb", RESET)], at(-1))  # /clear
    assert claude.find_transcript(process(), tmp_path).stem == "bbbb"


def test_a_folder_shared_by_another_cwd_is_not_taken(tmp_path):
    # "/home/me/src/my-repo" and "/home/me/src/my.repo" encode alike.
    other = "/home/me/src/my-repo"
    write_transcript(tmp_path, other, S, [R.claude_wall(at(-1), other, S, RESET)], at(-1))
    assert claude.find_transcript(process(), tmp_path) is None


def test_transcripts_older_than_the_process_are_not_its_own(tmp_path):
    write_transcript(tmp_path, CWD, S, [R.claude_wall(at(-90), CWD, S, RESET)], at(-90))
    assert claude.find_transcript(process(), tmp_path) is None


def test_the_agent_processes_own_config_dir_is_used(tmp_path):
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(tmp_path / "cfg"), "CODEX_HOME": str(tmp_path / "cx")}
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], env=env)
    try:
        found = wait_for(lambda: (e := process_environment(child.pid)).get("CLAUDE_CONFIG_DIR") and e, message="its environment")
        assert claude.config_dir(found) == tmp_path / "cfg"
        assert codex.codex_home(found) == tmp_path / "cx"
    finally:
        child.kill()
        child.wait()
    assert claude.config_dir({"HOME": "/home/me"}) == Path("/home/me/.claude")


# --- finding Codex's rollout ------------------------------------------------------------


def write_rollout(home: Path, cwd: str, thread: str, records, mtime: datetime) -> Path:
    path = R.codex_rollout_path(home, mtime, thread)
    R.append_jsonl(path, [R.codex_meta(mtime, cwd, thread), *records])
    os.utime(path, (mtime.timestamp(), mtime.timestamp()))
    return path


def test_rollout_is_found_by_its_session_cwd_and_recency(tmp_path):
    write_rollout(tmp_path, "/elsewhere", "t-other", [R.codex_wall(at(0))], at(0))
    older = write_rollout(tmp_path, CWD, "t-older", [R.codex_wall(at(-10))], at(-10))
    newer = write_rollout(tmp_path, CWD, "t-newer", [*R.codex_reply(at(-2), "ok")], at(-2))
    assert codex.find_rollout(process(), tmp_path) == newer
    os.utime(older, (at(-1).timestamp(), at(-1).timestamp()))
    assert codex.find_rollout(process(), tmp_path) == older


def test_rollouts_of_days_before_the_process_started_are_not_looked_at(tmp_path):
    write_rollout(tmp_path, CWD, "t-old", [R.codex_wall(at(-3 * 24 * 60))], at(-3 * 24 * 60))
    assert codex.find_rollout(process(), tmp_path) is None
    assert codex.find_rollout(process(start=None), tmp_path) is not None  # offline: the last few days


def test_rollout_without_session_meta_yet_is_asked_again(tmp_path):
    path = R.codex_rollout_path(tmp_path, at(-1), "t-new")
    R.append_jsonl(path, [R.codex_prompt(at(-1), "go")])
    assert codex.find_rollout(process(start=None), tmp_path) is None
    path.write_text(json.dumps(R.codex_meta(at(-1), CWD, "t-new")) + "\n")
    assert codex.find_rollout(process(start=None), tmp_path) == path


# --- anything at all in a record file -----------------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
    | st.sampled_from(["assistant", "user", "system", "event_msg", "task_complete", "rejected", "usage_limit_exceeded", "2026-07-13T08:59:00Z"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["type", "timestamp", "payload", "error", "quotaLimits", "status", "resetsAt", "isApiErrorMessage",
                         "rate_limits", "primary", "window_minutes", "resets_at", "used_percent", "codex_error_info", "isSidechain"]),
        inner, max_size=5,
    ),
    max_leaves=6,
)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["type", "timestamp", "payload", "quotaLimits", "isApiErrorMessage", "origin"]), _json), max_size=6))
def test_arbitrary_records_never_crash_a_witness(records):
    for module in (claude, codex):
        found = module.verdict_of(records, None, START, T0)
        assert found.state in WitnessState
