"""Every wall string Claude Code 2.1.332 and Codex 0.171.0 carry in their installed bundles.

The strings were read out of the pinned CLIs' bundle and binary, then filled
with sample values (Claude: ``{reset}`` as a clock time and as a date, a
model name, a duration; Codex keeps its messages split at the placeholders,
so each is put back together the way the CLI prints it). Each is judged on a
whole screen through the built-in detector and both gates: the kind, the
reset, and the two facts `needs_human` follows from. A string that is no
wall must stay unlimited: a throttle, a "now using" notice, an approaching
warning, a hint or status row shown only beside a wall ("Usage limit reached
· wrapping up", "Lower-priority mode ended · …"), fast mode pausing, and the
usage-credits consent dialog's descriptions of its choices ("… needs usage
credits, which your admin manages", "… See Usage in Settings").
"""

from __future__ import annotations

import pytest
from test_detect_wall_families import answer, claude_screen, codex_screen

from afd.kit.text import normalise_row

R = "{reset}"  # the table's reset column for strings that name one: the reset filled in
RESETS = [
    pytest.param("9:42pm (UTC)", "2026-12-02T21:42:00Z", id="clock-time"),
    pytest.param("Dec 4, 6:48pm (UTC)", "2026-12-04T18:48:00Z", id="date"),
]

# (string, kind, reset, needs_human, offers_other_model); kind None: not a wall.
CLAUDE_STRINGS = [
    ("You've hit your 5-hour limit · resets {reset}", 'claude.plan', R, False, False),
    ("You've hit your weekly limit · resets {reset}", 'claude.plan', R, False, False),
    ("You've hit your Opus limit · resets {reset}", 'claude.model-cap', R, False, False),
    ("You've hit your Sonnet limit · resets {reset}", 'claude.model-cap', R, False, False),
    ("You've hit your Fable limit · resets {reset}", 'claude.model-cap', R, False, False),
    ("You've hit your session limit", 'claude.plan', None, True, False),
    ("You've hit your usage limit · resets {reset}", 'claude.plan', R, False, False),
    ("You've hit your limit · resets {reset}", 'claude.plan', R, False, False),
    ("You've hit your usage limit · contact your admin to increase it", 'claude.admin-cap', None, True, False),
    ("You've hit your 5-hour limit · resets {reset} · out of usage credits", 'claude.extra-usage', R, False, False),
    ("You've hit your 5-hour limit · resets {reset} · progress saved", 'claude.plan', R, False, False),
    ("You've hit your monthly spend limit · raise it at https://claude.ai/settings/usage?from=cc_cli_limit_message", 'claude.spend-cap', None, True, False),
    ("You've hit your monthly spend limit · raise it at https://claude.ai/settings/usage?from=cc_cli_limit_message · your 5-hour limit resets {reset}", 'claude.spend-cap', R, False, False),
    ("You've hit your org's monthly spend limit · ask your admin to raise it at https://claude.ai/admin-settings/usage", 'claude.org-cap', None, True, False),
    ("You've hit your org's monthly spend limit · ask your admin to raise it at https://claude.ai/admin-settings/usage · your weekly limit resets {reset}", 'claude.org-cap', R, False, False),
    ("You've hit your org's monthly spend limit · run /usage-credits to raise it, or visit https://claude.ai/admin-settings/usage", 'claude.org-cap', None, True, False),
    ("You've hit your org's monthly spend limit · visit https://claude.ai/admin-settings/usage to raise it", 'claude.org-cap', None, True, False),
    ("You've hit your org's monthly spend limit · ask your admin for a higher limit", 'claude.org-cap', None, True, False),
    ("You've hit your org's monthly spend limit · run /usage-credits to ask your admin for a higher limit", 'claude.org-cap', None, True, False),
    ("You've hit your org's monthly spend limit · manage it in admin settings on the web", 'claude.org-cap', None, True, False),
    ("You've hit your individual spend limit · ask your admin to raise it at https://claude.ai/admin-settings/usage", 'claude.admin-cap', None, True, False),
    ("You've hit your individual spend limit · ask your admin for a higher limit · your 5-hour limit resets {reset}", 'claude.admin-cap', R, False, False),
    ("You've hit your channel's monthly spend limit · an org owner or channel manager can raise it in the channel's Claude settings", 'claude.spend-cap', None, True, False),
    ("You've hit your channel's monthly usage limit · an org owner or channel manager can raise it in the channel's Claude settings · resets {reset}", 'claude.spend-cap', R, False, False),
    ("You've hit your org's monthly usage limit", 'claude.org-cap', None, True, False),
    ("You've hit your org's monthly usage limit · resets {reset}", 'claude.org-cap', R, False, False),
    ("You've hit your individual usage limit · resets {reset}", 'claude.admin-cap', R, False, False),
    ("You've hit your team's pooled group budget · resets {reset} · ask your admin to raise it at https://claude.ai/admin-settings/usage", 'claude.org-cap', R, False, False),
    ("You've hit your team's pooled group budget · your 5-hour limit resets {reset}", 'claude.org-cap', R, False, False),
    ("You've hit your team's pooled group budget.", 'claude.org-cap', None, True, False),
    ("You've hit your team's pooled group budget. It resets {reset}.", 'claude.org-cap', R, False, False),
    ("You've hit your team's pooled group budget. Run /usage-credits to raise it and keep using Opus 5 or switch models to continue this chat.", 'claude.org-cap', None, False, True),
    ("You've hit your team's pooled group budget. /model to switch models.", 'claude.org-cap', None, False, True),
    ("You've hit your team's pooled group budget. Switch to another model to continue.", 'claude.org-cap', None, False, True),
    ("You're out of usage credits", 'claude.extra-usage', None, True, False),
    ("You're out of usage credits · resets {reset}", 'claude.extra-usage', R, False, False),
    ("You're out of usage credits · resets {reset} · progress saved", 'claude.extra-usage', R, False, False),
    ("You're out of usage credits · /usage-credits to buy more", 'claude.extra-usage', None, True, False),
    ("You're out of usage credits. Run /usage-credits to keep using Opus 5 or /model to switch models.", 'claude.model-cap', None, False, True),
    ("You're out of usage credits. /model to switch models.", 'claude.model-cap', None, False, True),
    ("You're out of usage credits. Switch to another model to continue.", 'claude.model-cap', None, False, True),
    ("You're out of usage credits. See Usage in Settings", None, None, None, None),
    ('Your org is out of usage · add funds to continue', 'claude.org-cap', None, True, False),
    ('Your org is out of usage · contact your admin', 'claude.org-cap', None, True, False),
    ("Your seat type doesn't include usage credits", 'claude.admin-cap', None, True, False),
    ("Your seat type doesn't include usage", 'claude.admin-cap', None, True, False),
    ("Your seat type doesn't include extra usage", 'claude.admin-cap', None, True, False),
    ('This service is disabled for your org', 'claude.admin-cap', None, True, False),
    ('Your usage allocation has been disabled by your admin · ask your admin for a higher limit', 'claude.admin-cap', None, True, False),
    ('Your usage allocation has been disabled by your admin · run /usage-credits to ask your admin for a higher limit', 'claude.admin-cap', None, True, False),
    ("Your group's usage limit is set to $0 · ask your admin for a higher limit", 'claude.admin-cap', None, True, False),
    ('Usage is paused for your organization. For help, please contact support.', 'claude.org-cap', None, True, False),
    ("You've hit your monthly spend limit.", 'claude.spend-cap', None, True, False),
    ("You've hit your monthly spend limit. Run /usage-credits to manage your limit and keep using Opus 5 or switch models to continue this chat.", 'claude.spend-cap', None, False, True),
    ("You've hit your monthly spend limit. /model to switch models.", 'claude.spend-cap', None, False, True),
    ("You've hit your monthly spend limit. Switch to another model to continue.", 'claude.spend-cap', None, False, True),
    ("You've hit your channel's monthly spend limit.", 'claude.spend-cap', None, True, False),
    ("You've hit your monthly spend limit · /usage-credits to raise it", 'claude.spend-cap', None, True, False),
    ("You've hit your monthly spend limit · your 5-hour limit resets {reset}", 'claude.spend-cap', R, False, False),
    ("You've hit your monthly spend limit. See Usage in Settings", None, None, None, None),
    ("You've reached your Fable limit for this week. Switch models?", 'claude.model-cap', None, False, True),
    ("You've reached your Fable limit", 'claude.model-cap', None, True, False),
    ('Opus 5 requires usage credits.', 'claude.model-cap', None, True, False),
    ('Opus 5 requires usage credits. Run /usage-credits to continue or switch models with /model.', 'claude.model-cap', None, False, True),
    ('Opus 5 requires usage credits. /model to switch models.', 'claude.model-cap', None, False, True),
    ('Opus 5 requires usage credits. Switch to another model to continue.', 'claude.model-cap', None, False, True),
    ('Opus 5 requires usage credits. Switch models to continue.', 'claude.model-cap', None, False, True),
    ('Fable 5 requires usage credits', 'claude.model-cap', None, True, False),
    ('Claude stopped here because Opus 5 now requires usage credits. To keep this agent going, switch models or continue with usage credits.', 'claude.model-cap', None, False, True),
    ("You've hit your Fable limit · resets {reset}. Run /usage-credits to continue or switch models with /model.", 'claude.model-cap', R, False, True),
    ("You've hit your Fable limit · resets {reset}. /model to switch models.", 'claude.model-cap', R, False, True),
    ('Buy more to keep using Opus 5, or switch models to keep working.', None, None, None, None),
    ('Switch models to keep working.', None, None, None, None),
    ('Opus 5 needs usage credits, which your admin manages', None, None, None, None),
    ('Opus 5 needs usage credits, which your organization has used up', None, None, None, None),
    ('Opus 5 needs usage credits, which are off for your organization', None, None, None, None),
    ('Opus 5 needs usage credits. See Usage in Settings', None, None, None, None),
    ('Your organization is out of usage credits. Contact your admin to add more.', 'claude.org-cap', None, True, False),
    ("Your organization's usage credit cap is reached for this period. Contact your admin to raise it.", 'claude.org-cap', None, True, False),
    ("You're out of extra usage", 'claude.extra-usage', None, True, False),
    ('Extra usage is required for long context', 'claude.extra-usage', None, True, False),
    ('Usage credits are required for long context', 'claude.extra-usage', None, True, False),
    ('Credit balance is too low', 'claude.billing', None, True, False),
    ('Credit balance too low · Add funds: https://platform.claude.com/settings/billing', 'claude.billing', None, True, False),
    ("Failed to authenticate: your claude.ai login expired. Claude Code tried ANTHROPIC_API_KEY instead, but it doesn't have enough credit. Run `claude auth login` to sign in again, or add funds: https://platform.claude.com/settings/billing", 'claude.billing', None, True, False),
    ('spend limit reached', 'claude.org-cap', None, True, False),
    ('spend limit reached · resets {reset}', 'claude.org-cap', R, False, False),
    ('spend limit reached · resets Aug 8 · request an increase at https://go.corp.example.com/claude-limits', 'claude.org-cap', '2027-08-08T00:00:00Z', False, False),
    ('spend limit unavailable', None, None, None, None),
    ("You've hit your fast limit · resets in 2h 5m", None, None, None, None),
    ('Fast limit reached, fast mode paused · resets in 2h 5m', None, None, None, None),
    ('Usage limit reached · set to continue automatically at {reset}', 'claude.plan', R, False, False),
    ('Usage limit reached again · set to continue automatically at {reset}', 'claude.plan', R, False, False),
    ('Usage limit reached · wrapping up', None, None, None, None),
    ('Usage limit reached · brief included wrap-up, then usage credits', None, None, None, None),
    ('Lower-priority mode ended · you have reached your weekly usage limit', None, None, None, None),
    ('/usage-credits to adjust your monthly spend limit.', None, None, None, None),
    ('/upgrade to keep using Claude Code', None, None, None, None),
    ('/usage-credits to keep using Claude Code', None, None, None, None),
    ('/upgrade to increase your usage limit.', None, None, None, None),
    ('Run /usage-credits to turn on usage credits for your org', None, None, None, None),
    ('Run /usage-credits to ask your admin for more', None, None, None, None),
    ('Request sent to your admin to increase your usage credit limit.', None, None, None, None),
    ('Server is temporarily limiting requests (not your usage limit)', None, None, None, None),
    ('Claude is temporarily limiting requests to the usage page (not your usage limit). Try again in a moment.', None, None, None, None),
    ("You're now using usage credits · Your 5-hour limit resets {reset}", None, None, None, None),
    ("You're now using your usage allocation", None, None, None, None),
    ('Now using usage credits for Opus 5 · Your Opus 5 limit resets {reset}', None, None, None, None),
    ('Now using extra usage', None, None, None, None),
    ("You've used 92% of your 5-hour limit · resets {reset}", None, None, None, None),
    ("You're close to your usage credit limit", None, None, None, None),
    ('Over 90% of your usage credit limit used', None, None, None, None),
    ('Approaching your 5-hour usage limit — Claude will wrap up the current step.', None, None, None, None),
]
CLAUDE_WALLS = [c for c in CLAUDE_STRINGS if c[1] is not None]
CLAUDE_NOT_WALLS = [c[0] for c in CLAUDE_STRINGS if c[1] is None]


@pytest.mark.parametrize(("fill", "reset_at"), RESETS)
@pytest.mark.parametrize(("text", "kind", "reset", "needs_human", "other_model"), CLAUDE_WALLS, ids=[c[0][:70] for c in CLAUDE_WALLS])
def test_claude_bundle_wall(text, kind, reset, needs_human, other_model, fill, reset_at):
    expected = (kind, reset_at if reset is R else reset, needs_human, other_model)
    for width in (44, 80, 120):
        assert answer("claude", claude_screen(text.replace("{reset}", fill), width)) == expected, width


@pytest.mark.parametrize("text", CLAUDE_NOT_WALLS, ids=[t[:70] for t in CLAUDE_NOT_WALLS])
def test_claude_bundle_string_that_is_no_wall_stays_unlimited(text):
    for width in (44, 80, 120):
        assert answer("claude", claude_screen(text.replace("{reset}", "9:42pm (UTC)"), width))[0] is False, width


AT = " or try again at 11:30 PM."
CODEX_STRINGS = [
    ("■ You’ve hit your usage limit.", "codex.usage-limit", None, True, False),  # names no reset: the one rule
    ("■ You’ve hit your usage limit. To get more access now, send a request to your admin" + AT,
     "codex.usage-limit", "2026-12-01T23:30:00Z", False, False),
    ("■ You’ve hit your usage limit. Visit https://chatgpt.com/settings/usage to purchase more credits" + AT,
     "codex.usage-limit", "2026-12-01T23:30:00Z", False, False),
    ("■ You’ve hit your usage limit. Upgrade to Plus to continue using Codex (https://chatgpt.com/explore/plus)," + AT,
     "codex.usage-limit", "2026-12-01T23:30:00Z", False, False),
    ("■ You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage "
     "to purchase more credits" + AT, "codex.usage-limit", "2026-12-01T23:30:00Z", False, False),
    ("■ You’ve hit your usage limit for gpt-5.3-codex-spark. Switch to another model now," + AT,
     "codex.model-cap", "2026-12-01T23:30:00Z", False, True),
    ("■ Your workspace is out of credits. Add credits to continue.", "codex.spend-cap", None, True, False),
    ("■ Your workspace is out of credits. Ask your workspace owner to refill in order to continue.", "codex.spend-cap", None, True, False),
    ("■ Your workspace is out of credits. Add credits to continue using Codex.", "codex.spend-cap", None, True, False),
    ("■ You hit your spend cap set in your workspace. Increase your spend cap to continue.", "codex.spend-cap", None, True, False),
    ("■ You hit your spend cap set by the owner of your workspace. Ask an owner to increase your spend cap to continue.",
     "codex.spend-cap", None, True, False),
    ("■ You're out of credits.", "codex.spend-cap", None, True, False),
    ("■ You've reached your workspace credit limit", "codex.spend-cap", None, True, False),
    ("■ Quota exceeded. Check your plan and billing details.", "codex.billing", None, True, False),
    ("■ To use Codex with your ChatGPT plan, upgrade to Plus: https://chatgpt.com/explore/plus.", "codex.billing", None, True, False),
    ("■ Usage limit reached. You've reached your usage limit. Increase your limits to continue using codex.", "codex.billing", None, True, False),
    ("■ Error running remote compact task: You’ve hit your usage limit. Try again at 11:30 PM.",
     "codex.usage-limit", "2026-12-01T23:30:00Z", False, False),
    ("■ Error running remote compact task: Your workspace is out of credits. Add credits to continue.", "codex.spend-cap", None, True, False),
    # not walls: an admin's provider policy, capacity and load, the auto-switch notices, approaching
    ("■ This chat’s model provider settings no longer match your organization’s requirements. Contact your administrator or start "
     "a new chat using the current provider settings.", None, None, None, None),
    ("■ Selected model is at capacity. Please try a different model.", None, None, None, None),
    ("■ Policy-restricted capacity is unavailable. Please try again later.", None, None, None, None),
    ("■ We’re currently experiencing high demand, which may cause temporary errors.", None, None, None, None),
    ("■ Codex is currently experiencing high load.", None, None, None, None),
    ("⚠ Automatically switched to gpt-5.3-codex-mini due to usage limits.", None, None, None, None),
    ("⚠ Automatically switched back to gpt-5.3-codex because ordinary usage is available again.", None, None, None, None),
    ("• You’re no longer close to your usage limit.", None, None, None, None),
]


@pytest.mark.parametrize(("text", "kind", "reset", "needs_human", "other_model"), CODEX_STRINGS, ids=[c[0][:70] for c in CODEX_STRINGS])
def test_codex_bundle_string(text, kind, reset, needs_human, other_model):
    for width in (44, 80, 120):
        for by_words in (True, False):
            got = answer("codex", codex_screen(normalise_row(text), width, by_words=by_words))
            assert got == ((kind, reset, needs_human, other_model) if kind else (False, got[1])), (width, by_words)
