"""The Claude Code detector: banner families, reset rules, block shape, traps, chrome."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from afd.kit.text import capture_rows, decode_capture
from afd.model import Clock, PromptDelivery
from harness import load_builtin_plugin

CORPUS = Path(__file__).resolve().parent.parent / "data" / "corpus" / "claude"




claude = load_builtin_plugin("claude")

NOW = datetime(2026, 7, 13, 9, 0, tzinfo=timezone.utc)  # a Monday
UTC_CLOCK = Clock(now=NOW, local_zone=timezone.utc)

TRANSCRIPT = """\
> fix the failing test in tests/test_checkout.py

⏺ I'll start by reading the failing test.

⏺ Bash(pytest -q tests/test_checkout.py)
  ⎿  ..F.
     1 failed, 3 passed in 0.41s
"""
RULE = "─" * 80
COMPOSER = f"""
{RULE}
❯ 
{RULE}
  ⏵⏵ accept edits on (shift+tab to cycle)
"""


def screen(body: str) -> str:
    """A Claude Code screen: some work, then ``body``, then the composer and footer."""
    return TRANSCRIPT + "\n" + body.strip("\n") + "\n" + COMPOSER


def detect(text: str, clock: Clock = UTC_CLOCK, pattern: re.Pattern[str] | None = None):
    return claude.afd_detect(agent="claude", lines=capture_rows(text), clock=clock, pattern=pattern)


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


def row_of(text: str, needle: str) -> int:
    return next(i for i, row in enumerate(capture_rows(text)) if needle in row)


# --- every family ---------------------------------------------------------------

FAMILIES = [
    pytest.param(
        "  ⎿  Claude usage limit reached. Your limit will reset at 2pm (America/New_York).",
        "claude.legacy", "2026-07-13T18:00", id="legacy-new-york",
    ),
    pytest.param(
        "  ⎿  Claude usage limit reached. Your limit will reset at 10am (Europe/Berlin).",
        "claude.legacy", "2026-07-14T08:00", id="legacy-berlin-tomorrow",
    ),
    pytest.param(
        "  ⎿  Claude usage limit reached. Your limit will reset at 5pm.",
        "claude.legacy", "2026-07-13T17:00", id="legacy-no-zone",
    ),
    pytest.param("Claude AI usage limit reached|1783940400", "claude.headless", "2026-07-13T11:00", id="headless-epoch"),
    pytest.param("  ⎿  5-hour limit reached ∙ resets 2am", "claude.limit-reached", "2026-07-14T02:00", id="five-hour"),
    pytest.param("  ⎿  Session limit reached ∙ resets 8pm", "claude.limit-reached", "2026-07-13T20:00", id="session"),
    pytest.param(
        "  ⎿  Opus weekly limit reached ∙ resets Oct 31, 9am", "claude.limit-reached", "2026-10-31T09:00",
        id="opus-weekly-dated",
    ),
    pytest.param("  ⎿  Weekly limit reached · resets Jul 20, 1pm (UTC)", "claude.limit-reached", "2026-07-20T13:00", id="weekly"),
    pytest.param(
        "  ⎿  You've hit your limit · resets 11pm (America/Anchorage)", "claude.plan", "2026-07-14T07:00",
        id="hit-limit-anchorage",
    ),
    pytest.param(
        "  ⎿  You've hit your session limit · resets 3pm (America/Bogota)", "claude.plan", "2026-07-13T20:00",
        id="hit-session-bogota",
    ),
    pytest.param(
        "  ⎿  You've hit your weekly limit · resets Sep 15 at 7pm", "claude.plan", "2026-09-15T19:00",
        id="hit-weekly-at",
    ),
    pytest.param(
        "  ⎿  You've hit your weekly limit · resets Jul 31, 2am (UTC)", "claude.plan", "2026-07-31T02:00",
        id="hit-weekly-utc",
    ),
    pytest.param(
        "  ⎿  You've hit your Opus limit · resets 6:30pm (Europe/Paris)", "claude.model-cap", "2026-07-13T16:30",
        id="hit-opus-paris",
    ),
    pytest.param(
        "  ⎿  You're out of extra usage · resets 5pm (America/Los_Angeles)", "claude.extra-usage", "2026-07-14T00:00",
        id="extra-usage",
    ),
    pytest.param(
        "⏺ Usage limit reached · continuing automatically at 7pm · esc or type to cancel",
        "claude.plan", "2026-07-13T19:00", id="auto-continue-alone",
    ),
    pytest.param("● You've hit your limit · resets 11pm (America/Anchorage)", "claude.plan", "2026-07-14T07:00", id="bullet-marker"),
    pytest.param("⏺ Session limit reached · resets 8pm", "claude.limit-reached", "2026-07-13T20:00", id="record-marker"),
    pytest.param("You've hit your limit · resets 11pm (America/Anchorage)", "claude.plan", "2026-07-14T07:00", id="margin"),

    pytest.param("  ⎿  You've hit your limit", "claude.plan", None, id="no-reset-clause"),
    pytest.param("  ⎿  You've hit your limit · resets soon", "claude.plan", None, id="unparseable-clause"),
    pytest.param("  ⎿  You've hit your limit · resets 3pm (Mars/Olympus)", "claude.plan", None, id="unknown-zone"),
    pytest.param("Claude AI usage limit reached|", "claude.headless", None, id="headless-without-epoch"),
]


@pytest.mark.parametrize(("banner", "kind", "reset"), FAMILIES)
def test_every_banner_family_is_a_limit_with_its_reset(banner, kind, reset):
    text = screen(banner)
    found = detect(text)
    assert found is not None
    assert found.kind == kind
    assert found.reset_at == (utc(reset) if reset else None)
    assert found.has_reset_time is (reset is not None)
    assert found.first_row == found.last_row == row_of(text, banner.strip()[:12])
    assert found.banner == re.sub(r"^\s*(?:[⎿⏺●]\s*)*", "", banner).replace("∙", "·")


def test_deep_indented_banner_after_a_reply_is_a_limit():
    # After a tool's result the same row would be more of the result (a log
    # with a blank row in it), so this shape counts only after a reply.
    text = "> fix it\n\n⏺ I'll run the tests.\n\n        You've hit your limit · resets 11pm\n" + COMPOSER
    found = detect(text)
    assert found.kind == "claude.plan"
    assert found.reset_at == utc("2026-07-13T23:00")


def test_detection_reports_the_claude_agent_and_only_answers_for_claude():
    text = screen("  ⎿  You've hit your limit · resets 11pm")
    assert detect(text).agent == "claude"
    assert claude.afd_detect(agent="codex", lines=capture_rows(text), clock=UTC_CLOCK, pattern=None) is None


# --- reset rules ------------------------------------------------------------------

RESETS = [
    pytest.param("11pm (Asia/Calcutta)", UTC_CLOCK, "2026-07-13T17:30", id="alias-asia-calcutta"),
    pytest.param("9am (US/Eastern)", UTC_CLOCK, "2026-07-13T13:00", id="alias-us-eastern"),
    pytest.param("3pm (Etc/GMT+5)", UTC_CLOCK, "2026-07-13T20:00", id="etc-gmt-plus-5-is-behind-utc"),
    pytest.param("3pm (UTC)", UTC_CLOCK, "2026-07-13T15:00", id="utc"),
    pytest.param("3pm (Europe/Monaco)", UTC_CLOCK, "2026-07-13T13:00", id="monaco-is-not-monday"),
    pytest.param("9am", UTC_CLOCK, "2026-07-14T09:00", id="bare-time-now-is-not-after-now"),
    pytest.param("8:59am", UTC_CLOCK, "2026-07-14T08:59", id="bare-time-earlier-is-tomorrow"),
    pytest.param("9:01am", UTC_CLOCK, "2026-07-13T09:01", id="bare-time-later-is-today"),
    pytest.param("12am", UTC_CLOCK, "2026-07-14T00:00", id="midnight"),
    pytest.param("12pm", UTC_CLOCK, "2026-07-13T12:00", id="noon"),
    pytest.param("Jul 13, 10am", UTC_CLOCK, "2026-07-13T10:00", id="date-today-still-ahead"),
    pytest.param("Jul 13, 9am", UTC_CLOCK, "2027-07-13T09:00", id="date-today-at-now-is-next-year"),
    pytest.param("Jan 5, 9am", UTC_CLOCK, "2027-01-05T09:00", id="date-passed-is-next-year"),
    pytest.param("Mon 10am", UTC_CLOCK, "2026-07-13T10:00", id="weekday-today"),
    pytest.param("Monday 9am", UTC_CLOCK, "2026-07-20T09:00", id="weekday-now-is-next-week"),
    pytest.param("in 2 hours 30 minutes", UTC_CLOCK, "2026-07-13T11:30", id="relative"),
    pytest.param("6pm", Clock(NOW, ZoneInfo("America/New_York")), "2026-07-13T22:00", id="no-zone-uses-local-zone"),
    pytest.param("6pm (UTC)", Clock(NOW, ZoneInfo("America/New_York")), "2026-07-13T18:00", id="named-zone-beats-local"),
    pytest.param("3pm (Mars/Olympus)", Clock(NOW, ZoneInfo("America/New_York")), None, id="unknown-zone-is-no-guess"),
    pytest.param("someday", UTC_CLOCK, None, id="unparseable"),
    pytest.param("Dec 31, 9999 11pm (Etc/GMT+12)", UTC_CLOCK, None, id="date-beyond-datetime-is-no-reset-not-a-crash"),
]


@pytest.mark.parametrize(("clause", "clock", "reset"), RESETS)
def test_reset_clause_is_read_by_the_rules(clause, clock, reset):
    found = detect(screen(f"  ⎿  You've hit your limit · resets {clause}"), clock=clock)
    assert found is not None
    assert found.reset_at == (utc(reset) if reset else None)


def test_ansi_and_curly_quotes_in_a_raw_capture_are_read():
    raw = screen(
        "\x1b[38;5;246m  ⎿  \x1b[39m\x1b[1mYou\u2019ve hit your limit \u2219 resets\u00a011pm "
        "(America/Anchorage)\x1b[0m\r"
    )
    found = detect(raw)
    assert found.kind == "claude.plan"
    assert found.banner == "You've hit your limit · resets 11pm (America/Anchorage)"
    assert found.reset_at == utc("2026-07-14T07:00")


# --- wrapped banners ------------------------------------------------------------

WRAPPED = [
    pytest.param(
        ["  ⎿  You've hit your session limit · resets 3pm", "     (America/Bogota)"],
        "You've hit your session limit · resets 3pm (America/Bogota)", "2026-07-13T20:00", id="zone-on-next-row",
    ),
    pytest.param(
        ["  ⎿  You've hit your session limit · resets 3pm (America/Bog", "     ota)"],
        "You've hit your session limit · resets 3pm (America/Bogota)", "2026-07-13T20:00", id="zone-split-mid-word",
    ),
    pytest.param(
        ["  ⎿  You've hit your limit · resets 11pm (America/New_", "     York)"],
        "You've hit your limit · resets 11pm (America/New_York)", "2026-07-14T03:00", id="zone-split-at-underscore",
    ),
    pytest.param(
        ["  ⎿  You've hit your limit · resets 1", "     1pm (UTC)"],
        "You've hit your limit · resets 11pm (UTC)", "2026-07-13T23:00", id="time-split-mid-number",
    ),
    pytest.param(
        ["  ⎿  You've hit your weekly limit · resets Sep", "     15 at 7pm"],
        "You've hit your weekly limit · resets Sep 15 at 7pm", "2026-09-15T19:00", id="date-split",
    ),
    pytest.param(
        ["  ⎿  You've hit your weekly limit · resets Sep 15", "     at 7pm"],
        "You've hit your weekly limit · resets Sep 15 at 7pm", "2026-09-15T19:00", id="time-after-a-date-that-parses",
    ),
    pytest.param(
        ["  ⎿  You've hit your limit · resets 6:50", "     pm (Europe/London)"],
        "You've hit your limit · resets 6:50 pm (Europe/London)", "2026-07-13T17:50", id="meridiem-on-next-row",
    ),
    pytest.param(
        ["  ⎿  You've hit your session limit ·", "     resets 3pm (America/Bogota)"],
        "You've hit your session limit · resets 3pm (America/Bogota)", "2026-07-13T20:00", id="split-before-resets",
    ),
    pytest.param(
        ["  ⎿  You've hit your session", "     limit · resets 3pm (America/Bogota)"],
        "You've hit your session limit · resets 3pm (America/Bogota)", "2026-07-13T20:00", id="split-inside-head",
    ),
    pytest.param(
        ["  ⎿  Claude usage limit reached. Your limit will reset at 2pm", "     (America/New_York)."],
        "Claude usage limit reached. Your limit will reset at 2pm (America/New_York).", "2026-07-13T18:00",
        id="legacy-zone-wrapped",
    ),
    pytest.param(
        ["  ⎿  Claude usage limit reached. Your limit will", "     reset at 2pm (America/New_York)."],
        "Claude usage limit reached. Your limit will reset at 2pm (America/New_York).", "2026-07-13T18:00",
        id="legacy-link-wrapped",
    ),
    pytest.param(
        ["Claude AI usage limit reached|178394", "0400"],
        "Claude AI usage limit reached|1783940400", "2026-07-13T11:00", id="headless-epoch-wrapped",
    ),
    pytest.param(
        ["  ⎿  You've hit your session limit · res", "     ets 3pm (America/Argentina/Bueno", "     s_Aires)"],
        "You've hit your session limit · resets 3pm (America/Argentina/Buenos_Aires)", "2026-07-13T18:00",
        id="split-inside-resets-then-inside-the-zone",
    ),
    pytest.param(
        ["  ⎿  You've hit your session limit · resets", "     3pm (America/Argentina/Buenos_Aires", "     )"],
        "You've hit your session limit · resets 3pm (America/Argentina/Buenos_Aires)", "2026-07-13T18:00",
        id="closing-parenthesis-alone",
    ),
    pytest.param(
        ["  ⎿  You're out of extra usage · resets 5pm (America", "     /Argentina/Buenos_Aires)"],
        "You're out of extra usage · resets 5pm (America/Argentina/Buenos_Aires)", "2026-07-13T20:00",
        id="zone-split-before-a-slash",
    ),
    pytest.param(
        ["  ⎿  You've hit your limit · resets 3pm (Amer", "     ica/Argentina/Bue", "     nos_Aires)"],
        "You've hit your limit · resets 3pm (America/Argentina/Buenos_Aires)", "2026-07-13T18:00",
        id="zone-over-three-rows",
    ),
    pytest.param(
        ["  ⎿  You've hit your limit · resets 3pm (America/Arg", "entina/Buenos_Aires)"],
        "You've hit your limit · resets 3pm (America/Argentina/Buenos_Aires)", "2026-07-13T18:00",
        id="zone-reflowed-to-column-zero",
    ),
]


@pytest.mark.parametrize(("rows", "banner", "reset"), WRAPPED)
def test_wrapped_banner_is_joined_the_way_that_parses(rows, banner, reset):
    body = "\n".join(rows)
    text = screen(body)
    found = detect(text)
    assert found.banner == banner
    assert found.reset_at == utc(reset)
    assert found.first_row == row_of(text, rows[0].strip())
    assert found.last_row == found.first_row + len(rows) - 1


@pytest.mark.parametrize(
    "next_row",
    [
        pytest.param("     /upgrade to increase your usage limit.", id="hint"),
        pytest.param("     Upgrade to Max for more usage.", id="prose"),
        pytest.param("     (see the usage page for details)", id="parenthesis-that-is-no-zone"),
    ],
)
def test_wrap_join_stops_where_the_banner_sentence_ends(next_row):
    found = detect(screen("  ⎿  Session limit reached · resets 8pm\n" + next_row))
    assert found.banner == "Session limit reached · resets 8pm"
    assert found.reset_at == utc("2026-07-13T20:00")


def test_complete_banner_does_not_swallow_the_next_indented_row():
    found = detect(screen("  ⎿  You've hit your limit · resets 11pm (UTC)\n     9am tomorrow is when I'll retry"))
    assert found.banner == "You've hit your limit · resets 11pm (UTC)"


# --- the banner block -----------------------------------------------------------

@pytest.mark.parametrize(
    "hint",
    [
        "     /upgrade to increase your usage limit.",
        "     /usage-credits to finish what you're working on.",
        "     /login to switch to an API usage-billed account.",
        "     /upgrade or /usage-credits to finish what you're working on.",
    ],
)
def test_hint_lines_under_the_banner_belong_to_its_block(hint):
    text = screen("  ⎿  You've hit your session limit · resets 3pm (America/Bogota)\n" + hint + "\n\n✻ Worked for 0s")
    found = detect(text)
    assert (found.first_row, found.last_row) == (row_of(text, "You've hit"), row_of(text, hint.strip()))
    assert found.banner == "You've hit your session limit · resets 3pm (America/Bogota)"


def test_a_wrapped_hint_line_belongs_to_the_block():
    text = screen(
        "  ⎿  You've hit your weekly limit · resets Sep 15 at 7pm\n"
        "     /usage-credits to finish what you're\n"
        "     working on."
    )
    assert detect(text).last_row == row_of(text, "working on.")


MENU = """\
> /rate-limit-options
  ⎿  You've hit your session limit · resets 6:50pm (Europe/London)

{rule}
 What do you want to do?

 {first}
   {second}

 Enter to confirm · Esc to cancel"""


@pytest.mark.parametrize(
    ("first", "second"),
    [
        pytest.param("❯ 1. Upgrade your plan", "2. Stop and wait for limit to reset", id="upgrade-first"),
        pytest.param("❯ 1. Stop and wait for limit to reset", "2. Upgrade your plan", id="wait-first"),
        pytest.param("  1. Upgrade your plan", "❯ 2. Stop and wait for limit to reset", id="second-highlighted"),
    ],
)
def test_rate_limit_menu_belongs_to_the_banner_block(first, second):
    text = TRANSCRIPT + "\n" + MENU.format(rule=RULE, first=first, second=second)
    found = detect(text)
    rows = capture_rows(text)
    assert found.first_row == row_of(text, "/rate-limit-options")
    assert found.last_row == len(rows) - 1
    assert found.reset_at == utc("2026-07-13T17:50")


def test_menu_drawn_in_a_box_belongs_to_the_block():
    text = TRANSCRIPT + "\n" + "\n".join(
        [
            "You've hit your limit · resets 6:50pm (Europe/London)",
            "╭" + "─" * 40 + "╮",
            "│ What do you want to do?" + " " * 16 + "│",
            "│ ❯ 1. Stop and wait for limit to reset │",
            "│   2. Upgrade your plan               │",
            "╰" + "─" * 40 + "╯",
            "  Enter to confirm · Esc to cancel",
        ]
    )
    assert detect(text).last_row == len(capture_rows(text)) - 1


def test_auto_continue_line_takes_the_zone_of_its_banner():
    text = screen(
        "  ⎿  You've hit your limit · resets 7pm (Asia/Tokyo)\n"
        "     /upgrade to increase your usage limit.\n\n"
        "⏺ Usage limit reached · continuing automatically at 7pm · esc or type to cancel"
    )
    found = detect(text)
    assert found.kind == "claude.plan"
    assert (found.first_row, found.last_row) == (row_of(text, "You've hit"), row_of(text, "continuing automatically"))
    assert found.reset_at == utc("2026-07-13T10:00")


def test_auto_continue_time_fills_a_banner_that_states_none():
    text = screen("  ⎿  You've hit your limit\n\n⏺ Usage limit reached · continuing automatically at 7pm")
    found = detect(text, clock=Clock(NOW, ZoneInfo("America/New_York")))
    assert found.kind == "claude.plan"
    assert found.reset_at == utc("2026-07-13T23:00")


def test_auto_continue_under_a_banner_in_an_unknown_zone_has_no_reset_time():
    found = detect(
        screen("  ⎿  You've hit your limit · resets 7pm (Mars/Olympus)\n⏺ Usage limit reached · continuing automatically at 7pm")
    )
    assert found is not None and found.reset_at is None


def test_a_later_auto_continue_line_takes_the_zone_of_the_banner_above():
    text = screen(
        "  ⎿  You've hit your limit · resets 7pm (Asia/Tokyo)\n\n> continue\n\n"
        "⏺ Usage limit reached · continuing automatically at 7pm"
    )
    found = detect(text)
    assert found.kind == "claude.plan"
    assert found.reset_at == utc("2026-07-13T10:00")


def test_a_banner_without_a_zone_does_not_borrow_one_from_a_banner_above():
    text = screen("  ⎿  You've hit your limit · resets 2am (UTC)\n\n> continue\n\n  ⎿  Session limit reached · resets 8pm")
    assert detect(text, clock=Clock(NOW, ZoneInfo("America/New_York"))).reset_at == utc("2026-07-14T00:00")


def test_lowest_of_several_banners_decides():
    text = screen(
        "  ⎿  You've hit your limit · resets 2am (UTC)\n\n"
        "> continue\n\n"
        "  ⎿  Session limit reached · resets 8pm"
    )
    found = detect(text)
    assert found.kind == "claude.limit-reached"
    assert found.first_row == row_of(text, "Session limit reached")
    assert found.reset_at == utc("2026-07-13T20:00")


# --- not limits -----------------------------------------------------------------

NOT_LIMITS = [
    pytest.param("  Approaching usage limit · resets at 9pm", id="approaching-usage"),
    pytest.param("  Approaching Opus usage limit · /model to use best available model", id="approaching-opus"),
    pytest.param("  Approaching your 5-hour usage limit — resets 2am", id="approaching-five-hour"),
    pytest.param("⏺ Usage limit reset · continuing automatically", id="limit-reset"),
    pytest.param(
        '⏺ The README says the tool reacts to "You\'ve hit your limit · resets 11pm"\n  banners. I\'ll add that case.',
        id="quoted-in-a-sentence",
    ),
    pytest.param("⏺ You've hit your limit of three retries, so I stopped.", id="reply-starting-with-the-words"),
    pytest.param("  ⎿  README.md:12:You've hit your limit · resets 11pm (America/Anchorage)", id="grep-file-line"),
    pytest.param("  ⎿  12:You've hit your limit · resets 11pm", id="grep-line-number"),
    pytest.param("+You've hit your limit · resets 11pm (America/Anchorage)", id="diff-added"),
    pytest.param("-  ⎿  Session limit reached ∙ resets 8pm", id="diff-removed"),
    pytest.param("  ⎿  + Claude usage limit reached. Your limit will reset at 2pm.", id="diff-in-tool-output"),
    pytest.param("```\nYou've hit your limit · resets 11pm (America/Anchorage)\n```", id="code-fence"),
    pytest.param("  ⎿  ```text\n     Session limit reached · resets 8pm\n     ```", id="code-fence-in-tool-output"),
    pytest.param("> You've hit your limit · resets 11pm", id="user-message-echo"),
    pytest.param(
        "⏺ Bash(git diff README.md)\n  ⎿  diff --git a/README.md b/README.md\n     @@ -1,3 +1,4 @@\n"
        "      You've hit your limit · resets 11pm (America/Anchorage)\n     +Limits are detected.",
        id="git-diff-context-line",
    ),
    pytest.param(
        "⏺ Update(README.md)\n  ⎿  Updated README.md with 1 addition\n"
        "       10    Banners look like this:\n       11 +  You've hit your limit · resets 11pm",
        id="claude-diff-view",
    ),
    pytest.param(
        "⏺ You've hit your limit · resets 11pm (America/Anchorage), so I'll wait.", id="sentence-after-the-zone"
    ),
    pytest.param("  ⎿  exceeded retry limit, last status: 429 Too Many Requests", id="transient-429"),
    pytest.param("  ⎿  API Error: Rate limit reached for requests", id="api-rate-limit"),
    pytest.param('  ⎿  echo "Claude AI usage limit reached|1783940400"', id="headless-in-a-command"),
]


@pytest.mark.parametrize("body", NOT_LIMITS)
def test_not_a_limit(body):
    assert detect(screen(body)) is None


@pytest.mark.parametrize(
    "prompt",
    [
        pytest.param("╭" + "─" * 78 + "╮\n│ > You've hit your limit · resets 11pm" + " " * 38 + "│\n╰" + "─" * 78 + "╯", id="boxed"),
        pytest.param(f"{RULE}\n❯ You've hit your limit · resets 11pm\n{RULE}", id="frameless"),
    ],
)
def test_banner_typed_into_the_prompt_is_not_a_limit(prompt):
    assert detect(TRANSCRIPT + "\n" + prompt + "\n  ? for shortcuts") is None


@pytest.mark.parametrize(
    "after",
    [
        pytest.param("⏺ Usage limit reset · continuing automatically", id="right-below"),
        pytest.param("> continue\n\n⏺ Usage limit reset · continuing automatically\n\n⏺ Done.", id="further-below"),
    ],
)
def test_limit_reset_line_below_a_banner_means_no_limit(after):
    assert detect(screen("  ⎿  You've hit your limit · resets 11pm\n\n" + after)) is None


def test_limit_reset_line_above_a_newer_banner_does_not_hide_it():
    text = screen(
        "⏺ Usage limit reset · continuing automatically\n\n  ⎿  Session limit reached · resets 8pm"
    )
    assert detect(text).kind == "claude.limit-reached"


def test_empty_capture_is_no_detection():
    assert claude.afd_detect(agent="claude", lines=[], clock=UTC_CLOCK, pattern=None) is None


# --- the user's [limit_patterns] override --------------------------------------

def test_user_pattern_replaces_the_banner_regex_and_keeps_the_reset_parser():
    pattern = re.compile(r"^\s*Wall reached")
    text = screen("  Wall reached · resets 4pm (Asia/Tokyo)\n  /upgrade to get more")
    found = detect(text, pattern=pattern)
    assert found.kind == "claude.pattern"
    assert found.reset_at == utc("2026-07-14T07:00")
    assert (found.first_row, found.last_row) == (row_of(text, "Wall reached"), row_of(text, "/upgrade"))


def test_user_pattern_means_the_built_in_banner_is_not_looked_for():
    text = screen("  ⎿  You've hit your limit · resets 11pm")
    assert detect(text, pattern=re.compile(r"Wall reached")) is None


@pytest.mark.parametrize(
    ("row", "reset"),
    [
        pytest.param("  ⎿  Custom limit hit, try again later", None, id="no-clause"),
        pytest.param("  ⎿  Custom limit hit · resets Oct 31, 9am", "2026-10-31T09:00", id="date"),
        pytest.param("Custom limit hit|1783940400", "2026-07-13T11:00", id="epoch"),
        pytest.param("  ⎿  Custom limit hit · resets 3pm", "2026-07-13T15:00", id="time"),
    ],
)
def test_user_pattern_row_gets_the_reset_clause_it_carries(row, reset):
    found = detect(screen(row), pattern=re.compile(r"Custom limit hit"))
    assert found.kind == "claude.pattern"
    assert found.reset_at == (utc(reset) if reset else None)


def test_user_pattern_joins_a_wrapped_reset_clause():
    found = detect(screen("  ⎿  Custom limit hit · resets 3pm\n     (America/Bogota)"), pattern=re.compile(r"Custom limit hit"))
    assert found.reset_at == utc("2026-07-13T20:00")


def test_user_pattern_ignores_fenced_and_typed_rows():
    pattern = re.compile(r"Custom limit hit")
    assert detect(screen("```\nCustom limit hit\n```"), pattern=pattern) is None
    assert detect(TRANSCRIPT + f"\n{RULE}\n❯ Custom limit hit\n{RULE}", pattern=pattern) is None


# --- the agent spec and its chrome ------------------------------------------------

def test_agent_spec_describes_claude_code():
    (spec,) = claude.afd_agents()
    assert spec.name == "claude"
    assert spec.executables == ("claude",)
    assert spec.command == ("claude",)
    assert spec.resume_args == ("--continue",)
    assert spec.prompt_delivery is PromptDelivery.ARGUMENT
    assert any(p.search("node /usr/lib/node_modules/@anthropic-ai/claude-code/cli.js") for p in spec.argv_patterns)


def _is_chrome(row: str) -> bool:
    (spec,) = claude.afd_agents()
    return any(p.search(row) for p in spec.chrome)


@pytest.mark.parametrize(
    "row",
    [
        "╭" + "─" * 78 + "╮",
        "│ >                                                                            │",
        "│ > fix the tests please                                                       │",
        "│   and then commit                                                            │",
        "╰" + "─" * 78 + "╯",
        RULE,
        "❯ ",
        "❯ continue with the refactor",
        "  ⏵⏵ accept edits on (shift+tab to cycle)",
        "  ⏵⏵ bypass permissions on (shift+tab to cycle) · 2 background tasks",
        "  ⏸ plan mode on (shift+tab to cycle)",
        "  ? for shortcuts                                  ⏵⏵ accept edits on",
        "  ? for shortcuts                                  12% context left",
        "  ? for shortcuts",
        "  ? for shortcuts                                  Context left until auto-compact: 12%",
        "  Context low (8% remaining) · Run /compact to compact & continue",
        "  ! for bash mode",
        "✻ Worked for 0s",
        "✻ Cooked for 1m 23s",
        "✻ Sautéed for 1s · done 14:30",
        "✻ Baked for 1h 2m 3s",
    ],
)
def test_claude_ui_rows_are_chrome(row):
    assert _is_chrome(row)


@pytest.mark.parametrize(
    "row",
    [
        "✢ Reading tests/test_checkout.py… (1s · esc to interrupt)",
        "✻ Cooking… (12s · ↑ 1.2k tokens · esc to interrupt)",
        "❯ 1. Upgrade your plan",
        "❯  1. Upgrade your plan",
        "  2. Stop and wait for limit to reset",
        "│ ❯ 1. Stop and wait for limit to reset │",
        "│   2. Upgrade your plan               │",
        " What do you want to do?",
        " Enter to confirm · Esc to cancel",
        "> /rate-limit-options",
        "> fix the failing test in tests/test_checkout.py",
        "/upgrade to increase your usage limit.",
        "⏺ Done.",
        "⏺ Tip: keep plan mode on while you review it.",
        "⏺ This session has 12% context left, so I will compact soon.",
        "  ⎿  Turned accept edits on for src/",
        *(re.sub(r"^\s+", "", p.values[0]) for p in FAMILIES),
        *(p.values[0] for p in FAMILIES),
    ],
)
def test_output_banner_and_menu_rows_are_not_chrome(row):
    assert not _is_chrome(row)


# --- the corpus ---------------------------------------------------------------------

# Cases the gates, not the detector, turn away: the banner is on screen.
# (changed-between-polls was one; the prompt submitted and taken up below its
# banner now ends the episode in the detector itself.)
GATED_ONLY: dict[str, str] = {}


def _corpus_cases():
    return sorted(p.name for p in CORPUS.iterdir() if p.is_dir())


def _last_capture(case: str) -> list[str]:
    captures = sorted((CORPUS / case).glob("*.txt"), key=lambda p: int(p.stem))
    return capture_rows(decode_capture(captures[-1].read_bytes()))


def _corpus_clock(case: str) -> tuple[dict, Clock]:
    expect = json.loads((CORPUS / case / "expect.json").read_text())
    return expect, Clock(now=datetime.fromisoformat(expect["now"].replace("Z", "+00:00")), local_zone=timezone.utc)


@pytest.mark.parametrize("case", _corpus_cases())
def test_corpus_case_banner_and_reset(case):
    expect, clock = _corpus_clock(case)
    found = claude.afd_detect(agent="claude", lines=_last_capture(case), clock=clock, pattern=None)
    if case in GATED_ONLY:
        assert found is not None and found.reset_at == utc(GATED_ONLY[case])
    elif expect["limited"]:
        assert found is not None
        expected = expect["reset_at"]
        assert found.reset_at == (datetime.fromisoformat(expected.replace("Z", "+00:00")) if expected else None)
    else:
        assert found is None


def test_corpus_has_the_claude_cases():
    assert len(_corpus_cases()) >= 11


@pytest.mark.parametrize("case", [c for c in _corpus_cases() if c not in GATED_ONLY])
def test_chrome_strips_a_corpus_screen_down_to_its_banner_block(case):
    # The tail gate strips chrome from the bottom; what stays after a real
    # banner's block must fit the default tail of 3 non-blank lines.
    expect, clock = _corpus_clock(case)
    rows = _last_capture(case)
    found = claude.afd_detect(agent="claude", lines=rows, clock=clock, pattern=None)
    if not expect["limited"]:
        return
    end = len(rows)
    while end > 0 and (not rows[end - 1].strip() or _is_chrome(rows[end - 1])):
        end -= 1
    trailing = [r for r in rows[found.last_row + 1 : end] if r.strip()]
    assert len(trailing) <= 2


# --- nothing crashes it --------------------------------------------------------------

FRAGMENTS = st.sampled_from(
    [
        "  ⎿  You've hit your limit · resets ",
        "Claude AI usage limit reached|",
        "Claude usage limit reached. Your limit will",
        " reset at ",
        "Session limit reached ∙ resets ",
        "⏺ Usage limit reached · continuing automatically at ",
        "Usage limit reset",
        "(America/", "Bogota)", "(Etc/GMT+5)", "(Mars/", "Olympus", "(",  ")", "Europe/Monaco",
        "11pm", "6:50", "pm", "Sep 15", " at 7pm", "Feb 29, 9am", "Mon 9am", "99:99pm", "9" * 40,
        "in ", "99999999999 days", " days", " hours ", "1783940400", "UTC+14:00", "(GMT-99)",
        "     ", "\n", "\n     ", "```\n", "> /rate-limit-options\n", "❯ 1. Upgrade\n", "Enter to confirm\n",
        "/upgrade to increase\n", "─" * 10, "│", "\x1b[1m", "\x00", "\ud7ff", "’", "∙",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_arbitrary_text_never_crashes_the_detector(text):
    claude.afd_detect(agent="claude", lines=capture_rows(text), clock=UTC_CLOCK, pattern=None)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(FRAGMENTS, st.text(max_size=8)), max_size=40), st.booleans())
def test_banner_shaped_noise_never_crashes_the_detector(parts, with_pattern):
    pattern = re.compile(r"limit") if with_pattern else None
    found = claude.afd_detect(agent="claude", lines=capture_rows("".join(parts)), clock=UTC_CLOCK, pattern=pattern)
    if found is not None:
        assert 0 <= found.first_row <= found.last_row
        assert found.reset_at is None or found.reset_at.utcoffset().total_seconds() == 0


@settings(max_examples=200, deadline=None)
@given(st.binary())
def test_arbitrary_bytes_never_crash_the_detector(data):
    claude.afd_detect(agent="claude", lines=capture_rows(decode_capture(data)), clock=UTC_CLOCK, pattern=None)
