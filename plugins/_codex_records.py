"""Codex CLI's own rollout files as a second witness of a usage-limit wall.

Codex writes ``$CODEX_HOME`` (default ``~/.codex``)
``sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl``, one
``{timestamp, type, payload}`` per line; ``session_meta`` (with ``cwd``)
comes at the first turn. A wall is an ``event_msg`` ``task_complete`` whose
``error.codex_error_info`` is ``"usage_limit_exceeded"`` (a generic 429 or a
retry is something else); ``token_count`` events carry ``rate_limits`` with
``primary``/``secondary`` windows (``window_minutes``, ``resets_at`` in epoch
seconds, possibly all null).

The file is held open by Codex's detached daemon, not by the TUI in the pane,
so it is found by its ``session_meta.cwd`` and by recency, never through the
TUI's file descriptors. The underscore keeps the loader from registering this
file as a plugin; ``codex.py`` asks it through its ``afd_witness`` hook.
"""

import os
from datetime import datetime, timedelta
from pathlib import Path

from afd.kit import recordverdict
from afd.kit.recordtail import TailCache, agent_environment, from_epoch_seconds, parse_instant, read_head
from afd.model import AgentProcess, UsageReading, UsageWindow, WitnessVerdict

WALL = "usage_limit_exceeded"
# Windows by length, never by position: primary is not always the five-hour one.
_WINDOWS = {300: "five_hour", 10080: "weekly"}
MAX_DAYS = 3  # day folders looked into when the process's start is not known
MAX_CANDIDATES = 16



def slim(record: dict) -> dict:
    """What the witness reads of a rollout line; messages and tool output are left out."""
    payload = record.get("payload")
    kept = {k: record[k] for k in ("type", "timestamp") if k in record}
    if isinstance(payload, dict):
        kept["payload"] = {k: payload[k] for k in ("type", "role", "error", "rate_limits") if k in payload}
    return kept


_cache = TailCache(slim=slim)
_cwds: dict[tuple[Path, int], str | None] = {}  # (file, its inode) -> session_meta.cwd


def codex_home(env: dict[str, str]) -> Path:
    if env.get("CODEX_HOME"):
        return Path(env["CODEX_HOME"])
    return Path(env.get("HOME") or os.path.expanduser("~")) / ".codex"


def _newest(folder: Path) -> list[Path]:
    try:
        return sorted((p for p in folder.iterdir() if p.is_dir() and p.name.isdigit()), key=lambda p: p.name, reverse=True)
    except OSError:
        return []


def day_folders(home: Path, start: datetime | None) -> list[Path]:
    """The day folders, newest first, back to the day before the process started (or a few days)."""
    # Folders are named by the local date, hence a day of margin.
    floor = (start - timedelta(days=1)).strftime("%Y%m%d") if start is not None else None
    out: list[Path] = []
    for year in _newest(home / "sessions"):
        for month in _newest(year):
            for day in _newest(month):
                if floor is not None and year.name + month.name + day.name < floor:
                    return out
                out.append(day)
                if floor is None and len(out) >= MAX_DAYS:
                    return out
    return out


def session_cwd(path: Path) -> str | None:
    try:
        key = (path, path.stat().st_ino)
    except OSError:
        return None
    if key not in _cwds:
        cwd = None
        try:
            head = read_head(path)
        except OSError:
            head = ()
        for r in head:
            payload = r.get("payload")
            if r.get("type") == "session_meta" and isinstance(payload, dict):
                cwd = payload.get("cwd")
                break
        if cwd is None:
            return None  # not written yet: ask again next time
        _cwds[key] = cwd
    return _cwds[key]


def find_rollout(process: AgentProcess, home: Path) -> Path | None:
    """The most recently written rollout whose ``session_meta.cwd`` is the pane's cwd."""
    if not process.cwd:
        return None
    days = day_folders(home, process.start_time)
    for path in recordverdict.recent_files(days, "rollout-*.jsonl", process.start_time, MAX_CANDIDATES):
        if session_cwd(path) == process.cwd:
            return path
    return None


def _payload(record: dict) -> dict:
    p = record.get("payload")
    return p if isinstance(p, dict) else {}


def is_wall(record: dict) -> bool:
    p = _payload(record)
    error = p.get("error")
    return (
        record.get("type") == "event_msg"
        and p.get("type") == "task_complete"
        and isinstance(error, dict)
        and error.get("codex_error_info") == WALL
    )


def is_progress(record: dict) -> bool:
    p = _payload(record)
    if record.get("type") == "event_msg":
        return p.get("type") == "agent_message" or (p.get("type") == "task_complete" and not p.get("error"))
    if record.get("type") == "response_item":
        return p.get("type") == "message" and p.get("role") == "assistant"
    return False


def is_prompt(record: dict) -> bool:
    """A user's turn (afd's continuation, or the person's own prompt)."""
    return record.get("type") == "event_msg" and _payload(record).get("type") == "user_message"


def limiting_window(rate_limits: object) -> tuple[datetime | None, str | None]:
    """The reset and kind of the exhausted window in a ``token_count``'s ``rate_limits``, or (None, None)."""
    if not isinstance(rate_limits, dict):
        return None, None
    best = None
    for key in ("primary", "secondary"):
        w = rate_limits.get(key)
        if not isinstance(w, dict):
            continue
        used = w.get("used_percent")
        reset = from_epoch_seconds(w.get("resets_at"))  # `resets_in_seconds` is not in rollouts; never guessed from
        minutes = w.get("window_minutes")
        if isinstance(minutes, float) and minutes.is_integer():
            minutes = int(minutes)
        kind = None
        if isinstance(minutes, int) and not isinstance(minutes, bool):
            kind = _WINDOWS.get(minutes, f"{minutes}m")
        if not isinstance(used, (int, float)) or used < 100:
            continue
        # With two windows spent, the wall lasts until the later one resets.
        if best is None or (reset is not None and (best[0] is None or reset > best[0])):
            best = (reset, kind)
    return best or (None, None)


def wall_reset(records: list[dict]) -> tuple[datetime | None, str | None]:
    """The exhausted window in the latest rate limits reported up to the wall."""
    for r in reversed(records):
        p = _payload(r)
        if r.get("type") == "event_msg" and p.get("type") == "token_count" and p.get("rate_limits") is not None:
            return limiting_window(p.get("rate_limits"))
    return None, None


def verdict_of(
    records, path: Path | None, since: datetime | None, until: datetime
) -> WitnessVerdict:
    """Codex's word on its limit from a rollout's records, oldest first (pure)."""
    return recordverdict.verdict_of(
        records, is_wall=is_wall, is_progress=is_progress, wall_reset=wall_reset,
        since=since, until=until, record=str(path) if path else None, is_prompt=is_prompt,
    )


def witness(process: AgentProcess, since: datetime | None, until: datetime, record: Path | None) -> WitnessVerdict:
    def find(p: AgentProcess) -> Path | None:
        return find_rollout(p, codex_home(agent_environment(p)))

    return recordverdict.read_verdict(_cache, process, record, find, verdict_of, since, until)


# --- usage before the wall: what the token_count records report ---------------------

# Windows named by their length, as afd's usage figures name them.
_USAGE_WINDOWS = {300: "five_hour", 10080: "seven_day"}


def _usage_window(raw: object, limit_id: str, at: datetime) -> UsageWindow | None:
    if not isinstance(raw, dict):
        return None
    minutes = raw.get("window_minutes")
    if isinstance(minutes, float) and minutes.is_integer():
        minutes = int(minutes)
    if isinstance(minutes, bool) or not isinstance(minutes, int) or minutes <= 0:
        return None  # a window of no stated length cannot be told from another
    used = raw.get("used_percent")
    if isinstance(used, bool) or not isinstance(used, (int, float)) or not 0 <= used <= 100:
        used = None
    return UsageWindow(
        window=_USAGE_WINDOWS.get(minutes, f"{minutes}m"), used_percent=None if used is None else float(used),
        resets_at=from_epoch_seconds(raw.get("resets_at")), window_minutes=minutes, limit_id=limit_id, observed_at=at,
    )


def usage_of(records, until: datetime) -> UsageReading | None:
    """Each limit's windows from its latest ``token_count`` in ``records`` (oldest first), or None (pure).

    A snapshot may switch to another ``limit_id`` (a model's own limit) with
    null windows: each limit keeps what its own latest snapshot said, and a
    limit whose latest snapshot has no windows is named, not measured.
    """
    latest: dict[str, tuple[datetime, dict]] = {}
    plan = None
    for r in records:
        p = _payload(r)
        if r.get("type") != "event_msg" or p.get("type") != "token_count" or not isinstance(p.get("rate_limits"), dict):
            continue
        at = parse_instant(r.get("timestamp"))
        if at is None or at > until:
            continue
        limits = p["rate_limits"]
        limit_id = limits.get("limit_id") if isinstance(limits.get("limit_id"), str) and limits.get("limit_id") else "codex"
        latest[limit_id] = (at, limits)
        if isinstance(limits.get("plan_type"), str):
            plan = limits["plan_type"]
    if not latest:
        return None
    windows: list[UsageWindow] = []
    unmeasured: list[str] = []
    for limit_id, (at, limits) in latest.items():
        found = [w for w in (_usage_window(limits.get(k), limit_id, at) for k in ("primary", "secondary")) if w is not None]
        windows += found
        if not found:
            unmeasured.append(limit_id)
    newest = max(at for at, _ in latest.values())
    return UsageReading(agent="codex", at=newest, windows=tuple(windows), source="rollout", plan_type=plan,
                        unmeasured=tuple(unmeasured))


def usage(process: AgentProcess, until: datetime) -> UsageReading | None:
    path = find_rollout(process, codex_home(agent_environment(process)))
    if path is None:
        return None
    try:
        tail = _cache.tail(path)
    except OSError:
        return None
    return usage_of(tail.records, until)
