"""The session records a fake agent writes beside its screen, where the real CLI would.

Claude: ``$CLAUDE_CONFIG_DIR`` (or ``~/.claude``) ``projects/<encoded cwd>/<session>.jsonl``;
Codex: ``$CODEX_HOME`` (or ``~/.codex``) ``sessions/YYYY/MM/DD/rollout-….jsonl``,
its ``session_meta`` at the first turn. Devin keeps none. The scenario's
``records`` says what the file says at the wall: ``"agree"`` records the
rejection, ``"dispute"`` records the conversation going on (the banner was
only text).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from pathlib import Path

from afd.testing import records as R
from afd.testing.scenario import Scenario


def _now() -> datetime:
    return datetime.now(timezone.utc)


class RecordWriter:
    def __init__(self, agent: str, scenario: Scenario, cwd: str, env: Mapping[str, str]):
        self.agent, self.scenario, self.cwd = agent, scenario, cwd
        self.session = str(uuid.uuid4())
        home = Path(env.get("HOME") or "~").expanduser()
        self.base = Path(env.get("CLAUDE_CONFIG_DIR") or home / ".claude")
        self.codex_home = Path(env.get("CODEX_HOME") or home / ".codex")
        self.path: Path | None = None

    def _write(self, *records: dict) -> None:
        if self.agent == "claude":
            self.path = self.path or R.claude_transcript_path(self.base, self.cwd, self.session)
            R.append_jsonl(self.path, records)
        elif self.agent == "codex":
            if self.path is None:
                now = _now()
                self.path = R.codex_rollout_path(self.codex_home, now, self.session)
                records = (R.codex_meta(now, self.cwd, self.session), *records)
            R.append_jsonl(self.path, records)

    def prompt(self, text: str) -> None:
        now = _now()
        self._write(R.claude_user(now, self.cwd, self.session, text) if self.agent == "claude" else R.codex_prompt(now, text))

    def reply(self, text: str) -> None:
        now = _now()
        if self.agent == "claude":
            self._write(R.claude_reply(now, self.cwd, self.session, text))
        else:
            self._write(*R.codex_reply(now, text))

    def limit(self) -> None:
        if self.scenario.records == "dispute":
            self.reply("That is the text of a usage-limit banner; nothing is limited.")
            return
        now = _now()
        reset = now + timedelta(seconds=self.scenario.record_reset_seconds)
        window = self.scenario.record_window
        if self.agent == "claude":
            self._write(
                R.claude_wall(now, self.cwd, self.session, reset, window),
                R.claude_system(now, self.cwd, self.session, "Usage limit reached · set to continue automatically"),
            )
        else:
            self._write(R.codex_token_count(now, R.codex_window(window, 100, reset), None), R.codex_wall(now))


def record_writer(agent: str, scenario: Scenario, cwd: str, env: Mapping[str, str]) -> RecordWriter | None:
    """A writer when the scenario asks for records and the agent keeps them, else None."""
    if scenario.records is None or agent not in ("claude", "codex"):
        return None
    if scenario.records not in ("agree", "dispute"):
        raise ValueError(f"scenario records: {scenario.records!r} is not \"agree\" or \"dispute\"")
    return RecordWriter(agent, scenario, cwd, env)
