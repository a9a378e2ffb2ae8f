"""The resume executor: `scheduled → menu_answered → text_pasted → submitted → confirmed | failed`.

`decide` is pure: the journal intent (its step, when it was recorded, the
text) and the pane as it is now give the next move. Each step was recorded
before its effect, so each step checks the pane for whether that effect
happened; that is what makes a restart after SIGKILL send exactly one
continuation per episode (the pasted text still in the input row gets its
Enter; a submitted one that the agent took is settled; nothing is pasted
twice into a row that shows it).

A dead agent (the pane shows its shell, or a dead pane kept by
`remain-on-exit`) is started again with its resume args first — never on an
unknown answer about its processes, never while one of them lives.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

from afd.act import deliver

from afd.judge import screen
from afd.act import Finish, Go, Key, Liveness, Move, PaneView, Paste, Respawn, Result, Wait
from afd.world.tmux import Presence

STEPS = ("scheduled", "respawned", "menu_answered", "text_pasted", "submitted")
# How long a paste may take to show before afd believes it never arrived.
PASTE_SETTLE = timedelta(seconds=2)
# A second Enter only for text still in the input row this long after the first.
ENTER_SETTLE = timedelta(seconds=1)
MAX_ENTERS = 3


def _at(intent: dict, key: str) -> datetime | None:
    value = intent.get(key)
    return datetime.fromisoformat(value) if value else None


def decide(intent: dict, view: PaneView, now: datetime, settings: Mapping) -> Move:
    if view.presence is Presence.GONE:
        return Finish(Result.ABANDONED, "the pane is gone; nothing more was sent")
    if view.presence is Presence.UNKNOWN:
        return Wait("tmux did not answer about the pane")
    step = intent.get("step", "scheduled")
    step_at = _at(intent, "step_at") or now
    text = intent["text"]
    timeout = timedelta(seconds=float(settings.get("deliver_timeout", 30.0)))
    guard = float(settings.get("typing_guard", 20.0))

    # A step recorded by an earlier run of afd may have stopped before its
    # effect; one recorded by this run had its effect handed to tmux.
    earlier = intent.get("run") != settings.get("run")
    if step == "submitted":
        return _after_enter(intent, view, now, step_at, timeout, earlier)
    if step == "text_pasted":
        return _after_paste(intent, view, now, step_at, timeout, guard, earlier)
    if step == "respawned":
        return _after_respawn(intent, view, now, step_at, timeout, guard)
    return _deliver(intent, view, now, guard)


def _deliver(intent: dict, view: PaneView, now: datetime, guard: float) -> Move:
    """From `scheduled` or `menu_answered`: answer a menu, or paste the continuation."""
    if view.dead or view.shell:
        return _respawn(intent, view, now, guard)
    hold = deliver.typing_hold(view, now, guard)
    menu = screen.find_menu(view.rows)
    if menu is not None:
        kind = screen.menu_kind(menu)
        if kind == screen.MenuKind.LIMIT_INCREASE:
            return Finish(Result.NEEDS_HUMAN, "answer the agent's question about requesting a limit increase")
        wanted = {screen.MenuKind.RATE_LIMIT_OPTIONS: screen.STOP_AND_WAIT, screen.MenuKind.SWITCH_MODEL: screen.KEEP_MODEL}.get(kind)
        if wanted is None:
            return Finish(Result.NEEDS_HUMAN, f"a menu afd does not know is open ({menu.title or menu.options[0]})")
        if hold and hold != "your text is in the agent's input row":
            return Wait(hold=hold)
        key = deliver.menu_key(menu, wanted)
        if key is None:
            return Finish(Result.NEEDS_HUMAN, f'choose in the agent\'s menu: it has no "{wanted}" option')
        if key == "Enter":
            return Go("menu_answered", Key("Enter"), {"menu": wanted})
        return Go(intent.get("step", "scheduled"), Key(key))
    if hold:
        return Wait(hold=hold)
    if view.agent in ("claude", "codex", "devin") and screen.composer_text(view.agent, view.rows) is None:
        return Wait("the agent's input row is not on screen")
    return Go("text_pasted", Paste(intent["text"]))


def _respawn(intent: dict, view: PaneView, now: datetime, guard: float) -> Move:
    if view.agent_alive is Liveness.UNKNOWN:
        return Wait("cannot tell whether the old agent's processes are gone")
    if view.agent_alive is Liveness.ALIVE:
        return Wait("a process of the old agent still runs")
    argv = intent.get("respawn_argv")
    if not argv or not intent.get("cwd"):
        return Finish(Result.FAILED, "the agent has exited and afd knows no command to resume it")
    if view.in_mode:
        return Wait(hold="the pane is in copy mode (or another tmux mode)")
    if view.client_idle is not None and view.client_idle < guard:
        return Wait(hold="you are typing in this pane")
    return Go("respawned", Respawn(intent["cwd"], tuple(argv)))


def _after_respawn(intent: dict, view: PaneView, now: datetime, step_at: datetime, timeout: timedelta, guard: float) -> Move:
    ready = not view.dead and not view.shell and screen.composer_text(view.agent, view.rows) is not None
    if ready and not screen.busy(view.rows):
        return _deliver({**intent, "step": "respawned"}, view, now, guard)
    if view.dead and now - step_at > timeout:
        return Finish(Result.FAILED, "the agent started with its resume args exited again")
    if now - step_at > 2 * timeout:
        return Finish(Result.FAILED, "the agent started with its resume args did not become ready")
    return Wait("waiting for the resumed agent to be ready")


def _after_paste(intent: dict, view: PaneView, now: datetime, step_at: datetime, timeout: timedelta, guard: float, earlier: bool) -> Move:
    text = intent["text"]
    if screen.text_seen(text, view.agent, view.rows):
        return Go("submitted", Key("Enter"), {"enters": 1, "submitted_at": now.isoformat()})
    if now - step_at < PASTE_SETTLE:
        return Wait("waiting for the pasted text to show")
    held = screen.composer_text(view.agent, view.rows)
    if held:
        return Finish(Result.FAILED, "the agent's input row holds other text; nothing was submitted")
    if earlier and held == "" and not intent.get("repasted") and deliver.typing_hold(view, now, guard) is None:
        # Recorded by a run that stopped, perhaps before pasting: the row is empty, so paste it once more.
        return Go("text_pasted", Paste(text), {"repasted": True})
    if now - step_at > timeout:
        return Finish(Result.FAILED, "the pasted text never showed in the agent's input row")
    return Wait("waiting for the pasted text to show")


def _after_enter(intent: dict, view: PaneView, now: datetime, step_at: datetime, timeout: timedelta, earlier: bool) -> Move:
    text = intent["text"]
    sent_at = _at(intent, "submitted_at") or step_at
    if screen.text_seen(text, view.agent, view.rows):
        enters = int(intent.get("enters", 1))
        if earlier and now - step_at >= ENTER_SETTLE and enters < MAX_ENTERS:
            # Still in the input row, and the run that recorded the Enter stopped: perhaps before pressing it.
            return Go("submitted", Key("Enter"), {"enters": enters + 1, "submitted_at": sent_at.isoformat()})
        if now - sent_at > timeout:
            return Finish(Result.FAILED, "the continuation stayed in the agent's input row; Enter did not submit it")
        return Wait("waiting for the agent to take the continuation")
    if deliver.landed(view, text):
        return Finish(Result.CONFIRMED, "the agent took the continuation and went to work", sent_at=sent_at)
    if now - sent_at > timeout:
        return Finish(Result.UNCONFIRMED, "sent, but the agent was not seen to go to work in time", sent_at=sent_at)
    return Wait("waiting for the agent to go to work")
