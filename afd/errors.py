"""Exit codes a script can rely on, and `AfdError`, the root of every failure afd raises on purpose.

Its own module so that the daemon side (control socket, requests) can raise
these without importing the command line. Each error carries the exit code
the command line ends with when it reaches the top (`code`), so a failure is
one line and a distinct code, never a traceback.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAIL = 1  # a check found problems
EXIT_USAGE = 2  # bad input: missing file, unknown agent, bad flag value
EXIT_DAEMON_DOWN = 3
EXIT_CONFIG = 78  # EX_CONFIG: the config is invalid; systemd must not restart-loop on it


class AfdError(Exception):
    """A failure afd expects and can name: printed as one line, no traceback; `code` is the exit code."""

    code: int = EXIT_FAIL

    def __init__(self, message: str = "", code: int | None = None):
        super().__init__(message)
        if code is not None:
            self.code = code


class UserError(AfdError):
    """Bad input from the user (a flag, a name, a file): fixed by asking again differently."""

    code = EXIT_USAGE
