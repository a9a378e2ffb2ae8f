"""Limit screens that ask something or act by themselves, as data for the fakes.

Menus and modals (Claude's `/rate-limit-options`, Codex's "Switch to …?"
and "Request a limit increase" modals), Claude's native auto-continue
(armed and cancelled) and a Codex spend cap, worded as `real-agents.md`
records them. Each menu family lists its choices in ``options``; the fake
moves the highlight with the arrow keys and logs the text it confirmed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from afd.testing.family import BannerFamily, zone_suffix


def _menu(marker: str, options, selected: int) -> list[str]:
    return [f"{marker if n == selected else ' '} {n}. {option}" for n, option in enumerate(options, start=1)]


def _claude_menu(p: Mapping[str, Any]) -> list[str]:
    return [
        "> /rate-limit-options",
        f"  ⎿  You've hit your {p['which']} limit · resets {p['reset']}{zone_suffix(p)}",
        "",
        "What do you want to do?",
        *_menu("❯", p["options"], int(p["selected"])),
        "",
        "Enter to confirm · Esc to cancel",
    ]


def _codex_wall(p: Mapping[str, Any]) -> str:
    return f"■ You've hit your usage limit. Try again in {p['reset']}."


def _codex_switch(p: Mapping[str, Any]) -> list[str]:
    return [
        _codex_wall(p),
        "",
        "  Approaching rate limits",
        f"  Switch to {p['model']} for lower credit usage?",
        "",
        *_menu("›", p["options"], int(p["selected"])),
        "",
        "  enter select · esc back",
    ]


def _codex_increase(p: Mapping[str, Any]) -> list[str]:
    return [
        _codex_wall(p),
        "",
        "  Usage limit reached",
        "  Request a limit increase from your owner to continue using codex. Request increase?",
        "",
        *_menu("›", p["options"], int(p["selected"])),
    ]


def _native_armed(p: Mapping[str, Any]) -> list[str]:
    return [
        f"  ⎿  You've hit your {p['which']} limit · resets {p['reset']}{zone_suffix(p)}",
        "",
        f"● Usage limit reached · set to continue automatically at {p['reset']}",
    ]


def _native_cancelled(p: Mapping[str, Any]) -> list[str]:
    return [
        f"  ⎿  You've hit your {p['which']} limit · resets {p['reset']}{zone_suffix(p)}",
        "",
        "● Automatic continue cancelled · /rate-limit-options to wait again",
        "  /upgrade or /usage-credits to finish what you’re working on.",
    ]


FAMILIES = {
    f.id: f
    for f in (
        BannerFamily(
            "claude.limit-menu",
            "claude",
            True,
            _claude_menu,
            {"which": "session", "reset": "6:50pm", "zone": "UTC", "selected": 1,
             "options": ["Upgrade your plan", "Stop and wait for limit to reset"]},
            replaces_composer=True,
        ),
        BannerFamily(
            "codex.switch-model",
            "codex",
            True,
            _codex_switch,
            {"reset": "3 hours 2 minutes", "model": "gpt-6-luna", "selected": 1,
             "options": ["Switch to gpt-6-luna", "Keep current model", "Keep current model (never show again)"]},
            replaces_composer=True,
        ),
        BannerFamily(
            "codex.limit-increase",
            "codex",
            True,
            _codex_increase,
            {"reset": "3 hours 2 minutes", "selected": 2, "options": ["Yes (y)", "No (default) (n)"]},
            replaces_composer=True,
        ),
        BannerFamily("claude.native-armed", "claude", True, _native_armed, {"which": "5-hour", "reset": "9:42pm", "zone": "UTC"}),
        BannerFamily("claude.native-cancelled", "claude", True, _native_cancelled, {"which": "5-hour", "reset": "9:42pm", "zone": "UTC"}),
        BannerFamily(
            "codex.spend-cap",
            "codex",
            True,
            lambda p: ["■ You hit your spend cap set by the owner of your workspace. Ask an owner to increase your spend cap to continue."],
        ),
    )
}
