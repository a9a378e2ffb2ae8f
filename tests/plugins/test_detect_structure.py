"""`afd detect` reads each agent's screen by its regions, class by class (issue 9).

Every case is a whole screen judged over two identical polls, so the answer
is the detector's and both gates' together: the transcript, the banner block
with the rows of its episode, the composer and the chrome below it.
"""

from __future__ import annotations

import json
import textwrap
from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from afd.cli.main import main
from afd.kit.text import capture_rows
from afd.model import Clock
from harness import load_builtin_plugin

NOW = "2026-12-01T22:18:32Z"  # a Tuesday
RULE = "─" * 80


def judge(capsys, tmp_path, agent: str, screen: str, now: str = NOW) -> dict:
    capture = tmp_path / "1.txt"
    capture.write_text(screen)
    assert main(["detect", "--agent", agent, "--now", now, "--json", str(capture), str(capture)]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def afd_detect(xdg_dirs, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("TZ", "UTC")
    return lambda agent, screen, now=NOW: judge(capsys, tmp_path, agent, screen, now)


def claude_screen(body: str, below: str = "  ⏵⏵ auto mode on (shift+tab to cycle)", rule: str = RULE) -> str:
    """A Claude Code 2.1 screen: work, ``body``, the composer between rules, and ``below`` it."""
    head = textwrap.dedent(
        """\
        ❯ refactor the billing module

        ● I'll start by reading the module.

        ● Read(src/shop/billing.py)
          ⎿  Read 142 lines

        ✻ Cogitated for 13s · done 10:18 PM

        """
    )
    return head + body.strip("\n") + f"\n\n{rule}\n❯ \n{rule}\n{below}\n"


ARMED = """\
❯ next task
  ⎿  You've hit your 5-hour limit · resets 12:30am (UTC)

● Usage limit reached · set to continue automatically at 12:30am
"""
ARMED_FOOTER = """\
  ⚠ Usage limit reached · limit resets 12:30am
    Continuing automatically at 12:30am · Esc to cancel
  ⏵⏵ auto mode on (shift+tab to cycle)"""
RESET = "2026-12-02T00:30:00Z"


def expect_limited(result: dict, reset: str | None, kind: str | None = None) -> None:
    assert result["limited"], result["reason"]
    assert result["reset_at"] == reset
    if kind is not None:
        assert result["kind"] == kind


def expect_not_limited(result: dict) -> None:
    assert not result["limited"], result["reason"]


# --- 1. the banner block runs on across the episode's own rows ----------------

MENU_FRAMELESS = """\
❯ next task
  ⎿  You've hit your weekly limit · resets Dec 4, 6:48pm (UTC)

✻ Cooked for 1m 23s

  Opening your options…

❯ /rate-limit-options
▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔
  What do you want to do?

  {a}1. Stop and wait for limit to reset
  {b}2. Wait here, then continue automatically at Dec 4, 6:48pm
    3. Switch to usage credits
    4. Upgrade your plan

  Enter to confirm · Esc to cancel
"""

MENU_BOXED = """\
❯ next task
  ⎿  You've hit your weekly limit · resets Dec 4, 6:48pm (UTC)

╭──────────────────────────────────────────────────────────────────╮
│ You've hit your weekly limit · resets Dec 4, 6:48pm (UTC)         │
│ What do you want to do?                                           │
│                                                                   │
│ {a}1. Stop and wait for limit to reset                            │
│ {b}2. Don't continue automatically                                │
│   3. Upgrade your plan                                            │
╰──────────────────────────────────────────────────────────────────╯
  Enter to confirm · Esc to cancel
"""


@pytest.mark.parametrize("menu", [MENU_FRAMELESS, MENU_BOXED], ids=["frameless", "boxed"])
@pytest.mark.parametrize("first", [True, False], ids=["first-highlighted", "second-highlighted"])
def test_rate_limit_menu_and_the_rows_before_it_are_one_block(afd_detect, menu, first):
    body = menu.format(a="❯ " if first else "  ", b="  " if first else "❯ ")
    head = claude_screen("").split("\n\n" + RULE)[0]
    expect_limited(afd_detect("claude", head + "\n\n" + body), "2026-12-04T18:48:00Z", "claude.plan")


MENU_OPTIONS = ["❯ 1. Stop and wait for limit to reset", "  2. Wait here, then continue automatically at Dec 4, 6:48pm", "  3. Switch to usage credits"]


def _narrow_menu(width: int, boxed: bool) -> list[str]:
    if boxed:
        inner = width - 4
        rows = ["╭" + "─" * (width - 2) + "╮"]
        for line in ["What do you want to do?", "", *MENU_OPTIONS, "", "Enter to confirm · Esc to cancel"]:
            rows += ["│ " + part.ljust(inner) + " │" for part in (textwrap.wrap(line, inner) or [""])]
        return [*rows, "╰" + "─" * (width - 2) + "╯"]
    rows = ["▔" * width, "  What do you want to do?", ""]
    for line in MENU_OPTIONS:
        rows += textwrap.wrap(line, width - 2, initial_indent="  ", subsequent_indent="       ")
    return [*rows, "", "  Enter to confirm · Esc to cancel"]


@pytest.mark.parametrize("boxed", [True, False], ids=["boxed", "frameless"])
@pytest.mark.parametrize("width", [40, 44, 56])
def test_rate_limit_menu_in_a_narrow_pane_is_one_block(afd_detect, width, boxed):
    banner = textwrap.wrap("You've hit your weekly limit · resets Dec 4, 6:48pm (UTC)", width - 5, initial_indent="  ⎿  ", subsequent_indent="     ")
    screen = "\n".join(["❯ next task", *banner, "", "  Opening your options…", "", *_narrow_menu(width, boxed)]) + "\n"
    expect_limited(afd_detect("claude", screen), "2026-12-04T18:48:00Z")


def test_armed_wall_with_its_message_row_and_footer_is_a_limit(afd_detect):
    expect_limited(afd_detect("claude", claude_screen(ARMED, ARMED_FOOTER)), RESET, "claude.plan")


def test_cancelled_auto_continue_is_still_the_wall(afd_detect):
    body = ARMED.replace("\n\n●", "\n     /usage-credits to finish what you're working on.\n\n●") + (
        "\n● Automatic continue cancelled · /rate-limit-options to wait again\n\n"
        + " " * 60
        + "automatic continue cancelled"
    )
    expect_limited(afd_detect("claude", claude_screen(body)), RESET)


def test_output_after_the_episode_still_counts(afd_detect):
    body = ARMED + "\n● I can keep going with the docs meanwhile.\n\n● Read(README.md)\n  ⎿  Read 40 lines\n"
    expect_not_limited(afd_detect("claude", claude_screen(body)))


@pytest.mark.parametrize("width", [40, 48, 60])
def test_armed_wall_wrapped_in_a_narrow_pane_is_a_limit(afd_detect, width):
    def wrap(text: str, first: str, rest: str) -> str:
        return "\n".join(textwrap.wrap(text, width, initial_indent=first, subsequent_indent=rest))

    body = "\n".join(
        [
            "❯ next task",
            wrap("You've hit your 5-hour limit · resets 12:30am (UTC)", "  ⎿  ", "     "),
            "",
            wrap("Usage limit reached · set to continue automatically at 12:30am", "● ", "  "),
        ]
    )
    footer = "\n".join(
        [
            wrap("⚠ Usage limit reached · limit resets 12:30am", "  ", "    "),
            wrap("Continuing automatically at 12:30am · Esc to cancel", "    ", "    "),
            wrap("⏵⏵ auto mode on (shift+tab to cycle)", "  ", "  "),
        ]
    )
    expect_limited(afd_detect("claude", claude_screen(body, footer, rule="─" * width)), RESET)


def test_once_the_reset_has_come_the_reset_is_the_one_just_passed(afd_detect):
    footer = ARMED_FOOTER.replace("Continuing automatically at 12:30am", "Continuing shortly")
    expect_limited(afd_detect("claude", claude_screen(ARMED, footer), now="2026-12-02T00:30:40Z"), RESET)


def test_before_the_reset_a_bare_time_is_its_next_occurrence(afd_detect):
    expect_limited(afd_detect("claude", claude_screen(ARMED, ARMED_FOOTER), now="2026-12-02T00:30:40Z"), "2026-12-03T00:30:00Z")


# --- 2. everything below the composer is chrome --------------------------------

STATUS_LINES = [
    pytest.param("Opus 4.7 │ ~/src/shop │ ⎇ main* │ ctx 38% │ 5h 100% used", id="usage-statusline"),
    pytest.param("deploy: green · build 1841 · 3 open PRs · last run 22:14:09", id="arbitrary-statusline"),
    pytest.param("You've hit your limit · resets 3pm (UTC)", id="statusline-with-banner-text"),
]


@pytest.mark.parametrize("status", STATUS_LINES)
def test_a_statusline_below_the_composer_is_not_output_after_a_wall(afd_detect, status):
    footer = ARMED_FOOTER + "\n  " + status + "\n  " + status.upper()
    expect_limited(afd_detect("claude", claude_screen(ARMED, footer)), RESET)


@pytest.mark.parametrize("status", STATUS_LINES)
def test_a_statusline_below_the_composer_is_never_a_banner(afd_detect, status):
    result = afd_detect("claude", claude_screen("● Done: the billing module is split in two.", status))
    assert not result["hit"], result["reason"]


def test_a_composer_rule_with_a_label_still_bounds_the_chrome(afd_detect):
    screen = claude_screen(ARMED, ARMED_FOOTER + "\n  ctx 38% · 5h 100% used")
    screen = screen.replace(RULE + "\n❯", "─" * 50 + " plan mode " + "─" * 19 + "\n❯", 1)
    expect_limited(afd_detect("claude", screen), RESET)


def test_the_armed_footer_alone_is_not_a_banner(afd_detect):
    result = afd_detect("claude", claude_screen("● Done.", ARMED_FOOTER))
    assert not result["hit"], result["reason"]


# --- 3. Claude's own notification rows carry real banners ---------------------

NOTIFICATIONS = [
    '● Teammate @reviewer failed: You\'ve hit your 5-hour limit · resets 12:30am (UTC)',
    "● Teammate @docs-writer finished",
    '● Background command "npm run build" completed (exit code 0)',
    "● Agent qa-bot stopped",
]


@pytest.mark.parametrize("note", NOTIFICATIONS)
def test_a_banner_under_a_notification_row_is_claudes_own(afd_detect, note):
    body = f"{note}\n  ⎿  You've hit your 5-hour limit · resets 12:30am (UTC)"
    expect_limited(afd_detect("claude", claude_screen(body)), RESET)


@pytest.mark.parametrize(
    "call",
    ["● Bash(cat logs/agent.txt)", "● Read(notes/limits.md)", "● Web Search(\"claude usage limit\")", "● shop-db - query (MCP)(sql: \"select 1\")"],
)
def test_a_banner_as_the_first_result_row_of_a_tool_call_is_text(afd_detect, call):
    body = f"{call}\n  ⎿  You've hit your 5-hour limit · resets 12:30am (UTC)"
    assert not afd_detect("claude", claude_screen(body))["hit"]


# --- 4. quoted screens are quoted ----------------------------------------------

QUOTED = [
    pytest.param(
        """\
● Bash(tmux capture-pane -p -t %7)
  ⎿  ❯ next task
       ⎿  You've hit your 5-hour limit · resets 12:30am (UTC)

     ● Usage limit reached · set to continue automatically at 12:30am
""",
        id="conductor-captures-another-pane",
    ),
    pytest.param(
        """\
● Bash(cat logs/worker-3.log)
  ⎿  [22:01] worker-3 started

     [22:17] worker-3 output:
     ⎿  You've hit your weekly limit · resets Dec 4, 6:48pm (UTC)
""",
        id="cat-of-a-log-with-result-rows",
    ),
    pytest.param(
        """\
● Bash(cat fixtures/wall.txt)
  ⎿  header

     You've hit your 5-hour limit · resets 12:30am (UTC)
""",
        id="log-row-after-a-blank-row-in-the-result",
    ),
    pytest.param(
        """\
❯ ! cat fixtures/wall.txt
  ⎿  You've hit your 5-hour limit · resets 12:30am (UTC)
  ⎿  Usage limit reached · set to continue automatically at 12:30am
""",
        id="bash-mode-output",
    ),
    pytest.param(
        """\
● Task(check the other worktree)
  ⎿  Bash(pytest -q)
       ⎿  You've hit your limit · resets 3pm (UTC)
""",
        id="nested-subagent-result",
    ),
]


@pytest.mark.parametrize("body", QUOTED)
def test_a_quoted_screen_is_not_a_wall(afd_detect, body):
    result = afd_detect("claude", claude_screen(body))
    assert not result["hit"], result["banner"]


def test_a_real_wall_below_a_quoted_one_is_still_found(afd_detect):
    body = QUOTED[0].values[0] + "\n❯ carry on\n  ⎿  You've hit your 5-hour limit · resets 12:30am (UTC)"
    expect_limited(afd_detect("claude", claude_screen(body)), RESET)


# --- 5. a submitted prompt the agent answered ends the episode ---------------

ANSWERED = [
    pytest.param("claude", "claude", "❯ hi\n\n● Hi! What should we work on?", id="claude-reply"),
    pytest.param("claude", "claude", "❯ /model sonnet\n  ⎿  Set model to Sonnet 4.6", id="claude-slash-command"),
    pytest.param("claude", "claude", "❯ hi\n\n✶ Pondering… (2s · esc to interrupt)", id="claude-working-on-it"),
    pytest.param("codex", "codex", "› hi\n\n• Hello! What can I do for you?", id="codex-reply"),
    pytest.param("devin", "devin", "❭ hi\n\n  Hello! What should I build?", id="devin-reply"),
]


def _wall_then(agent: str, after: str) -> str:
    if agent == "claude":
        return claude_screen(ARMED.split("\n\n")[0] + "\n\n" + after)
    if agent == "codex":
        return (
            "› fix the flaky test\n\n■ You've hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro) "
            f"or try again at 9:29 PM.\n\n{after}\n\n› Ask Codex to do anything\n\n  ? for shortcuts\n"
        )
    return f"❭ split the pricing module\n\nQuota exhausted\n\n{after}\n\n❭ Ask Devin to build features\n"


@pytest.mark.parametrize(("agent", "kind_agent", "after"), ANSWERED)
def test_an_answered_prompt_after_the_banner_ends_the_episode(afd_detect, agent, kind_agent, after):
    # 22:18 is after the 9:29 PM reset: a bare clock time would roll to tomorrow.
    result = afd_detect(agent, _wall_then(agent, after))
    assert not result["limited"] and not result["hit"], result["reason"]


@pytest.mark.parametrize(
    ("agent", "after"),
    [
        pytest.param("claude", "❯ hi", id="claude-prompt-not-taken-up-yet"),
        pytest.param("claude", "❯ /rate-limit-options\n  What do you want to do?\n\n  ❯ 1. Stop and wait for limit to reset\n    2. Upgrade your plan", id="claude-menu-opened-by-the-user"),
        pytest.param("codex", "", id="codex-nothing-after"),
        pytest.param("devin", "", id="devin-nothing-after"),
    ],
)
def test_without_an_answer_the_wall_stands(afd_detect, agent, after):
    assert afd_detect(agent, _wall_then(agent, after))["limited"]


# --- 6. spend caps and billing walls need a human ------------------------------

NEEDS_HUMAN = [
    pytest.param("codex", "■ Your workspace is out of credits. Add credits to continue.", "codex.spend-cap", id="codex-out-of-credits"),
    pytest.param(
        "codex", "■ You hit your spend cap set in your workspace. Increase your spend cap to continue.", "codex.spend-cap",
        id="codex-spend-cap",
    ),
    pytest.param(
        "codex", "■ You hit your spend cap set by the owner of your workspace. Ask an owner to increase\nyour spend cap to continue.",
        "codex.spend-cap", id="codex-spend-cap-wrapped",
    ),
    pytest.param("codex", "■ Quota exceeded. Check your plan and billing details.", "codex.billing", id="codex-quota"),
    pytest.param(
        "codex", "■ To use Codex with your ChatGPT plan, upgrade to Plus: https://chatgpt.com/explore/plus.", "codex.billing",
        id="codex-upgrade-to-plus",
    ),
    pytest.param(
        "codex", "■ Usage limit reached. You've reached your usage limit. Increase your limits to continue using codex.",
        "codex.billing", id="codex-owner-limit",
    ),
    pytest.param("claude", "  ⎿  You've reached your monthly spend limit · Contact your admin to raise it.", "claude.spend-cap", id="claude-monthly-spend"),
    pytest.param("claude", "  ⎿  Your organization's usage allocation has been disabled.", "claude.admin-cap", id="claude-allocation-disabled"),
    pytest.param("claude", "  ⎿  Your group's usage limit is set to $0", "claude.admin-cap", id="claude-zero-limit"),
    pytest.param("claude", "  ⎿  You're out of usage credits · add funds to continue", "claude.extra-usage", id="claude-add-funds"),
    pytest.param("claude", "  ⎿  API Error: Credit balance is too low", "claude.billing", id="claude-credit-balance"),
    pytest.param("claude", "  ⎿  Your organization has reached its monthly spend limit.", "claude.org-cap", id="claude-org-spend"),
    pytest.param(
        "claude", "  ⎿  Usage allocation disabled by your admin · /status for details", "claude.admin-cap", id="claude-allocation-by-admin",
    ),
    pytest.param(
        "claude", "  ⎿  Your organization's monthly spend limit\n     has been reached. Contact your admin.", "claude.org-cap",
        id="claude-spend-wrapped",
    ),
]


def _wall_screen(agent: str, banner: str) -> str:
    if agent == "claude":
        return claude_screen("❯ next task\n" + banner)
    return f"› fix the flaky test\n\n{banner}\n\n› Ask Codex to do anything\n\n  ? for shortcuts\n"


@pytest.mark.parametrize(("agent", "banner", "kind"), NEEDS_HUMAN)
def test_spend_caps_and_billing_walls_need_a_human(afd_detect, agent, banner, kind):
    result = afd_detect(agent, _wall_screen(agent, banner))
    expect_limited(result, None, kind)
    assert result["needs_human"] is True
    assert "a person has to act" in result["reason"]


@pytest.mark.parametrize(
    ("agent", "banner", "reset"),
    [
        pytest.param(
            "codex", "■ You've hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro) or try again at 11:51 PM.",
            "2026-12-01T23:51:00Z", id="codex-purchase-option-and-reset",
        ),
        pytest.param(
            "codex", "■ You hit your spend cap set in your workspace. Increase your spend cap or try again at 11:51 PM.",
            "2026-12-01T23:51:00Z", id="codex-cap-wording-with-a-reset",
        ),
        pytest.param(
            "codex", "■ You've hit your usage limit. Get 500 bonus credits with the Pro plan, or try again at 11:02 PM.",
            "2026-12-01T23:02:00Z", id="codex-promo",
        ),
        pytest.param("claude", "  ⎿  You've hit your 5-hour limit · resets 12:30am (UTC) · out of usage credits", RESET, id="claude-plan-with-suffix"),
    ],
)
def test_a_wall_with_a_reset_is_a_plan_window_not_a_human_wall(afd_detect, agent, banner, reset):
    result = afd_detect(agent, _wall_screen(agent, banner))
    expect_limited(result, reset)
    assert result["needs_human"] is False


@pytest.mark.parametrize(
    ("agent", "row"),
    [
        pytest.param("claude", "  ⎿  API Error: Request rejected (429) · rate limited", id="claude-api-key-429"),
        pytest.param(
            "claude", "  ⎿  API Error: Server is temporarily limiting requests (not your usage limit) · Rate limited",
            id="claude-not-your-usage-limit",
        ),
        pytest.param("claude", "● Your group's usage limit is set to $0 in the fixture, so the test expects a wall.", id="claude-prose-quoting-a-cap"),
        pytest.param("codex", "■ exceeded retry limit, last status: 429 Too Many Requests", id="codex-retry-limit"),
        pytest.param(
            "codex", "■ rate limit exceeded: Rate limit reached for gpt-5.3-codex. Please try again in 4s.", id="codex-rate-limit-exceeded",
        ),
        pytest.param("codex", "• Reconnecting... 2/5 (4s • esc to interrupt)\n  └ Rate limit exceeded: try again in 4s.", id="codex-reconnecting"),
    ],
)
def test_throttles_that_are_not_plan_walls_are_not_limits(afd_detect, agent, row):
    result = afd_detect(agent, _wall_screen(agent, row))
    assert not result["hit"], result["banner"]


# --- 7. relative resets with a colon ---------------------------------------------

@pytest.mark.parametrize(
    ("agent", "banner"),
    [
        pytest.param("claude", "  ⎿  You've hit your 5-hour limit · resets in: 3 hours", id="claude"),
        pytest.param("codex", "■ You've hit your usage limit. Try again in: 3 hours.", id="codex"),
    ],
)
def test_a_relative_reset_with_a_colon_parses(afd_detect, agent, banner):
    expect_limited(afd_detect(agent, _wall_screen(agent, banner)), "2026-12-02T01:18:32Z")


# --- codex: modals, the sticky status row, wrapped banners ------------------------

MODAL = """\
  Approaching rate limits
  Switch to gpt-6-luna for lower credit usage?

› 1. Switch to gpt-6-luna                   Fast and affordable model for easier tasks.
  2. Keep current model
  3. Keep current model (never show again)  Hide future rate limit reminders about switching models

  enter select · esc back"""
STICKY = " " * 60 + "⚠ 5h limit: only <1% left · resets at 20:32 · /status"
CODEX_FOOTER = "\n› Ask Codex to do anything\n\n  gpt-5.3-codex default · ~/src/shop\n  ← for agents · ? for shortcuts\n"
CODEX_BANNER = "■ You've hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro) or try again at 11:51 PM."


def test_a_codex_modal_after_the_banner_is_part_of_the_episode(afd_detect):
    screen = f"› add a test\n\n{CODEX_BANNER}\n\n{MODAL}\n"
    expect_limited(afd_detect("codex", screen), "2026-12-01T23:51:00Z", "codex.usage-limit")


def test_a_billing_modal_after_a_billing_banner_is_part_of_the_episode(afd_detect):
    modal = (
        "  Usage limit reached\n  Request a limit increase from your owner to continue using codex. Request increase?\n\n"
        "  1. Yes (y)\n› 2. No (default) (n)\n\n  enter select · esc back"
    )
    result = afd_detect("codex", f"› add a test\n\n■ Your workspace is out of credits. Ask your workspace owner to refill in order to continue.\n\n{modal}\n")
    expect_limited(result, None, "codex.spend-cap")
    assert result["needs_human"]


def test_a_codex_modal_after_a_successful_answer_is_not_a_wall(afd_detect):
    screen = f"› add a test\n\n• Added tests/test_checkout.py::test_total and it passes.\n\n{MODAL}\n"
    assert not afd_detect("codex", screen)["hit"]


def test_a_codex_modal_after_an_answer_below_an_old_banner_is_not_a_wall(afd_detect):
    screen = f"› add a test\n\n{CODEX_BANNER}\n\n› try again\n\n• Added the test; it passes.\n\n{MODAL}\n"
    expect_not_limited(afd_detect("codex", screen))


def test_the_sticky_status_row_is_not_output_after_a_codex_wall(afd_detect):
    screen = f"› add a test\n\n{CODEX_BANNER}\n\n{STICKY}\n{CODEX_FOOTER}"
    expect_limited(afd_detect("codex", screen), "2026-12-01T23:51:00Z")


def test_the_sticky_status_row_in_a_new_thread_is_not_a_wall(afd_detect):
    screen = f"› hi\n\n• Hello! What should we do?\n\n{STICKY}\n{CODEX_FOOTER}"
    assert not afd_detect("codex", screen)["hit"]


@pytest.mark.parametrize("width", [40, 52, 60])
def test_a_codex_banner_wrapped_by_the_cli_is_read_whole(afd_detect, width):
    text = (
        "■ You've hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit "
        "https://chatgpt.com/settings/usage to purchase more credits or try again at Dec 3rd, 2026 6:30 PM."
    )
    rows = textwrap.wrap(text, width, break_long_words=True, break_on_hyphens=False)
    screen = "› add a test\n\n" + "\n".join(rows) + f"\n\n{STICKY[-50:]}\n{CODEX_FOOTER}"
    expect_limited(afd_detect("codex", screen), "2026-12-03T18:30:00Z")


# --- properties ---------------------------------------------------------------------

# Every glyph and shape the regions are read by, and no banner words.
SHAPES = st.sampled_from(
    [
        "● ", "⏺ ", "  ⎿  ", "     ⎿  ", "❯ ", "> ", "› ", "❭ ", "■ ", "• ", "  └ ", "! ", "❯ ! ",
        "─" * 30, "▔" * 20, "╭" + "─" * 20 + "╮", "│ > ", "╰" + "─" * 20 + "╯", "  1. ", "❯ 2. ", "› 3. ",
        "Bash(cat x)", "Teammate @a failed: ", "  enter select · esc back", "  Enter to confirm · Esc to cancel",
        "✻ Cooked for 1m 2s", "  ⏵⏵ auto mode on", "  ⚠ 5h limit: only 1% left", "resets 9:42pm (UTC)",
        "try again at 2:51 PM.", "Opening your options…", "Continuing automatically at 9pm · Esc to cancel",
        "automatic continue cancelled", "What do you want to do?", "\n", "\n\n", "     ", "(exit code 0)",
    ]
)
AGENTS = {name: load_builtin_plugin(name) for name in ("claude", "codex", "devin")}
CLOCK = Clock(now=datetime.fromisoformat(NOW.replace("Z", "+00:00")), local_zone=timezone.utc)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(SHAPES, st.text(alphabet="abcdefghij ()·.:", max_size=10)), max_size=50), st.sampled_from(sorted(AGENTS)))
def test_a_screen_without_banner_words_is_never_a_detection(parts, agent):
    rows = capture_rows("".join(parts))
    assert AGENTS[agent].afd_detect(agent=agent, lines=rows, clock=CLOCK, pattern=None) is None


@pytest.mark.parametrize(
    ("agent", "screen"),
    [
        pytest.param("codex", f"› add a test\n\n{CODEX_BANNER}\n\n› Ask Codex to do anything\n\n  deploy: green · build 1841\n  You've hit your usage limit. Try again later.\n  ← for agents · ? for shortcuts\n", id="codex"),
        pytest.param("devin", "❭ split the module\n\nQuota exhausted\n\n❭ Ask Devin to build features\n  Quota exhausted · team plan · 22:14:09\n  ? for shortcuts\n", id="devin"),
    ],
)
def test_rows_below_a_frameless_composer_are_chrome(afd_detect, agent, screen):
    result = afd_detect(agent, screen)
    assert result["limited"], result["reason"]
    assert result["banner"] in ("Quota exhausted", CODEX_BANNER)


@pytest.mark.parametrize(
    ("agent", "screen"),
    [
        pytest.param("codex", "› hi\n\n• Hello!\n\n› Ask Codex to do anything\n\n  ■ You've hit your usage limit. Try again later.\n", id="codex"),
        pytest.param("devin", "❭ hi\n\n  Hello!\n\n❭ Ask Devin to build features\n  Quota exhausted\n", id="devin"),
    ],
)
def test_banner_text_below_a_frameless_composer_is_not_a_banner(afd_detect, agent, screen):
    assert not afd_detect(agent, screen)["hit"]
