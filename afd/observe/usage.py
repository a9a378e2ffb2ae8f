"""The usage stage's look at the world: the status-line files that changed, and the agents' own records.

Two sources, one value out (`UsageSeen`) for the poll to record:

* the account files `afd statusline` writes (`afd.observe.statusline`),
  read again only when one changed, each told its account the way a pane's
  environment is (`afd.judge.accounts`); a file whose account cannot be
  named (a credential chose it) gives nothing;
* `afd_usage`, asked of each live session of an agent whose plugin reads
  usage from its records, at most every `USAGE_READ_EVERY` seconds per
  session, working or idle: the figures are the session's account's.

It also says which accounts had a session working this poll, for
calibration's working time.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from afd.judge import accounts, usage
from afd.judge.accounts import Account, AgentVars, ProcessEnv
from afd.model import AgentProcess, AgentSpec, SessionState, UsageReading
from afd.observe import statusline
from afd.record.types import SessionRecord

USAGE_READ_EVERY = 10.0  # seconds between two reads of one session's records


@dataclass(frozen=True, slots=True)
class CacheSeen:
    """A Claude Code session's prompt cache, from its account's status-line file."""

    account: str
    session_id: str
    cwd: str | None
    transcript_path: str | None
    warm: bool | None
    expires_at: datetime | None
    recache_tokens: int | None
    at: datetime


@dataclass(frozen=True, slots=True)
class UsageSeen:
    readings: tuple[tuple[str, UsageReading], ...] = ()  # (account, reading)
    caches: tuple[CacheSeen, ...] = ()
    working: tuple[tuple[str, str], ...] = ()  # (account, agent) of each session working this poll


@dataclass(frozen=True, slots=True)
class StatuslineFile:
    """One account's status-line file as the daemon read it."""

    path: Path
    env: dict  # the form of `statusline.account_view`
    written_at: float  # epoch seconds
    rate_limits: dict | None
    rate_limits_at: float | None
    sessions: dict  # session_id -> {transcript_path, cwd, prompt_cache, at}


def read_file(path: Path) -> StatuslineFile | None:
    """One account file, or None when it is not one this afd wrote (or not whole)."""
    try:
        with open(path, "rb") as fh:
            data = json.loads(fh.read(statusline.MAX_PAYLOAD))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("schema") != statusline.SCHEMA or not isinstance(data.get("env"), dict):
        return None
    env = data["env"]
    if not isinstance(env.get("selecting"), dict) or not isinstance(env.get("credentials"), list):
        return None
    written, limits_at = data.get("written_at"), data.get("rate_limits_at")
    return StatuslineFile(
        path=path,
        env=env,
        written_at=float(written) if isinstance(written, (int, float)) else 0.0,
        rate_limits=data["rate_limits"] if isinstance(data.get("rate_limits"), dict) else None,
        rate_limits_at=float(limits_at) if isinstance(limits_at, (int, float)) else None,
        sessions=data["sessions"] if isinstance(data.get("sessions"), dict) else {},
    )


class StatuslineFiles:
    """The account files, read again only when one changed (by mtime, size and inode)."""

    def __init__(self, where: Path):
        self.where = where
        self._stamps: dict[str, tuple[int, int, int]] = {}

    def changed(self) -> list[StatuslineFile]:
        try:
            entries = list(os.scandir(self.where))
        except OSError:
            return []
        out = []
        present = set()
        for entry in entries:
            if not entry.name.endswith(".json") or entry.name.startswith("."):
                continue
            present.add(entry.name)
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
            if self._stamps.get(entry.name) == stamp:
                continue
            self._stamps[entry.name] = stamp
            found = read_file(Path(entry.path))
            if found is not None:
                out.append(found)
        for name in set(self._stamps) - present:
            del self._stamps[name]
        return out


def account_of_file(found: StatuslineFile, agent: str, variables: AgentVars, configured: Iterable[Account],
                    resolve: Callable[[str], str] = os.path.realpath) -> str:
    env = found.env
    seen = ProcessEnv(
        selecting=tuple(sorted((str(k), str(v)) for k, v in env["selecting"].items() if isinstance(v, str))),
        credentials=tuple(str(c) for c in env["credentials"]),
        home=env.get("home") if isinstance(env.get("home"), str) else None,
    )
    return accounts.account_of(agent, variables, seen, configured, home=os.path.expanduser("~"), resolve=resolve)


def _epoch(value: object) -> datetime | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return None
    try:
        return datetime.fromtimestamp(value, timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None


def caches_of(found: StatuslineFile, account: str) -> list[CacheSeen]:
    out = []
    for session_id, entry in found.sessions.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("prompt_cache"), dict):
            continue
        cache = entry["prompt_cache"]
        tokens = cache.get("recache_tokens_if_cold")
        out.append(CacheSeen(
            account=account, session_id=str(session_id),
            cwd=entry.get("cwd") if isinstance(entry.get("cwd"), str) else None,
            transcript_path=entry.get("transcript_path") if isinstance(entry.get("transcript_path"), str) else None,
            warm=cache.get("warm") if isinstance(cache.get("warm"), bool) else None,
            expires_at=_epoch(cache.get("expires_at")),
            recache_tokens=tokens if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0 else None,
            at=_epoch(entry.get("at")) or datetime.now(timezone.utc),
        ))
    return out


@dataclass
class UsageWatch:
    """What the usage stage keeps between polls: the files' stamps and when each session's records were read."""

    files: StatuslineFiles
    _asked: dict[str, float] = field(default_factory=dict)  # session -> monotonic seconds
    # A file's environment, as written, told its account: kept for the config and plugins it was told under.
    _told: dict = field(default_factory=dict)

    @classmethod
    def for_runtime_dir(cls, runtime: Path | None = None) -> UsageWatch:
        return cls(StatuslineFiles(statusline.folder(runtime)))

    def look(
        self,
        live: Iterable[SessionRecord],
        *,
        process_of: Callable[[SessionRecord], AgentProcess | None],
        status_line: AgentSpec | None,
        configured: Iterable[Account],
        read_usage: Callable[[str, AgentProcess, datetime], UsageReading | None],
        has_usage: Callable[[str], bool],
        now: datetime,
        mono: float,
    ) -> UsageSeen:
        readings: list[tuple[str, UsageReading]] = []
        caches: list[CacheSeen] = []
        configured = list(configured)
        if status_line is not None:
            variables = accounts.vars_of(status_line)
            for found in self.files.changed():
                key = (status_line.name, variables, tuple(configured), json.dumps(found.env, sort_keys=True))
                if key not in self._told:
                    if len(self._told) > 64:
                        self._told.clear()
                    self._told[key] = account_of_file(found, status_line.name, variables, configured)
                account = self._told[key]
                if account == accounts.UNKNOWN:
                    continue  # a credential chose the account: whose plan it is, is unknown
                caches += caches_of(found, account)
                if found.rate_limits is not None and found.rate_limits_at is not None:
                    at = _epoch(found.rate_limits_at)
                    reading = usage.reading_from_statusline({"rate_limits": found.rate_limits}, at, status_line.name) \
                        if at else None
                    if reading is not None:
                        readings.append((account, reading))
        working = []
        seen_names = set()
        for rec in live:
            seen_names.add(rec.name)
            if rec.account is None or rec.account == accounts.UNKNOWN or rec.agent is None:
                continue
            if rec.state is SessionState.WORKING:
                working.append((rec.account, rec.agent))
            if rec.state in (SessionState.EXITED, SessionState.GONE) or not has_usage(rec.agent):
                continue
            if mono - self._asked.get(rec.name, float("-inf")) < USAGE_READ_EVERY:
                continue
            self._asked[rec.name] = mono
            process = process_of(rec)
            reading = read_usage(rec.agent, process, now) if process is not None else None
            if reading is not None and reading.windows:
                readings.append((rec.account, reading))
        for name in set(self._asked) - seen_names:
            del self._asked[name]
        return UsageSeen(tuple(readings), tuple(caches), tuple(working))
