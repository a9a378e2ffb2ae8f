"""afd: a supervisor that keeps coding agents in tmux working past their plan limits."""

import pluggy

__version__ = "0.2.0"

PROJECT = "afd"
ENTRY_POINT_GROUP = "afd.detectors"

hookimpl = pluggy.HookimplMarker(PROJECT)
