"""The user's config: one global TOML file, read, validated and edited in place.

afd reads only `$XDG_CONFIG_HOME/afd/config.toml` or a path given with
`--config`; never a file in the current directory, a repository or a
worktree, because nothing checked out with someone's code may decide which
agent edits it. With no file every key has its default, and the defaults
resume nothing and hand off nothing unattended.

Validation collects every problem in one pass, each with the line it is on,
so a user fixes the file once rather than once per error.

A `[limit_patterns]` regex that does not compile is an error for
`load_config` (and so for `afd config check`). A running daemon instead
passes ``lenient_patterns=True``: the bad pattern is left out of
`Config.limit_patterns` (the agent keeps its built-in regex) and the
problem is put in `Config.warnings` for the daemon to report.
"""

from __future__ import annotations

import difflib
import os
import re
import tempfile
import tomllib
from collections.abc import Callable, Collection, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import tomlkit
import tomlkit.exceptions
import tomlkit.items

from afd.config import notifiers, userpattern
from afd.config.durations import DurationError, format_duration, parse_duration, parse_duration_or_disabled
from afd.config.secrets import url_shown
from afd.decide.policy import LimitAction
from afd.errors import EXIT_CONFIG, AfdError
from afd.judge.accounts import UNKNOWN as UNKNOWN_ACCOUNT
from afd.judge.accounts import Account, selection, vars_of
from afd.kit import paths
from afd.kit.text import lowered_first_word
from afd.model import AgentSpec

LIMIT_ACTIONS = tuple(LimitAction)
# How `sessions create --agent NAME` picks among that agent's accounts.
ROUTE_NEW_SESSIONS = ("off", "least-limited", "most-headroom")
# How handoff targets are ranked: the user's handoff_order, headroom breaking ties; or by headroom first.
HANDOFF_RANKS = ("order", "headroom")
# An account's name: a word like an agent's; "@" is kept for accounts no one named.
_ACCOUNT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")

# The poll loop waits on a selector, whose timeout cannot exceed about 24 days;
# and a pane looked at less than hourly is not being supervised.
MAX_POLL_INTERVAL = 3600.0
# A poll of many panes costs tens of milliseconds: faster than this burns a
# core for nothing (a banner lasts minutes).
MIN_POLL_INTERVAL = 0.2
# stability_polls × poll_interval is how long a banner must hold; beyond
# this a real stall goes unanswered for no gain in certainty.
MAX_STABILITY_POLLS = 20


def default_config_path() -> Path:
    """The one place afd looks for its config when no `--config` is given."""
    return paths.config_dir() / "config.toml"


def default_plugins_dir() -> Path:
    return paths.config_dir() / "plugins"


def default_worktree_root() -> Path:
    return paths.data_dir() / "worktrees"


def _empty_mapping() -> Mapping:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class AgentOverride:
    """`[agents.NAME]`: what replaces the plugin's launch command and resume args."""

    command: tuple[str, ...] | None = None
    resume_args: tuple[str, ...] | None = None
    resume_message: str | None = None  # what a resume pastes instead of the default


@dataclass(frozen=True)
class ConfigProblem:
    """One thing wrong with a config file, printed the way compilers print errors."""

    path: Path | None
    line: int | None
    col: int | None
    key: str | None
    message: str

    def __str__(self) -> str:
        where = str(self.path) if self.path is not None else "config"
        if self.line is not None:
            where += f":{self.line}"
            if self.col is not None:
                where += f":{self.col}"
        if self.key:
            return f"{where}: {self.key}: {self.message}"
        return f"{where}: {self.message}"


@dataclass(frozen=True, slots=True)
class Config:
    poll_interval: float = 2.0  # seconds
    tail_lines: int = 3
    stability_polls: int = 2
    limit_action: LimitAction = LimitAction.WAIT
    limit_auto_resume: bool = False
    limit_retry_interval: float | None = 1800.0  # None: the retry fallback is off
    resume_grace: float = 120.0
    resume_max_attempts: int = 5
    deliver_timeout: float = 30.0  # seconds for a continuation to be seen landing
    typing_guard: float = 20.0  # seconds after a client's last key during which afd types nothing
    handoff_order: tuple[str, ...] = ()
    route_new_sessions: str = "off"  # "off" | "least-limited"
    handoff_brief: str = ""
    handoff_max_per_session: int = 3
    # Usage before the wall (afd.judge.usage). Percents are 0–100; None: off.
    usage_stale_after: float = 900.0  # seconds an agent's exact figure stays fresh
    usage_warn_at: tuple[float, ...] = (80.0, 95.0)  # usage.high at each, once per window
    spend_warn_at: float | None = None  # usage.high, and ask before a wake, past this share of the spend window
    cold_cache_tokens: int = 0  # ask before a wake that re-caches more tokens than this; 0: off
    handoff_before: float | None = None  # hand off at the turn boundary once a window is this full
    handoff_before_min_wait: float = 1800.0  # ... and only when its reset is further away than this
    handoff_rank: str = "order"  # "order" | "headroom"
    # Automatic handoff only when the agent's own records confirm the pane's
    # banner, for agents a plugin can read the records of.
    handoff_requires_witness: bool = True
    handoff_stop_timeout: float = 10.0  # seconds between SIGTERM and SIGKILL of the outgoing agent
    watch_all_panes: bool = True
    watch_ignore: tuple[str, ...] = ()  # globs over "session:window.pane"
    worktree_root: Path = field(default_factory=default_worktree_root)
    tmux_socket_name: str | None = None
    tmux_socket_path: str | None = None
    # [web]: the dashboard, served by the daemon on loopback only.
    web_enabled: bool = False
    web_port: int = 8787
    web_bind: str = "127.0.0.1"
    # [fleet]: peers asked over OpenSSH for their accounts' limits (afd hosts add; docs/fleet.md).
    fleet_pull_interval: float = 60.0  # seconds between two asks of one host
    fleet_timeout: float = 10.0  # seconds a host has to answer one ask
    fleet_share: bool = False  # the agents' default accounts (claude, codex, …) take part in the fleet
    agents: Mapping[str, AgentOverride] = field(default_factory=_empty_mapping)
    accounts: Mapping[str, Account] = field(default_factory=_empty_mapping)  # [accounts.NAME], in file order
    limit_patterns: Mapping[str, str] = field(default_factory=_empty_mapping)  # raw regex text
    plugins_dir: Path = field(default_factory=default_plugins_dir)
    notify: tuple[notifiers.NotifierSettings, ...] = ()  # the [[notify]] tables, in file order
    path: Path | None = None  # the file read; None when only defaults are in force
    from_file: frozenset[str] = frozenset()  # dotted keys whose value came from the file
    warnings: tuple[ConfigProblem, ...] = ()  # only with lenient_patterns: bad regexes left out


class ConfigError(AfdError):
    """The config cannot be used; `problems` lists every reason, `partial` what could be read."""

    code = EXIT_CONFIG

    def __init__(self, problems: list[ConfigProblem], partial: Config | None = None):
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = problems
        # The valid keys with defaults for the rest (None after a syntax error):
        # enough to find plugins_dir and so the agent names to check against.
        self.partial = partial


# -- reading one value ------------------------------------------------------


class _Invalid(AfdError):
    """A value of the wrong type or form; the message is for the user."""


def _describe(value: object) -> str:
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"integer {value}"
    if isinstance(value, float):
        return f"float {value}"
    if isinstance(value, str):
        return f'string "{value}"'
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return f"a {type(value).__name__}"


def _duration(*, positive: bool, minimum: float | None = None, maximum: float | None = None) -> Callable[[object], float]:
    def read(value: object) -> float:
        if value == 0 and not isinstance(value, bool):
            value = "0"  # 0 is zero in every unit, so it needs no quotes
        if not isinstance(value, str):
            raise _Invalid(f'expected a duration string such as "90s", got {_describe(value)}')
        try:
            seconds = parse_duration(value)
        except DurationError as exc:
            raise _Invalid(str(exc)) from None
        if positive and seconds <= 0:
            raise _Invalid(f'must be longer than zero, got "{value}"')
        if minimum is not None and 0 < seconds < minimum:
            raise _Invalid(f'must be at least "{format_duration(minimum)}", got "{value}"')
        if maximum is not None and seconds > maximum:
            raise _Invalid(f'must be at most "{format_duration(maximum)}", got "{value}"')
        return seconds

    return read


def _optional_duration(value: object) -> float | None:
    if value == 0 and not isinstance(value, bool):
        return None
    if not isinstance(value, str):
        raise _Invalid(f'expected a duration string such as "30m" ("0" or "" turns it off), got {_describe(value)}')
    try:
        return parse_duration_or_disabled(value)
    except DurationError as exc:
        raise _Invalid(f'{exc}; "0" or "" turns it off') from None


def _integer(*, minimum: int, maximum: int | None = None, hint: str = "") -> Callable[[object], int]:
    def read(value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _Invalid(f"expected an integer, got {_describe(value)}")
        if value < minimum:
            raise _Invalid(f"must be at least {minimum}, got {value}{hint}")
        if maximum is not None and value > maximum:
            raise _Invalid(f"must be at most {maximum}, got {value}")
        return value

    return read


def _boolean(value: object) -> bool:
    if not isinstance(value, bool):
        raise _Invalid(f"expected true or false, got {_describe(value)}")
    return value


def _string(value: object) -> str:
    if not isinstance(value, str):
        raise _Invalid(f"expected a string, got {_describe(value)}")
    return value


def _choice(*choices: str) -> Callable[[object], str]:
    def read(value: object) -> str:
        text = _string(value)
        if text not in choices:
            names = " or ".join(f'"{c}"' for c in choices)
            raise _Invalid(f'must be {names}, got "{text}"')
        return text

    return read


def _percent_value(value: object, example: str) -> float:
    """A share of a window: "95%" or a number from 0 to 100."""
    if isinstance(value, str):
        text = value.strip()
        number = text.removesuffix("%").strip()
        try:
            read = float(number)
        except ValueError:
            raise _Invalid(f'expected a percent such as "{example}", got "{value}"') from None
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        read = float(value)
    else:
        raise _Invalid(f'expected a percent such as "{example}", got {_describe(value)}')
    if not 0 < read <= 100:
        raise _Invalid(f'must be a percent above 0 and at most 100, got {_describe(value)}')
    return read


def _optional_percent(example: str) -> Callable[[object], float | None]:
    def read(value: object) -> float | None:
        if value in ("", "0", "0%", 0) and not isinstance(value, bool):
            return None
        try:
            return _percent_value(value, example)
        except _Invalid as exc:
            raise _Invalid(f'{exc}; "" turns it off') from None

    return read


def _percent_list(value: object) -> tuple[float, ...]:
    if not isinstance(value, list):
        raise _Invalid(f"expected an array of percents such as [80, 95] ([] turns it off), got {_describe(value)}")
    read = tuple(_percent_value(item, "80%") for item in value)
    if len(set(read)) != len(read):
        raise _Invalid("lists a percent twice")
    return tuple(sorted(read))


def _show_percent(value: float | None) -> object:
    return "" if value is None else f"{value:g}%"


def _string_list(example: str) -> Callable[[object], tuple[str, ...]]:
    def read(value: object) -> tuple[str, ...]:
        if not isinstance(value, list):
            raise _Invalid(f"expected an array of strings such as {example}, got {_describe(value)}")
        for item in value:
            if not isinstance(item, str):
                raise _Invalid(f"expected an array of strings such as {example}, but it holds {_describe(item)}")
        seen: set[str] = set()
        for item in value:
            if item in seen:
                raise _Invalid(f'"{item}" is listed twice')
            seen.add(item)
        return tuple(value)

    return read


def _path(value: object) -> Path:
    text = _string(value)
    if not text:
        raise _Invalid("must not be empty")
    path = Path(text).expanduser()
    if not path.is_absolute():
        # A relative path would change with the directory afd was started in.
        raise _Invalid(f'must be an absolute path or start with ~, got "{text}"')
    return path


def _socket_name(value: object) -> str:
    text = _string(value)
    if not text or "/" in text:
        raise _Invalid(f'must be a tmux socket name (tmux -L NAME) without "/", got "{text}"')
    return text


def _socket_path(value: object) -> str:
    return str(_path(value))


# The dashboard acts on the user's agents: it must never be reachable from
# another machine, whatever its login asks for.
LOOPBACK_BINDS = ("127.0.0.1", "::1")


def _loopback(value: object) -> str:
    text = _string(value)
    if text not in LOOPBACK_BINDS:
        raise _Invalid(f'must be a loopback address ("127.0.0.1" or "::1"): the dashboard is never served '
                       f'to the network, got "{text}"')
    return text


@dataclass(frozen=True, slots=True)
class _Key:
    # Any: each key's reader takes what TOML gives and its shower what the reader made.
    read: Callable[[Any], object]
    show: Callable[[Any], object]  # the value as the file writes it (JSON-able)


def _as_is(value: object) -> object:
    return value


def _as_list(value: Any) -> object:
    return list(value) if value is not None else None


def _as_str(value: object) -> object:
    return str(value) if value is not None else None


# Top-level keys, in the order `config show` and config.example.toml list them.
_TOP: dict[str, _Key] = {
    "poll_interval": _Key(_duration(positive=True, minimum=MIN_POLL_INTERVAL, maximum=MAX_POLL_INTERVAL), format_duration),
    "tail_lines": _Key(_integer(minimum=1), _as_is),
    "stability_polls": _Key(_integer(minimum=1, maximum=MAX_STABILITY_POLLS), _as_is),
    "limit_action": _Key(lambda value: LimitAction(_choice(*LIMIT_ACTIONS)(value)), str),
    "limit_auto_resume": _Key(_boolean, _as_is),
    "limit_retry_interval": _Key(_optional_duration, format_duration),
    "resume_grace": _Key(_duration(positive=False), format_duration),
    "resume_max_attempts": _Key(_integer(minimum=1), _as_is),
    "deliver_timeout": _Key(_duration(positive=True), format_duration),
    "typing_guard": _Key(_duration(positive=False), format_duration),
    "handoff_order": _Key(_string_list('["codex", "claude"]'), _as_list),
    "route_new_sessions": _Key(_choice(*ROUTE_NEW_SESSIONS), _as_is),
    "handoff_brief": _Key(_string, _as_is),
    "handoff_max_per_session": _Key(
        _integer(minimum=1, hint=" (to turn handoff off, set handoff_order = [])"), _as_is
    ),
    "usage_stale_after": _Key(_duration(positive=True), format_duration),
    "usage_warn_at": _Key(_percent_list, lambda v: [float(x) if x != int(x) else int(x) for x in v]),
    "spend_warn_at": _Key(_optional_percent("90%"), _show_percent),
    "cold_cache_tokens": _Key(_integer(minimum=0), _as_is),
    "handoff_before": _Key(_optional_percent("95%"), _show_percent),
    "handoff_before_min_wait": _Key(_duration(positive=False), format_duration),
    "handoff_rank": _Key(_choice(*HANDOFF_RANKS), _as_is),
    "handoff_requires_witness": _Key(_boolean, _as_is),
    "handoff_stop_timeout": _Key(_duration(positive=True, maximum=600), format_duration),
    "watch_all_panes": _Key(_boolean, _as_is),
    "watch_ignore": _Key(_string_list('["scratch:*"]'), _as_list),
    "worktree_root": _Key(_path, _as_str),
    "plugins_dir": _Key(_path, _as_str),
}
_TMUX: dict[str, _Key] = {
    "socket_name": _Key(_socket_name, _as_is),
    "socket_path": _Key(_socket_path, _as_is),
}
_WEB: dict[str, _Key] = {
    "enabled": _Key(_boolean, _as_is),
    "port": _Key(_integer(minimum=1, maximum=65535), _as_is),
    "bind": _Key(_loopback, _as_is),
}
_FLEET: dict[str, _Key] = {
    "pull_interval": _Key(_duration(positive=True, minimum=1.0, maximum=86400.0), format_duration),
    "timeout": _Key(_duration(positive=True, minimum=1.0, maximum=120.0), format_duration),
    "share": _Key(_boolean, _as_is),
}
_AGENT: dict[str, _Key] = {
    "command": _Key(_string_list('["codex", "--full-auto"]'), _as_list),
    "resume_args": _Key(_string_list('["resume", "--last"]'), _as_list),
    "resume_message": _Key(_string, _as_is),
}
_NOTIFY: dict[str, _Key] = {
    "type": _Key(_choice(*notifiers.TYPES), _as_is),
    "name": _Key(_string, _as_is),
    "events": _Key(_string_list('["session.needs_human", "resume."]'), _as_list),
    "min_interval": _Key(_duration(positive=False, maximum=86400), format_duration),
    "timeout": _Key(_duration(positive=True, maximum=120), format_duration),
    "retry_for": _Key(_duration(positive=False, maximum=86400), format_duration),
    "url": _Key(_string, _as_is),
    "token_file": _Key(_path, _as_str),
    "argv": _Key(_string_list('["/home/me/bin/on-afd-event", "--quiet"]'), _as_list),
    "priority": _Key(_integer(minimum=1, maximum=5), _as_is),
    "tags": _Key(_string_list('["robot", "warning"]'), _as_list),
}
_TABLES = ("tmux", "web", "fleet", "agents", "accounts", "limit_patterns", "notify")
_ACCOUNT = ("agent", "env", "share")


# -- where a key is in the file ---------------------------------------------

_KEYPART = r"""(?:[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|'[^']*')"""
_DOTTED = rf"{_KEYPART}(?:\s*\.\s*{_KEYPART})*"
_KEY_LINE = re.compile(rf"\s*({_DOTTED})\s*=\s*(.*)")
_HEADER_LINE = re.compile(rf"\s*\[\[?\s*({_DOTTED})\s*\]")


def _key_parts(dotted: str) -> tuple[str, ...]:
    parts = []
    for part in re.findall(_KEYPART, dotted):
        if part[0] in "\"'":
            part = tomllib.loads(f"k = {part}")["k"]
        parts.append(part)
    return tuple(parts)


class _KeyLines:
    """Line numbers of keys and table headers, found by scanning the source.

    tomlkit keeps no line numbers on items, so the text is scanned directly:
    a header sets the current table, a `key =` line defines table + key.
    Multi-line strings are skipped so a line inside one is not taken for a key.
    """

    def __init__(self, text: str):
        self._lines: dict[tuple[str, ...], int] = {}
        table: tuple[str, ...] = ()
        closing: str | None = None
        arrays: dict[tuple[str, ...], int] = {}  # [[name]] tables seen so far, by name
        for number, line in enumerate(text.splitlines(), start=1):
            if closing is not None:
                if closing in line:
                    closing = None
                continue
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            if stripped.startswith("["):
                header = _HEADER_LINE.match(line)
                if header:
                    table = _key_parts(header.group(1))
                    self._remember(table, number)
                    if stripped.startswith("[["):
                        # Each [[notify]] is its own table: its keys are found as ("notify", "2", key).
                        arrays[table] = arrays.get(table, 0) + 1
                        table = (*table, str(arrays[table]))
                        self._remember(table, number)
                continue
            match = _KEY_LINE.match(line)
            if not match:
                continue
            self._remember(table + _key_parts(match.group(1)), number)
            rest = match.group(2)
            for quote in ('"""', "'''"):
                if rest.startswith(quote) and quote not in rest[3:]:
                    closing = quote

    def _remember(self, parts: tuple[str, ...], number: int) -> None:
        for end in range(1, len(parts) + 1):
            self._lines.setdefault(parts[:end], number)

    def line(self, *parts: str) -> int | None:
        """The line of the key, or of the nearest enclosing table the file names."""
        for end in range(len(parts), 0, -1):
            if parts[:end] in self._lines:
                return self._lines[parts[:end]]
        return None


# -- reading the whole file -------------------------------------------------


def _syntax_problem(path: Path | None, exc: tomllib.TOMLDecodeError, text: str) -> ConfigProblem:
    # tomllib says what is wrong, but before Python 3.14 it gives the position
    # only inside that sentence; tomlkit's ParseError carries it as numbers.
    message, _, where = str(exc).partition(" (at ")
    line, col = _syntax_position(text)
    if where == "end of document)":
        # FILE:LINE lets an editor jump there: the last line, where the file ended unfinished.
        message += " at the end of the file"
        line, col = max(len(text.splitlines()), 1), None
    message = lowered_first_word(message)
    return ConfigProblem(path, line, col, None, f"invalid TOML: {message}")


def _syntax_position(text: str) -> tuple[int | None, int | None]:
    """Where tomlkit finds the syntax error in `text`: line and column from 1, or None when it finds none."""
    try:
        tomlkit.parse(text)
    except tomlkit.exceptions.ParseError as exc:
        # tomlkit counts columns from 0, editors from 1.
        return exc.line, exc.col + 1
    except (tomlkit.exceptions.TOMLKitError, RecursionError):
        pass
    return None, None


def _suggestion(name: str, candidates: Collection[str], nested: Mapping[str, str] = MappingProxyType({})) -> str:
    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    if close:
        return f'unknown key (did you mean "{close[0]}"?)'
    if name in nested:
        return f'unknown key here (did you mean "{nested[name]}"?)'
    return "unknown key (`afd config show` lists every key)"


class _Reader:
    """Turns parsed TOML into a Config, collecting every problem on the way."""

    def __init__(self, path: Path | None, text: str, known_agents: Collection[str] | None, lenient_patterns: bool):
        self.path = path
        self.where = _KeyLines(text)
        self.known_agents = known_agents
        self.lenient_patterns = lenient_patterns
        self.problems: list[ConfigProblem] = []
        self.warnings: list[ConfigProblem] = []
        self.values: dict[str, Any] = {}  # checked per key by its reader
        self.from_file: set[str] = set()

    def problem(self, parts: tuple[str, ...], message: str, *, warning: bool = False, key: str | None = None) -> None:
        entry = ConfigProblem(self.path, self.where.line(*parts), None, key or ".".join(parts), message)
        (self.warnings if warning else self.problems).append(entry)

    def read(self, data: dict) -> Config:
        # A table's key written at the top level (socket_name = ...) gets pointed to its table.
        nested = ({leaf: f"tmux.{leaf}" for leaf in _TMUX} | {leaf: f"web.{leaf}" for leaf in _WEB}
                  | {leaf: f"fleet.{leaf}" for leaf in _FLEET} | {leaf: f"agents.NAME.{leaf}" for leaf in _AGENT})
        for key, raw in data.items():
            if key in _TOP:
                self.value((key,), raw, _TOP[key], key)
            elif key == "tmux":
                self.tmux(raw)
            elif key == "web":
                self.web(raw)
            elif key == "fleet":
                self.fleet(raw)
            elif key == "agents":
                self.agents(raw)
            elif key == "limit_patterns":
                self.limit_patterns(raw)
            elif key == "notify":
                self.notify(raw)
            elif key == "accounts":
                self.accounts(raw)
            else:
                self.problem((key,), _suggestion(key, [*_TOP, *_TABLES], nested))
        self.cross_checks()
        return Config(
            **self.values,
            path=self.path,
            from_file=frozenset(self.from_file),
            warnings=tuple(self.warnings),
        )

    def value(self, parts: tuple[str, ...], raw: object, key: _Key, field_name: str) -> None:
        try:
            self.values[field_name] = key.read(raw)
        except _Invalid as exc:
            self.problem(parts, str(exc))
        else:
            self.from_file.add(".".join(parts))

    def table(self, parts: tuple[str, ...], raw: object) -> dict | None:
        if isinstance(raw, dict):
            return raw
        self.problem(parts, f"expected a table ([{'.'.join(parts)}]), got {_describe(raw)}")
        return None

    def tmux(self, raw: object) -> None:
        table = self.table(("tmux",), raw)
        for key, value in (table or {}).items():
            if key in _TMUX:
                self.value(("tmux", key), value, _TMUX[key], f"tmux_{key}")
            else:
                self.problem(("tmux", key), _suggestion(key, _TMUX))

    def web(self, raw: object) -> None:
        table = self.table(("web",), raw)
        for key, value in (table or {}).items():
            if key in _WEB:
                self.value(("web", key), value, _WEB[key], f"web_{key}")
            else:
                self.problem(("web", key), _suggestion(key, _WEB))

    def fleet(self, raw: object) -> None:
        table = self.table(("fleet",), raw)
        for key, value in (table or {}).items():
            if key in _FLEET:
                self.value(("fleet", key), value, _FLEET[key], f"fleet_{key}")
            else:
                self.problem(("fleet", key), _suggestion(key, _FLEET))

    def agents(self, raw: object) -> None:
        overrides: dict[str, AgentOverride] = {}
        for name, entry in (self.table(("agents",), raw) or {}).items():
            table = self.table(("agents", name), entry)
            if table is None:
                continue
            read: dict[str, Any] = {}
            for key, value in table.items():
                parts = ("agents", name, key)
                if key not in _AGENT:
                    self.problem(parts, _suggestion(key, _AGENT))
                    continue
                try:
                    read[key] = _AGENT[key].read(value)
                except _Invalid as exc:
                    self.problem(parts, str(exc))
                    continue
                if key == "command" and not read[key]:
                    del read[key]
                    self.problem(parts, "must name the program to run, e.g. [\"codex\"]")
                    continue
                self.from_file.add(".".join(parts))
            overrides[name] = AgentOverride(**read)
        self.values["agents"] = MappingProxyType(overrides)

    def accounts(self, raw: object) -> None:
        """`[accounts.NAME]` tables: the agent and the variables that select the account, each a string."""
        found: dict[str, Account] = {}
        for name, entry in (self.table(("accounts",), raw) or {}).items():
            parts = ("accounts", name)
            table = self.table(parts, entry)
            if table is None:
                continue
            before = len(self.problems)
            if not _ACCOUNT_NAME.fullmatch(name) or name == UNKNOWN_ACCOUNT:
                why = "is afd's word for an account it cannot name" if name == UNKNOWN_ACCOUNT else "must be a word of letters, digits, -, _ and ."
                self.problem(parts, f'"{name}" {why}; name the account e.g. [accounts.claude-work]')
            for key in table:
                if key not in _ACCOUNT:
                    self.problem((*parts, key), _suggestion(key, _ACCOUNT))
            agent = table.get("agent")
            if not isinstance(agent, str) or not agent:
                self.problem((*parts, "agent") if "agent" in table else parts,
                             f'needs the agent it runs, e.g. agent = "claude" (got {_describe(agent)})' if agent is not None
                             else 'needs the agent it runs, e.g. agent = "claude"')
            env = table.get("env")
            if env is None:
                self.problem(parts, 'needs env, the variables that select it, e.g. env = { CLAUDE_CONFIG_DIR = "~/.claude-work" }')
            elif not isinstance(env, dict) or not env:
                self.problem((*parts, "env"), f'expected a table of variables such as {{ CLAUDE_CONFIG_DIR = "~/.claude-work" }}, got {_describe(env)}')
            else:
                for var, value in env.items():
                    if not isinstance(value, str) or not value:
                        self.problem((*parts, "env"), f"{var}: expected a non-empty string, got {_describe(value)}")
            share = table.get("share", False)
            if not isinstance(share, bool):
                self.problem((*parts, "share"), f"expected true or false, got {_describe(share)}")
            if len(self.problems) > before:
                continue
            assert isinstance(agent, str) and isinstance(env, dict)
            found[name] = Account(name, agent, tuple(sorted(env.items())), share)
            self.from_file.update((f"accounts.{name}.agent", f"accounts.{name}.env"))
            if "share" in table:
                self.from_file.add(f"accounts.{name}.share")
        self.values["accounts"] = MappingProxyType(found)

    def check_accounts(self) -> None:
        """Accounts against the agents the plugins provide: the agent, its variables, no two alike."""
        assert self.known_agents is not None
        specs: Mapping[str, AgentSpec] | None = self.known_agents if isinstance(self.known_agents, Mapping) else None
        seen: dict[tuple, str] = {}
        home = os.path.expanduser("~")
        for name, account in self.values.get("accounts", {}).items():
            parts = ("accounts", name)
            if name in self.known_agents:
                self.problem(parts, f'"{name}" is the name of {name}\'s default account (the agent run without '
                                    "account variables); give this one another name, e.g. " f"{name}-work")
            if account.agent not in self.known_agents:
                self.check_agent((*parts, "agent"), account.agent)
                continue
            spec = specs.get(account.agent) if specs is not None else None
            if spec is None:
                continue
            variables = vars_of(spec)
            reads = ", ".join(spec.account_env) or "none"
            bad = False
            for var in dict(account.env):
                if var in spec.credential_env:
                    self.problem((*parts, "env"), f"{var} carries a credential: afd tells accounts apart by the "
                                                  f"variables that select them ({reads}), and never handles a token")
                    bad = True
                elif var not in spec.account_env:
                    self.problem((*parts, "env"), f"{var} is not a variable {account.agent} reads to choose its account "
                                                  f"(it reads: {reads})")
                    bad = True
            if bad:
                continue
            key = (account.agent, selection(variables, dict(account.env), home, os.path.realpath))
            if not key[1]:
                self.problem((*parts, "env"), f"selects {account.agent}'s default account, which is named "
                                              f'"{account.agent}" already; point it at another directory')
            elif key in seen:
                self.problem((*parts, "env"), f"selects the same account as [accounts.{seen[key]}]")
            else:
                seen[key] = name

    def limit_patterns(self, raw: object) -> None:
        patterns: dict[str, str] = {}
        for name, value in (self.table(("limit_patterns",), raw) or {}).items():
            parts = ("limit_patterns", name)
            if not isinstance(value, str):
                self.problem(parts, f"expected a regex string, got {_describe(value)}")
                continue
            why = userpattern.check(value)
            if why is not None:
                # Lenient: a warning, and whoever reports it says the built-in stays in force.
                self.problem(parts, f"invalid regex: {why}", warning=self.lenient_patterns)
                continue
            patterns[name] = value
            self.from_file.add(".".join(parts))
        self.values["limit_patterns"] = MappingProxyType(patterns)

    def notify(self, raw: object) -> None:
        """`[[notify]]` tables: each checked for its own type's keys, problems named `notify[N].key`."""
        if isinstance(raw, dict):
            raw = [raw]  # `[notify]` written for one notifier: read it as the one table it means
        if not isinstance(raw, list):
            self.problem(("notify",), f"expected [[notify]] tables, got {_describe(raw)}")
            return
        found = []
        for number, table in enumerate(raw, start=1):
            parts = ("notify", str(number))
            if not isinstance(table, dict):
                self.problem(parts, f"expected a [[notify]] table, got {_describe(table)}", key=f"notify[{number}]")
                continue
            settings = self.notifier(number, table)
            if settings is not None:
                found.append(settings)
                self.from_file.add(f"notify[{number}]")
        self.values["notify"] = tuple(found)

    def notifier(self, number: int, table: dict) -> notifiers.NotifierSettings | None:
        where = ("notify", str(number))
        before = len(self.problems)
        kind = table.get("type")
        if kind is None:
            self.problem(where, f"needs a type: {', '.join(notifiers.TYPES)}", key=f"notify[{number}].type")
            return None
        values: dict[str, Any] = {}  # each value already read by its key's reader
        for key, value in table.items():
            parts, shown = (*where, key), f"notify[{number}].{key}"
            if key not in _NOTIFY:
                self.problem(parts, _suggestion(key, _NOTIFY), key=shown)
                continue
            try:
                values[key] = _NOTIFY[key].read(value)
            except _Invalid as exc:
                self.problem(parts, str(exc), key=shown)
                continue
            if kind in notifiers.TYPE_KEYS and key not in (*notifiers.COMMON_KEYS, *notifiers.TYPE_KEYS[kind]):
                self.problem(parts, f'is not used by type "{kind}"', key=shown)
        if kind not in notifiers.TYPES:
            return None
        for key in notifiers.REQUIRED_KEYS[kind]:
            if key not in values:
                self.problem(where, f'type "{kind}" needs {key}', key=f"notify[{number}].{key}")
        for pattern in values.get("events", ()):
            why = notifiers.event_pattern_problem(pattern)
            if why:
                self.problem((*where, "events"), why, key=f"notify[{number}].events")
        if "url" in values and (why := notifiers.url_problem(values["url"])
                                or notifiers.plain_http_problem(values["url"], "token_file" in values)):
            self.problem((*where, "url"), why, key=f"notify[{number}].url")
        if "token_file" in values and (why := notifiers.token_file_problem(values["token_file"])):
            self.problem((*where, "token_file"), why, key=f"notify[{number}].token_file")
        if kind == "command" and not values.get("argv", ("x",)):
            self.problem((*where, "argv"), 'must name the program to run, e.g. ["/home/me/bin/on-afd-event"]',
                         key=f"notify[{number}].argv")
        if len(self.problems) > before:
            return None
        return notifiers.NotifierSettings(number=number, **values)

    def cross_checks(self) -> None:
        values = self.values
        if values.get("limit_action") == "handoff" and not values.get("handoff_order"):
            self.problem(
                ("limit_action",),
                '"handoff" needs a non-empty handoff_order, e.g. handoff_order = ["codex"] '
                '(or set limit_action = "wait")',
            )
        if values.get("handoff_before") is not None and not values.get("handoff_order"):
            self.problem(
                ("handoff_before",),
                "needs a non-empty handoff_order to hand off to, e.g. handoff_order = [\"codex\"] "
                '(or set handoff_before = "" to turn it off)',
            )
        if values.get("tmux_socket_name") and values.get("tmux_socket_path"):
            self.problem(("tmux", "socket_path"), "set socket_name or socket_path, not both")
        if self.known_agents is None:
            return
        accounts = values.get("accounts", {})
        for name in values.get("handoff_order", ()):
            if name not in accounts:  # an agent's name is its default account
                self.check_agent(("handoff_order",), name, accounts=accounts)
        for name in values.get("agents", {}):
            self.check_agent(("agents", name), name)
        for name in values.get("limit_patterns", {}):
            self.check_agent(("limit_patterns", name), name)
        self.check_accounts()

    def check_agent(self, parts: tuple[str, ...], name: str, accounts: Mapping[str, Account] | None = None) -> None:
        """`accounts` given: an account's name would do too (the message then says so)."""
        assert self.known_agents is not None  # asked only when the agents are known
        if name in self.known_agents:
            return
        known = ", ".join(sorted(self.known_agents)) or "none"
        if accounts is None:
            self.problem(parts, f'"{name}" is not an agent any plugin provides (known: {known})')
            return
        named = ", ".join(accounts) or "none configured"
        self.problem(parts, f'"{name}" is neither an agent any plugin provides (known: {known}) nor an account (accounts: {named})')


def _read_text(text: str, path: Path | None, known_agents, lenient_patterns: bool) -> Config:
    try:
        data = tomllib.loads(text)
        reader = _Reader(path, text, known_agents, lenient_patterns)
        config = reader.read(data)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([_syntax_problem(path, exc, text)]) from None
    except RecursionError:
        # tomllib parses nested arrays and tables recursively.
        raise ConfigError([ConfigProblem(path, None, None, None, "is nested too deeply to read")]) from None
    if reader.problems:
        # In file order, so the list reads top to bottom like the file.
        problems = sorted(reader.problems, key=lambda p: p.line if p.line is not None else 0)
        raise ConfigError(problems, partial=config)
    return config


def _read_file(path: Path) -> str:
    try:
        # utf-8-sig: some Windows editors start a UTF-8 file with a byte-order mark.
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        message = "is not UTF-8 text"
    except IsADirectoryError:
        message = "is a directory, not a config file"
    except OSError as exc:
        message = f"cannot be read: {exc.strerror or exc}"
    raise ConfigError([ConfigProblem(path, None, None, None, message)])


def load_config(
    path: Path | None = None,
    *,
    known_agents: Collection[str] | None = None,
    lenient_patterns: bool = False,
) -> Config:
    """The config at ``path`` (None: the global default, which may be absent).

    ``known_agents`` None skips checking agent names (the plugins are not
    loaded yet: plugins_dir comes from this very file); given as the
    plugins' specs by name, accounts are checked against their agent's
    variables too. Raises ConfigError
    listing every problem found.
    """
    if path is None:
        path = default_config_path()
        if not path.exists():
            return Config()
    elif not path.exists():
        raise ConfigError([ConfigProblem(path, None, None, None, "no such config file")])
    return _read_text(_read_file(path), path, known_agents, lenient_patterns)


def compiled_limit_patterns(config: Config) -> dict[str, userpattern.UserPattern]:
    """`[limit_patterns]` compiled with a time budget, per agent.

    Left out: a pattern that does not compile, and one that ran out of time
    on some row (then the plugin's built-in pattern is in force).
    """
    compiled = {}
    for name, raw in config.limit_patterns.items():
        if userpattern.check(raw) is not None:
            continue
        pattern = userpattern.compiled(raw)
        if not pattern.tripped:
            compiled[name] = pattern
    return compiled


# -- showing ----------------------------------------------------------------


def effective_items(config: Config, *, show_secrets: bool = False) -> list[tuple[str, object, str]]:
    """Every key with its effective value (as the file would write it) and "default" or "file".

    A notifier's URL is shown as its scheme and host unless `show_secrets`:
    its path is a webhook's key or an ntfy topic (afd/config/secrets.py).
    """
    items: list[tuple[str, object]] = [(key, spec.show(getattr(config, key))) for key, spec in _TOP.items()]
    items += [(f"tmux.{key}", getattr(config, f"tmux_{key}")) for key in _TMUX]
    items += [(f"web.{key}", getattr(config, f"web_{key}")) for key in _WEB]
    items += [(f"fleet.{key}", spec.show(getattr(config, f"fleet_{key}"))) for key, spec in _FLEET.items()]
    for name, override in sorted(config.agents.items()):
        for key, spec in _AGENT.items():
            value = getattr(override, key)
            if value is not None:
                items.append((f"agents.{name}.{key}", spec.show(value)))
    for name, account in config.accounts.items():
        items += [(f"accounts.{name}.agent", account.agent), (f"accounts.{name}.env", dict(account.env)),
                  (f"accounts.{name}.share", account.share)]
    items += [(f"limit_patterns.{name}", raw) for name, raw in sorted(config.limit_patterns.items())]
    for entry in config.notify:
        table = {key: spec.show(getattr(entry, key)) for key, spec in _NOTIFY.items()}
        if entry.url and not show_secrets:
            table["url"] = url_shown(entry.url)
        items.append((f"notify[{entry.number}]", {k: v for k, v in table.items() if v not in (None, "", [])}))
    return [(key, value, "file" if key in config.from_file else "default") for key, value in items]


# -- editing ----------------------------------------------------------------


def _without_position(exc: tomlkit.exceptions.ParseError) -> str:
    # ParseError appends exactly this to its message; the numbers are its attributes.
    return str(exc).removesuffix(f" at line {exc.line} col {exc.col}")


def _toml_value(path: Path, dotted_key: str, raw_value: str) -> tomlkit.items.Item:
    if "\n" in raw_value or "\r" in raw_value:
        raise ConfigError([ConfigProblem(path, None, None, dotted_key, "a value must fit on one line")])
    try:
        return tomlkit.parse(f"v = {raw_value}\n")["v"]
    except tomlkit.exceptions.TOMLKitError:
        pass
    if raw_value.strip()[:1] in ("[", "{", '"', "'"):
        raise ConfigError(
            [
                ConfigProblem(
                    path, None, None, dotted_key,
                    f"{raw_value} is not a TOML value (quote strings, write arrays as [\"codex\", \"claude\"])",
                )
            ]
        )
    return tomlkit.item(raw_value)  # a bare word is a string: `config set limit_action handoff`


def _set_in(path: Path, doc: tomlkit.TOMLDocument, parts: list[str], item: tomlkit.items.Item) -> None:
    container = doc
    for depth, part in enumerate(parts[:-1]):
        existing = container.get(part)
        if existing is None:
            # [agents] only holds [agents.NAME] tables, so it need not be written out itself.
            container[part] = tomlkit.table(is_super_table=depth < len(parts) - 2)
        elif not isinstance(existing, MutableMapping):
            key = ".".join(parts[: depth + 1])
            raise ConfigError([ConfigProblem(path, None, None, key, f"is {_describe(existing)}, not a table")])
        container = container[part]
    container[parts[-1]] = item


def _write_atomic(path: Path, text: str) -> None:
    # Write through a symlink (a dotfile manager's) rather than replacing it.
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = target.stat().st_mode & 0o7777 if target.exists() else None
    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    directory = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def set_value(
    path: Path, dotted_key: str, raw_value: str, *, known_agents: Collection[str] | None = None
) -> Config:
    """Set one key in the file at ``path``, keeping its comments and order.

    ``raw_value`` is TOML (`'["codex"]'`, `true`, `3`, `"2s"`); a bare word is
    a string. The whole resulting file is validated first and nothing is
    written if it has any problem (ConfigError). Creates the file if absent.
    """
    parts = dotted_key.split(".")
    if not all(parts):
        raise ConfigError([ConfigProblem(path, None, None, dotted_key, "is not a key (use e.g. tmux.socket_name)")])
    text = _read_file(path) if path.exists() else ""
    try:
        doc = tomlkit.parse(text)
    except tomlkit.exceptions.ParseError as exc:
        # tomlkit counts columns from 0, tomllib (and editors) from 1.
        raise ConfigError([ConfigProblem(path, exc.line, exc.col + 1, None, f"invalid TOML: {_without_position(exc)}")]) from None
    _set_in(path, doc, parts, _toml_value(path, dotted_key, raw_value))
    result = doc.as_string()
    if not result.endswith("\n"):
        result += "\n"  # tomlkit leaves a table it appends without one
    try:
        config = _read_text(result, path, known_agents, False)
    except ConfigError as exc:
        raise ConfigError(_lines_in_file(exc.problems, text), exc.partial) from None
    _write_atomic(path, result)
    return config


def _lines_in_file(problems: list[ConfigProblem], text: str) -> list[ConfigProblem]:
    """Problems of an edit refused, with lines of the file as it still is.

    They were found in the edited text, which was never written: a key the
    edit adds has no line in the file, and the lines after it have moved.
    """
    where = _KeyLines(text)
    return [
        ConfigProblem(p.path, where.line(*p.key.split(".")) if p.key else None, None, p.key, p.message)
        for p in problems
    ]

