"""The usage-limit banners (and their look-alikes) the fake agents print, as data.

Each family is the text a real CLI prints at its limit wall, with the parts
that vary between occurrences (reset time, zone, plan wording, prefix, wrap
point) as parameters. ``render`` turns a family and its parameters into the
screen rows the fake draws. Families with ``limit=False`` are the traps:
text that looks like a limit and is not one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from afd.testing.dialogs import FAMILIES as DIALOGS
from afd.testing.family import BannerFamily, zone_suffix


def _claude_wrap(marker: str, text: str, params: Mapping[str, Any], indent: str = "     ") -> list[str]:
    """Claude continues a wrapped line on indented rows, breaking between words."""
    width = params.get("width")
    if not width:
        return [marker + text]
    rows, line = [], marker
    for word in text.split(" "):
        bare = line in (marker, indent)
        candidate = line + word if bare else f"{line} {word}"
        if len(candidate) > int(width) and not bare:
            rows.append(line)
            line = indent + word
        else:
            line = candidate
    rows.append(line)
    return rows


def _codex_wrap(text: str, params: Mapping[str, Any]) -> list[str]:
    """Codex's TUI continues a wrapped cell at column 0, sometimes inside a word.

    ``break_after``: substrings after whose first occurrence the row ends
    (``["try a"]`` gives ``… try a`` / ``gain at …``); ``width``: wrap
    between words at that many columns.
    """
    for marker in params.get("break_after") or ():
        head, sep, tail = text.partition(str(marker))
        if not sep:
            raise ValueError(f"break_after {marker!r} is not in {text!r}")
        return [head + sep, *_codex_wrap(tail, {**params, "break_after": list(params["break_after"])[1:]})]
    width = params.get("width")
    if not width:
        return [text]
    rows, line = [], ""
    for word in text.split(" "):
        candidate = f"{line} {word}" if line else word
        if len(candidate) > int(width) and line:
            rows.append(line)
            line = word
        else:
            line = candidate
    rows.append(line)
    return rows


def _claude_line(sentence: str) -> Callable[[Mapping[str, Any]], list[str]]:
    def build(p: Mapping[str, Any]) -> list[str]:
        text = sentence.format(**p, zone_suffix=zone_suffix(p))
        rows = _claude_wrap(str(p.get("marker", "  ⎿  ")), text, p)
        hint = p.get("hint")
        if hint:
            rows.append(f"     {hint}")
        return rows

    return build


def _rate_limit_menu(p: Mapping[str, Any]) -> list[str]:
    rows = [
        "> /rate-limit-options",
        f"You've hit your {p['which']} limit · resets {p['reset']}{zone_suffix(p)}",
        "What do you want to do?",
    ]
    options = ["Upgrade your plan", "Stop and wait for limit to reset"]
    selected = int(p.get("selected", 1))
    for n, option in enumerate(options, start=1):
        rows.append(f"{'❯' if n == selected else ' '} {n}. {option}")
    if p.get("footer"):
        rows += ["", "Enter to confirm · Esc to cancel"]
    return rows


def _auto_continue(p: Mapping[str, Any]) -> list[str]:
    return [
        f"You've hit your session limit · resets {p['reset']}{zone_suffix(p)}",
        "/upgrade or /usage-credits to finish what you’re working on.",
        "",
        f"⏺ Usage limit reached · continuing automatically at {p['continue_at'] or p['reset']} · esc or type to cancel",
    ]


def _limit_reset(p: Mapping[str, Any]) -> list[str]:
    # The wall came and went: the newer line says the agent is running again.
    return [
        f"  ⎿  You've hit your session limit · resets {p['reset']}{zone_suffix(p)}",
        "",
        "⏺ Usage limit reset · continuing automatically",
    ]


def _armed(p: Mapping[str, Any]) -> list[str]:
    # Claude Code 2.1's wall with its own auto-continue armed: the banner under
    # the prompt, then its message row; the screen adds the footer below the
    # composer while the wall stays armed (see `screens.armed_footer`).
    return [
        f"  ⎿  You've hit your {p['window']} limit · resets {p['reset']}{zone_suffix(p)}",
        "",
        f"● Usage limit reached · set to continue automatically at {p['reset']}",
    ]


def _codex_modal(p: Mapping[str, Any]) -> list[str]:
    # Codex replaces its composer with a modal after a limit when usage is high.
    return [
        *_codex_wrap(codex_sentence(p), p),
        "",
        "  Approaching rate limits",
        "  Switch to gpt-6-luna for lower credit usage?",
        "",
        "› 1. Switch to gpt-6-luna                   Fast and affordable model for easier tasks.",
        "  2. Keep current model",
        "  3. Keep current model (never show again)  Hide future rate limit reminders about switching models",
        "",
        "  enter select · esc back",
    ]


_CODEX_LEADS = {
    "plain": "",
    "admin": "To get more access now, send a request to your admin",
    "plus": "Upgrade to Pro (https://chatgpt.com/explore/pro), visit "
    "https://chatgpt.com/codex/settings/usage to purchase more credits",
}


def codex_sentence(p: Mapping[str, Any]) -> str:
    """The unwrapped codex usage-limit sentence for these parameters."""
    lead = _CODEX_LEADS[str(p.get("lead", "plain"))]
    form, reset = p.get("form", "in"), p.get("reset", "")
    retry = {
        "at": f"try again at {reset}.",
        "in": f"try again in {reset}.",
        "later": "try again later.",
        "none": "",
    }[str(form)]
    text = "You've hit your usage limit."
    if lead:
        text += f" {lead}" + (f" or {retry}" if retry else ".")
    elif retry:
        text += " " + retry[0].upper() + retry[1:]
    return f"{p.get('prefix', '■ ')}{text}"


def _codex_usage_limit(p: Mapping[str, Any]) -> list[str]:
    return _codex_wrap(codex_sentence(p), p)


FAMILIES: Mapping[str, BannerFamily] = MappingProxyType(
    {
        f.id: f
        for f in (
            # --- claude ---------------------------------------------------
            BannerFamily(
                "claude.legacy",
                "claude",
                True,
                _claude_line("Claude usage limit reached. Your limit will reset at {reset}{zone_suffix}."),
                {"reset": "2pm", "zone": "America/New_York"},
            ),
            BannerFamily(
                "claude.headless",
                "claude",
                True,
                lambda p: [f"Claude AI usage limit reached|{p['epoch']}"],
                {"epoch": 1783940400},
            ),
            BannerFamily(
                "claude.limit-reached",
                "claude",
                True,
                _claude_line("{window} limit reached ∙ resets {reset}{zone_suffix}"),
                {"window": "5-hour", "reset": "2am", "zone": ""},
            ),
            BannerFamily(
                "claude.hit-limit",
                "claude",
                True,
                _claude_line("You've hit your limit · resets {reset}{zone_suffix}"),
                {"reset": "11pm", "zone": "America/Anchorage"},
            ),
            BannerFamily(
                "claude.session",
                "claude",
                True,
                _claude_line("You've hit your session limit · resets {reset}{zone_suffix}"),
                {"reset": "3pm", "zone": "America/Bogota", "hint": "/upgrade to increase your usage limit."},
            ),
            BannerFamily(
                "claude.weekly",
                "claude",
                True,
                _claude_line("You've hit your weekly limit · resets {reset}{zone_suffix}"),
                {"reset": "Sep 15 at 7pm", "zone": "", "hint": "/usage-credits to finish what you’re working on."},
            ),
            BannerFamily(
                "claude.extra-usage",
                "claude",
                True,
                _claude_line("You're out of extra usage · resets {reset}{zone_suffix}"),
                {"reset": "5pm", "zone": "Europe/Berlin"},
            ),
            BannerFamily(
                "claude.rate-limit-options",
                "claude",
                True,
                _rate_limit_menu,
                {"which": "session", "reset": "6:50pm", "zone": "Europe/London", "selected": 1, "footer": False},
                replaces_composer=True,
            ),
            BannerFamily(
                "claude.auto-continue",
                "claude",
                True,
                _auto_continue,
                {"reset": "6pm", "zone": "America/New_York", "continue_at": ""},
            ),
            BannerFamily(
                "claude.approaching",
                "claude",
                False,
                lambda p: [f"  Approaching {p['model']}usage limit · /model to use best available model"],
                {"model": "Opus "},
            ),
            BannerFamily(
                "claude.limit-reset",
                "claude",
                False,
                _limit_reset,
                {"reset": "3pm", "zone": "America/Bogota"},
            ),
            BannerFamily(
                "claude.armed",
                "claude",
                True,
                _armed,
                {"window": "5-hour", "reset": "9:42pm", "zone": "UTC"},
            ),
            BannerFamily(
                "claude.spend-cap",
                "claude",
                True,
                lambda p: [f"  ⎿  {p['text']}"],
                {"text": "You've reached your monthly spend limit · add funds to continue"},
            ),
            BannerFamily(
                "claude.api-429",
                "claude",
                False,
                lambda p: ["  ⎿  API Error: Request rejected (429) · this may be a temporary capacity issue"],
            ),
            # --- codex ----------------------------------------------------
            BannerFamily(
                "codex.usage-limit",
                "codex",
                True,
                _codex_usage_limit,
                {"form": "in", "reset": "3 hours 2 minutes", "lead": "plain", "prefix": "■ "},
            ),
            BannerFamily(
                "codex.modal",
                "codex",
                True,
                _codex_modal,
                {"form": "at", "reset": "9:29 PM", "lead": "plus", "prefix": "■ "},
                replaces_composer=True,
            ),
            BannerFamily(
                "codex.spend-cap",
                "codex",
                True,
                lambda p: [f"■ {p['text']}"],
                {"text": "Your workspace is out of credits. Ask your workspace owner to refill in order to continue."},
            ),
            BannerFamily(
                "codex.billing",
                "codex",
                True,
                lambda p: [f"■ {p['text']}"],
                {"text": "Quota exceeded. Check your plan and billing details."},
            ),
            BannerFamily(
                "codex.rate-limit-exceeded",
                "codex",
                False,
                lambda p: ["■ rate limit exceeded: Rate limit reached for gpt-5.3-codex. Please try again in 4s."],
            ),
            BannerFamily(
                "codex.heads-up",
                "codex",
                False,
                lambda p: [
                    f"⚠ Heads up, you have less than {p['percent']}% of your weekly limit left. "
                    "Run /status for a breakdown."
                ],
                {"percent": 5},
            ),
            BannerFamily(
                "codex.retry-429",
                "codex",
                False,
                lambda p: ["■ exceeded retry limit, last status: 429 Too Many Requests"],
            ),
            # --- devin ----------------------------------------------------
            BannerFamily(
                "devin.quota",
                "devin",
                True,
                lambda p: [f"Quota exhausted{': ' + str(p['message']) if p['message'] else ''}"],
                {"message": "You have used all of your ACUs for this billing cycle."},
            ),
        )
    }
)

# The banner a fake shows when a scenario names none.
DEFAULT_FAMILY = MappingProxyType(
    {"claude": "claude.session", "codex": "codex.usage-limit", "devin": "devin.quota"}
)


def family(family_id: str) -> BannerFamily:
    try:
        return FAMILIES[family_id]
    except KeyError:
        raise ValueError(f"unknown banner family {family_id!r} (known: {', '.join(sorted(FAMILIES))})") from None


def render(family_id: str, params: Mapping[str, Any] | None = None) -> list[str]:
    """The screen rows of one banner of this family, with ``params`` over its defaults."""
    fam = family(family_id)
    merged = {**fam.defaults, **(params or {})}
    return fam.build(merged)


def _with_dialogs() -> Mapping[str, BannerFamily]:
    # The menu, modal and auto-continue screens live in their own module; a
    # family defined here under the same id wins.
    return MappingProxyType({**DIALOGS, **FAMILIES})


FAMILIES = _with_dialogs()
