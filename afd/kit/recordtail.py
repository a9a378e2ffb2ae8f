"""Reading the last records of an agent's JSON-lines session file: bounded, and cached by size and mtime.

Agents' transcripts grow for as long as a conversation lasts (tool results
carry whole files), so a witness reads only a bounded tail, and reads it
again only when the file's size or mtime changed. A witness plugin may use
this module, as detectors use ``afd.kit.text``.
"""

from __future__ import annotations

import json
import os
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import psutil

from afd.model import AgentProcess

TAIL_BYTES = 256 * 1024
HEAD_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class Tail:
    """The whole records found in the last bytes of a file, oldest first."""

    path: Path
    records: tuple[dict, ...]
    size: int
    mtime: datetime  # aware UTC
    bytes_read: int


def _records(data: bytes, cut_head: bool) -> tuple[dict, ...]:
    lines = data.split(b"\n")
    if cut_head:
        lines = lines[1:]  # the read began inside a line
    # A last line without its newline may still be being written: it is
    # parsed only if it is complete JSON, and skipped otherwise.
    out = []
    for line in lines:
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return tuple(out)


def read_tail(path: Path, max_bytes: int = TAIL_BYTES, slim: Callable[[dict], dict] | None = None) -> Tail:
    """The records in the last ``max_bytes`` of ``path``; raises OSError when it cannot be read.

    ``slim`` keeps only what a witness reads of each record: transcripts
    carry whole files and replies, which a cache must not hold on to.
    """
    with open(path, "rb") as fh:
        st = os.fstat(fh.fileno())
        start = max(0, st.st_size - max_bytes)
        fh.seek(start)
        data = fh.read(max_bytes)
    mtime = datetime.fromtimestamp(st.st_mtime, timezone.utc)
    records = _records(data, cut_head=start > 0)
    if slim is not None:
        records = tuple(slim(r) for r in records)
    return Tail(Path(path), records, st.st_size, mtime, len(data))


def read_head(path: Path, max_bytes: int = HEAD_BYTES) -> tuple[dict, ...]:
    """The whole records in the first ``max_bytes`` of ``path`` (where a session's metadata is written)."""
    with open(path, "rb") as fh:
        data = fh.read(max_bytes)
    if len(data) == max_bytes and b"\n" in data:
        data = data[: data.rindex(b"\n")]
    return _records(data, cut_head=False)


class TailCache:
    """`read_tail` that reads a file again only when its size or mtime changed; bounded in entries."""

    def __init__(self, max_bytes: int = TAIL_BYTES, entries: int = 64, slim: Callable[[dict], dict] | None = None):
        self.max_bytes = max_bytes
        self.entries = entries
        self.slim = slim
        self._tails: OrderedDict[Path, tuple[tuple[int, int], Tail]] = OrderedDict()
        self.reads = 0  # how many times a file was actually read

    def tail(self, path: Path) -> Tail:
        st = os.stat(path)
        key = (st.st_size, st.st_mtime_ns)
        hit = self._tails.get(path)
        if hit is not None and hit[0] == key:
            self._tails.move_to_end(path)
            return hit[1]
        tail = read_tail(path, self.max_bytes, self.slim)
        self.reads += 1
        self._tails[path] = (key, tail)
        self._tails.move_to_end(path)
        while len(self._tails) > self.entries:
            self._tails.popitem(last=False)
        return tail


def parse_instant(value: object) -> datetime | None:
    """A record's ISO 8601 timestamp (``2026-07-13T09:00:00.123Z``) as aware UTC, or None."""
    if not isinstance(value, str):
        return None
    try:
        t = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t.astimezone(timezone.utc)


def from_epoch_seconds(value: object) -> datetime | None:
    """An epoch-seconds field (``resetsAt``, ``resets_at``) as aware UTC, or None when absent or absurd."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return datetime.fromtimestamp(value, timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None


def process_environment(pid: int | None) -> dict[str, str]:
    """The environment ``pid`` was started with, else afd's own.

    An agent may run with its own ``CLAUDE_CONFIG_DIR``, ``CODEX_HOME`` or
    ``HOME``; where its records are follows from that, not from afd's.
    """
    if pid is not None:
        try:
            env = psutil.Process(pid).environ()
        except psutil.Error:
            pass
        else:
            if env:  # empty for a zombie, or a process caught mid-exec
                return env
    return dict(os.environ)


def agent_environment(process: AgentProcess) -> dict[str, str]:
    """The variables that say where `process` keeps its records: its account's, as afd read them, else its own.

    afd reads an agent's account variables once, when it names the agent;
    a witness reading the same values reads the same account's records.
    """
    if process.account_env is not None:
        return dict(process.account_env)
    return process_environment(process.pid)
