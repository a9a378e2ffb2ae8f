"""The bearer token of an ntfy or webhook notifier: read from its 0600 file at each send, never kept."""

from __future__ import annotations

from pathlib import Path

from afd.config.notifiers import token_file_problem
from afd.errors import AfdError


class TokenProblem(AfdError):
    """The token file cannot be used; the message says why, in one line."""


def bearer(token_file: Path | None) -> dict[str, str]:
    """The Authorization header for `token_file`, or none without one.

    Read at each send, so a rotated token is used at once; checked again each
    time, so a file made readable by others since the config was loaded is
    refused rather than used.
    """
    if token_file is None:
        return {}
    why = token_file_problem(token_file)
    if why is not None:
        raise TokenProblem(f"token_file: {why}")
    token = token_file.read_text(encoding="utf-8").strip()
    if not token or any(c in token for c in "\r\n") or not token.isascii():
        raise TokenProblem(f"token_file: {token_file} does not hold one line of ASCII text")
    return {"Authorization": f"Bearer {token}"}
