"""Session names for adopted panes, and which panes the user asked afd to ignore."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Collection, Sequence

_VALID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+-]{0,63}")


def is_valid_name(name: str) -> bool:
    """Session names appear in branch names (`afd/NAME`) and tmux targets: keep them plain."""
    # fullmatch: `$` would let a trailing newline through, and a name is printed one per line.
    return bool(_VALID.fullmatch(name)) and ".." not in name


def unique_name(base: str, taken: Collection[str]) -> str:
    """``base``, or ``base-2``, ``base-3``… — the first not already taken."""
    cleaned = re.sub(r"[^A-Za-z0-9._:@+-]", "-", base).strip("-") or "pane"
    if cleaned not in taken:
        return cleaned
    n = 2
    while f"{cleaned}-{n}" in taken:
        n += 1
    return f"{cleaned}-{n}"


def is_ignored(location: str, patterns: Sequence[str]) -> bool:
    """`watch_ignore` globs match the pane's `session:window.pane` location."""
    return any(fnmatch.fnmatchcase(location, p) for p in patterns)
