"""The package's layout: the old import paths plugins use still work."""

from __future__ import annotations

import importlib

import pytest

# Third-party plugins written before the layout move import these paths.
OLD_PATHS = {
    "afd.text": ("afd.kit.text", ["normalise_row", "capture_rows", "composer_top", "is_own_banner_row"]),
    "afd.resettime": ("afd.kit.resettime", ["parse_reset", "parse_relative", "from_epoch"]),
    "afd.recordtail": ("afd.kit.recordtail", ["TailCache", "from_epoch_seconds", "process_environment", "read_head"]),
    "afd.recordverdict": ("afd.kit.recordverdict", []),
}


@pytest.mark.parametrize("old", sorted(OLD_PATHS))
def test_old_plugin_import_path_re_exports_the_toolkit(old):
    new, names = OLD_PATHS[old]
    shim, module = importlib.import_module(old), importlib.import_module(new)
    public = [n for n in vars(module) if not n.startswith("_") and getattr(getattr(module, n), "__module__", new) == new]
    assert public, new
    for name in {*names, *public}:
        assert getattr(shim, name) is getattr(module, name), f"{old}.{name}"
