"""Will the target agent's launch command run in this pane? Resolved the way the pane's shell would.

A swap must not stop the old agent and then find the new one missing, so
the exact command is resolved first against the PATH of the pane's own
process (a user's `~/.local/bin` is on the pane's PATH, not necessarily on
the daemon's), and the swap starts that very file.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence


def pane_path(pane_pid: int) -> str | None:
    """The PATH in the environment of the pane's process; None when it cannot be read."""
    try:
        with open(f"/proc/{pane_pid}/environ", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    for item in data.split(b"\0"):
        if item.startswith(b"PATH="):
            return item[5:].decode("utf-8", errors="replace")
    return None


def resolve(argv: Sequence[str], path: str | None) -> str | None:
    """The executable the pane's shell would run for `argv[0]`, or None when there is none."""
    if not argv:
        return None
    word = argv[0]
    if os.sep in word:
        return word if os.path.isfile(word) and os.access(word, os.X_OK) else None
    return shutil.which(word, path=path if path is not None else os.environ.get("PATH", os.defpath))
