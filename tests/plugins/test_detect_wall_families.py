"""Every family of wall the CLIs draw, and their look-alikes, wrapped at every width.

Each case is a wall sentence as the CLI prints it (or reworded the way the
next release may word it), put on a whole screen at widths from 40 to 120
columns the way the CLI wraps it, judged through the built-in detector and
both gates over two identical polls. The answer is the kind, the reset, and
the two facts `needs_human` follows from (`afd.model.person_must_act`).
"""

from __future__ import annotations

import textwrap
from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from afd.judge.gates import judge
from afd.kit.text import capture_rows
from afd.model import Clock
from harness import load_builtin_plugin

PLUGINS = {name: load_builtin_plugin(name) for name in ("claude", "codex")}
NOW = datetime(2026, 12, 1, 22, 18, 32, tzinfo=timezone.utc)  # a Tuesday
CLOCK = Clock(now=NOW, local_zone=timezone.utc)
WIDTHS = (40, 47, 53, 61, 67, 74, 80, 97, 120)


def verdict(agent: str, screen: str, polls: int = 2):
    plugin = PLUGINS[agent]
    (spec,) = plugin.afd_agents()
    captures = [capture_rows(screen) for _ in range(polls)]
    detections = [plugin.afd_detect(agent=agent, lines=rows, clock=CLOCK, pattern=None) for rows in captures]
    return judge(agent, captures, detections, spec.chrome, tail_lines=3, stability_polls=2)


def answer(agent: str, screen: str) -> tuple:
    v = verdict(agent, screen)
    if not v.limited:
        return (False, v.reason)
    d = v.detection
    reset = d.reset_at.strftime("%Y-%m-%dT%H:%M:%SZ") if d.reset_at else None
    return (d.kind, reset, d.needs_human, d.offers_other_model)


# --- claude --------------------------------------------------------------------------


def claude_rows(text: str, width: int, marker: str = "  ⎿  ") -> list[str]:
    """A message as Claude hard-wraps it: by words, a token longer than the row cut at the edge."""
    indent = " " * len(marker)
    rows = textwrap.wrap(text, width - len(marker), break_long_words=True, break_on_hyphens=False)
    return [marker + rows[0], *(indent + r for r in rows[1:])] if rows else []


def claude_screen(text: str, width: int = 80, *, marker: str = "  ⎿  ", hints: tuple[str, ...] = (), footer: str = "") -> str:
    rule = "─" * width
    body = "\n".join(claude_rows(text, width, marker)) or "● Done."
    hint_rows = "".join(f"\n{' ' * len(marker)}{h}" for h in hints)
    bottom = footer or "  ⏵⏵ auto mode on (shift+tab to cycle)"
    return (
        "❯ refactor the billing module\n\n● I'll start by reading the module.\n\n"
        "✻ Cogitated for 13s · done 10:18 PM\n\n"
        f"❯ next task\n{body}{hint_rows}\n\n{rule}\n❯ \n{rule}\n{bottom}\n"
    )


SPEND_URL = "https://claude.ai/settings/usage?from=cc_cli_limit_message"
ADMIN_URL = "https://claude.ai/admin-settings/usage"
JSON_400 = 'API Error: 400 {{"type":"error","error":{{"type":"invalid_request_error","message":"{}"}},"request_id":"req_011CVq7"}}'

NH = "needs-human"  # shorthand in the tables: no reset, no other model
# (wall text, kind, reset, needs_human, offers_other_model)
CLAUDE_WALLS = [
    # monthly spend caps
    ("You've hit your monthly spend limit · raise it at claude.ai/settings/usage", "claude.spend-cap", None, True, False),
    (f"You've hit your monthly spend limit · raise it at {SPEND_URL}", "claude.spend-cap", None, True, False),
    ("**You've hit your monthly spend limit** · raise it at claude.ai/settings/usage", "claude.spend-cap", None, True, False),
    (f"**You've hit your monthly spend limit · raise it at {SPEND_URL}**", "claude.spend-cap", None, True, False),
    (f"You've hit your monthly spend limit · raise it at {SPEND_URL} · your 5-hour limit resets 2:40pm (Asia/Jakarta)",
     "claude.spend-cap", "2026-12-02T07:40:00Z", False, False),
    ("You've hit your monthly spend limit · your session limit resets 2:40pm (Asia/Jakarta)",
     "claude.spend-cap", "2026-12-02T07:40:00Z", False, False),
    ("You've hit your monthly spend limit.", "claude.spend-cap", None, True, False),
    ("You've hit your monthly spend limit · /usage-credits to raise it", "claude.spend-cap", None, True, False),
    ("You've hit your monthly spend limit. Run /usage-credits to manage your limit and keep using Opus 4.5 or switch "
     "models to continue this chat.", "claude.spend-cap", None, False, True),
    ("You've hit your monthly spend limit. /model to switch models.", "claude.spend-cap", None, False, True),
    ("You've hit your individual spend limit · ask your admin for a higher limit · your 5-hour limit resets 9:42pm (UTC)",
     "claude.admin-cap", "2026-12-02T21:42:00Z", False, False),
    (f"You've hit your org's monthly spend limit · ask your admin to raise it at {ADMIN_URL}", "claude.org-cap", None, True, False),
    (f"You've hit your org's monthly spend limit · ask your admin to raise it at {ADMIN_URL} · your weekly limit resets "
     "Dec 4, 6:48pm (UTC)", "claude.org-cap", "2026-12-04T18:48:00Z", False, False),
    ("You've hit your org's monthly spend limit · manage it in admin settings on the web", "claude.org-cap", None, True, False),
    ("You've hit your channel's monthly spend limit · an org owner or channel manager can raise it in the channel's Claude settings",
     "claude.spend-cap", None, True, False),
    # organisation and team caps
    ("You've hit your org's monthly usage limit", "claude.org-cap", None, True, False),
    ("You've hit your org's monthly usage limit · resets Dec 15, 12am (UTC)", "claude.org-cap", "2026-12-15T00:00:00Z", False, False),
    ("You've hit your individual usage limit · resets Dec 7, 12am (UTC)", "claude.admin-cap", "2026-12-07T00:00:00Z", False, False),
    ("You've hit your channel's monthly usage limit · an org owner or channel manager can raise it in the channel's Claude "
     "settings · resets Dec 7, 12am (UTC)", "claude.spend-cap", "2026-12-07T00:00:00Z", False, False),
    ("Your org is out of usage · contact your admin", "claude.org-cap", None, True, False),
    ("Your org is out of usage · add funds to continue", "claude.org-cap", None, True, False),
    ("Usage is paused for your organization. For help, please contact support.", "claude.org-cap", None, True, False),
    (f"You've hit your team's pooled group budget · resets Dec 7, 12am (UTC) · ask your admin to raise it at {ADMIN_URL}",
     "claude.org-cap", "2026-12-07T00:00:00Z", False, False),
    ("You've hit your team's pooled group budget · your 5-hour limit resets 9:42pm (UTC)", "claude.org-cap", "2026-12-02T21:42:00Z", False, False),
    ("You've hit your team's pooled group budget.", "claude.org-cap", None, True, False),
    ("You've hit your team's pooled group budget. It resets Dec 7, 12am (UTC).", "claude.org-cap", "2026-12-07T00:00:00Z", False, False),
    ("You've hit your team's pooled group budget. /model to switch models.", "claude.org-cap", None, False, True),
    ("You've hit your team's pooled group budget. Switch to another model to continue.", "claude.org-cap", None, False, True),
    ("Your organization is out of usage credits. Contact your admin to add more.", "claude.org-cap", None, True, False),
    ("Your organization's usage credit cap is reached for this period. Contact your admin to raise it.", "claude.org-cap", None, True, False),
    # admin caps
    ("Limit reached – contact an admin to keep working", "claude.admin-cap", None, True, False),
    ("You've hit your usage limit · contact your admin to increase it", "claude.admin-cap", None, True, False),
    ("Your seat type doesn't include usage credits", "claude.admin-cap", None, True, False),
    ("Your seat type doesn't include usage", "claude.admin-cap", None, True, False),
    ("This service is disabled for your org", "claude.admin-cap", None, True, False),
    ("Your usage allocation has been disabled by your admin · ask your admin for a higher limit", "claude.admin-cap", None, True, False),
    ("Your group's usage limit is set to $0 · ask your admin for a higher limit", "claude.admin-cap", None, True, False),
    # gateway caps (the organisation's), printed as the gateway words them
    ("spend limit reached · resets Dec 9 · request an increase at https://go.corp.example.com/claude-limits",
     "claude.org-cap", "2026-12-09T00:00:00Z", False, False),
    ("spend limit reached", "claude.org-cap", None, True, False),
    ("API Error: spend limit reached · resets Aug 8 · request an increase at https://llm-gw.example.org/quota",
     "claude.org-cap", "2027-08-08T00:00:00Z", False, False),
    ("API Error: Request rejected (429) · spend limit reached · resets Dec 9 · request an increase at https://go.corp.example.com/x",
     "claude.org-cap", "2026-12-09T00:00:00Z", False, False),
    ("API Error: Request rejected (429) · spend limit reached", "claude.org-cap", None, True, False),
    # the CLI's words for a 429 without the plan's headers, then the gateway's (a real Claude Code 2.1.332 screen)
    ("API Error: Server is temporarily limiting requests (not your usage limit) · spend limit reached · resets 9:53am (UTC) · "
     "request an increase at https://go.corp.example.com/claude-limits", "claude.org-cap", "2026-12-02T09:53:00Z", False, False),
    # an API key's workspace limit, in the API's own words (a real screen)
    ("API Error: 400 You have reached your specified workspace API usage limits. You will regain access on 2026-12-03 at 10:13 UTC.",
     "claude.org-cap", "2026-12-03T10:13:00Z", False, False),
    # extra usage, also inside an API error's JSON
    ("You're out of extra usage · resets 5pm (America/Los_Angeles)", "claude.extra-usage", "2026-12-02T01:00:00Z", False, False),
    ("You're out of extra usage", "claude.extra-usage", None, True, False),
    (JSON_400.format("You're out of extra usage. Add more at claude.ai/settings/usage and keep going."), "claude.extra-usage", None, True, False),
    (JSON_400.format("You're out of extra usage. Ask your workspace admin to add more."), "claude.extra-usage", None, True, False),
    (JSON_400.format("Third-party apps now draw from your extra usage, which you have used up. Add more at claude.ai/settings/usage."),
     "claude.extra-usage", None, True, False),
    ("API Error: Third-party apps now draw from your extra usage. Add more at claude.ai/settings/usage.", "claude.extra-usage", None, True, False),
    ("Extra usage is required for long context", "claude.extra-usage", None, True, False),
    # credits and billing
    ("Credit balance is too low", "claude.billing", None, True, False),
    ("Credit balance too low · Add funds: https://platform.claude.com/settings/billing", "claude.billing", None, True, False),
    (JSON_400.format("Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."),
     "claude.billing", None, True, False),
    ("Failed to authenticate: your claude.ai login expired. Claude Code tried ANTHROPIC_API_KEY instead, but it doesn't have enough "
     "credit. Run `claude auth login` to sign in again, or add funds: https://platform.claude.com/settings/billing", "claude.billing", None, True, False),
    ("You're out of usage credits", "claude.extra-usage", None, True, False),
    ("You're out of usage credits · resets 9:42pm (UTC)", "claude.extra-usage", "2026-12-02T21:42:00Z", False, False),
    ("You're out of usage credits · resets 9:42pm (UTC) · progress saved", "claude.extra-usage", "2026-12-02T21:42:00Z", False, False),
    ("You're out of usage credits · /usage-credits to buy more", "claude.extra-usage", None, True, False),
    ("You're out of usage credits. Run /usage-credits to keep using Opus 4.5 or /model to switch models.", "claude.model-cap", None, False, True),
    ("You're out of usage credits. Switch to another model to continue.", "claude.model-cap", None, False, True),
    ("Usage credits are required for long context", "claude.extra-usage", None, True, False),
    # model caps
    ("You've hit your Opus limit · resets 12pm (UTC)", "claude.model-cap", "2026-12-02T12:00:00Z", False, False),
    ("You've hit your Fable limit · resets 9:42pm (UTC). Run /usage-credits to continue or switch models with /model.",
     "claude.model-cap", "2026-12-02T21:42:00Z", False, True),
    ("You've reached your Fable limit. Run /usage-credits to continue or switch models with /model.", "claude.model-cap", None, False, True),
    ("You've reached your Sonnet limit for this week. Switch models?", "claude.model-cap", None, False, True),
    ("You've reached your Fable limit", "claude.model-cap", None, True, False),  # names no reset, offers no model
    ("Opus 5 requires usage credits. Run /usage-credits to continue or switch models with /model.", "claude.model-cap", None, False, True),
    ("Fable 5 requires usage credits", "claude.model-cap", None, True, False),
    ("Sonnet 4.5 requires usage credits. Switch models to continue.", "claude.model-cap", None, False, True),
    ("Claude stopped here because Opus 5 now requires usage credits. To keep this agent going, switch models or continue with "
     "usage credits.", "claude.model-cap", None, False, True),
    # plan windows, dated, legacy zones, a bare trailing "·"
    ("You've hit your weekly limit · resets May 2, 2pm (Asia/Jerusalem)", "claude.plan", "2027-05-02T11:00:00Z", False, False),
    ("You've hit your 5-hour limit · resets Dec 7, 12am (UTC)", "claude.plan", "2026-12-07T00:00:00Z", False, False),
    ("You've hit your 5-hour limit · resets 3pm (America/Cordoba)", "claude.plan", "2026-12-02T18:00:00Z", False, False),
    ("You've hit your 5-hour limit · resets 3pm (America/Cordoba) ·", "claude.plan", "2026-12-02T18:00:00Z", False, False),
    ("You've hit your org's monthly usage limit ·", "claude.org-cap", None, True, False),
    ("You've hit your session limit", "claude.plan", None, True, False),  # names no reset: the one rule
    ("You've hit your session limit · resets soon", "claude.plan", None, False, False),  # names one, not when
    # reworded the way a later release may put them
    ("You've reached your organization's monthly usage limit · resets Dec 15, 12am (UTC)", "claude.org-cap", "2026-12-15T00:00:00Z", False, False),
    ("Your team has run out of usage credits. Ask your admin to add more.", "claude.org-cap", None, True, False),
    ("Your workspace is out of usage · contact your admin", "claude.org-cap", None, True, False),
    ("You've used up your monthly spend limit · raise it at claude.ai/settings/usage", "claude.spend-cap", None, True, False),
    ("Usage has been suspended for your team. Contact support.", "claude.org-cap", None, True, False),
    ("monthly spend limit reached · resets Jan 1 · request an increase at https://llm-gw.example.org/quota",
     "claude.org-cap", "2027-01-01T00:00:00Z", False, False),
    ("Budget limit reached – contact an admin to keep working", "claude.admin-cap", None, True, False),
    ("You have hit your Opus 5 limit · resets Dec 4, 6:48pm (UTC)", "claude.model-cap", "2026-12-04T18:48:00Z", False, False),
    ("You are out of extra usage — add more at claude.ai/settings/usage", "claude.extra-usage", None, True, False),
    ("Sonnet 5 now requires usage credits · switch models with /model", "claude.model-cap", None, False, True),
    ("Your organisation has reached its monthly spend limit · ask your admin to raise it · resets Jan 1, 12am (UTC)",
     "claude.org-cap", "2027-01-01T00:00:00Z", False, False),
    ("You've exceeded your team's shared budget. Ask your admin to raise it.", "claude.org-cap", None, True, False),
]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize(("text", "kind", "reset", "needs_human", "other_model"), CLAUDE_WALLS, ids=[c[0][:60] for c in CLAUDE_WALLS])
def test_claude_wall_at_every_width(text, kind, reset, needs_human, other_model, width):
    assert answer("claude", claude_screen(text, width)) == (kind, reset, needs_human, other_model)


@pytest.mark.parametrize(("text", "kind", "reset", "needs_human", "other_model"), CLAUDE_WALLS[::3], ids=[c[0][:60] for c in CLAUDE_WALLS[::3]])
def test_claude_wall_as_its_own_message(text, kind, reset, needs_human, other_model):
    assert answer("claude", claude_screen(text, 100, marker="● ")) == (kind, reset, needs_human, other_model)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        pytest.param("Your seat type doesn't include usage credits", "claude.admin-cap", id="seat-type"),
        pytest.param("This service is disabled for your org", "claude.admin-cap", id="service-disabled"),
        pytest.param("You've hit your org's monthly usage limit", "claude.org-cap", id="org-cap"),
    ],
)
def test_a_wall_without_a_period_keeps_its_hint_row_apart(text, kind):
    # As the real CLI draws them: the hint row is not the wall's sentence going on.
    screen = claude_screen(text, 120, hints=("/usage-credits to finish what you're working on.",))
    assert answer("claude", screen) == (kind, None, True, False)


@pytest.mark.parametrize(
    ("hints", "other_model"),
    [
        pytest.param(("/usage-credits to adjust your monthly spend limit.",), False, id="usage-credits-hint"),
        pytest.param(("/login to switch to an API usage-billed account.",), False, id="login-hint"),
        pytest.param(("/extra-usage to finish what you're working on.",), False, id="extra-usage-hint"),
        pytest.param(("Buy more to keep using Opus 5, or switch models to keep working.",), True, id="buy-more-row"),
        pytest.param(("/model to switch models.",), True, id="model-hint"),
        pytest.param(("/usage-credits to adjust your monthly spend limit.", "/login to switch to an API usage-billed account."), False, id="two-hints"),
    ],
)
def test_hint_rows_under_a_wall_belong_to_it(hints, other_model):
    screen = claude_screen(f"You've hit your monthly spend limit · raise it at {SPEND_URL}", 90, hints=hints)
    assert answer("claude", screen) == ("claude.spend-cap", None, not other_model, other_model)


MENU = """\
  What do you want to do?

  ❯ 1. Stop and wait for limit to reset
    2. Wait here, then continue automatically at Dec 4, 6:48pm
    3. Ask your admin for more usage
    4. Switch to usage credits

  Enter to confirm · Esc to cancel"""


@pytest.mark.parametrize(
    "menu",
    [
        pytest.param(MENU, id="new-options"),
        pytest.param("  What do you want to do?\n\n  ❯ 1. Stop\n\n  Enter to confirm · Esc to cancel", id="team-menu-with-only-stop"),
        pytest.param("  ❯ 1. Ask your admin for more usage\n    2. Stop and wait for limit to reset", id="admin-first"),
    ],
)
def test_the_rate_limit_menu_with_its_new_options_is_part_of_the_wall(menu):
    wall = "\n".join(claude_rows("You've hit your weekly limit · resets Dec 4, 6:48pm (UTC)", 100))
    screen = f"❯ next task\n{wall}\n\n{menu}\n"
    assert answer("claude", screen) == ("claude.plan", "2026-12-04T18:48:00Z", False, False)


def test_request_sent_to_the_admin_stays_in_the_episode():
    wall = "\n".join(claude_rows("You've hit your org's monthly usage limit", 100))
    screen = claude_screen("", 100).replace("● Done.", f"{wall}\n\n● Request sent to your admin to increase your usage credit limit.", 1)
    assert answer("claude", screen) == ("claude.org-cap", None, True, False)


ARMED_FOOTER = "  ⚠ Usage limit reached · limit resets 9:42pm\n    Continuing automatically at 9:42pm · Esc to cancel\n  ⏵⏵ auto mode on"


@pytest.mark.parametrize(
    "text",
    ["Your org is out of usage · contact your admin", "You've hit your org's monthly usage limit", "Usage is paused for your organization."],
)
def test_an_armed_auto_continue_footer_gives_a_wall_without_a_time_its_reset(text):
    kind, reset, needs_human, _ = answer("claude", claude_screen(text, 100, footer=ARMED_FOOTER))
    assert (reset, needs_human) == ("2026-12-02T21:42:00Z", False)


def test_without_the_footer_the_same_wall_needs_a_person():
    assert answer("claude", claude_screen("Your org is out of usage · contact your admin", 100))[1:3] == (None, True)


# Not walls: the agent goes on, or the plan is not what stopped it.
CLAUDE_NOT_WALLS = [
    "API Error: Server is temporarily limiting requests (not your usage limit) · Rate limited",
    "API Error: 429 Server is temporarily limiting requests (not your usage limit) · Rate limited",
    JSON_400.format("Server is temporarily limiting requests (not your usage limit)").replace("400", "429"),
    "Claude is temporarily limiting requests to the usage page (not your usage limit). Try again in a moment.",
    "Claude Opus limit reached, now using Sonnet",
    "Opus limit reached · now using Sonnet",
    "Opus weekly limit reached, now using Sonnet 4.5",
    "You're now using usage credits · Your 5-hour limit resets 9:42pm (UTC)",
    "Now using usage credits for Opus 5 · Your Opus limit resets 9:42pm (UTC)",
    "Now using extra usage",
    "You're now using your usage allocation",
    "You've used 92% of your 5-hour limit · resets 9:42pm (UTC)",
    "You're close to your usage credit limit",
    "Over 90% of your usage credit limit used",
    "Approaching your 5-hour usage limit — Claude will wrap up the current step.",
    "Usage limit reached · wrapping up",
    "Fast limit reached, fast mode paused · resets in 2h 5m",
    "spend limit unavailable",
    "You've hit your fast limit · resets in 2h 5m",
    "Lower-priority mode ended · you have reached your weekly usage limit",
    "Opus 5 needs usage credits, which your admin manages",
    "You've hit your monthly spend limit. See Usage in Settings",
    "You're out of usage credits. See Usage in Settings",
    "You've hit your monthly limit — raise it below, or it resets next month.",
    "Usage limit reached",
    "Fast mode disabled · Out of usage credits",
    "Goal paused · usage is paused for your organization",
    "Compaction unavailable: model policy only allows Fable, which requires usage credits",
    "Out of usage credits — buy more below to keep going.",
    "API Error: Request rejected (429) · rate limited",
    "Rate limit reached for requests · try again in 20s",
    "Context limit reached · /compact or /clear to continue",
    JSON_400.format("prompt is too long: 215000 tokens > 200000 maximum"),
    # prose that quotes a wall
    "You've hit your monthly spend limit before, so I will keep the requests small.",
    "Your org is out of usage budget planning for this quarter, per the doc.",
    "spend limit reached is what the gateway returns when the test stub trips.",
    "You've hit your org's monthly usage limit · resets 11pm (UTC), so I'll wait for it.",
    "You're out of usage credits. I will stop here and summarise what changed.",
]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("text", CLAUDE_NOT_WALLS, ids=[t[:60] for t in CLAUDE_NOT_WALLS])
def test_claude_look_alike_at_every_width_is_not_a_limit(text, width):
    assert not verdict("claude", claude_screen(text, width)).limited


@pytest.mark.parametrize("width", range(40, 121))
def test_not_your_usage_limit_wrapped_at_any_column_is_not_a_limit(width):
    text = "API Error: Server is temporarily limiting requests (not your usage limit) · Rate limited"
    for marker in ("  ⎿  ", "● "):
        assert not verdict("claude", claude_screen(text, width, marker=marker)).limited


def test_the_usage_panel_listing_resets_is_not_a_wall():
    panel = """\
❯ /usage
  ⎿  Current session
     ███████████▌                                       23% used
     Resets 9:42pm (UTC)

     Current week (all models)
     ██████████████████████████▌                        53% used
     Resets Dec 4, 6:48pm (UTC)

     Current week (Opus)
     ███████████████████████████████████████████████    100% used
     Resets Dec 4, 6:48pm (UTC)"""
    screen = claude_screen("", 100).replace("❯ next task\n● Done.", panel, 1)
    assert not verdict("claude", screen).hit


def test_the_approaching_notice_above_the_composer_is_not_a_wall():
    notice = " " * 16 + "You've used 92% of your 5-hour limit · resets 9:49pm (UTC) · /usage-credits to keep using Claude Code"
    screen = claude_screen("", 120).replace("\n\n" + "─" * 120, f"\n{notice}\n" + "─" * 120, 1)
    assert not verdict("claude", screen).hit


@settings(max_examples=60, deadline=None)
@given(case=st.sampled_from(CLAUDE_WALLS), width=st.integers(40, 120), marker=st.sampled_from(["  ⎿  ", "● ", "⏺ "]))
def test_any_claude_wall_at_any_width_keeps_its_answer(case, width, marker):
    text, kind, reset, needs_human, other_model = case
    assert answer("claude", claude_screen(text, width, marker=marker)) == (kind, reset, needs_human, other_model)


@settings(max_examples=60, deadline=None)
@given(text=st.sampled_from(CLAUDE_NOT_WALLS), width=st.integers(40, 120), marker=st.sampled_from(["  ⎿  ", "● "]))
def test_any_claude_look_alike_at_any_width_stays_unlimited(text, width, marker):
    assert not verdict("claude", claude_screen(text, width, marker=marker)).limited


# --- codex ---------------------------------------------------------------------------


def codex_rows(text: str, width: int, *, by_words: bool) -> list[str]:
    """Codex wraps its error cell at column 0: by words, or (a narrow pane) mid-word."""
    if by_words:
        return textwrap.wrap(text, width, break_long_words=True, break_on_hyphens=False)
    return [text[i : i + width] for i in range(0, len(text), width)]


def codex_screen(text: str, width: int = 80, *, by_words: bool = True, repeat: int = 1) -> str:
    banner = "\n".join(codex_rows(text, width, by_words=by_words))
    walls = "\n\n".join([banner] * repeat)
    return (
        "› fix the flaky checkout test\n\n• Ran pytest -q tests/test_checkout.py\n  └ ..F.\n\n"
        f"{walls}\n\n› Ask Codex to do anything\n\n  gpt-5.3-codex default · ~/src/shop\n  ? for shortcuts\n"
    )


CODEX_WALLS = [
    ("■ Your workspace is out of credits. Ask your workspace owner to refill in order to continue.", "codex.spend-cap", None, True, False),
    ("■ Your workspace is out of credits. Add credits to continue.", "codex.spend-cap", None, True, False),
    ("■ Your workspace is out of credits. Add credits to continue using Codex.", "codex.spend-cap", None, True, False),
    ("■ You hit your spend cap set by the owner of your workspace. Ask an owner to increase your spend cap to continue.",
     "codex.spend-cap", None, True, False),
    ("■ You're out of credits.", "codex.spend-cap", None, True, False),
    ("■ You've reached your workspace credit limit", "codex.spend-cap", None, True, False),
    ("■ Error running remote compact task: Your workspace is out of credits. Add credits to continue.", "codex.spend-cap", None, True, False),
    ("■ Error running remote compact task: You've hit your usage limit. Try again at 11:30 PM.",
     "codex.usage-limit", "2026-12-01T23:30:00Z", False, False),
    ("■ Error running remote compact task: Quota exceeded. Check your plan and billing details.", "codex.billing", None, True, False),
    ("■ You've hit your usage limit for gpt-5.3-codex-spark. Switch to another model now, or try again at 11:02 PM.",
     "codex.model-cap", "2026-12-01T23:02:00Z", False, True),
    ("■ You've hit your usage limit for gpt-5.3-codex-spark. Switch to another model now, or try again later.",
     "codex.model-cap", None, False, True),
    ("■ You've hit your usage limit. To get more access now, send a request to your admin or try again at 11:30 PM.",
     "codex.usage-limit", "2026-12-01T23:30:00Z", False, False),
    ("■ You've hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage "
     "to purchase more credits or try again later.", "codex.usage-limit", None, False, False),
    ("■ You hit your spend cap set in your workspace. Increase your spend cap or try again at 11:51 PM.",
     "codex.spend-cap", "2026-12-01T23:51:00Z", False, False),
    # reworded
    ("■ Your organization is out of credits. Ask an admin to add more.", "codex.spend-cap", None, True, False),
    ("■ You've reached your spend limit. Increase it to continue.", "codex.spend-cap", None, True, False),
    ("■ Your team's credit limit has been reached.", "codex.spend-cap", None, True, False),
]


@pytest.mark.parametrize("by_words", [True, False], ids=["word-wrap", "mid-word"])
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize(("text", "kind", "reset", "needs_human", "other_model"), CODEX_WALLS, ids=[c[0][:60] for c in CODEX_WALLS])
def test_codex_wall_at_every_width(text, kind, reset, needs_human, other_model, width, by_words):
    assert answer("codex", codex_screen(text, width, by_words=by_words)) == (kind, reset, needs_human, other_model)


@pytest.mark.parametrize("repeat", [2, 3])
def test_the_same_codex_banner_stacked_is_one_wall(repeat):
    screen = codex_screen(CODEX_WALLS[0][0], 80, repeat=repeat)
    assert answer("codex", screen) == ("codex.spend-cap", None, True, False)


NOTIFY_OWNER = """\
› fix the flaky checkout test

• Ran pytest -q tests/test_checkout.py
  └ ..F.

  Your workspace is out of credits. Ask your workspace owner to add more. Notify owner?

› 1. Yes (y)
  2. No (default) (n)

  enter select · esc back
"""
INCLUDED_EXHAUSTED = """\
› fix the flaky checkout test

• Ran pytest -q tests/test_checkout.py

  Usage limit reached
  Your included usage is exhausted. Choose an option below to continue.

› 1. Purchase more credits
  2. Wait for the limit to reset

  enter select · esc back
"""


@pytest.mark.parametrize(
    ("screen", "kind"),
    [pytest.param(NOTIFY_OWNER, "codex.spend-cap", id="notify-owner"), pytest.param(INCLUDED_EXHAUSTED, "codex.billing", id="included-usage-exhausted")],
)
def test_a_codex_credit_dialog_in_the_composers_place_is_a_wall(screen, kind):
    assert answer("codex", screen) == (kind, None, True, False)


def test_the_notify_owner_dialog_after_its_banner_is_one_episode():
    screen = NOTIFY_OWNER.replace(
        "  Your workspace", "■ Your workspace is out of credits. Ask your workspace owner to refill in order to continue.\n\n  Your workspace", 1
    )
    assert answer("codex", screen) == ("codex.spend-cap", None, True, False)


CODEX_NOT_WALLS = [
    "■ Error running remote compact task: exceeded retry limit, last status: 429 Too Many Requests",
    "■ Error running remote compact task: Selected model is at capacity. Please try a different model.",
    "■ Error running remote compact task: rate limit exceeded: Rate limit reached for gpt-5.3-codex. Please try again in 4s.",
    "■ Selected model is at capacity. Please try a different model.",
    "■ Policy-restricted capacity is unavailable. Please try again later.",
    "■ We're currently experiencing high demand, which may cause temporary errors.",
    "■ Codex is currently experiencing high load.",
    "■ This chat's model provider settings no longer match your organization's requirements. Contact your administrator or "
    "start a new chat using the current provider settings.",
    "⚠ Automatically switched to gpt-5.3-codex-mini due to usage limits.",
    "⚠ Automatically switched back to gpt-5.3-codex because ordinary usage is available again.",
    "• You're no longer close to your usage limit.",
    "• Your workspace is out of credits, the docs say, when the owner has not refilled it.",
]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("text", CODEX_NOT_WALLS, ids=[t[:60] for t in CODEX_NOT_WALLS])
def test_codex_look_alike_at_every_width_is_not_a_limit(text, width):
    assert not verdict("codex", codex_screen(text, width)).limited


@settings(max_examples=60, deadline=None)
@given(case=st.sampled_from(CODEX_WALLS), width=st.integers(40, 120), by_words=st.booleans())
def test_any_codex_wall_at_any_width_keeps_its_answer(case, width, by_words):
    text, kind, reset, needs_human, other_model = case
    assert answer("codex", codex_screen(text, width, by_words=by_words)) == (kind, reset, needs_human, other_model)


# --- transient chrome never holds the gates -----------------------------------------

HEIGHT = 24
WALL_ROWS = "❯ next task\n  ⎿  You've hit your org's monthly usage limit · resets Dec 15, 12am (UTC)\n"


def claude_pane(footer_rows: tuple[str, ...], above_composer: tuple[str, ...] = ()) -> str:
    """A full Claude pane of HEIGHT rows: the transcript's tail, the composer, the footer.

    The transcript is laid out from the top; a taller footer pushes it up, and
    its top row leaves the screen.
    """
    transcript = [f"● step {n} done" if n % 2 == 0 else "" for n in range(30)] + WALL_ROWS.rstrip("\n").split("\n") + [""]
    transcript += list(above_composer)
    bottom = ["─" * 100, "❯ ", "─" * 100, "  ⏵⏵ auto mode on (shift+tab to cycle)", *footer_rows]
    rows = transcript + bottom
    return "\n".join(rows[-HEIGHT:]) + "\n"


TRANSIENT = [
    pytest.param(("  tmux focus-events off · add 'set -g focus-events on' to ~/.tmux.conf and reattach for focus tracking",), (),
                 id="focus-events-footer"),
    pytest.param(("  ✓ Update installed · Restart to apply",), (), id="update-footer"),
    pytest.param(("  tmux focus-events off · add 'set -g focus-events on' to ~/.tmux.conf", "  ※ Tip: press ? for shortcuts"), (),
                 id="two-footer-rows"),
    pytest.param((), (" " * 16 + "You've used 92% of your 5-hour limit · resets 9:49pm (UTC) · /upgrade to keep using Claude Code",),
                 id="approaching-notice-above-the-composer"),
]


@pytest.mark.parametrize(("footer", "above"), TRANSIENT)
def test_two_captures_differing_only_in_a_transient_row_are_limited(footer, above):
    plugin = PLUGINS["claude"]
    (spec,) = plugin.afd_agents()
    for order in ((True, False), (False, True)):
        captures = [capture_rows(claude_pane(footer if shown else (), above if shown else ())) for shown in order]
        assert captures[0] != captures[1]
        detections = [plugin.afd_detect(agent="claude", lines=rows, clock=CLOCK, pattern=None) for rows in captures]
        v = judge("claude", captures, detections, spec.chrome, tail_lines=3, stability_polls=2)
        assert v.limited, v.reason
        assert v.reset_at == datetime(2026, 12, 15, tzinfo=timezone.utc)


def test_new_output_at_the_bottom_still_changes_the_pane():
    plugin = PLUGINS["claude"]
    (spec,) = plugin.afd_agents()
    first = capture_rows(claude_pane(()))
    second = capture_rows(claude_pane((), ("● Still working on the next step.",)))
    detections = [plugin.afd_detect(agent="claude", lines=rows, clock=CLOCK, pattern=None) for rows in (first, second)]
    assert not judge("claude", [first, second], detections, spec.chrome, tail_lines=3, stability_polls=2).stable


@pytest.mark.parametrize(
    ("text", "needs_human", "other_model"),
    [
        pytest.param("You've reached your Fable limit. Run /usage-credits to continue or switch models with /model.", False, True, id="other-model"),
        pytest.param("Your org is out of usage · contact your admin", True, False, id="needs-human"),
    ],
)
def test_afd_detect_json_says_what_the_wall_offers(text, needs_human, other_model, xdg_dirs, monkeypatch, capsys, tmp_path):
    import json

    from afd.cli.main import main

    monkeypatch.setenv("TZ", "UTC")
    capture = tmp_path / "1.txt"
    capture.write_text(claude_screen(text, 100))
    assert main(["detect", "--agent", "claude", "--now", "2026-12-01T22:18:32Z", "--json", str(capture), str(capture)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["limited"], result["needs_human"], result["offers_other_model"]) == (True, needs_human, other_model)
