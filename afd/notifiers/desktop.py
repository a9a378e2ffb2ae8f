"""The `desktop` notifier: `notify-send` over the user's D-Bus session bus, where one exists.

A user service started by systemd has the bus in its environment; a daemon
started otherwise finds it at `$XDG_RUNTIME_DIR/bus` (the standard place)
when DBUS_SESSION_BUS_ADDRESS is not set. Without a bus there is no
desktop to notify, and the answer says so instead of failing silently.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess

from afd.config.notifiers import NotifierSettings
from afd.model import Notice
from afd.notifiers import answer
from afd.notifiers.answer import Answer


def session_bus() -> str | None:
    """The session bus address, or None when there is none."""
    address = os.environ.get("DBUS_SESSION_BUS_ADDRESS")
    if address:
        return address
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        path = os.path.join(runtime, "bus")
        try:
            if stat.S_ISSOCK(os.stat(path).st_mode):
                return f"unix:path={path}"
        except OSError:
            pass
    return None


def send(settings: NotifierSettings, notice: Notice) -> Answer:
    bus = session_bus()
    if bus is None:
        return answer.failed("no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS unset, no $XDG_RUNTIME_DIR/bus)")
    program = shutil.which("notify-send")
    if program is None:
        return answer.failed("notify-send is not installed (Debian/Ubuntu: libnotify-bin)")
    urgency = "critical" if notice.priority >= 5 else "normal" if notice.priority >= 3 else "low"
    body = notice.text + (f"\n{notice.where}" if notice.where else "")
    argv = [program, "--app-name=afd", f"--urgency={urgency}", "--", notice.title, body]
    try:
        done = subprocess.run(
            argv, env={**os.environ, "DBUS_SESSION_BUS_ADDRESS": bus}, capture_output=True,
            timeout=settings.timeout, start_new_session=True,
        )
    except subprocess.TimeoutExpired:
        return answer.retry(f"notify-send did not finish within {settings.timeout:g}s")
    except OSError as exc:
        return answer.failed(f"notify-send: {exc.strerror or exc}")
    said = done.stderr.decode("utf-8", "replace").strip().splitlines()
    if done.returncode == 0:
        return answer.sent("shown")
    return answer.retry(f"notify-send exit {done.returncode}" + (f": {said[0][:200]}" if said else ""))
