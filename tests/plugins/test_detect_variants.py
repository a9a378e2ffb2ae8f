"""Whole-screen variants of every banner family, judged the way `afd detect` judges them.

The corpus holds one example per family; these tables vary each one the way
real panes do (other times and zones, year ends, narrow panes and their wrap
points, markers, several banners, menus, the auto-continue line) and set the
shape traps (diffs, grep, cat, replies, the prompt box). Each screen goes
through the built-in detector and both gates with the default config
(`tail_lines` 3, `stability_polls` 2), as two identical polls.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from datetime import datetime, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from afd.judge.gates import judge
from afd.kit.text import capture_rows
from afd.model import Clock
from harness import load_builtin_plugin

PLUGINS = {name: load_builtin_plugin(name) for name in ("claude", "codex", "devin")}
NOW = "2026-07-13T09:00:00+00:00"  # a Monday


def verdict(agent: str, text: str, now: str = NOW, zone: str = "UTC", polls: int = 2) -> tuple[bool, str | None]:
    """(limited, reset_at as ISO UTC or None) for ``polls`` identical captures of ``text``."""
    plugin = PLUGINS[agent]
    (spec,) = plugin.afd_agents()
    clock = Clock(now=datetime.fromisoformat(now), local_zone=timezone.utc if zone == "UTC" else ZoneInfo(zone))
    captures = [capture_rows(text) for _ in range(polls)]
    detections = [plugin.afd_detect(agent=agent, lines=rows, clock=clock, pattern=None) for rows in captures]
    v = judge(agent, captures, detections, spec.chrome, tail_lines=3, stability_polls=2)
    reset = v.reset_at.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if v.limited and v.reset_at else None
    return v.limited, reset


# --- claude ------------------------------------------------------------------------

CLAUDE_WORK = """\
> fix the failing test in tests/test_checkout.py

⏺ I'll start by reading the failing test.

⏺ Bash(pytest -q tests/test_checkout.py)
  ⎿  ..F.
     1 failed, 3 passed in 0.41s
"""


def claude_screen(body: str, width: int = 80, footer: str = "frameless") -> str:
    if footer == "frameless":
        bottom = f"{'─' * width}\n❯ \n{'─' * width}\n  ⏵⏵ accept edits on (shift+tab to cycle)\n"
    elif footer == "box":
        bottom = f"╭{'─' * (width - 2)}╮\n│ > {' ' * (width - 5)}│\n╰{'─' * (width - 2)}╯\n  ? for shortcuts\n"
    else:
        bottom = footer
    return CLAUDE_WORK + "\n" + body.strip("\n") + "\n\n" + bottom


CLAUDE_LIMITS = [
    # times and zones
    pytest.param("  ⎿  You've hit your limit · resets 12am (Asia/Kolkata)", NOW, "UTC", "2026-07-13T18:30:00Z", id="midnight-kolkata"),
    pytest.param("  ⎿  You've hit your limit · resets 12pm (Asia/Kolkata)", NOW, "UTC", "2026-07-14T06:30:00Z", id="noon-kolkata-already-past"),
    pytest.param("  ⎿  You've hit your session limit · resets 12:30am (Australia/Lord_Howe)", NOW, "UTC", "2026-07-13T14:00:00Z", id="half-past-midnight-lord-howe"),
    pytest.param("  ⎿  You've hit your session limit · resets 9:05pm (America/Argentina/Buenos_Aires)", NOW, "UTC", "2026-07-14T00:05:00Z", id="three-part-zone"),
    pytest.param("  ⎿  You've hit your limit · resets 11pm (Etc/GMT-14)", NOW, "UTC", "2026-07-14T09:00:00Z", id="equal-to-now-is-tomorrow"),
    pytest.param("  ⎿  You've hit your limit · resets 23:00 (UTC)", NOW, "UTC", "2026-07-13T23:00:00Z", id="twenty-four-hour-utc"),
    pytest.param("  ⎿  You've hit your limit · resets 11pm (Mars/Olympus)", NOW, "UTC", None, id="unknown-zone-no-reset"),
    pytest.param("  ⎿  You've hit your limit · resets 11pm (Asia/Calcutta)", NOW, "UTC", "2026-07-13T17:30:00Z", id="zone-alias"),
    pytest.param("  ⎿  You've hit your limit · resets 9am (Europe/Monaco)", NOW, "UTC", "2026-07-14T07:00:00Z", id="monaco-is-not-monday"),
    pytest.param("  ⎿  You've hit your weekly limit · resets Mon 9am (Europe/Monaco)", NOW, "UTC", "2026-07-20T07:00:00Z", id="weekday-and-monaco"),
    pytest.param("  ⎿  5-hour limit reached ∙ resets 2am", NOW, "Asia/Tokyo", "2026-07-13T17:00:00Z", id="no-zone-is-local-tokyo"),
    pytest.param("  ⎿  You're out of extra usage · resets 5pm (Europe/Berlin)", NOW, "UTC", "2026-07-13T15:00:00Z", id="extra-usage"),
    # New York falls back at 2am on 2026-11-01: at 01:45 EDT the next 1:15am is 01:15 EST, 30 minutes on.
    pytest.param("  ⎿  You've hit your session limit · resets 1:15am (America/New_York)", "2026-11-01T05:45:00+00:00", "UTC", "2026-11-01T06:15:00Z", id="repeated-hour-of-dst-end"),
    pytest.param("  ⎿  5-hour limit reached ∙ resets 3am", "2026-03-08T06:30:00+00:00", "America/New_York", "2026-03-08T07:00:00Z", id="after-the-skipped-hour-local"),
    # year end
    pytest.param("  ⎿  You've hit your weekly limit · resets Jan 1, 9am (UTC)", "2026-12-31T12:00:00+00:00", "UTC", "2027-01-01T09:00:00Z", id="jan-1-from-dec-31"),
    pytest.param("  ⎿  You've hit your weekly limit · resets Dec 31, 9am (UTC)", "2026-12-31T12:00:00+00:00", "UTC", "2027-12-31T09:00:00Z", id="todays-date-passed-is-next-year"),
    pytest.param("  ⎿  You've hit your weekly limit · resets Jan 1 at 8am (Asia/Tokyo)", "2026-12-31T12:00:00+00:00", "UTC", "2026-12-31T23:00:00Z", id="new-year-in-tokyo-still-dec-31-utc"),
    pytest.param("  ⎿  Opus weekly limit reached ∙ resets Jan 2, 12am", "2026-12-31T12:00:00+00:00", "UTC", "2027-01-02T00:00:00Z", id="opus-weekly-across-year"),
    # markers and prefixes
    pytest.param("Claude usage limit reached. Your limit will reset at 2pm (America/New_York).", NOW, "UTC", "2026-07-13T18:00:00Z", id="legacy-at-margin"),
    pytest.param("● Claude usage limit reached. Your limit will reset at 2pm (America/New_York).", NOW, "UTC", "2026-07-13T18:00:00Z", id="legacy-bullet"),
    pytest.param("⏺ You've hit your limit · resets 11pm (America/Anchorage)", NOW, "UTC", "2026-07-14T07:00:00Z", id="record-marker"),
    pytest.param("  ⎿  API Error: Claude AI usage limit reached|1783940400", NOW, "UTC", "2026-07-13T11:00:00Z", id="headless-api-error"),
    # normalisation
    pytest.param(
        "  \x1b[2m⎿\x1b[0m  \x1b[31mYou\u2019ve hit your limit\x1b[0m \x1b[2m∙\x1b[0m resets \x1b[1m11pm\x1b[0m (America/Anchorage)",
        NOW, "UTC", "2026-07-14T07:00:00Z", id="ansi-around-words",
    ),
    pytest.param("  ⎿  You\u2019ve\u00a0hit your limit\u00a0·\u00a0resets\u00a011pm\u00a0(America/Anchorage)", NOW, "UTC", "2026-07-14T07:00:00Z", id="nbsp-and-curly-quote"),
    # several banners, menus, the auto-continue line
    pytest.param(
        "  ⎿  You've hit your limit · resets 2am (UTC)\n\n> continue\n\n⏺ Resuming.\n\n⏺ Bash(pytest -q)\n  ⎿  ....\n\n"
        "  ⎿  You've hit your limit · resets 7pm (UTC)",
        NOW, "UTC", "2026-07-13T19:00:00Z", id="old-banner-above-new-below",
    ),
    pytest.param(
        "⏺ Usage limit reset · continuing automatically\n\n⏺ Bash(pytest -q)\n  ⎿  ....\n\n  ⎿  You've hit your limit · resets 7pm (UTC)",
        NOW, "UTC", "2026-07-13T19:00:00Z", id="lifted-then-a-new-banner",
    ),
    pytest.param(
        "> /rate-limit-options\n  ⎿  You've hit your session limit · resets 6:50pm (Europe/London)\n\n" + "─" * 60
        + "\n What do you want to do?\n\n ❯ 1. Stop and wait for limit to reset\n   2. Upgrade your plan\n\n"
        " Enter to confirm · Esc to cancel",
        NOW, "UTC", "2026-07-13T17:50:00Z", id="menu-below-with-rule-and-footer",
    ),
    pytest.param(
        "  ⎿  You've hit your session limit · resets 6:50pm (Europe/London)\n     /upgrade to increase your usage limit.\n\n"
        "> /rate-limit-options\n\n What do you want to do?\n   1. Upgrade your plan\n ❯ 2. Stop and wait for limit to reset\n"
        " Enter to confirm · Esc to cancel",
        NOW, "UTC", "2026-07-13T17:50:00Z", id="banner-hint-then-menu-second-option-highlighted",
    ),
    pytest.param(
        "  ⎿  You've hit your session limit · resets 6:50pm (Europe/London)\n\n╭" + "─" * 58 + "╮\n│ What do you want to do?"
        + " " * 34 + "│\n│ ❯ 1. Stop and wait for limit to reset" + " " * 20 + "│\n│   2. Upgrade your plan" + " " * 35
        + "│\n│ Enter to confirm · Esc to cancel" + " " * 25 + "│\n╰" + "─" * 58 + "╯",
        NOW, "UTC", "2026-07-13T17:50:00Z", id="boxed-menu",
    ),
    pytest.param(
        "> /rate-limit-options\n  ⎿  You've hit your session limit ·\n     resets 6:50pm (Europe/London)\n\n" + "─" * 40
        + "\n What do you want to do?\n\n ❯ 1. Stop and wait for limit to\n      reset\n   2. Upgrade your plan\n"
        "   3. Switch to extra usage to finish\n      what you're working on\n\n Enter to confirm · Esc to cancel",
        NOW, "UTC", "2026-07-13T17:50:00Z", id="menu-options-wrapped-in-a-narrow-pane",
    ),
    pytest.param(
        "You've hit your session limit · resets\n6:50pm (Europe/London)\nWhat do you want to do about your usage\nlimit?\n"
        "❯ 1. Upgrade your plan\n  2. Stop and wait for limit to reset",
        NOW, "UTC", "2026-07-13T17:50:00Z", id="menu-question-wrapped-in-a-narrow-pane",
    ),
    pytest.param(
        "> /rate-limit-options\nYou've hit your session limit · resets 6:50pm (Europe/London)\n\n What do you want to do?\n\n"
        " ❯ 1. Stop and wait for limit to reset\n      Claude will continue when your limit resets\n   2. Upgrade your plan\n"
        "      Get more usage with Max\n\n Enter to confirm · Esc to cancel",
        NOW, "UTC", "2026-07-13T17:50:00Z", id="menu-options-with-description-rows",
    ),
    pytest.param(
        "You've hit your session limit · resets 6pm (America/New_York)\n\n⏺ Usage limit reached · continuing automatically at 7pm (UTC)",
        NOW, "UTC", "2026-07-13T22:00:00Z", id="banner-time-wins-over-auto-continue",
    ),
    pytest.param("⏺ Usage limit reached · continuing automatically at 7pm", NOW, "Asia/Tokyo", "2026-07-13T10:00:00Z", id="auto-continue-alone-local"),
    pytest.param("  ⎿  You've hit your limit · resets soon", NOW, "UTC", None, id="unreadable-clause-still-a-limit"),
    pytest.param("  ⎿  You've hit your limit · resets 9am tomorrow", NOW, "UTC", None, id="time-and-a-word-still-a-limit"),
    pytest.param("  ⎿  5-hour limit reached ∙ resets 2am · /upgrade to keep using Claude Code", NOW, "UTC", "2026-07-14T02:00:00Z", id="hint-on-the-same-row"),
    # shape: the banner is printed by claude right after a tool's output
    pytest.param(
        "⏺ Bash(git push)\n  ⎿  Everything up-to-date\n\n  ⎿  You've hit your limit · resets 11pm (America/Anchorage)",
        NOW, "UTC", "2026-07-14T07:00:00Z", id="after-a-tool-result",
    ),
]


@pytest.mark.parametrize(("body", "now", "zone", "reset"), CLAUDE_LIMITS)
def test_claude_banner_variant_is_a_limit(body, now, zone, reset):
    assert verdict("claude", claude_screen(body), now, zone) == (True, reset)


BANNER = "You've hit your limit · resets 11pm (America/Anchorage)"

CLAUDE_NOT_LIMITS = [
    pytest.param("  ⎿  Approaching your 5-hour usage limit — resets 2am", id="approaching-five-hour"),
    pytest.param("  ⎿  You've hit your limit · resets 8am (UTC)\n\n⏺ Usage limit reset · continuing automatically", id="wall-lifted"),
    pytest.param(
        "  ⎿  You've hit your limit · resets 2am (UTC)\n\n> continue\n\n⏺ Resuming.\n\n⏺ Bash(pytest -q)\n  ⎿  ....\n\n⏺ All green.",
        id="old-banner-worked-past",
    ),
    pytest.param(f"⏺ Bash(git diff)\n  ⎿  diff --git a/README.md b/README.md\n     @@ -1,3 +1,4 @@\n     +{BANNER}", id="git-diff"),
    pytest.param(f"⏺ Bash(grep -rn 'hit your limit' .)\n  ⎿  README.md:12:{BANNER}", id="grep-n"),
    pytest.param(f"⏺ Bash(grep -h 'hit your limit' README.md)\n  ⎿  {BANNER}", id="grep-without-file-names"),
    pytest.param(f"⏺ Bash(cat notes.txt)\n  ⎿  {BANNER}", id="cat-one-line-file"),
    pytest.param(f"⏺ Bash(cat notes.txt)\n  ⎿  Banner seen on Tuesday:\n     {BANNER}", id="cat-last-line"),
    pytest.param(f"⏺ Read(notes.txt)\n  ⎿  {BANNER}", id="read-tool-output"),
    pytest.param(f"⏺ The banner looks like:\n\n  ```\n  {BANNER}\n  ```", id="code-fence"),
    pytest.param(f"⏺ When you see {BANNER}, wait.", id="agent-sentence"),
    pytest.param(f"⏺ The README says the CLI prints this:\n  {BANNER}", id="reply-continues-onto-a-banner-row"),
    pytest.param(
        "⏺ I checked the docs. They say the CLI prints\n  You've hit your limit · resets 11pm when the quota runs out.",
        id="reply-sentence-wrapped-to-start-with-the-words",
    ),
    pytest.param(f"> {BANNER}", id="users-earlier-message"),
    pytest.param(
        "⏺ I read the docs.\n\n  You've hit your limit · resets 11pm is what the CLI prints when the quota runs out.",
        id="reply-paragraph-opening-with-a-zone-less-banner",
    ),
    pytest.param(
        "⏺ I read the docs.\n\n  Claude usage limit reached. Your limit will reset at 2pm is the old wording.",
        id="reply-paragraph-opening-with-the-legacy-banner",
    ),
]


@pytest.mark.parametrize("body", CLAUDE_NOT_LIMITS)
def test_claude_banner_variant_is_not_a_limit(body):
    assert verdict("claude", claude_screen(body)) == (False, None)


@pytest.mark.parametrize(
    "prompt",
    [
        pytest.param(f"{'─' * 60}\n❯ why did I get this?\n  {BANNER}\n{'─' * 60}\n  ⏵⏵ accept edits on (shift+tab to cycle)", id="frameless-second-row"),
        pytest.param(f"{'─' * 60}\n❯ {BANNER}\n{'─' * 60}", id="frameless-first-row"),
        pytest.param(
            "╭" + "─" * 68 + "╮\n│ > why did I get this?" + " " * 46 + "│\n│   " + BANNER + " " * 10 + "│\n╰" + "─" * 68 + "╯\n  ? for shortcuts",
            id="boxed-second-row",
        ),
    ],
)
def test_claude_banner_typed_into_the_prompt_is_not_a_limit(prompt):
    assert verdict("claude", claude_screen("⏺ Done.", footer=prompt)) == (False, None)


CLAUDE_WRAPPED = [
    ("You've hit your session limit · resets 9:05pm (America/Argentina/Buenos_Aires)", None, "2026-07-14T00:05:00Z"),
    ("You've hit your weekly limit · resets Jul 31, 2am (Australia/Lord_Howe)", None, "2026-07-30T15:30:00Z"),
    ("Claude usage limit reached. Your limit will reset at 12:30am (Asia/Kolkata).", None, "2026-07-13T19:00:00Z"),
    ("You're out of extra usage · resets 5pm (America/Argentina/Buenos_Aires)", None, "2026-07-13T20:00:00Z"),
    ("Opus weekly limit reached ∙ resets Oct 31, 9am", None, "2026-10-31T09:00:00Z"),
    ("You've hit your weekly limit · resets Sep 15 at 7pm", "/usage-credits to finish what you're working on.", "2026-09-15T19:00:00Z"),
    ("You've hit your session limit · resets 3pm (Etc/GMT-14)", "/upgrade to increase your usage limit.", "2026-07-14T01:00:00Z"),
]
MARKERS = {"tool-result": ("  ⎿  ", "     "), "margin": ("", ""), "record": ("⏺ ", "  ")}


@pytest.mark.parametrize("width", range(40, 61, 4), ids=lambda w: f"{w}-cols")
@pytest.mark.parametrize("marker", MARKERS)
@pytest.mark.parametrize(("banner", "hint", "reset"), CLAUDE_WRAPPED, ids=lambda v: v[:30] if isinstance(v, str) else None)
def test_claude_banner_word_wrapped_in_a_narrow_pane(banner, hint, reset, marker, width):
    first, rest = MARKERS[marker]
    rows = textwrap.wrap(banner, width, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False)
    if hint:
        rows += textwrap.wrap(hint, width, initial_indent=rest, subsequent_indent=rest)
    assert verdict("claude", claude_screen("\n".join(rows), width)) == (True, reset)


@pytest.mark.parametrize(
    ("rows", "reset"),
    [
        pytest.param(
            ["  ⎿  You've hit your session limit · res", "     ets 9:05pm (America/Argentina/Bueno", "     s_Aires)"],
            "2026-07-14T00:05:00Z", id="inside-resets-and-zone",
        ),
        pytest.param(
            ["  ⎿  You've hit your session limit · resets", "     9:05pm (America/Argentina/Buenos_Aires", "     )"],
            "2026-07-14T00:05:00Z", id="before-the-closing-parenthesis",
        ),
        pytest.param(
            ["  ⎿  You're out of extra usage · resets 5pm (America", "     /Argentina/Buenos_Aires)"],
            "2026-07-13T20:00:00Z", id="before-a-slash-in-the-zone",
        ),
        pytest.param(
            ["  ⎿  You've hit your session limit · resets 9:05pm (America/Arg", "entina/Buenos_Aires)"],
            "2026-07-14T00:05:00Z", id="reflowed-to-column-zero",
        ),
        pytest.param(
            ["  ⎿  You've hit your session limit · resets 9:05pm (Amer", "     ica/Argentina/Bue", "     nos_Aires)"],
            "2026-07-14T00:05:00Z", id="zone-over-three-rows",
        ),
    ],
)
def test_claude_banner_broken_inside_a_word(rows, reset):
    assert verdict("claude", claude_screen("\n".join(rows), 60)) == (True, reset)


# --- codex -------------------------------------------------------------------------

CODEX_WORK = """\
╭──────────────────────────────────────────────────╮
│ >_ OpenAI Codex (v0.155.1)                       │
│                                                  │
│ model:     gpt-5.5 high   /model to change       │
│ directory: ~/src/shop                            │
╰──────────────────────────────────────────────────╯

› fix the flaky checkout test

• Ran pytest -q tests/test_checkout.py
  └ ..F.
    1 failed, 3 passed in 0.41s

• Edited src/shop/checkout.py (+4 -2)
"""
CODEX_BOTTOM = "› Ask Codex to do anything\n\n  ? for shortcuts                                            82% context left\n"


def codex_screen(body: str, bottom: str = CODEX_BOTTOM) -> str:
    return CODEX_WORK + "\n" + body.strip("\n") + "\n\n" + bottom


UPGRADE = (
    "■ You've hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit "
    "https://chatgpt.com/codex/settings/usage to purchase more credits or try again at 2:51 PM."
)
RELATIVE = "■ You've hit your usage limit. Try again in 4 days 20 hours 9 minutes."
ADMIN = (
    "■ You've hit your usage limit. To get more access now, send a request to your admin or try again at "
    "Feb 23rd, 2027 1:07 AM."
)

CODEX_LIMITS = [
    pytest.param("■ You've hit your usage limit. Try again at 12:05 AM.", NOW, "UTC", "2026-07-14T00:05:00Z", id="just-after-midnight"),
    pytest.param("■ You've hit your usage limit. Try again at 12:00 PM.", NOW, "UTC", "2026-07-13T12:00:00Z", id="noon"),
    pytest.param("■ You've hit your usage limit. Try again at 2:51 PM.", NOW, "Asia/Kolkata", "2026-07-13T09:21:00Z", id="local-kolkata"),
    pytest.param("■ You've hit your usage limit. Try again at Dec 31st, 2026 11:59 PM.", NOW, "UTC", "2026-12-31T23:59:00Z", id="full-date-year-end"),
    pytest.param("■ You've hit your usage limit. Try again at Jan 1st 9:00 AM.", "2026-12-31T12:00:00+00:00", "UTC", "2027-01-01T09:00:00Z", id="date-without-year-across-year-end"),
    pytest.param("■ You've hit your usage limit. Try again in 1 hour", NOW, "UTC", "2026-07-13T10:00:00Z", id="relative-without-period"),
    pytest.param("🖐  You've hit your usage limit. Try again in 3 hours 2 minutes.", NOW, "UTC", "2026-07-13T12:02:00Z", id="raised-hand"),
    pytest.param("■ stream error: You've hit your usage limit. Try again later.", NOW, "UTC", None, id="stream-error-later"),
    pytest.param("\x1b[31m■\x1b[0m \x1b[1mYou\u2019ve hit your usage limit.\x1b[0m Try\u00a0again in 3 hours 2 minutes.", NOW, "UTC", "2026-07-13T12:02:00Z", id="ansi-curly-nbsp"),
    pytest.param("■ You've hit your usage limit. Try again at 8:00 AM.\n\n› continue\n\n" "■ You've hit your usage limit. Try again at 2:51 PM.", NOW, "UTC", "2026-07-13T14:51:00Z", id="newest-of-two"),
    pytest.param("■ You've hit your usage limit. Try again at 2:51 PM.\n\n─ Worked for 1m 05s ─────────────", NOW, "UTC", "2026-07-13T14:51:00Z", id="turn-separator-below"),
    pytest.param(
        "■ You've hit your usage limit. Upgrade to Plus to continue using Codex (https://chatgpt.com/explore/plus), or try again at Jul 5th, 2026 8:19 PM.",
        NOW, "UTC", "2026-07-05T20:19:00Z", id="plus-upgrade-full-date-past",
    ),
    pytest.param(
        "■ You've hit your usage limit. Upgrade your plan to continue, or try again at 10 de jul. de 2026, 11:52.",
        NOW, "UTC", None, id="localised-date-still-a-limit",
    ),
    pytest.param(
        "■ You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or try again in 5 days 22 hours 11\nminutes.",
        NOW, "UTC", "2026-07-19T07:11:00Z", id="unit-wrapped-to-column-zero",
    ),
    pytest.param("■ You've hit your usage limit. Try again at 1:15 AM.", "2026-11-01T05:45:00+00:00", "America/New_York", "2026-11-01T06:15:00Z", id="repeated-hour-of-dst-end-local"),
]


@pytest.mark.parametrize(("body", "now", "zone", "reset"), CODEX_LIMITS)
def test_codex_banner_variant_is_a_limit(body, now, zone, reset):
    assert verdict("codex", codex_screen(body), now, zone) == (True, reset)


CODEX_NOT_LIMITS = [
    pytest.param("⚠ Heads up, you have less than 5% of your weekly limit left. Run /status for a breakdown.", id="heads-up"),
    pytest.param("■ stream error: exceeded retry limit, last status: 429 Too Many Requests, request id: abc", id="transient-429"),
    pytest.param("■ You've hit your usage limit. Try again at 8:00 AM.\n\n› continue\n\n• Ran ls\n  └ a b\n\n• Done, all tests pass.", id="worked-past"),
    pytest.param("• Ran git diff\n  └ diff --git a/x b/x\n    +■ You've hit your usage limit. Try again at 2:51 PM.", id="git-diff"),
    pytest.param("• Ran cat notes.txt\n  └ You've hit your usage limit. Try again at 2:51 PM.", id="cat"),
    pytest.param("• The banner codex prints is:\n  You've hit your usage limit. Try again at 2:51 PM.", id="reply"),
    pytest.param("• Example:\n\n```\nYou've hit your usage limit. Try again at 2:51 PM.\n```", id="code-fence"),
]


@pytest.mark.parametrize("body", CODEX_NOT_LIMITS)
def test_codex_banner_variant_is_not_a_limit(body):
    assert verdict("codex", codex_screen(body)) == (False, None)


def test_codex_banner_typed_into_a_multi_row_composer_is_not_a_limit():
    bottom = "› why does it say\n  You've hit your usage limit. Try again at 2:51 PM.\n\n  ? for shortcuts       82% context left\n"
    assert verdict("codex", codex_screen("• Done.", bottom)) == (False, None)


def _hard_wrap(text: str, width: int) -> str:
    # A terminal (or tmux reflowing a resized pane) breaks at the column, a
    # space included: the next row may then start with that space.
    return "\n".join(text[i : i + width] for i in range(0, len(text), width))


@pytest.mark.parametrize("width", range(40, 61), ids=lambda w: f"{w}-cols")
@pytest.mark.parametrize(
    ("banner", "reset"),
    [
        pytest.param(UPGRADE, "2026-07-13T14:51:00Z", id="upgrade-try-at"),
        pytest.param(RELATIVE, "2026-07-18T05:09:00Z", id="relative"),
        pytest.param(ADMIN, "2027-02-23T01:07:00Z", id="admin-dated"),
    ],
)
def test_codex_banner_wrapped_at_the_column_in_a_narrow_pane(banner, reset, width):
    assert verdict("codex", codex_screen(_hard_wrap(banner, width))) == (True, reset)


@pytest.mark.parametrize("width", range(40, 61, 5), ids=lambda w: f"{w}-cols")
def test_codex_banner_word_wrapped_in_a_narrow_pane(width):
    rows = "\n".join(textwrap.wrap(UPGRADE, width, break_on_hyphens=False))
    assert verdict("codex", codex_screen(rows)) == (True, "2026-07-13T14:51:00Z")


# --- chrome never eats output -----------------------------------------------------

# A banner the agent worked past: three rows follow it, the last reading like
# footer text. Chrome must not strip a reply row, or the banner would look like
# the last thing the agent printed.
WORKED_PAST_FOOTER_LIKE = [
    pytest.param("claude", claude_screen("  ⎿  You've hit your limit · resets 8am (UTC)\n\n> continue\n\n⏺ Resumed and finished the refactor.\n\n⏺ Tip: keep plan mode on while you review it."), id="claude-plan-mode-on"),
    pytest.param("claude", claude_screen("  ⎿  You've hit your limit · resets 8am (UTC)\n\n> continue\n\n⏺ Resumed and finished the refactor.\n\n⏺ This session has 12% context left, so I will compact soon."), id="claude-context-left"),
    pytest.param(
        "codex",
        codex_screen(
            "■ You've hit your usage limit. Try again at 8:00 AM.\n\n› continue\n\n• Done.\n\n"
            "• Press ? for shortcuts — you have 40% context left."
        ),
        id="codex-for-shortcuts-and-context-left",
    ),
]


@pytest.mark.parametrize(("agent", "text"), WORKED_PAST_FOOTER_LIKE)
def test_reply_row_reading_like_a_footer_is_not_stripped_as_chrome(agent, text):
    assert verdict(agent, text) == (False, None)


# --- devin -------------------------------------------------------------------------

DEVIN_WORK = "  v3000.2.17 · Teams · 0% remaining (resets in 3d 11h)\n\n❭ split the pricing module\n\n  Editing src/shop/pricing.py\n"


def devin_screen(body: str, bottom: str = "❭ Ask Devin to build features, fix bugs, or work on your code\n") -> str:
    return DEVIN_WORK + "\n" + body.strip("\n") + "\n\n" + bottom


@pytest.mark.parametrize(
    ("body", "limited"),
    [
        pytest.param("Quota exhausted", True, id="bare"),
        pytest.param("✗ Quota exhausted: You have used all of your ACUs.", True, id="marker-and-message"),
        pytest.param("Error: Quota exhausted", True, id="error-lead-in"),
        pytest.param("Quota exhausted: You have used all of you\nr ACUs for this billing cycle. Upgrade y\nour plan at https://app.devin.ai/settings", True, id="wrapped-at-40-cols"),
        pytest.param("\x1b[31mQuota exhausted\x1b[0m: You have used all of your ACUs.", True, id="ansi"),
        pytest.param("  I hit Quota exhausted errors yesterday.", False, id="reply-sentence"),
        pytest.param("Quota exhausted errors happen when ACUs run out.", False, id="sentence-at-margin"),
        pytest.param("```\nQuota exhausted\n```", False, id="code-fence"),
        pytest.param("Quota exhausted\n\n❭ continue\n\n  Editing a\n  Editing b\n  Done.", False, id="worked-past"),
    ],
)
def test_devin_banner_variant(body, limited):
    assert verdict("devin", devin_screen(body)) == (limited, None)


def test_devin_healthy_quota_line_alone_is_not_a_limit():
    assert verdict("devin", devin_screen("  Done.")) == (False, None)


# --- through `afd detect`, with the process's own zone --------------------------------


def _detect(tmp_path: Path, agent: str, text: str, now: str, tz: str) -> dict:
    capture = tmp_path / "1.txt"
    capture.write_text(text)
    env = {**os.environ, "TZ": tz}
    done = subprocess.run(
        [sys.executable, "-m", "afd", "detect", "--agent", agent, "--now", now, "--json", str(capture), str(capture)],
        capture_output=True, text=True, env=env, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize(
    ("agent", "text", "tz", "reset"),
    [
        pytest.param("claude", claude_screen("  ⎿  Session limit reached ∙ resets 9:05pm"), "America/Argentina/Buenos_Aires", "2026-07-14T00:05:00Z", id="claude-buenos-aires"),
        pytest.param("claude", claude_screen("  ⎿  You've hit your limit · resets 12am (UTC)"), "Asia/Kolkata", "2026-07-14T00:00:00Z", id="claude-named-zone-beats-tz"),
        pytest.param("codex", codex_screen("■ You've hit your usage limit. Try again at 12:30 AM."), "Australia/Lord_Howe", "2026-07-13T14:00:00Z", id="codex-lord-howe"),
    ],
)
def test_afd_detect_reads_a_zone_less_banner_in_tz(agent, text, tz, reset, tmp_path, xdg_dirs):
    result = _detect(tmp_path, agent, text, "2026-07-13T09:00:00Z", tz)
    assert (result["limited"], result["reset_at"]) == (True, reset), result["reason"]
