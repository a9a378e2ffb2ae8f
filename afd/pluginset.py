"""The plugin manager: the built-ins, entry points and drop-in files loaded into one set of plugins (`PluginSet`).

Registration order is built-ins (Python, then the shipped manifests in
`plugins/agents/`), then entry points, then drop-ins (`*.py`, then `*.toml`
manifests); a later plugin that names an agent an earlier one also names
takes that agent over, so a user's plugin or manifest can replace a
built-in detector without editing afd.
"""

from __future__ import annotations

import difflib
import functools
import importlib.metadata
import importlib.util
import inspect
import logging
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pluggy

import afd_plugins
from afd import ENTRY_POINT_GROUP, PROJECT, hookspecs
from afd.errors import AfdError
from afd.model import (
    AgentProcess,
    AgentSpec,
    Clock,
    Detection,
    Event,
    Notice,
    UsageReading,
    WitnessState,
    WitnessVerdict,
)

log = logging.getLogger("afd.plugins")

BUILTIN = "builtin"
ENTRY_POINT = "entry-point"
DROP_IN = "drop-in"
MANIFEST = "manifest"  # a `*.toml` agent in plugins_dir
BUILTIN_MANIFEST = "builtin-manifest"  # a `*.toml` agent shipped in plugins/agents/


@dataclass(frozen=True, slots=True)
class PluginInfo:
    name: str
    source: str  # builtin | builtin-manifest | entry-point | drop-in | manifest
    origin: str  # file path or distribution
    agents: tuple[str, ...]
    hooks: tuple[str, ...]
    overrides: tuple[str, ...] = ()  # "agent (from plugin)" taken over from an earlier plugin


@dataclass(frozen=True, slots=True)
class PluginFailure:
    name: str
    source: str
    origin: str
    error: str


@dataclass
class PluginSet:
    """The loaded plugins and what they provide."""

    manager: pluggy.PluginManager
    agents: dict[str, AgentSpec] = field(default_factory=dict)
    owners: dict[str, str] = field(default_factory=dict)  # agent -> plugin name
    plugins: list[PluginInfo] = field(default_factory=list)
    failures: list[PluginFailure] = field(default_factory=list)
    _spec_names: dict[str, frozenset[str]] = field(default_factory=dict)  # plugin -> agents it names
    _reported: set[tuple[str, str]] = field(default_factory=set)
    # (hook, agent) -> pluggy's caller for that hook without the plugins whose spec for the agent was replaced
    _callers: dict[tuple[str, str], Callable[..., Any]] = field(default_factory=dict)

    def detect(
        self, agent: str, rows: list[str], clock: Clock, pattern: re.Pattern[str] | None = None
    ) -> Detection | None:
        """Ask the detectors for ``agent`` through the plugin manager; the first Detection wins.

        pluggy sets the order (``tryfirst``, then the later-registered
        first, then ``trylast``) and runs hook wrappers around the call. A
        plugin whose spec for this agent was overridden is not asked: the
        override replaces it. A detector that raises or returns something
        that is not a valid Detection for these rows counts as no detection
        (logged once) and the next one is asked; a wrapper that fails, or a
        result a wrapper spoiled, makes this capture count as no detection.
        """
        try:
            found = self._caller("afd_detect", agent)(agent=agent, lines=list(rows), clock=clock, pattern=pattern)
        except (Exception, SystemExit) as exc:  # only a wrapper can get here: each detector is guarded
            self._report_once("(a hook wrapper)", "afd_detect", exc)
            return None
        problem = detection_problem(found, len(rows))
        if problem is not None:
            self._report_once("(a hook wrapper)", "afd_detect", InvalidDetection(problem))
            return None
        return found

    def _caller(self, hook: str, agent: str) -> Callable[..., Any]:
        """pluggy's caller for ``hook`` about ``agent``: a plugin whose spec for the agent was overridden is left out."""
        caller = self._callers.get((hook, agent))
        if caller is None:
            owner = self.owners.get(agent)
            replaced = [
                self.manager.get_plugin(name)
                for name, agents in self._spec_names.items()
                if agent in agents and name != owner
            ]
            caller = self.manager.subset_hook_caller(hook, remove_plugins=[p for p in replaced if p is not None])
            self._callers[(hook, agent)] = caller
        return caller

    def _isolated(self, plugin: object, name: str) -> object:
        """``plugin`` as afd registers it: each of its hook implementations guarded, so one plugin's bug stays its own.

        pluggy stops a whole hook call at the first exception; wrapping each
        implementation before registration lets every hook be called the
        ordinary pluggy way (wrappers, ``tryfirst``, first result) while a
        failing plugin counts as no answer and is logged once.
        """
        isolated = _Isolated(name)
        for attr in dir(plugin):
            value = getattr(plugin, attr, None)
            opts = self.manager.parse_hookimpl_opts(plugin, attr) if callable(value) else None
            if opts is None or value is None:
                continue
            guard = _GUARDS.get(attr)
            if guard is not None and not (opts.get("hookwrapper") or opts.get("wrapper")):
                value = guard(self, name, value)
            setattr(isolated, attr, value)
        return isolated
    def has_witness(self, agent: str) -> bool:
        """Whether some plugin can read ``agent``'s own records: the one that provides it implements `afd_witness`."""
        owner = self.owners.get(agent)
        return any(i.plugin_name == owner for i in self.manager.hook.afd_witness.get_hookimpls())

    def witness(
        self, agent: str, process: AgentProcess, since: datetime | None, until: datetime, record: Path | None = None
    ) -> WitnessVerdict | None:
        """The agent's own records' verdict, in the same order as `detect`; None when no plugin reads them.

        A witness that raises counts as UNKNOWN: a broken second witness must
        not turn a wall the pane shows into no wall.
        """
        try:
            return self._caller("afd_witness", agent)(agent=agent, process=process, since=since, until=until, record=record)
        except (Exception, SystemExit) as exc:  # only a wrapper can get here: each witness is guarded
            self._report_once("(a hook wrapper)", "afd_witness", exc)
            return WitnessVerdict(WitnessState.UNKNOWN, f"a hook wrapper of afd_witness failed: {type(exc).__name__}")

    def has_usage(self, agent: str) -> bool:
        """Whether the plugin that provides ``agent`` reads its usage from its records (`afd_usage`)."""
        owner = self.owners.get(agent)
        return any(i.plugin_name == owner for i in self.manager.hook.afd_usage.get_hookimpls())

    def usage(self, agent: str, process: AgentProcess, until: datetime) -> UsageReading | None:
        """The agent's latest usage report from its own records, or None (a failing reader counts as none)."""
        try:
            found = self._caller("afd_usage", agent)(agent=agent, process=process, until=until)
        except (Exception, SystemExit) as exc:  # only a wrapper can get here: each reader is guarded
            self._report_once("(a hook wrapper)", "afd_usage", exc)
            return None
        return found if isinstance(found, UsageReading) else None

    def emit(self, event: Event, notice: Notice | None = None) -> None:
        """Hand an event to every `afd_event` plugin; a failing one is logged, never raised.

        Called on the notifier worker (`afd/notifiers/worker.py`), never in the poll loop.
        pluggy passes each implementation only the arguments it names, so a plugin
        written before `notice` existed still gets `event` alone.
        """
        if notice is None:
            notice = Notice(title=event.kind, text=event.message, where=None, agent=None, account=None, host="")
        try:
            self.manager.hook.afd_event(event=event, notice=notice)
        except (Exception, SystemExit) as exc:  # only a wrapper can get here: each plugin's is guarded
            self._report_once("(a hook wrapper)", "afd_event", exc)

    def notifiers(self) -> list:
        """afd's own notifiers (`[[notify]]` tables), as registered."""
        from afd.notifiers.builtin import Notifier

        return [p for p in self.manager.get_plugins() if isinstance(p, Notifier)]

    def _report_once(self, plugin: str, hook: str, exc: BaseException) -> None:
        key = (plugin, f"{hook}:{type(exc).__name__}")
        if key in self._reported:
            return
        self._reported.add(key)
        log.error("plugin %s: %s raised %s: %s (further errors of this kind are not logged)", plugin, hook, type(exc).__name__, exc)


class _Isolated:
    """What pluggy registers for a plugin: its hook implementations, each guarded (hashable, by identity)."""

    def __init__(self, name: str):
        self._name = name

    def __repr__(self) -> str:
        return f"<afd plugin {self._name}>"


class InvalidDetection(AfdError, ValueError):
    """A detector's return value that is not a Detection afd can use."""


def _guard_detect(plugins: PluginSet, plugin: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """An exception or a bad Detection becomes no detection, logged once; the next detector is asked."""

    # pluggy passes the arguments by position, in the order the function names them.
    names = list(inspect.signature(function).parameters)
    at = names.index("lines") if "lines" in names else None

    @functools.wraps(function)  # pluggy reads the argument names through __wrapped__
    def guarded(*args: Any, **kwargs: Any) -> Detection | None:
        try:
            found = function(*args, **kwargs)
        except (Exception, SystemExit) as exc:  # a plugin bug must not take the caller down
            plugins._report_once(plugin, "afd_detect", exc)
            return None
        lines = args[at] if at is not None and at < len(args) else kwargs.get("lines")
        problem = detection_problem(found, None if lines is None else len(lines))
        if problem is not None:
            plugins._report_once(plugin, "afd_detect", InvalidDetection(problem))
            return None
        return found

    return guarded


def _guard_witness(plugins: PluginSet, plugin: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """An exception is UNKNOWN, logged once: a broken second witness must not turn a wall the pane shows into no wall."""

    @functools.wraps(function)
    def guarded(*args: Any, **kwargs: Any) -> WitnessVerdict | None:
        try:
            return function(*args, **kwargs)
        except (Exception, SystemExit) as exc:
            plugins._report_once(plugin, "afd_witness", exc)
            return WitnessVerdict(WitnessState.UNKNOWN, f"the {plugin} witness failed: {type(exc).__name__}")

    return guarded


def _guard_usage(plugins: PluginSet, plugin: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """An exception, or anything but a UsageReading, is no reading, logged once: usage figures are never guessed."""

    @functools.wraps(function)
    def guarded(*args: Any, **kwargs: Any) -> UsageReading | None:
        try:
            found = function(*args, **kwargs)
        except (Exception, SystemExit) as exc:
            plugins._report_once(plugin, "afd_usage", exc)
            return None
        if found is not None and not isinstance(found, UsageReading):
            plugins._report_once(plugin, "afd_usage", TypeError(f"returned {type(found).__name__}, not a UsageReading"))
            return None
        return found

    return guarded


def _guard_event(plugins: PluginSet, plugin: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """An exception is logged once and never reaches the daemon's loop; the other plugins still get the event."""

    @functools.wraps(function)
    def guarded(*args: Any, **kwargs: Any) -> None:
        try:
            function(*args, **kwargs)
        except (Exception, SystemExit) as exc:
            plugins._report_once(plugin, "afd_event", exc)

    return guarded


# afd_agents is not guarded: a plugin whose agents cannot be read is not loaded at all.
_GUARDS: dict[str, Callable[[PluginSet, str, Callable[..., Any]], Callable[..., Any]]] = {
    "afd_detect": _guard_detect,
    "afd_witness": _guard_witness,
    "afd_usage": _guard_usage,
    "afd_event": _guard_event,
}


def detection_problem(found: object, rows: int | None) -> str | None:
    """Why `found` is not a Detection afd can use for a capture of `rows` rows; None when it is (or is None).

    Checked here, once, so that a plugin's mistake (a naive reset time, a row
    past the capture) cannot fail later inside the gates or the store on
    every poll.
    """
    if found is None:
        return None
    if not isinstance(found, Detection):
        return f"returned {type(found).__name__}, not a Detection"
    for name in ("agent", "kind", "banner"):
        if not isinstance(getattr(found, name), str):
            return f"Detection.{name} is {type(getattr(found, name)).__name__}, not str"
    for name in ("first_row", "last_row"):
        value = getattr(found, name)
        if not isinstance(value, int) or isinstance(value, bool):
            return f"Detection.{name} is {type(value).__name__}, not int"
    if not 0 <= found.first_row <= found.last_row or (rows is not None and found.last_row >= rows):
        return f"Detection rows {found.first_row}..{found.last_row} are not within the capture's {rows} rows"
    reset = found.reset_at
    if reset is not None and (not isinstance(reset, datetime) or reset.tzinfo is None or reset.utcoffset() is None):
        return f"Detection.reset_at {reset!r} is not an aware datetime"
    return None


def builtin_dir() -> Path:
    return Path(afd_plugins.__file__).resolve().parent


def _new_manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(hookspecs)
    return pm


def _import_file(path: Path, prefix: str) -> ModuleType:
    module_name = f"{prefix}{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module


def _plugin_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.py") if not p.name.startswith("_"))


def _manifest_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.toml") if not p.name.startswith(("_", ".")))


def _manifest_loader(path: Path):
    def load():
        from afd_plugins._manifest_plugin import plugin_for

        return plugin_for(path)

    return load


def load_plugins(
    plugins_dir: Path | None = None, *, entry_points: bool = True, builtins: bool = True
) -> PluginSet:
    """Load every plugin; a plugin that fails to import or register is recorded and skipped."""
    pm = _new_manager()
    result = PluginSet(manager=pm)
    candidates: list[tuple[str, str, str, Callable[..., Any]]] = []  # name, source, origin, loader

    if builtins:
        for path in _plugin_files(builtin_dir()):
            candidates.append((path.stem, BUILTIN, str(path), lambda p=path: _import_file(p, "afd_builtin_")))
        for path in _manifest_files(builtin_dir() / "agents"):
            candidates.append((path.stem, BUILTIN_MANIFEST, str(path), _manifest_loader(path)))
    if entry_points:
        for ep in sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            dist = getattr(ep, "dist", None)
            origin = f"{dist.name} {dist.version}" if dist is not None else ep.value
            candidates.append((ep.name, ENTRY_POINT, origin, ep.load))
    if plugins_dir is not None:
        for path in _plugin_files(plugins_dir):
            candidates.append((path.stem, DROP_IN, str(path), lambda p=path: _import_file(p, "afd_dropin_")))
        for path in _manifest_files(plugins_dir):
            candidates.append((path.stem, MANIFEST, str(path), _manifest_loader(path)))

    for name, source, origin, load in candidates:
        if pm.has_plugin(name) and source not in (BUILTIN, BUILTIN_MANIFEST):
            # `plugins_dir/claude.py` is the obvious name for a replacement of
            # the built-in claude; it is told apart by where it came from.
            name = f"{source}:{name}"
        if pm.has_plugin(name):
            result.failures.append(PluginFailure(name, source, origin, f"a plugin named {name!r} is already loaded"))
            continue
        # SystemExit too: a plugin that calls sys.exit() must not stop afd.
        try:
            plugin = result._isolated(load(), name)
            pm.register(plugin, name=name)
        except (Exception, SystemExit) as exc:
            # A manifest's problems already read FILE:LINE: key: message.
            error = str(exc) if source in (MANIFEST, BUILTIN_MANIFEST) else f"{type(exc).__name__}: {exc}"
            result.failures.append(PluginFailure(name, source, origin, error))
            continue
        unknown = _unknown_hooks(pm, name)
        if unknown:
            pm.unregister(name=name)
            result.failures.append(PluginFailure(name, source, origin, unknown))
            continue
        try:
            specs = _agents_of(pm, name)
        except (Exception, SystemExit) as exc:
            pm.unregister(name=name)
            result.failures.append(PluginFailure(name, source, origin, f"afd_agents raised {type(exc).__name__}: {exc}"))
            continue
        overrides = []
        for spec in specs:
            if spec.name in result.owners:
                overrides.append(f"{spec.name} (from {result.owners[spec.name]})")
            result.agents[spec.name] = spec
            result.owners[spec.name] = name
        result._spec_names[name] = frozenset(s.name for s in specs)
        hooks = tuple(sorted(c.name for c in pm.get_hookcallers(pm.get_plugin(name)) or ()))
        result.plugins.append(
            PluginInfo(name, source, origin, tuple(s.name for s in specs), hooks, tuple(overrides))
        )
    return result


def _unknown_hooks(pm: pluggy.PluginManager, name: str) -> str:
    """Why the plugin's hook implementations do not all name a hook, or "" when they do.

    pluggy accepts a misspelt `@hookimpl` silently and never calls it; a
    plugin that seems loaded but never detects anything is worse than a
    refusal naming the typo.
    """
    known = [n for n in dir(hookspecs) if n.startswith(f"{PROJECT}_")]
    problems = []
    for caller in pm.get_hookcallers(pm.get_plugin(name)) or ():
        if caller.has_spec():
            continue
        close = difflib.get_close_matches(caller.name, known, n=1)
        hint = f" (did you mean {close[0]}?)" if close else f" (hooks: {', '.join(known)})"
        problems.append(f"{caller.name} is not an afd hook{hint}")
    return "; ".join(problems)


def _agents_of(pm: pluggy.PluginManager, name: str) -> list[AgentSpec]:
    others = [plugin for other, plugin in pm.list_name_plugin() if other != name]
    specs: list[AgentSpec] = []
    for answer in pm.subset_hook_caller("afd_agents", remove_plugins=others)():
        for spec in answer or ():
            if not isinstance(spec, AgentSpec):
                raise TypeError(f"afd_agents returned {type(spec).__name__}, not AgentSpec")
            specs.append(spec)
    return specs


def load_for_config(config) -> PluginSet:
    """The plugins a config asks for: built-ins, entry points, its `plugins_dir`, and its `[[notify]]` notifiers."""
    plugins = load_plugins(Path(config.plugins_dir) if config.plugins_dir else None)
    add_notifiers(plugins, config)
    return plugins


def add_notifiers(plugins: PluginSet, config) -> None:
    """Register one built-in `afd_event` plugin per `[[notify]]` table of `config`."""
    from afd.notifiers.builtin import Notifier

    for settings in getattr(config, "notify", ()):
        notifier = Notifier(settings)
        plugins.manager.register(notifier, name=notifier.plugin_name)
        # No brackets: `afd plugins` prints this through rich, which reads [..] as markup.
        where = f"notify table {settings.number}" + (f" of {config.path}" if config.path else "")
        plugins.plugins.append(PluginInfo(notifier.plugin_name, BUILTIN, f"{where}: {settings.label}", (), ("afd_event",)))


def load_config_and_plugins(path: Path | None, *, lenient_patterns: bool = True):
    """The config and the plugins it asks for, agent names checked against what those plugins provide.

    Two passes, because `plugins_dir` itself comes from the config. Raises
    `afd.config.ConfigError` listing every problem.
    """
    from afd.config.settings import load_config

    config = load_config(path, lenient_patterns=lenient_patterns)
    plugins = load_for_config(config)
    return load_config(path, known_agents=plugins.agents, lenient_patterns=lenient_patterns), plugins
