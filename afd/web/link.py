"""The dashboard's way to the daemon: its control socket, exactly as the CLI uses it.

Calls block, so the app runs them on worker threads. A failure comes back as
`Refused` carrying the HTTP status the seed's contract gives it: 400 for a
bad request, 409 for afd's refusal (with its one line), 503 when the daemon
is gone, 504 when it did not confirm in time.
"""

from __future__ import annotations

from pathlib import Path

from afd.daemon import control
from afd.errors import EXIT_USAGE, AfdError

UNCONFIRMED = "the daemon did not confirm in time; check the ledger before retrying"
SETTLE_TIMEOUT = 90.0  # how long a handoff may take to settle before the page is told 504


_FAILURES = (control.ControlError, control.DaemonUnavailable, OSError)


class Refused(AfdError):
    """The daemon refused or could not confirm; `status` is the HTTP answer the page gets."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class DaemonLink:
    def __init__(self, socket_path: Path | str, timeout: float = 10.0):
        self.path = socket_path
        self.timeout = timeout

    def ask(self, cmd: str, args: dict | None = None) -> object:
        try:
            return control.request(self.path, cmd, args or {}, timeout=self.timeout)
        except _FAILURES as exc:
            raise _refused(exc) from None

    def ask_and_wait(self, cmd: str, args: dict, settle_timeout: float = SETTLE_TIMEOUT) -> dict:
        """A request that streams once more when its action settles (`afd handoff` without --no-wait)."""
        try:
            sub = control.subscribe(self.path, cmd, args, timeout=self.timeout)
        except _FAILURES as exc:
            raise _refused(exc) from None
        result = dict(sub.result or {})
        try:
            # The stream's socket blocks until the outcome; bound it so the page hears 504, not nothing.
            sub.settimeout(settle_timeout)
            settled = next(iter(sub), None)
        except OSError:
            settled = None
        finally:
            sub.close()
        if settled is None:
            raise Refused(504, f"{UNCONFIRMED} (journal {result.get('journal')})")
        return {**result, **dict(settled)}

    def subscribe(self, cmd: str, args: dict | None = None) -> control.Subscription:
        return control.subscribe(self.path, cmd, args or {}, timeout=self.timeout)


def _refused(exc: BaseException) -> Refused:
    if isinstance(exc, control.DaemonTimeout):
        return Refused(504, UNCONFIRMED)
    if isinstance(exc, control.DaemonUnavailable):
        return Refused(503, "afd is not running")
    if isinstance(exc, control.ControlError):
        return Refused(400 if exc.code == EXIT_USAGE else 409, str(exc))
    return Refused(503, f"cannot reach the daemon: {exc}")
