"""What one poll found, in a line for systemd's status and `afd run --once`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PollSummary:
    server_running: bool
    answered: bool
    panes: int
    sessions: int
    captured: int
    limited: tuple[str, ...]
    error: str | None = None
    socket: str | None = None  # the server's socket, said when it is not running

    def line(self) -> str:
        if not self.answered:
            return f"tmux did not answer: {self.error}"
        if not self.server_running:
            return f"no tmux server is running at {self.socket or 'its socket'}; nothing to watch yet"
        text = f"{self.sessions} session{'s' if self.sessions != 1 else ''} in {self.panes} pane{'s' if self.panes != 1 else ''}"
        if self.limited:
            text += f"; limited: {', '.join(self.limited)}"
        return text
