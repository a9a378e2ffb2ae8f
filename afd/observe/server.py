"""The inventory's first reading: whether the tmux server answered and runs, and what that means for its sessions.

Pure: the listing (afd/world/tmux.py) and the state last seen in, the new
state, the events a change of it is, and the observation every session of
the server gets while it is down or silent, out.
"""

from __future__ import annotations

from dataclasses import dataclass

from afd.judge import sessions
from afd.world.tmux import Inventory


@dataclass(frozen=True, slots=True)
class ServerSeen:
    state: str  # "running" | "down" | "unanswered"
    told: tuple[tuple[str, str], ...]  # (kind, message) events: said on a change of state, and a partial listing
    # What each session of the server observes when it is not running (None: it runs, its panes are bound).
    sessions_see: sessions.Observation | None


def seen(was: str | None, inv: Inventory, socket: str) -> ServerSeen:
    """The server's state after a listing; `was` the state before (None: the first listing), `socket` where it is."""
    if inv.answered and inv.server_running:
        told = [] if was == "running" else [("tmux.up", f"watching tmux server {inv.socket_path} (pid {inv.server_pid})")]
        if inv.error:
            told.append(("tmux.partial", f"tmux listed panes with problems: {inv.error}"))
        return ServerSeen("running", tuple(told), None)
    if not inv.answered:
        told = [("tmux.unanswered", f"tmux did not answer: {inv.error}; sessions are unknown until it does")]
        return ServerSeen("unanswered", tuple(told) if was != "unanswered" else (), sessions.ServerUnanswered())
    told = [("tmux.down", f"no tmux server is running at {socket}; nothing to watch" + (" yet" if was is None else " now"))]
    return ServerSeen("down", tuple(told) if was != "down" else (), sessions.PaneClosed("its tmux server is not running"))
