"""Claude Code's own transcripts as a second witness of a usage-limit wall.

Claude Code writes one JSON-lines transcript per conversation under
``$CLAUDE_CONFIG_DIR`` (default ``~/.claude``), in
``projects/<cwd with every character outside [A-Za-z0-9] as ->/<session>.jsonl``.
A plan wall is an ``assistant`` record with ``isApiErrorMessage`` and
``quotaLimits.status == "rejected"`` (with ``resetsAt`` in epoch seconds and
``rateLimitType``); a 429 without that (API-key users, server throttles) is
not a plan wall. Claude's own auto-continue later writes a ``system``
"Usage limit reset · Continuing automatically" record and a meta ``user``
record with ``origin.kind == "auto-continuation"``.

The underscore keeps the loader from registering this file as a plugin;
``claude.py`` asks it through its ``afd_witness`` hook.
"""

import os
import re
from datetime import datetime
from pathlib import Path

from afd.kit import recordverdict
from afd.kit.recordtail import TailCache, agent_environment, from_epoch_seconds
from afd.model import AgentProcess, WitnessVerdict

# Claude cuts a longer encoded project name and appends a hash of the
# whole path; such a folder is found by its first characters.
MAX_NAME = 200
# How many recently written transcripts are looked into for the pane's cwd.
MAX_CANDIDATES = 8
_WINDOWS = {"five_hour": "five_hour", "seven_day": "weekly"}
_CONTINUING = re.compile(r"limit reset.*continuing", re.IGNORECASE)

# What the witness reads of a record; replies and tool results are left out.
_KEEP = ("type", "timestamp", "cwd", "isSidechain", "isMeta", "origin", "isApiErrorMessage", "quotaLimits", "subtype")


def slim(record: dict) -> dict:
    kept = {k: record[k] for k in _KEEP if k in record}
    if record.get("type") == "system" and isinstance(record.get("content"), str):
        kept["content"] = record["content"][:200]
    if record.get("type") == "user":
        kept["prompt"] = _typed(record)
    return kept


def _typed(record: dict) -> bool:
    """A `user` record that is a prompt: text someone submitted, not a tool's result, a meta note or a slash command."""
    if record.get("isMeta") or record.get("toolUseResult") is not None:
        return False
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):
        texts = [c.get("text", "") for c in content if isinstance(c, dict) and c.get("type") == "text"]
        if not texts or any(isinstance(c, dict) and c.get("type") == "tool_result" for c in content):
            return False
        content = " ".join(texts)
    return isinstance(content, str) and not content.lstrip().startswith(("<command-", "<local-command", "<bash-"))


_cache = TailCache(slim=slim)


def encode_cwd(cwd: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


def config_dir(env: dict[str, str]) -> Path:
    if env.get("CLAUDE_CONFIG_DIR"):
        return Path(env["CLAUDE_CONFIG_DIR"])
    return Path(env.get("HOME") or os.path.expanduser("~")) / ".claude"


def project_dirs(base: Path, cwd: str) -> list[Path]:
    """The folders a transcript of ``cwd`` can be in: its exact name, or the cut-and-hashed long form."""
    name = encode_cwd(cwd)
    projects = base / "projects"
    if len(name) <= MAX_NAME:
        return [projects / name] if (projects / name).is_dir() else []
    # A name this long is past what a file system allows; only the cut form exists.
    return [p for p in projects.glob(name[:MAX_NAME] + "*") if p.is_dir()]


def _main(records) -> list[dict]:
    # Sidechain records belong to a sub-agent, not to the conversation in the pane.
    return [r for r in records if isinstance(r, dict) and not r.get("isSidechain")]


def find_transcript(process: AgentProcess, base: Path) -> Path | None:
    """The most recently written transcript whose records carry the pane's cwd.

    ``sessions/<pid>.json`` is not used: it still names the old conversation
    after ``/clear`` or ``--continue``.
    """
    if not process.cwd:
        return None
    for path in recordverdict.recent_files(project_dirs(base, process.cwd), "*.jsonl", process.start_time, MAX_CANDIDATES):
        try:
            records = _main(_cache.tail(path).records)
        except OSError:
            continue
        if any(r.get("cwd") == process.cwd for r in records):
            return path
    return None


def is_wall(record: dict) -> bool:
    quota = record.get("quotaLimits")
    return (
        record.get("type") == "assistant"
        and record.get("isApiErrorMessage") is True
        and isinstance(quota, dict)
        and quota.get("status") == "rejected"
    )


def is_progress(record: dict) -> bool:
    """The conversation went on: a real answer, or Claude's own continuation after a reset."""
    kind = record.get("type")
    if kind == "assistant":
        return not record.get("isApiErrorMessage")
    if kind == "user":
        origin = record.get("origin")
        return bool(record.get("isMeta")) and isinstance(origin, dict) and origin.get("kind") == "auto-continuation"
    if kind == "system":
        return bool(_CONTINUING.search(str(record.get("content") or "")))
    return False


def is_prompt(record: dict) -> bool:
    """A prompt someone submitted (afd's continuation, or the person's own); Claude's own continuation is progress."""
    if record.get("type") != "user":
        return False
    return bool(record["prompt"]) if "prompt" in record else _typed(record)  # slimmed, or as written


def wall_reset(records: list[dict]) -> tuple[datetime | None, str | None]:
    quota = records[-1]["quotaLimits"]
    kind = quota.get("rateLimitType")
    return from_epoch_seconds(quota.get("resetsAt")), _WINDOWS.get(kind, kind) if isinstance(kind, str) else None


def verdict_of(
    records, path: Path | None, since: datetime | None, until: datetime
) -> WitnessVerdict:
    """Claude's word on its limit from its transcript's records, oldest first (pure)."""
    return recordverdict.verdict_of(
        _main(records), is_wall=is_wall, is_progress=is_progress, wall_reset=wall_reset,
        since=since, until=until, record=str(path) if path else None, is_prompt=is_prompt,
    )


def witness(process: AgentProcess, since: datetime | None, until: datetime, record: Path | None) -> WitnessVerdict:
    def find(p: AgentProcess) -> Path | None:
        return find_transcript(p, config_dir(agent_environment(p)))

    return recordverdict.read_verdict(_cache, process, record, find, verdict_of, since, until)
