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
}
OFFERS_MODEL = re.compile(r"/model\b|switch models|switch to another model", re.IGNORECASE)


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
    """A 40-row capture of the real CLI with ``row`` at the end of the transcript, above the composer."""
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


def names_reset(entry: walls.Entry) -> bool:
    return any(p in entry.shown for p in ("{reset}", "{day}", "{time}"))


# "Try again later" names no time but says the wall lifts by itself: a window
# whose reset is unstated, waited out on the retry interval, not a person's job.
LIFTS_LATER = re.compile(r"\btry again later\b", re.I)


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
    expect_human = not names_reset(entry) and not OFFERS_MODEL.search(entry.shown) and not LIFTS_LATER.search(entry.shown)
    assert result["limited"], f"{drawn(agent, entry)!r}: {result['reason']}"
    assert result["kind"] == entry.verdict, f"{drawn(agent, entry)!r}: {result['reason']}"
    assert (result["reset_at"] is not None) == names_reset(entry), f"{drawn(agent, entry)!r}: {result['reason']}"
    assert result["needs_human"] is expect_human, f"{drawn(agent, entry)!r}: {result['reason']}"


def test_the_lists_hold_walls_of_both_clis():
    assert {agent for agent, _ in CASES} == {"claude", "codex"}
