"""The session records Claude Code and Codex write, in the shapes measured with the real CLIs.

Used by the fake agents (to write records beside their banners) and by the
tests of the witness plugins. Only the fields afd reads, plus enough of the
rest to look like the real thing.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path

CLAUDE_WINDOWS = {"five_hour": "five_hour", "weekly": "seven_day"}
CODEX_WINDOW_MINUTES = {"five_hour": 300, "weekly": 10080}


def _iso(at: datetime) -> str:
    return at.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def append_jsonl(path: Path, records: Iterable[dict]) -> Path:
    """Append records whole, one per line (one write, as the CLIs do)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    return path


# --- Claude Code --------------------------------------------------------------


def claude_transcript_path(base: Path, cwd: str, session: str) -> Path:
    return base / "projects" / re.sub(r"[^A-Za-z0-9]", "-", cwd) / f"{session}.jsonl"


def _claude(kind: str, at: datetime, cwd: str, session: str, **extra) -> dict:
    return {
        "parentUuid": None,
        "isSidechain": False,
        "userType": "external",
        "cwd": cwd,
        "sessionId": session,
        "version": "2.1.332",
        "type": kind,
        "uuid": str(uuid.uuid4()),
        "timestamp": _iso(at),
        **extra,
    }


def claude_user(at: datetime, cwd: str, session: str, text: str, **extra) -> dict:
    return _claude("user", at, cwd, session, message={"role": "user", "content": text}, **extra)


def claude_reply(at: datetime, cwd: str, session: str, text: str, **extra) -> dict:
    message = {"role": "assistant", "model": "claude-opus-4-7", "content": [{"type": "text", "text": text}]}
    return _claude("assistant", at, cwd, session, message=message, **extra)


def claude_wall(
    at: datetime, cwd: str, session: str, resets_at: datetime | None, window: str = "five_hour", quota: bool = True, **extra
) -> dict:
    """The plan wall; ``quota=False`` gives the 429 of an API-key user, which is not one."""
    fields = {
        "message": {"role": "assistant", "model": "<synthetic>", "content": [{"type": "text", "text": "You've hit your limit"}]},
        "isApiErrorMessage": True,
        "error": "rate_limit",
        "apiErrorStatus": 429,
    }
    if quota:
        fields["apiError"] = "usage_limit_reached"
        fields["quotaLimits"] = {
            "status": "rejected",
            "resetsAt": int(resets_at.timestamp()) if resets_at else None,
            "rateLimitType": CLAUDE_WINDOWS.get(window, window),
            "isUsingOverage": False,
        }
    return _claude("assistant", at, cwd, session, **fields, **extra)


def claude_system(at: datetime, cwd: str, session: str, text: str) -> dict:
    return _claude("system", at, cwd, session, subtype="informational", content=text, level="info")


def claude_auto_continuation(at: datetime, cwd: str, session: str) -> dict:
    return claude_user(at, cwd, session, "Continue from where you left off.", isMeta=True, origin={"kind": "auto-continuation"})


# --- Codex ----------------------------------------------------------------------


def codex_rollout_path(home: Path, at: datetime, thread: str) -> Path:
    local = at.astimezone()
    return home / "sessions" / local.strftime("%Y/%m/%d") / f"rollout-{local.strftime('%Y-%m-%dT%H-%M-%S')}-{thread}.jsonl"


def _codex(at: datetime, kind: str, payload: dict, ordinal: int = 0) -> dict:
    return {"timestamp": _iso(at), "ordinal": ordinal, "type": kind, "payload": payload}


def codex_meta(at: datetime, cwd: str, thread: str) -> dict:
    return _codex(at, "session_meta", {"id": thread, "timestamp": _iso(at), "cwd": cwd, "cli_version": "0.171.0", "git": None})


def codex_prompt(at: datetime, text: str) -> dict:
    return _codex(at, "event_msg", {"type": "user_message", "message": text})


def codex_reply(at: datetime, text: str) -> list[dict]:
    return [
        _codex(at, "event_msg", {"type": "agent_message", "message": text}),
        _codex(at, "event_msg", {"type": "task_complete", "last_agent_message": text}),
    ]


def codex_window(window: str, used: float, resets_at: datetime | None, **extra) -> dict:
    return {
        "used_percent": used,
        "window_minutes": CODEX_WINDOW_MINUTES.get(window, window),
        "resets_at": int(resets_at.timestamp()) if resets_at else None,
        **extra,
    }


def codex_token_count(at: datetime, primary: dict | None, secondary: dict | None, *, limit_id: str = "codex",
                      limit_name: str | None = None, plan_type: str | None = None) -> dict:
    """A `token_count` as Codex 0.171.0 writes it: `limit_id` is "codex", or a model's own limit ("codex_spark",
    with its `limit_name`, from an `x-codex-active-limit: codex-spark` header); `plan_type` is null on a custom
    provider (it comes with a ChatGPT sign-in, not from a response)."""
    rate_limits = {"limit_id": limit_id, "limit_name": limit_name, "primary": primary, "secondary": secondary,
                   "credits": None, "individual_limit": None, "spend_control_reached": None, "plan_type": plan_type,
                   "rate_limit_reached_type": None}
    return _codex(at, "event_msg", {"type": "token_count", "info": None, "rate_limits": rate_limits})


def codex_wall(at: datetime, info: object = "usage_limit_exceeded") -> dict:
    """A turn ended by an error; the default ``codex_error_info`` is the usage wall."""
    error = {"message": "You've hit your usage limit.", "codex_error_info": info}
    return _codex(at, "event_msg", {"type": "task_complete", "last_agent_message": None, "error": error})
