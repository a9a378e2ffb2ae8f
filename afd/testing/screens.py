"""How each fake agent's screen looks: header, transcript rows, spinner, composer, footer.

The layouts follow the real CLIs closely enough that the built-in plugins'
chrome patterns and banner rules apply to them unchanged. Pure functions of
the state handed in; the fake program owns the terminal.
"""

from __future__ import annotations

import os
import re
import unicodedata
from dataclasses import dataclass

_SPINNERS = {
    "claude": "·✢✳✶✻✽",
    "codex": "•◦",
    "devin": "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏",
}
SPINNER_FRAME_SECONDS = 0.25


@dataclass(frozen=True, slots=True)
class Screen:
    agent: str
    width: int
    height: int
    cwd: str
    transcript: tuple[str, ...]
    status: str | None  # spinner while working, turn summary after a turn
    composer: str  # text typed and not yet submitted
    composer_hidden: bool = False  # a menu has taken its place
    ui: str = "modern"


def display_width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _boxed(lines: list[str], inner: int) -> list[str]:
    inner = max(inner, *(display_width(line) for line in lines))
    rows = ["╭" + "─" * (inner + 2) + "╮"]
    for line in lines:
        rows.append("│ " + line + " " * max(0, inner - display_width(line)) + " │")
    rows.append("╰" + "─" * (inner + 2) + "╯")
    return rows


def _home_relative(path: str) -> str:
    home = os.environ.get("HOME", "")
    if home and (path == home or path.startswith(home.rstrip("/") + "/")):
        return "~" + path[len(home.rstrip("/")) :]
    return path


def header(agent: str, cwd: str, width: int) -> list[str]:
    cwd = _home_relative(cwd)
    if agent == "claude":
        inner = max(20, min(width, 60) - 4)
        return _boxed(["✻ Welcome to Claude Code!", "", f"  cwd: {cwd}"], inner)
    if agent == "codex":
        inner = max(20, min(width, 52) - 4)
        return _boxed(
            [">_ OpenAI Codex (v0.155.1)", "", "model:     gpt-5.5 high   /model to change", f"directory: {cwd}"],
            inner,
        )
    return ["  v3000.2.17 · Teams · 59% remaining (resets in 3d 11h)"]


def user_row(agent: str, text: str) -> str:
    mark = {"claude": ">", "codex": "›", "devin": "❭"}[agent]
    return f"{mark} {text}"


def reply_rows(agent: str, text: str) -> list[str]:
    return [{"claude": "⏺ ", "codex": "• ", "devin": "  "}[agent] + text]


def file_rows(agent: str, path: str, lines: list[str]) -> list[str]:
    """The agent running `cat PATH` and showing what it printed."""
    lines = lines or [""]
    if agent == "claude":
        return [f"⏺ Bash(cat {path})", f"  ⎿  {lines[0]}", *(f"     {ln}" for ln in lines[1:])]
    if agent == "codex":
        return [f"• Ran cat {path}", f"  └ {lines[0]}", *(f"    {ln}" for ln in lines[1:])]
    return [f"  Ran cat {path}", *(f"    {ln}" for ln in lines)]


def edit_rows(agent: str, path: str, sha: str | None) -> list[str]:
    done = f"Done. Committed {sha[:7]}." if sha else "Done."
    if agent == "claude":
        return [f"⏺ Update({path})", f"  ⎿  Updated {path} with 1 addition", "", f"⏺ {done}"]
    if agent == "codex":
        return [f"• Edited {path} (+1 -0)", "", f"• {done}"]
    return [f"  Editing {path}", f"  {done}"]


def spinner(agent: str, elapsed: float) -> str:
    frames = _SPINNERS[agent]
    glyph = frames[int(elapsed / SPINNER_FRAME_SECONDS) % len(frames)]
    seconds = int(elapsed)
    if agent == "claude":
        return f"{glyph} Working… ({seconds}s · esc to interrupt)"
    if agent == "codex":
        return f"{glyph} Working ({seconds}s • esc to interrupt)"
    return f"{glyph} Working… ({seconds}s)"


def thinking(agent: str) -> str:
    """The status row of an agent thinking before its first output: it stands still (no counter, no frames)."""
    return {"claude": "✻ Thinking… (esc to interrupt)", "codex": "• Thinking (esc to interrupt)"}.get(agent, "  Thinking…")


def turn_summary(agent: str, elapsed: float) -> str | None:
    return f"✻ Worked for {int(elapsed)}s" if agent == "claude" else None


def composer(agent: str, text: str, width: int, ui: str) -> list[str]:
    shown = text.replace("\r", " ").replace("\n", " ")
    if agent == "claude":
        if ui == "boxed":
            inner = max(10, width - 4)
            return [*_boxed([f"> {shown}"], inner), "  ? for shortcuts"]
        rule = "─" * width
        return [rule, f"❯ {shown}", rule, "  ⏵⏵ accept edits on (shift+tab to cycle)"]
    if agent == "codex":
        left, right = "  ? for shortcuts", "82% context left"
        pad = max(2, min(width, 80) - 2 - len(left) - len(right))
        return [f"› {shown or 'Ask Codex to do anything'}", "", left + " " * pad + right]
    return [f"❭ {shown or 'Ask Devin to build features, fix bugs, or work on your code'}"]


_ARMED = re.compile(r"^● Usage limit reached · set to continue automatically at (?P<at>.+)$")


def armed_footer(agent: str, transcript: tuple[str, ...]) -> list[str]:
    """The notice Claude Code draws below its composer while its auto-continue is armed.

    Armed from its ``● Usage limit reached · set to continue automatically``
    row until anything newer is printed (a reply, a cancel, a prompt).
    """
    if agent != "claude":
        return []
    last = next((row for row in reversed(transcript) if row.strip()), "")
    m = _ARMED.match(last)
    if m is None:
        return []
    return [f"  ⚠ Usage limit reached · limit resets {m['at']}", f"    Continuing automatically at {m['at']} · Esc to cancel"]


def draw(screen: Screen) -> list[str]:
    """The rows to show, newest at the bottom, cut to what fits the pane."""
    rows = [*header(screen.agent, screen.cwd, screen.width), "", *screen.transcript]
    if screen.status and not screen.composer_hidden:
        rows += ["", screen.status]
    if not screen.composer_hidden:
        below = composer(screen.agent, screen.composer, screen.width, screen.ui)
        footer = armed_footer(screen.agent, screen.transcript)
        if footer and screen.ui != "boxed":
            below = [*below[:3], *footer, *below[3:]]  # between the closing rule and the mode row
        rows += ["", *below]
    # A row wider than the pane wraps onto more screen lines; keep what fits.
    used, kept = 0, []
    for row in reversed(rows):
        need = max(1, -(-display_width(row) // max(1, screen.width)))
        if used + need > screen.height:
            break
        used += need
        kept.append(row)
    return kept[::-1]
