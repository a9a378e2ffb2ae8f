"""Exit codes a script can rely on, and the one exception type for failures a user can act on.

Its own module so that the daemon side (control socket, requests) can raise
these without importing the command line.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAIL = 1  # a check found problems
EXIT_USAGE = 2  # bad input: missing file, unknown agent, bad flag value
EXIT_DAEMON_DOWN = 3
EXIT_CONFIG = 78  # EX_CONFIG: the config is invalid; systemd must not restart-loop on it


class UserError(Exception):
    """An expected failure: printed as one line, no traceback."""

    def __init__(self, message: str, code: int = EXIT_USAGE):
        super().__init__(message)
        self.code = code
