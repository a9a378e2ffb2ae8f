"""Where afd's state lives: the database file, the lock file beside it, and whether a daemon holds that lock.

Standard library only: `afd status` asks these questions before it knows
whether it needs the store at all.
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

from afd.kit import paths

DB_NAME = "state.db"
LOCK_NAME = "state.lock"


def default_path() -> Path:
    return paths.state_dir() / DB_NAME


def lock_path_for(db_path: Path) -> Path:
    return db_path.with_name(LOCK_NAME)


def lock_is_held(path: Path | str) -> bool:
    """Whether some process holds the lock (a daemon is running), without taking it."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return True
        raise
    finally:
        os.close(fd)  # also drops the shared lock if it was granted
    return False


def lock_holder_pid(path: Path | str) -> int | None:
    """The pid the last holder wrote; meaningful only while `lock_is_held` is true."""
    try:
        text = Path(path).read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
