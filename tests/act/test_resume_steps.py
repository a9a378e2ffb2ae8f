"""The resume executor's moves, as tables: journal step + what the pane shows → one move."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from afd.act import Finish, Go, Key, Liveness, PaneView, Paste, Respawn, Result, Wait, deliver
from afd.act.resume import decide
from afd.judge import screen
from afd.pluginset import load_plugins
from afd.testing import banners, screens
from afd.world.tmux import Presence

NOW = datetime(2026, 7, 13, 12, 0, tzinfo=timezone.utc)
TEXT = "Your usage limit has reset. Continue the task from where you stopped."
SETTINGS = {"deliver_timeout": 30.0, "typing_guard": 20.0, "run": "this-run"}
EARLIER = {"run": "a-run-that-was-killed"}
# The built-in plugins' specs: how each agent draws its input row is theirs to say.
SPECS = load_plugins(None, entry_points=False).agents
STOP_AND_WAIT = "Stop and wait for limit to reset"
KEEP_MODEL = "Keep current model"


def rows(agent: str, family: str | None = None, params=None, composer: str = "", busy: bool = False, extra=()) -> tuple[str, ...]:
    transcript = tuple(banners.render(family, params) if family else ()) + tuple(extra)
    hidden = family is not None and banners.family(family).replaces_composer
    status = screens.spinner(agent, 3.0) if busy else None
    screen_ = screens.Screen(agent=agent, width=120, height=40, cwd="/w", transcript=transcript, status=status,
                             composer=composer, composer_hidden=hidden)
    return tuple(screens.draw(screen_))


def view(agent="claude", family="claude.session", **kw) -> PaneView:
    shown = kw.pop("rows", None) or rows(agent, family, kw.pop("params", None), kw.pop("composer", ""), kw.pop("busy", False))
    base = dict(presence=Presence.PRESENT, rows=shown, agent=agent, spec=SPECS[agent], agent_alive=Liveness.ALIVE,
                session_state="limited", limited=True)
    return PaneView(**{**base, **kw})


def intent(step="scheduled", at=NOW, **kw) -> dict:
    base = {"step": step, "step_at": at.isoformat(), "text": TEXT, "cwd": "/w", "respawn_argv": ["claude", "--continue"], "run": "this-run"}
    return {**base, **kw}


def menu_params(selected, options=("Upgrade your plan", "Stop and wait for limit to reset")):
    return {"selected": selected, "options": list(options)}


CASES = [
    ("free pane: paste", intent(), view(), Go("text_pasted", Paste(TEXT))),
    ("copy mode holds", intent(), view(in_mode=True), Wait(hold="the pane is in copy mode (or another tmux mode)")),
    ("a key 5 s ago holds", intent(), view(client_idle=5.0), Wait(hold="you are typing in this pane")),
    ("a key a minute ago does not", intent(), view(client_idle=60.0), Go("text_pasted", Paste(TEXT))),
    ("someone's text in the input row holds", intent(), view(composer="half a thought"), Wait(hold="your text is in the agent's input row")),
    ("menu: Upgrade highlighted, move down", intent(), view(family="claude.limit-menu", params=menu_params(1)), Go("scheduled", Key("Down"))),
    ("menu: Stop and wait highlighted, Enter", intent(), view(family="claude.limit-menu", params=menu_params(2)),
     Go("menu_answered", Key("Enter"), {"menu": STOP_AND_WAIT})),
    ("menu: four options, wanted above, move up", intent(),
     view(family="claude.limit-menu", params=menu_params(4, ("Stop and wait for limit to reset", "Don’t continue automatically",
                                                           "Switch to usage credits", "Upgrade your plan"))), Go("scheduled", Key("Up"))),
    ("menu without Stop and wait needs a human", intent(),
     view(family="claude.limit-menu", params=menu_params(1, ("Upgrade your plan", "Switch to usage credits"))),
     Finish(Result.NEEDS_HUMAN, 'choose in the agent\'s menu: it has no "Stop and wait for limit to reset" option')),
    ("codex switch modal: move off 'Switch'", intent(), view("codex", "codex.switch-model"), Go("scheduled", Key("Down"))),
    ("codex switch modal: Keep current model, Enter", intent(), view("codex", "codex.switch-model", params={"selected": 2}),
     Go("menu_answered", Key("Enter"), {"menu": KEEP_MODEL})),
    ("codex switch modal: never 'never show again'", intent(), view("codex", "codex.switch-model", params={"selected": 3}),
     Go("scheduled", Key("Up"))),
    ("codex limit-increase modal needs a human", intent(), view("codex", "codex.limit-increase"),
     Finish(Result.NEEDS_HUMAN, "answer the agent's question about requesting a limit increase")),
    ("a menu the agent's spec does not describe needs a human", intent(),
     view(family="claude.limit-menu", params=menu_params(2), spec=SPECS["devin"]),
     Finish(Result.NEEDS_HUMAN, "a menu afd does not know is open (⎿  You've hit your session limit · resets 6:50pm (UTC) What do you want to do?)")),
    ("menu answered and gone: paste", intent("menu_answered"), view(), Go("text_pasted", Paste(TEXT))),
    ("pasted text seen: Enter", intent("text_pasted"), view(composer=TEXT),
     Go("submitted", Key("Enter"), {"enters": 1, "submitted_at": NOW.isoformat()})),
    ("paste not shown yet: wait", intent("text_pasted", at=NOW - timedelta(seconds=1)), view(), Wait("waiting for the pasted text to show")),
    ("paste recorded, never made (crash): paste once more", intent("text_pasted", at=NOW - timedelta(seconds=5), **EARLIER), view(),
     Go("text_pasted", Paste(TEXT), {"repasted": True})),
    ("pasted by this run, slow to show: never a second paste", intent("text_pasted", at=NOW - timedelta(seconds=5)), view(),
     Wait("waiting for the pasted text to show")),
    ("pasted by this run, never shown: failed", intent("text_pasted", at=NOW - timedelta(seconds=31)), view(),
     Finish(Result.FAILED, "the pasted text never showed in the agent's input row")),
    ("pasted twice and still nothing: wait for the timeout", intent("text_pasted", at=NOW - timedelta(seconds=5), repasted=True, **EARLIER), view(),
     Wait("waiting for the pasted text to show")),
    ("other text in the row after the paste: fail, submit nothing", intent("text_pasted", at=NOW - timedelta(seconds=5)),
     view(composer="something else"), Finish(Result.FAILED, "the agent's input row holds other text; nothing was submitted")),
    ("Enter recorded, text still in the row (crash): Enter again", intent("submitted", at=NOW - timedelta(seconds=3), enters=1, **EARLIER),
     view(composer=TEXT), Go("submitted", Key("Enter"), {"enters": 2, "submitted_at": (NOW - timedelta(seconds=3)).isoformat()})),
    ("Enter just pressed, text still showing: wait", intent("submitted", at=NOW, enters=1), view(composer=TEXT),
     Wait("waiting for the agent to take the continuation")),
    ("Enter pressed by this run, text still showing: never a second Enter", intent("submitted", at=NOW - timedelta(seconds=3), enters=1),
     view(composer=TEXT), Wait("waiting for the agent to take the continuation")),
    ("submitted and busy: confirmed", intent("submitted", at=NOW - timedelta(seconds=3)), view(busy=True, session_state="working"),
     Finish(Result.CONFIRMED, "the agent took the continuation and went to work", sent_at=NOW - timedelta(seconds=3))),
    ("submitted, nothing moved: wait", intent("submitted", at=NOW - timedelta(seconds=3)), view(session_state="limited"),
     Wait("waiting for the agent to go to work")),
    ("submitted, nothing moved past the timeout: unconfirmed, not failed", intent("submitted", at=NOW - timedelta(seconds=31)), view(),
     Finish(Result.UNCONFIRMED, "sent, but the agent was not seen to go to work in time", sent_at=NOW - timedelta(seconds=31))),
    ("dead pane, old agent gone: respawn with resume args", intent(), view(dead=True, agent_alive=Liveness.GONE, rows=("",)),
     Go("respawned", Respawn("/w", ("claude", "--continue")))),
    ("shell back, liveness unknown: never respawn", intent(), view(shell=True, agent_alive=Liveness.UNKNOWN, rows=("$",)),
     Wait("cannot tell whether the old agent's processes are gone")),
    ("dead pane but an old process lives: never respawn", intent(), view(dead=True, agent_alive=Liveness.ALIVE, rows=("",)),
     Wait("a process of the old agent still runs")),
    ("respawned and ready: deliver", intent("respawned"), view(session_state="idle", limited=False), Go("text_pasted", Paste(TEXT))),
    ("pane gone: abandon", intent("submitted"), PaneView(presence=Presence.GONE, rows=(), agent="claude"),
     Finish(Result.ABANDONED, "the pane is gone; nothing more was sent")),
    ("tmux silent: wait, decide nothing", intent("submitted"), PaneView(presence=Presence.UNKNOWN, rows=(), agent="claude"),
     Wait("tmux did not answer about the pane")),
]


@pytest.mark.parametrize(("entry", "pane", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_resume_moves(entry, pane, expected):
    assert decide(entry, pane, NOW, SETTINGS) == expected


def test_menu_options_are_read_without_their_descriptions():
    shown = [
        "  Approaching rate limits",
        "  Switch to gpt-6-luna for lower credit usage?",
        "",
        "› 1. Switch to gpt-6-luna                   Fast and affordable model for easier tasks.",
        "  2. Keep current model",
        "  3. Keep current model (never show again)  Hide future rate limit reminders about switching models",
        "",
        "  enter select · esc back",
    ]
    menu = screen.find_menu(shown)
    assert menu.options == ("Switch to gpt-6-luna", "Keep current model", "Keep current model (never show again)")
    assert menu.highlighted == 0 and screen.limit_menu(SPECS["codex"], menu).answer == KEEP_MODEL
    assert deliver.menu_key(menu, KEEP_MODEL) == "Down"
    # The menu is the agent's to describe: to another agent's spec, it is a menu afd does not know.
    assert screen.limit_menu(SPECS["claude"], menu) is None


def test_delivery_never_presses_escape_or_types_text_as_keys():
    with pytest.raises(ValueError):
        deliver.press(None, "%1", "Escape")
    with pytest.raises(ValueError):
        deliver.press(None, "%1", "y")


def test_continuation_carries_the_message_and_the_task():
    assert deliver.continuation_text(None, "fix the login redirect") == f"{TEXT}\n\nThe task: fix the login redirect"
    assert deliver.continuation_text("Go on.", None) == "Go on."


@pytest.mark.parametrize(
    ("agent", "composer", "expected"),
    [("claude", "", ""), ("claude", "hello", "hello"), ("codex", "", ""), ("codex", "fix it", "fix it"), ("devin", "", "")],
)
def test_composer_text_reads_the_input_row(agent, composer, expected):
    assert screen.composer_text(SPECS[agent], rows(agent, composer=composer)) == expected


def test_the_input_row_is_read_from_the_agents_spec_not_its_name():
    import re

    from afd.model import AgentSpec, InputRow

    # A plugin's own agent: its glyph, its placeholder; no group: the rest of the row is what is typed.
    tool = AgentSpec(name="tool", executables=("tool",), command=("tool",),
                     input_rows=(InputRow(re.compile(r"^» ")),), input_placeholders=("Say something",))
    assert screen.composer_text(tool, ["output", "» Say something", "  footer"]) == ""
    assert screen.composer_text(tool, ["» fix it"]) == "fix it"
    assert screen.composer_text(tool, ["output", "  footer"]) is None and screen.reads_composer(tool)
    # An agent whose input row no plugin describes: not found, and not finding it proves nothing.
    bare = AgentSpec(name="bare", executables=("bare",), command=("bare",))
    assert screen.composer_text(bare, ["» fix it"]) is None and not screen.reads_composer(bare)
    assert not screen.text_seen("fix it", bare, ["a", "b"]) and screen.text_seen("fix it", bare, ["$ fix it"])
    # Claude's `❯` row is its input row only between two rules: a prompt in the transcript has the glyph too.
    assert screen.composer_text(SPECS["claude"], ["❯ an old prompt", "⏺ done"]) is None
    assert screen.composer_text(SPECS["claude"], ["❯ an old prompt", "─" * 20, "❯ new", "─" * 20]) == "new"
    # Codex's highlighted menu option has the input row's glyph.
    assert screen.composer_text(SPECS["codex"], ["› 1. Switch to gpt-6-luna", "  2. Keep current model"]) is None


def test_native_auto_continue_is_read_armed_then_cancelled():
    from afd.judge.screen import Native
    from afd.model import Clock

    clock = Clock(now=NOW, local_zone=timezone.utc)
    armed = rows("claude", "claude.native-armed")
    claude = SPECS["claude"]
    assert screen.native_continue(claude, armed, clock) == (Native.ARMED, datetime(2026, 7, 13, 21, 42, tzinfo=timezone.utc))
    assert screen.native_continue(claude, rows("claude", "claude.native-cancelled"), clock) == (Native.CANCELLED, None)
    assert screen.native_continue(claude, rows("claude", "claude.session"), clock) == (Native.NONE, None)
    # An agent whose plugin names no auto-continue has none, whatever its screen says.
    assert screen.native_continue(SPECS["codex"], armed, clock) == (Native.NONE, None)
