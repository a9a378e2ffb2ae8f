"""What a session's pane shows at one instant, gathered for an executor to decide on (`PaneView`)."""

from __future__ import annotations

import time
from datetime import datetime

from afd.act import Liveness, PaneView
from afd.kit.resettime import local_zone
from afd.kit.text import capture_rows
from afd.model import LIMITED_STATES, AgentSpec, Clock, IdentityKind
from afd.world import tmux


def liveness(ident) -> Liveness:
    if ident is None:
        return Liveness.UNKNOWN
    if ident.kind is IdentityKind.KNOWN:
        return Liveness.ALIVE
    if ident.kind is IdentityKind.NONE:
        return Liveness.GONE
    return Liveness.UNKNOWN


def view_of(server: tmux.ServerRef, rec, pane, ident, now: datetime, spec: AgentSpec | None = None) -> PaneView:
    """A fresh capture of the session's pane, its tmux mode, its client's last key and its agent's liveness.

    `spec` is the session's agent's (how it draws its input row).
    """
    if pane is None:
        return PaneView(presence=tmux.Presence.GONE, rows=(), agent=rec.agent if rec else None)
    result = tmux.capture_panes(server, [pane.pane_id])[pane.pane_id]
    if result.presence is not tmux.Presence.PRESENT:
        return PaneView(presence=result.presence, rows=(), agent=rec.agent)
    answered, activity = tmux.client_activity(server, pane.pane_id)
    # client_activity is wall-clock time; measure it against the wall clock, not the poll's instant.
    idle = None if activity is None else max(0.0, time.time() - activity)
    if answered is tmux.Presence.UNKNOWN:
        idle = 0.0  # cannot tell: assume someone is typing
    return PaneView(
        presence=tmux.Presence.PRESENT,
        rows=tuple(capture_rows(result.text or "")),
        agent=rec.agent,
        spec=spec,
        in_mode=pane.in_mode,
        dead=pane.dead,
        shell=not pane.dead and ident is not None and ident.kind is IdentityKind.NONE,
        agent_alive=liveness(ident),
        client_idle=idle,
        session_state=rec.state,
        limited=rec.state in LIMITED_STATES,
        clock=Clock(now=now, local_zone=local_zone()),
    )
