"""Every wall the pinned CLIs carry (the reviewed lists ``data/real/walls-<cli>-<version>.txt``) is a limit to afd.

Each listed wall is drawn the way its CLI draws it — under a prompt, above
the composer, on a screen of the real CLI (``data/real/<agent>/…``) — with
its placeholders filled with sample values, and ``afd detect`` must call it
limited, with the listed kind and ``needs_human`` by the one rule: a wall
that names a reset lifts at that reset; one that names none but offers
another model is the user's call; any other needs a person.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from afd.cli.main import main

sys.path.insert(0, str(Path(__file__).parent.parent / "real"))

import walls  # noqa: E402

REAL = Path(__file__).parent.parent / "data" / "real"
NOW = "2026-12-01T22:18:32Z"
SAMPLES = {
    "claude": {"{reset}": "9:42pm (UTC)", "{model}": "Opus", "{day}": "2026-12-02", "{time}": "9:42pm"},
    "codex": {"{reset}": "11:30 PM", "{model}": "gpt-5.3-codex"},
    "gemini": {"{time}": "11:42 PM", "{seconds}": "10177.564"},
    "opencode": {"{relative}": "4 hours 22 minutes", "{countdown}": "2h 4m"},
    "copilot": {"{relative}": "1 hour 30 minutes", "{date}": "December 5, 2026", "{time}": "4:08 PM"},
}
OFFERS_MODEL = re.compile(r"/model\b|switch models|switch to another model", re.IGNORECASE)
# Gemini CLI, OpenCode and Copilot CLI print `/model to switch models.` under every wall: what offers another
# model there is an option or a sentence that switches (`2. Switch to gemini-2.5-flash`, `or switch to auto
# model`, `Please switch models`, `Switching to the gemini-2.5-flash model`).
OFFERS_MODEL_BY_OPTION = re.compile(r"\d\. Switch to [\w.-]+|switch to auto mod|Please switch models|Switching to the [\w.-]+ model")


def _cases() -> list[tuple[str, walls.Entry]]:
    cases = []
    for path in sorted(REAL.glob("walls-*.txt")):
        agent = path.name.split("-")[1]
        reviewed = walls.read_list(path)
        for entry in [*reviewed.found, *reviewed.drawn]:
            if entry.is_wall:
                cases.append((agent, entry))
    return cases


CASES = _cases()


def drawn(agent: str, entry: walls.Entry) -> str:
    """The wall's row as the CLI draws it, placeholders filled."""
    text = entry.shown
    for placeholder, value in SAMPLES[agent].items():
        text = text.replace(placeholder, value)
    assert "${" not in text and "{" not in text.replace("{}", ""), f"fill the placeholders of {entry.message!r}"
    return text


def screen(agent: str, row: str) -> str:
    """A 40-row capture of the real CLI with ``row`` at the end of the transcript, above the composer.

    In the lists of the later CLIs a wall may span rows (`\\n` between them); a dialog (a box) takes
    the composer's place, and OpenCode's status-row walls take the status row's place below its input box.
    """
    rows_of = row.split("\\n")
    if agent == "gemini":
        rows = (REAL / "gemini" / "idle-after-answer" / "2.txt").read_text(encoding="utf-8").splitlines()
        if rows_of[0].startswith("╭"):
            return _fill(rows[:26] + [" > next task", ""] + rows_of, [])
        return _fill(rows[:26] + [" > next task", ""] + rows_of + [""], rows[27:35])
    if agent == "opencode":
        rows = (REAL / "opencode" / "idle-after-answer" / "2.txt").read_text(encoding="utf-8").splitlines()
        prompt = ["  ┃", "  ┃  next task", "  ┃", ""]
        if rows_of[0].lstrip().startswith("┃"):
            return _fill(rows[:21] + prompt + rows_of + ["", "     ▣  Build · Mock Model", ""], rows[31:37])
        return _fill(rows[:21] + prompt, rows[31:36] + rows_of)
    if agent == "copilot":
        rows = (REAL / "copilot" / "quota-words-in-an-answer" / "2.txt").read_text(encoding="utf-8").splitlines()
        return _fill(rows[:2] + [" ❯ next task", ""] + rows_of + [""], rows[35:40])
    if agent == "claude":
        rows = (REAL / "claude" / "idle-after-answer" / "2.txt").read_text(encoding="utf-8").splitlines()
        shown = row if row.startswith("●") else f"  ⎿  {row}"
        body = rows[:18] + ["", "❯ next task", shown, ""]
        chrome = rows[36:40]
    else:
        rows = (REAL / "codex" / "plan-limit-no-reset" / "2.txt").read_text(encoding="utf-8").splitlines()
        body = rows[:22] + ["› next task", "", row if row.startswith("■") else f"■ {row}", ""]
        chrome = rows[36:40]
    return "\n".join(body + [""] * (40 - len(body) - len(chrome)) + chrome) + "\n"


def _fill(body: list[str], chrome: list[str]) -> str:
    return "\n".join(body + [""] * max(0, 40 - len(body) - len(chrome)) + chrome) + "\n"


def names_reset(entry: walls.Entry) -> bool:
    return any(p in entry.shown for p in ("{reset}", "{day}", "{time}", "{seconds}", "{relative}", "{countdown}", "{date}"))


# "Try again later" names no time but says the wall lifts by itself: a window
# whose reset is unstated, waited out on the retry interval, not a person's job.
LIFTS_LATER = re.compile(r"\btry again later\b", re.I)
# Gemini CLI prints `Please wait and try again later. To increase your limits, …` under every 429 error it
# leaves: it is its wall's own words that say whether waiting lifts it (`your daily quota`).
GEMINI_LIFTS_LATER = re.compile(r"\bdaily quota\b")


def lifts_later(agent: str, shown: str) -> bool:
    if agent == "gemini":
        return GEMINI_LIFTS_LATER.search(shown) is not None
    return LIFTS_LATER.search(shown) is not None


@pytest.mark.parametrize("agent,entry", CASES, ids=[f"{a}:{e.shown[:70]}" for a, e in CASES])
def test_listed_wall_is_limited_with_its_kind_and_the_one_needs_human_rule(agent, entry, tmp_path, xdg_dirs,
                                                                          monkeypatch, capsys):
    monkeypatch.setenv("TZ", "UTC")
    text = screen(agent, drawn(agent, entry))
    files = []
    for n in (1, 2):
        files.append(tmp_path / f"{n}.txt")
        files[-1].write_text(text, encoding="utf-8")
    assert main(["detect", "--agent", agent, "--now", NOW, "--json", *map(str, files)]) == 0
    result = json.loads(capsys.readouterr().out)
    offers = (OFFERS_MODEL if agent in ("claude", "codex") else OFFERS_MODEL_BY_OPTION).search(entry.shown)
    expect_human = not names_reset(entry) and not offers and not lifts_later(agent, entry.shown)
    assert result["limited"], f"{drawn(agent, entry)!r}: {result['reason']}"
    assert result["kind"] == entry.verdict, f"{drawn(agent, entry)!r}: {result['reason']}"
    assert (result["reset_at"] is not None) == names_reset(entry), f"{drawn(agent, entry)!r}: {result['reason']}"
    assert result["needs_human"] is expect_human, f"{drawn(agent, entry)!r}: {result['reason']}"


def test_the_lists_hold_walls_of_every_cli():
    assert {agent for agent, _ in CASES} == {"claude", "codex", "gemini", "opencode", "copilot"}
