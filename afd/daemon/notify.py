"""The systemd notify protocol (sd_notify): one datagram to $NOTIFY_SOCKET.

No dependency is needed: the protocol is newline-separated `KEY=VALUE` lines in
one datagram to the AF_UNIX socket systemd names in the environment. When afd
is not started by systemd the variable is unset and every call is a silent
no-op returning False, so the daemon can call these unconditionally.
"""

from __future__ import annotations

import logging
import os
import socket
import time

from afd.display.text import neutral

log = logging.getLogger(__name__)


def _address(value: str) -> str | None:
    if value.startswith("@"):
        # An abstract socket: Linux names it with a leading NUL byte.
        return "\0" + value[1:]
    if value.startswith("/"):
        return value
    return None  # vsock: and other transports systemd may grow; not ours to speak


def notify(*lines: str) -> bool:
    """Send `lines` (each `KEY=VALUE`) as one datagram; True when it was sent."""
    value = os.environ.get("NOTIFY_SOCKET", "")
    if not value or not lines:
        return False
    address = _address(value)
    if address is None:
        log.warning("NOTIFY_SOCKET=%s is not a socket path afd can use; not notifying systemd", value)
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.sendto("\n".join(lines).encode(), address)
    except OSError as exc:
        # A lost notification must never take the daemon down; systemd's own
        # timeouts (start, watchdog) report the consequence.
        log.warning("could not notify systemd at %s: %s", value, exc)
        return False
    return True


def ready() -> bool:
    """Startup (or a reload) is complete."""
    return notify("READY=1")


def watchdog() -> bool:
    """The poll loop is alive; call it from the loop itself so a hung loop trips the watchdog."""
    return notify("WATCHDOG=1")


def status(text: str) -> bool:
    """A one-line summary shown by `systemctl --user status afd`."""
    # A newline would start a new KEY=VALUE assignment in the datagram; `systemctl status` prints the rest
    # to a terminal, and session names in it come from tmux.
    return notify("STATUS=" + neutral(" ".join(text.split())))


def reloading() -> bool:
    """A reload has begun; send ready() when it is done."""
    # systemd 253+ wants the monotonic time with RELOADING=1 (Type=notify-reload);
    # older versions ignore the extra line.
    usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
    return notify("RELOADING=1", f"MONOTONIC_USEC={usec}")


def stopping() -> bool:
    """Shutdown has begun."""
    return notify("STOPPING=1")


def watchdog_interval() -> float | None:
    """The watchdog timeout in seconds when systemd expects pings from this process, else None.

    Ping at least twice per interval (every half of it or less), as sd_watchdog_enabled advises.
    """
    raw_usec = os.environ.get("WATCHDOG_USEC", "")
    try:
        usec = int(raw_usec)
    except ValueError:
        return None
    if usec <= 0:
        return None
    raw_pid = os.environ.get("WATCHDOG_PID", "")
    if raw_pid:
        # The variables are inherited by children; only the named process is watched.
        try:
            if int(raw_pid) != os.getpid():
                return None
        except ValueError:
            return None
    return usec / 1_000_000
