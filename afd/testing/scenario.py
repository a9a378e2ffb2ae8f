"""What a fake agent is told to do: when to hit its limit, with which banner, how to die.

A scenario is a JSON or TOML file (``--scenario FILE`` or ``AFD_FAKE_SCENARIO``)
whose top-level keys are the fields of ``Scenario``; an ``[agents.NAME]``
table overrides them for one agent, so one file can steer both sides of a
handoff, and a ``[when_env."VAR=value"]`` table overrides them for a process
started with that variable so (one account of an agent, e.g.
``CLAUDE_CONFIG_DIR=/home/u/.claude-work``). Each field can also be set by ``AFD_FAKE_<FIELD>`` (a JSON value,
or a bare string), which wins over the file.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class Scenario:
    # When the limit wall is hit: at start, once the Nth prompt's work is
    # done, or T seconds after start (shown as soon as the fake is idle).
    limit_now: bool = False
    limit_after_prompts: int | None = None
    limit_after_seconds: float | None = None
    # Banner family id from afd.testing.banners (None: the agent's default)
    # and its parameters (reset time text, zone, form, prefix, wrap point).
    banner: str | None = None
    banner_params: Mapping[str, Any] = field(default_factory=dict)
    # How long the wall lasts inside this process; None: until it exits.
    limit_lasts_seconds: float | None = None
    # A resumed run (`--continue`, `resume --last`) either works, or is
    # still at the wall and shows the banner again at once.
    resume_succeeds: bool = True
    ignore_sigterm: bool = False
    # A child process that ignores SIGHUP, so it outlives the fake.
    spawn_child: bool = False
    child_seconds: float = 120.0
    exit_after_prompts: int | None = None
    exit_after_seconds: float | None = None
    exit_code: int = 0
    work_seconds: float = 0.3
    # Before a turn's first output the agent thinks this long, showing only the prompt it took and a
    # status row that stands still (an agent whose first step is slow: its answer is written after it).
    think_seconds: float = 0.0
    # Lines printed as the agent's output in each turn, before its reply.
    work_output: tuple[str, ...] = ()
    # A file (relative to cwd) the agent "cats" into its output each turn.
    show_file: str | None = None
    # The file each turn edits and commits (relative to cwd).
    work_file: str | None = None
    # Claude's prompt box: "modern" (rules and `❯`) or "boxed" (`│ > │`, `? for shortcuts`).
    ui: str = "modern"
    bracketed_paste: bool = True
    # How long the agent takes to show it took a submitted prompt: the text stays in its input row meanwhile.
    take_seconds: float = 0.0
    # A prompt "run: COMMAND" runs COMMAND in a shell from the agent's pane
    # (as its child, with its environment), the way an agent runs a tool;
    # the turn lasts until it exits and its output is shown.
    run_commands: bool = False
    # Each turn lasts until this file (relative to cwd, or absolute) exists.
    work_until_file: str | None = None
    # Claude's own auto-continue (banner "claude.native-armed"): it resumes by
    # itself this many seconds after the wall appeared (None: it never does).
    native_resume_after_seconds: float | None = None
    # The agent's own session records (see afd.testing.fake_records): None
    # writes none; "agree" records the wall; "dispute" records the
    # conversation going on where the banner is shown.
    records: str | None = None
    record_reset_seconds: float = 3600.0  # the wall record's reset, from when it is written
    record_window: str = "five_hour"  # "five_hour" | "weekly"
    # Playing an agent afd has no plugin for (`--as mycli`): which built-in
    # fake's screen to draw (claude, codex, devin), and the wall's rows as drawn.
    style: str | None = None
    banner_rows: tuple[str, ...] = ()


_FIELDS = {f.name: f for f in dataclasses.fields(Scenario)}


def _read_file(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".toml":
        return tomllib.loads(text)
    return json.loads(text)


def _env_value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _coerce(name: str, value: Any) -> Any:  # Any: a scenario is JSON, each value of the type its field says
    if name in ("work_output", "banner_rows"):
        return tuple(value) if not isinstance(value, str) else (value,)
    if name == "banner_params":
        return dict(value or {})
    return value


def load_scenario(agent: str, path: str | Path | None = None, env: Mapping[str, str] | None = None) -> Scenario:
    """The scenario for ``agent`` from ``path`` (if any) with ``AFD_FAKE_*`` overrides from ``env``."""
    env = os.environ if env is None else env
    data: dict = {}
    if path:
        raw = _read_file(Path(path))
        data = {k: v for k, v in raw.items() if k not in ("agents", "when_env")}
        data.update(raw.get("agents", {}).get(agent, {}))
        for condition, values in raw.get("when_env", {}).items():
            var, _, value = condition.partition("=")
            if env.get(var) == value:
                data.update(values)
    for name in _FIELDS:
        key = f"AFD_FAKE_{name.upper()}"
        if key in env:
            data[name] = _env_value(env[key])
    unknown = set(data) - set(_FIELDS)
    if unknown:
        raise ValueError(f"unknown scenario keys: {', '.join(sorted(unknown))} (known: {', '.join(_FIELDS)})")
    return Scenario(**{k: _coerce(k, v) for k, v in data.items()})


def write_scenario(path: Path, scenario: Scenario | Mapping[str, Any]) -> Path:
    """Write a scenario as JSON (what tests hand to a fake)."""
    if isinstance(scenario, Scenario):
        data = {f: getattr(scenario, f) for f in _FIELDS}
        data["work_output"] = list(data["work_output"])
        data["banner_rows"] = list(data["banner_rows"])
        data["banner_params"] = dict(data["banner_params"])
    else:
        data = dict(scenario)
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path
