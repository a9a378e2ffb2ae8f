"""Where afd keeps its files, per the XDG base-directory spec (for the config, the store and the control socket alike).

Every function reads the environment when called, never at import, so a
test (or a daemon started under a different environment) gets the paths of
the environment it runs in. Nothing here creates a directory: the code that
writes a file there does, with the mode that file needs.
"""

from __future__ import annotations

import os
from pathlib import Path

APP = "afd"


def _xdg(var: str, default: str) -> Path:
    # The spec says a relative or empty value is invalid and must be ignored.
    value = os.environ.get(var, "")
    if value and os.path.isabs(value):
        return Path(value)
    return Path.home() / default


def config_dir() -> Path:
    """`$XDG_CONFIG_HOME/afd`, default `~/.config/afd`."""
    return _xdg("XDG_CONFIG_HOME", ".config") / APP


def state_dir() -> Path:
    """`$XDG_STATE_HOME/afd`, default `~/.local/state/afd`: the store and its lock."""
    return _xdg("XDG_STATE_HOME", ".local/state") / APP


def data_dir() -> Path:
    """`$XDG_DATA_HOME/afd`, default `~/.local/share/afd`."""
    return _xdg("XDG_DATA_HOME", ".local/share") / APP


def runtime_dir() -> Path:
    """`$XDG_RUNTIME_DIR/afd`; without a runtime dir, `run/` under the state dir."""
    value = os.environ.get("XDG_RUNTIME_DIR", "")
    if value and os.path.isabs(value):
        return Path(value) / APP
    return state_dir() / "run"


def control_socket() -> Path:
    """The daemon's control socket, `control.sock` in the runtime dir."""
    return runtime_dir() / "control.sock"
