"""Loading detector plugins: the built-ins, entry points and drop-in files, through one manager.

Registration order is built-ins, then entry points, then drop-ins; a later
plugin that names an agent an earlier one also names takes that agent over,
so a user's plugin can replace a built-in detector without editing afd.
"""

from __future__ import annotations

import difflib
import importlib.metadata
import importlib.util
import logging
import re
import sys
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import ModuleType

import pluggy

import afd_plugins
from afd import ENTRY_POINT_GROUP, PROJECT, hookspecs
from afd.model import AgentProcess, AgentSpec, Clock, Detection, Event, WitnessState, WitnessVerdict

log = logging.getLogger("afd.plugins")

BUILTIN = "builtin"
ENTRY_POINT = "entry-point"
DROP_IN = "drop-in"


@dataclass(frozen=True, slots=True)
class PluginInfo:
    name: str
    source: str  # builtin | entry-point | drop-in
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
    _detect_callers: dict[str, object] = field(default_factory=dict)  # agent -> pluggy caller without replaced plugins

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
        caller = self._detect_callers.get(agent)
        if caller is None:
            owner = self.owners.get(agent)
            replaced = [
                self.manager.get_plugin(name)
                for name, agents in self._spec_names.items()
                if agent in agents and name != owner
            ]
            caller = self.manager.subset_hook_caller("afd_detect", remove_plugins=[p for p in replaced if p is not None])
            self._detect_callers[agent] = caller
        try:
            found = caller(agent=agent, lines=list(rows), clock=clock, pattern=pattern)
        except (Exception, SystemExit) as exc:  # only a wrapper can get here: each detector is guarded
            self._report_once("(a hook wrapper)", "afd_detect", exc)
            return None
        problem = detection_problem(found, len(rows))
        if problem is not None:
            self._report_once("(a hook wrapper)", "afd_detect", InvalidDetection(problem))
            return None
        return found

    def _guard(self, plugin: str, function, argnames: tuple[str, ...]):
        """`function` as pluggy will call it: an exception or a bad Detection becomes None, logged once."""

        def guarded(*args):
            try:
                found = function(*args)
            except (Exception, SystemExit) as exc:  # a plugin bug must not take the caller down
                self._report_once(plugin, "afd_detect", exc)
                return None
            lines = dict(zip(argnames, args)).get("lines")
            problem = detection_problem(found, None if lines is None else len(lines))
            if problem is not None:
                self._report_once(plugin, "afd_detect", InvalidDetection(problem))
                return None
            return found

        return guarded

    def _impls_for(self, hook, agent: str) -> list:
        """``hook``'s implementations for ``agent``: its owner's first, then plugins that name no spec for it."""
        owner = self.owners.get(agent)
        impls = [i for i in reversed(hook.get_hookimpls()) if not (i.hookwrapper or i.wrapper)]
        ordered = [i for i in impls if i.plugin_name == owner]
        return ordered + [i for i in impls if i.plugin_name != owner and agent not in self._spec_names.get(i.plugin_name, ())]

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
        for impl in self._impls_for(self.manager.hook.afd_witness, agent):
            try:
                found = impl.function(agent=agent, process=process, since=since, until=until, record=record)
            except (Exception, SystemExit) as exc:
                self._report_once(impl.plugin_name, "afd_witness", exc)
                return WitnessVerdict(WitnessState.UNKNOWN, f"the {impl.plugin_name} witness failed: {type(exc).__name__}")
            if found is not None:
                return found
        return None

    def emit(self, event: Event) -> None:
        """Hand an event to every `afd_event` plugin; a failing one is logged, never raised."""
        for impl in self.manager.hook.afd_event.get_hookimpls():
            try:
                impl.function(event=event)
            except (Exception, SystemExit) as exc:
                self._report_once(impl.plugin_name, "afd_event", exc)

    def _report_once(self, plugin: str, hook: str, exc: BaseException) -> None:
        key = (plugin, f"{hook}:{type(exc).__name__}")
        if key in self._reported:
            return
        self._reported.add(key)
        log.error("plugin %s: %s raised %s: %s (further errors of this kind are not logged)", plugin, hook, type(exc).__name__, exc)


class InvalidDetection(ValueError):
    """A detector's return value that is not a Detection afd can use."""


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


def load_plugins(
    plugins_dir: Path | None = None, *, entry_points: bool = True, builtins: bool = True
) -> PluginSet:
    """Load every plugin; a plugin that fails to import or register is recorded and skipped."""
    pm = _new_manager()
    result = PluginSet(manager=pm)
    candidates: list[tuple[str, str, str, object]] = []  # name, source, origin, loader

    if builtins:
        for path in _plugin_files(builtin_dir()):
            candidates.append((path.stem, BUILTIN, str(path), lambda p=path: _import_file(p, "afd_builtin_")))
    if entry_points:
        for ep in sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            dist = getattr(ep, "dist", None)
            origin = f"{dist.name} {dist.version}" if dist is not None else ep.value
            candidates.append((ep.name, ENTRY_POINT, origin, ep.load))
    if plugins_dir is not None:
        for path in _plugin_files(plugins_dir):
            candidates.append((path.stem, DROP_IN, str(path), lambda p=path: _import_file(p, "afd_dropin_")))

    for name, source, origin, load in candidates:
        if pm.has_plugin(name) and source != BUILTIN:
            # `plugins_dir/claude.py` is the obvious name for a replacement of
            # the built-in claude; it is told apart by where it came from.
            name = f"{source}:{name}"
        if pm.has_plugin(name):
            result.failures.append(PluginFailure(name, source, origin, f"a plugin named {name!r} is already loaded"))
            continue
        # SystemExit too: a plugin that calls sys.exit() must not stop afd.
        try:
            plugin = load()
            pm.register(plugin, name=name)
        except (Exception, SystemExit) as exc:
            result.failures.append(PluginFailure(name, source, origin, f"{type(exc).__name__}: {exc}"))
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
        for impl in pm.hook.afd_detect.get_hookimpls():
            if impl.plugin_name == name and not (impl.hookwrapper or impl.wrapper):
                impl.function = result._guard(name, impl.function, tuple(impl.argnames))
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
    specs: list[AgentSpec] = []
    for impl in pm.hook.afd_agents.get_hookimpls():
        if impl.plugin_name != name:
            continue
        for spec in impl.function() or ():
            if not isinstance(spec, AgentSpec):
                raise TypeError(f"afd_agents returned {type(spec).__name__}, not AgentSpec")
            specs.append(spec)
    return specs


def load_for_config(config) -> PluginSet:
    """The plugins a config asks for: built-ins, entry points, and its `plugins_dir`."""
    return load_plugins(Path(config.plugins_dir) if config.plugins_dir else None)


def load_config_and_plugins(path: Path | None, *, lenient_patterns: bool = True):
    """The config and the plugins it asks for, agent names checked against what those plugins provide.

    Two passes, because `plugins_dir` itself comes from the config. Raises
    `afd.config.ConfigError` listing every problem.
    """
    from afd.config.settings import load_config

    config = load_config(path, lenient_patterns=lenient_patterns)
    plugins = load_for_config(config)
    return load_config(path, known_agents=set(plugins.agents), lenient_patterns=lenient_patterns), plugins
