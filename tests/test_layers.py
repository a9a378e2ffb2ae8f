"""The import layers of afd/, as DESIGN.md draws them: arrows point down only, and no circle.

Read from the source (every import statement, at module level or inside a
function), so an import that only runs on one path still counts. Each folder
has a rank (`LAYERS`); a module may import its own folder and any folder of
a lower rank, never a higher one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import afd

ROOT = Path(afd.__file__).parent

# Folders that decide from facts handed to them: no tmux, processes or disk state.
PURE = ("afd.judge", "afd.decide", "afd.kit", "afd.display")
# What touches tmux, processes (the observe step walks them) or the store.
EFFECTFUL = ("afd.world", "afd.observe", "afd.record.store")
# Lowest first. The plugin API (the package, its model, errors and hookspecs) is at the bottom; the
# values every step speaks (kit, the record types) next; then the pure rules, then what reads the
# world, then what acts on it, and the shells at the top.
LAYERS = (
    ("afd", "afd.model", "afd.errors", "afd.hookspecs"),
    ("afd.kit", "afd.display"),
    ("afd.record",),
    ("afd.judge",),
    ("afd.decide",),
    ("afd.config",),
    ("afd.world",),
    ("afd.observe",),
    ("afd.notifiers",),
    ("afd.pluginset",),
    ("afd.act",),
    ("afd.jobs",),
    ("afd.daemon",),
    ("afd.web",),
    ("afd.testing",),
    ("afd.cli",),
    ("afd.__main__",),
)
# Everything below the daemon and the command line.
BELOW_DAEMON = (
    "afd.world", "afd.observe", "afd.judge", "afd.decide", "afd.act", "afd.record", "afd.jobs", "afd.config", "afd.kit",
    "afd.notifiers", "afd.display",
)
TOP = ("afd.daemon", "afd.web", "afd.cli")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every afd module `path` imports, by its full name (a `from X import y` counts X and X.y)."""
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {name for name in found if name == "afd" or name.startswith("afd.")}


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


MODULES = {_module_name(p): _imports(p) for p in sorted(ROOT.rglob("*.py"))}


def _breaches(sources: tuple[str, ...], forbidden: tuple[str, ...]) -> list[str]:
    return sorted(
        f"{module} imports {target}"
        for module, targets in MODULES.items()
        if _within(module, sources)
        for target in targets
        if _within(target, forbidden)
    )


def test_the_layers_are_read_from_every_module():
    assert len(MODULES) > 80
    assert "afd.record.store" in MODULES["afd.daemon.status"]


def test_pure_folders_import_neither_the_world_nor_the_store():
    assert _breaches(PURE, EFFECTFUL) == []


def test_nothing_below_the_daemon_imports_the_daemon_or_the_command_line():
    assert _breaches(BELOW_DAEMON, TOP) == []


def test_the_output_layer_sits_below_every_surface():
    # What a person reads is made in afd.display; cli, web, daemon and notifiers import it, so it imports
    # nothing of afd but the kit (its zone), or one of them would import itself through it.
    assert [b for b in _breaches(("afd.display",), ("afd",)) if not _within(b.split(" imports ")[1], ("afd.display", "afd.kit"))] == []
    assert {"afd.display.reader", "afd.display.text"} & MODULES["afd.cli.status_view"]
    assert "afd.display.text" in MODULES["afd.notifiers.message"]


def test_record_types_import_nothing_effectful():
    allowed = {"afd", "afd.model"} | {f"afd.model.{n}" for n in dir(__import__("afd.model").model)}
    assert MODULES["afd.record.types"] <= allowed


@pytest.mark.parametrize("folder", ["judge", "decide", "kit", "record"])
def test_no_pure_module_imports_the_store_through_a_back_door(folder):
    # afd.record.store may be imported by the record folder only from its own effectful modules.
    if folder == "record":
        assert _breaches(("afd.record.types", "afd.record.ledger", "afd.record.naming"), ("afd.record.store",)) == []
    else:
        assert _breaches((f"afd.{folder}",), ("afd.record.store",)) == []


def test_afd_keeps_at_most_a_dozen_modules_at_its_top_level():
    assert len(list(ROOT.glob("*.py"))) <= 12


def _rank(name: str) -> int:
    best = None
    for rank, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if (name == p or (p != "afd" and name.startswith(p + "."))) and (best is None or len(p) > best[1]):
                best = (rank, len(p))
    assert best is not None, f"{name} is in no layer of LAYERS"
    return best[0]


def _target(name: str) -> str | None:
    """The afd module an imported name is (`from afd.act import Go` names afd.act)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def test_every_module_has_a_layer():
    for module in MODULES:
        _rank(module)


def test_no_arrow_runs_back_up():
    upward = sorted(
        f"{module} imports {target}"
        for module, targets in MODULES.items()
        for target in {_target(t) for t in targets} - {None}
        if _rank(target) > _rank(module)
    )
    assert upward == []


def test_no_modules_import_each_other_round_a_circle():
    graph = {m: {t for t in (_target(x) for x in targets) if t not in (None, m)} for m, targets in MODULES.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    assert circles == []

