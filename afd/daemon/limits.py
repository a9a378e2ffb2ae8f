"""The daemon's share of the process table's limits: open files.

Linux starts a user's processes with a soft limit of 1,024 open files and a
far higher hard limit (systemd: 524,288); the soft one stays low only for
programs that still use select(). afd uses selectors and poll, so it takes
the hard limit at start: a burst of tmux calls, control clients and the
dashboard's connections must not meet the soft limit's wall. The dashboard
keeps a reserve below whatever limit this leaves (afd/web/gate.py).
"""

from __future__ import annotations

import logging
import resource

log = logging.getLogger("afd.daemon")


def _kernel_ceiling() -> int:
    # With an unlimited hard limit, the kernel's own per-process maximum is the most setrlimit takes.
    try:
        with open("/proc/sys/fs/nr_open", encoding="ascii") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return 1 << 20


def raise_open_files() -> tuple[int, int]:
    """Raise the soft RLIMIT_NOFILE to the hard one; the (soft, hard) in force after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else _kernel_ceiling()
    if soft == resource.RLIM_INFINITY or soft >= target:
        return soft, hard
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError) as exc:
        log.warning("could not raise the open-files limit from %d to %d: %s", soft, target, exc)
    return resource.getrlimit(resource.RLIMIT_NOFILE)
