"""A manifest's `[records]`: the agent's own JSON-lines session files as a second witness.

The declarative form covers agents that append one JSON object per line to
a file under a home-relative folder: which files (a glob; ``{cwd_name}`` stands for
the name of the agent's working directory), where each
record's time is, which records are a wall (a JSON path, optionally equal
to a value), which show the conversation going on, and where the wall's
reset is (epoch seconds). The timeline is read by the rule every witness
shares (``afd.kit.recordverdict``). Agents whose records are a database or
one JSON document rewritten whole need a Python witness.
"""

from __future__ import annotations

import glob
import os
from datetime import datetime
from pathlib import Path

from afd.kit import recordverdict
from afd.kit.recordtail import TailCache, agent_environment, from_epoch_seconds
from afd.model import AgentProcess, WitnessVerdict
from afd_plugins._manifest import Condition, RecordRules

MAX_CANDIDATES = 8


def _at(record: object, path: tuple[str, ...]) -> object:
    for part in path:
        if not isinstance(record, dict):
            return None
        record = record.get(part)
    return record


def _holds(record: dict, conditions: tuple[Condition, ...]) -> bool:
    for c in conditions:
        value = _at(record, c.path)
        if c.matches is not None:
            if not isinstance(value, str) or c.matches.search(value) is None:
                return False
        elif c.equals is not None:
            if value != c.equals and str(value) != c.equals:
                return False
        elif not value:
            return False
    return True


class RecordWitness:
    """One manifest agent's witness; it keeps the tails it read, by size and mtime."""

    def __init__(self, rules: RecordRules):
        self.rules = rules
        self.cache = TailCache(slim=self.slim)

    def slim(self, record: dict) -> dict:
        """What the verdict needs of a record, under fixed names; the rest (messages, output) is dropped."""
        rules = self.rules
        at = _at(record, rules.timestamp)
        if isinstance(at, (int, float)) and not isinstance(at, bool):
            t = from_epoch_seconds(at / 1000 if at > 10**11 else at)
            at = t.isoformat() if t else None
        return {
            "timestamp": at,
            "wall": _holds(record, rules.wall),
            "progress": _holds(record, rules.progress),
            "prompt": bool(rules.prompt) and _holds(record, rules.prompt),
            "reset": _at(record, rules.reset) if rules.reset else None,
            "cwd": _at(record, rules.cwd) if rules.cwd else None,
        }

    def folder(self, env: dict[str, str]) -> Path:
        if self.rules.dir_env and env.get(self.rules.dir_env):
            return Path(env[self.rules.dir_env])
        return Path(env.get("HOME") or os.path.expanduser("~")) / self.rules.dir

    def find(self, process: AgentProcess) -> Path | None:
        """The newest record file written since the process started, naming its directory when the manifest says where."""
        folder = self.folder(agent_environment(process))
        files = self.rules.files
        if "{cwd_name}" in files:
            # Agents that keep a folder per project, named after the project's directory.
            if not process.cwd:
                return None
            files = files.replace("{cwd_name}", glob.escape(Path(process.cwd).name))
        for path in recordverdict.recent_files([folder], files, process.start_time, MAX_CANDIDATES):
            if self.rules.cwd is None or process.cwd is None:
                return path
            try:
                records = self.cache.tail(path).records
            except OSError:
                continue
            if any(r.get("cwd") == process.cwd for r in records):
                return path
        return None

    def verdict(self, records, path: Path, since: datetime | None, until: datetime) -> WitnessVerdict:
        def wall_reset(upto: list[dict]):
            return from_epoch_seconds(upto[-1].get("reset")), None

        return recordverdict.verdict_of(
            records,
            is_wall=lambda r: r["wall"],
            is_progress=lambda r: r["progress"] and not r["wall"],
            wall_reset=wall_reset,
            since=since,
            until=until,
            record=str(path),
            is_prompt=lambda r: r["prompt"] and not r["wall"],
        )

    def __call__(self, process: AgentProcess, since: datetime | None, until: datetime, record: Path | None) -> WitnessVerdict:
        return recordverdict.read_verdict(self.cache, process, record, self.find, self.verdict, since, until)
