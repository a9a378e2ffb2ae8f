"""Which session a command runs in: `$TMUX_PANE`, checked against the process tree.

`$TMUX_PANE` is only a claim (anyone can set it), so the daemon believes it
only when the calling process — its pid as the kernel reports it for the
control socket (SO_PEERCRED), not as the client says — descends from that
pane's process on the server afd watches.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import psutil

from afd.errors import AfdError
from afd.record.types import SessionRecord
from afd.world import tmux


@dataclass(frozen=True, slots=True)
class Caller:
    session: SessionRecord
    pane: tmux.PaneInfo  # as tmux listed it just now (its cwd is where the caller's pane is)


class CallerError(AfdError):
    """The caller is not (provably) in a session; the message is one line for it."""


def ancestors(pid: int) -> set[int]:
    """`pid` and every process above it; empty when it is gone."""
    try:
        proc = psutil.Process(pid)
        return {proc.pid, *(p.pid for p in proc.parents())}
    except psutil.Error:
        return set()


def verified_session(server: tmux.ServerRef, sessions: Iterable[SessionRecord], pane_id: str | None,
                     peer_pid: int | None) -> Caller:
    """The live session whose pane the caller runs in, or CallerError saying why not."""
    if not pane_id:
        raise CallerError("run this from inside an afd session's pane ($TMUX_PANE is not set)")
    if peer_pid is None:
        raise CallerError("afd could not tell which process is asking, so it cannot check the pane")
    inv = tmux.list_panes(server)
    if not inv.answered:
        raise CallerError(f"tmux did not answer ({inv.error}); try again")
    pane = inv.pane(pane_id)
    if pane is None:
        raise CallerError(f"pane {pane_id} is not on the tmux server afd watches")
    if pane.pane_pid not in ancestors(peer_pid):
        raise CallerError(f"this command does not run in pane {pane_id} ($TMUX_PANE does not match the process tree)")
    rec = next((r for r in sessions if r.pane_id == pane_id and r.state != "gone" and r.server_socket == inv.socket_path), None)
    if rec is None:
        raise CallerError(f"pane {pane_id} is not an afd session; `afd sessions adopt {pane_id}` makes it one")
    return Caller(rec, pane)


def session_around(server: tmux.ServerRef, sessions: Iterable[SessionRecord], peer_pid: int | None) -> SessionRecord | None:
    """The live session whose pane the process `peer_pid` runs in, found from the process tree alone.

    For commands an agent must not run at all (`afd web` would log it in to
    the dashboard): `$TMUX_PANE` is not asked, since an agent can unset it.
    Raises CallerError when that cannot be established.
    """
    if peer_pid is None:
        raise CallerError("afd could not tell which process is asking, so it cannot rule out an agent's pane")
    inv = tmux.list_panes(server)
    if not inv.answered:
        raise CallerError(f"tmux did not answer ({inv.error}), so afd cannot rule out an agent's pane; try again")
    above = ancestors(peer_pid)
    panes = {p.pane_id for p in inv.panes if p.pane_pid in above}
    return next((r for r in sessions if r.pane_id in panes and r.state != "gone" and r.server_socket == inv.socket_path), None)
