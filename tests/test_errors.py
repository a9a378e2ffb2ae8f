"""Every failure afd raises on purpose is an AfdError carrying its exit code."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

import afd
from afd.errors import EXIT_CONFIG, EXIT_DAEMON_DOWN, EXIT_FAIL, EXIT_USAGE, AfdError

ROOT = Path(afd.__file__).parent


def _modules():
    for info in pkgutil.walk_packages([str(ROOT)], prefix="afd."):
        # The fake agents are programs the tests run, not afd; __main__ runs the command.
        if not info.name.startswith("afd.testing") and not info.name.endswith("__main__"):
            yield importlib.import_module(info.name)


def _exception_classes():
    for module in _modules():
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, BaseException) and obj.__module__ == module.__name__:
                yield obj


def test_every_exception_class_of_afd_derives_from_afd_error():
    classes = list(_exception_classes())
    assert len(classes) >= 10
    strays = sorted(f"{c.__module__}.{c.__qualname__}" for c in classes if not issubclass(c, AfdError))
    assert strays == []


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("afd.config.settings.ConfigError", EXIT_CONFIG),
        ("afd.record.store.StoreRefused", EXIT_CONFIG),
        ("afd.record.store.StoreError", EXIT_FAIL),
        ("afd.daemon.control.DaemonUnavailable", EXIT_DAEMON_DOWN),
        ("afd.daemon.control.ControlError", EXIT_FAIL),
        ("afd.errors.UserError", EXIT_USAGE),
        ("afd.world.git.GitError", EXIT_FAIL),
    ],
)
def test_each_error_carries_its_exit_code(name, code):
    module, _, cls = name.rpartition(".")
    error = getattr(importlib.import_module(module), cls)
    assert error.code == code
    assert AfdError("x", code=99).code == 99  # a raise site may still name its own


def test_the_config_exit_code_is_written_once():
    literal = re.compile(r"(?<![\w.])78(?![\w.])")
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in ROOT.rglob("*.py")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if literal.search(line.split("#")[0]) and path.name != "errors.py"
    ]
    assert found == []

