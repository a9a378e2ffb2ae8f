"""An account as a person reads it: the name they gave it, or its agent and where it keeps its state (pure).

A configured account (`[accounts.claude-work]`) and an agent's default account
(`claude`) are shown by their names. An account no one named is keyed by its
agent and the directory (or variables) that select it,
`claude@/home/u/.claude-x` (`afd.judge.accounts.unnamed`); that key is for
matching, not for reading: a person reads `claude · ~/.claude-x`, a directory
under their home shortened to `~`, and one elsewhere, such as a temporary
directory, cut to its first and last parts (`codex · /tmp/…/codex-x`). The key
stays whole in `--json` and in a tooltip.

Imports nothing of afd: `afd status` with the daemon down labels accounts too.
"""

from __future__ import annotations

import os.path

SEPARATOR = " · "


def short_path(path: str, home: str | None) -> str:
    """`~/.claude-x` under `home`; `/tmp/…/codex-x` for a deeper path elsewhere; a short path as it is."""
    path = os.path.normpath(path)
    if home:
        home = os.path.normpath(home)
        if home != "/" and (path == home or path.startswith(home + "/")):
            return "~" + path[len(home):]
    parts = [p for p in path.split("/") if p]
    if path.startswith("/") and len(parts) > 2:
        return f"/{parts[0]}/…/{parts[-1]}"
    return path


def label(name: str | None, home: str | None) -> str | None:
    """How `name` is shown: itself, unless it is the key of an account no one named."""
    if not name or "@" not in name:
        return name
    agent, _, where = name.partition("@")
    if os.path.isabs(where):
        return agent + SEPARATOR + short_path(where, home)
    # An account selected by variables that name no directory: `gemini@VAR=value,…`.
    return agent + SEPARATOR + where
