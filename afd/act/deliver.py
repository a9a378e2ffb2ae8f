"""Putting text into an agent's pane safely: for resumes now, handoff briefs and jobs later.

The rules (issue "Wait", DESIGN "Acting on a limit"):

* text goes in as one bracketed paste (`load-buffer` + `paste-buffer -p`),
  never as typed keys, so tmux never reads it as key names and a newline
  in it does not submit half of it;
* Enter goes as its own key, and only once the pasted text is seen in the
  agent's input row;
* never Escape: it interrupts an agent and dismisses its dialogs;
* never over a person: not into a pane in copy mode (or any tmux mode), not
  while an attached client typed within `typing_guard`, not into an input
  row that holds someone's text;
* menus are answered by the literal text of the wanted option, moving the
  highlight with arrow keys until that row is highlighted; never by number.

The deciding functions are pure; `paste` and `press` are the only effects.
"""

from __future__ import annotations

from datetime import datetime

from afd.act import PaneView
from afd.judge import screen
from afd.world import tmux

DEFAULT_MESSAGE = "Your usage limit has reset. Continue the task from where you stopped."
# Keys delivery may press. Escape is not among them, on purpose.
ALLOWED_KEYS = frozenset({"Enter", "Up", "Down"})


def continuation_text(message: str | None, mission: str | None) -> str:
    """What a resume sends: the configured message (or the default), then the task when there is one."""
    text = (message or DEFAULT_MESSAGE).strip()
    if mission and mission.strip():
        text += f"\n\nThe task: {mission.strip()}"
    return text


def typing_hold(view: PaneView, now: datetime, typing_guard: float, *, ours: str | None = None) -> str | None:
    """Why typing into this pane now would be typing over a person; None when it is free."""
    if view.in_mode:
        return "the pane is in copy mode (or another tmux mode)"
    if view.client_idle is not None and view.client_idle < typing_guard:
        return "you are typing in this pane"
    held = screen.composer_text(view.spec, view.rows)
    if held and not (ours and screen.text_seen(ours, view.spec, view.rows)):
        return "your text is in the agent's input row"
    return None


def menu_key(menu: screen.Menu, wanted: str) -> str | None:
    """The key that brings `wanted` closer ("Up"/"Down") or takes it ("Enter"); None if it is not there."""
    target = menu.index_of(wanted)
    if target is None or menu.highlighted is None:
        return None
    if menu.highlighted == target:
        return "Enter"
    return "Down" if target > menu.highlighted else "Up"


def landed(view: PaneView, text: str) -> bool:
    """The submitted text left the input row and the agent took it: busy, or the pane moved on."""
    if screen.text_seen(text, view.spec, view.rows):
        return False
    return screen.busy(view.spec, view.rows) or view.session_state == "working" or not view.limited


def paste(server: tmux.ServerRef, pane_id: str, text: str) -> tmux.ActionResult:
    """One bracketed paste, no Enter: the caller presses it once the text is seen."""
    return tmux.send_text(server, pane_id, text, enter=False)


def press(server: tmux.ServerRef, pane_id: str, key: str) -> tmux.ActionResult:
    if key not in ALLOWED_KEYS:
        raise ValueError(f"delivery does not press {key!r}")
    return tmux.send_keys(server, pane_id, key)
