"""Typing an envelope into a pane: one bracketed paste, then Enter as its own key; never Escape.

The outbox decides when (the session idle and not limited, its text seen
before Enter); this module only refuses a pane a person is using and does
the two effects. Kept this small so it can give way to the shared delivery
module of the wait feature without the outbox changing.
"""

from __future__ import annotations

from afd import tmux


def hold(pane: tmux.PaneInfo) -> str | None:
    """Why typing into this pane now would be typing over a person; None when it is free."""
    if pane.dead:
        return "the pane's process has exited"
    if pane.in_mode:
        return "the pane is in copy mode (or another tmux mode)"
    return None


def paste(server: tmux.ServerRef, pane_id: str, text: str) -> tmux.ActionResult:
    """One bracketed paste, no Enter: Enter goes only once the text is seen in the input row."""
    return tmux.send_text(server, pane_id, text, enter=False)


def submit(server: tmux.ServerRef, pane_id: str) -> tmux.ActionResult:
    return tmux.send_keys(server, pane_id, "Enter")
