"""afd: a supervisor that keeps coding agents in tmux working past their plan limits."""

from __future__ import annotations

__version__ = "0.2.0"

PROJECT = "afd"
ENTRY_POINT_GROUP = "afd.detectors"


def __getattr__(name: str):
    # `hookimpl` is made on first use: pluggy costs about 10 ms to import, and
    # commands that load no plugin (`afd statusline`, run on every refresh of
    # Claude Code's status line) must not pay for it.
    if name == "hookimpl":
        import pluggy

        marker = pluggy.HookimplMarker(PROJECT)
        globals()["hookimpl"] = marker
        return marker
    raise AttributeError(f"module 'afd' has no attribute {name!r}")
