"""What Claude Code's status line hands afd: one small file per account in afd's runtime dir.

`afd statusline` runs inside Claude Code's process tree on every refresh of
its status line. It never opens the store (only the daemon writes it) and
works with the daemon down: it writes what it keeps of the payload — the
`rate_limits`, each session's `prompt_cache` and the session's identity
(`session_id`, `transcript_path`, `cwd`) — to a 0600 file named for the
account, replaced atomically, and the daemon ingests the files it finds
changed. Which account a file belongs to is the daemon's call: the file
carries the account variables of the environment the status line ran in
(their values, and only the *names* of credential variables that are set),
and the daemon tells the account from them as it does for a pane.

A payload without `rate_limits` (before the first answer, or with an API
key) leaves the account's last figures in place; its prompt cache is still
kept. Two sessions of one account refreshing at the same instant may each
drop the other's newest prompt-cache entry; the next refresh writes it
again.

Import-light on purpose: the status line pays for every module imported.
"""

from __future__ import annotations

import json
import os
import time
import zlib
from pathlib import Path

SCHEMA = 1
FOLDER = "usage"
# The status-line agent's account variables (Claude Code's spec's `account_env` and `credential_env`, which
# a test holds equal): read here without loading the plugins, which would cost the status line.
ACCOUNT_VARS = ("CLAUDE_CONFIG_DIR",)
CREDENTIAL_VARS = ("CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_USE_BEDROCK",
                   "CLAUDE_CODE_USE_VERTEX")
MAX_SESSIONS = 8  # prompt-cache entries kept per account, the newest
MAX_PAYLOAD = 4 * 1024 * 1024  # bytes of stdin read; a status-line payload is a few kilobytes
_IDENTITY = ("session_id", "transcript_path", "cwd")


def folder(runtime: Path | None = None) -> Path:
    if runtime is None:
        from afd.kit.paths import runtime_dir

        runtime = runtime_dir()
    return runtime / FOLDER


def account_view(env: dict[str, str]) -> dict:
    """What the file keeps of the environment: the account variables set, HOME, and which credentials are set."""
    return {
        "selecting": {k: env[k] for k in ACCOUNT_VARS if env.get(k)},
        "credentials": sorted(k for k in CREDENTIAL_VARS if env.get(k)),
        "home": env.get("HOME") or None,
    }


def file_name(view: dict) -> str:
    """One file per account: named by the account's variables, as resolved, and the credentials set."""
    home = view.get("home")
    parts = []
    for name, value in sorted(view["selecting"].items()):
        if home and (value == "~" or value.startswith("~/")):
            value = home + value[1:]
        parts.append(f"{name}={os.path.realpath(value) if os.path.isabs(value) else value}")
    parts += view["credentials"]
    return f"statusline-{zlib.crc32(chr(0).join(parts).encode()):08x}.json"


def kept(payload: dict, old: dict | None, view: dict, now: float) -> dict:
    """The file's new content: the payload's rate limits (else the last ones), and its session's prompt cache."""
    out = {"schema": SCHEMA, "env": view, "written_at": now}
    limits = payload.get("rate_limits")
    if isinstance(limits, dict):
        out["rate_limits"], out["rate_limits_at"] = limits, now
    elif old is not None and isinstance(old.get("rate_limits"), dict):
        out["rate_limits"], out["rate_limits_at"] = old["rate_limits"], old.get("rate_limits_at")
    sessions = dict(old.get("sessions") or {}) if old is not None and isinstance(old.get("sessions"), dict) else {}
    session = payload.get("session_id")
    if isinstance(session, str) and session:
        entry = {k: payload.get(k) for k in _IDENTITY if isinstance(payload.get(k), str)}
        if isinstance(payload.get("prompt_cache"), dict):
            entry["prompt_cache"] = payload["prompt_cache"]
        entry["at"] = now
        sessions.pop(session, None)
        sessions[session] = entry
        while len(sessions) > MAX_SESSIONS:
            sessions.pop(next(iter(sessions)))
    out["sessions"] = sessions
    return out


def record(payload: dict, env: dict[str, str], where: Path, now: float | None = None) -> Path:
    """Write what afd keeps of `payload` to its account's file under `where`, atomically, mode 0600."""
    view = account_view(env)
    path = where / file_name(view)
    old = None
    try:
        with open(path, "rb") as fh:
            old = json.loads(fh.read())
    except (OSError, ValueError):
        pass
    data = json.dumps(kept(payload, old if isinstance(old, dict) else None, view, time.time() if now is None else now),
                      separators=(",", ":")).encode()
    try:
        where.mkdir(mode=0o700, parents=True, exist_ok=True)
    except FileExistsError:
        pass
    temp = where / f".{path.name}.{os.getpid()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.replace(temp, path)
    return path
