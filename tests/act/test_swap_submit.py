"""The swap's SUBMIT step: a brief typed into the new agent is submitted once it shows in its input box."""

from __future__ import annotations

import pytest

from afd.act import swap
from afd.pluginset import load_plugins

# A brief as afd builds it: fifteen lines and a final newline.
BRIEF = "\n".join(["You are continuing work already in progress in this worktree.", "", "A previous agent (claude) was working on it.",
                   "Its conversation is not available to you.", "", "The goal:", "make checkout keep the cart", "",
                   "Work already done on this branch (fix-checkout):", "  1 commit.", "  Review it before you start:",
                   "    git log --oneline abc..HEAD", "    git diff abc...HEAD", "",
                   "Continue from that state. Do not start over, and do not revert work you did not write."]) + "\n"
# The bottom of the real CLIs' screens (OpenCode 1.18.33, Copilot CLI 1.0.102) with their input box
# empty, then with the brief pasted: each folds a paste of many lines into a placeholder.
OPENCODE_BOX = ["                       ┃", "                       ┃  {}", "                       ┃",
                "                       ┃  Build · Mock Model Mock", "                       ╹" + "▀" * 74,
                " " * 71 + "tab agents  ctrl+p commands", "  ~/src/shop:fix-checkout" + " " * 85 + "1.18.33"]
COPILOT_BOX = [" ~/src/shop [⎇ fix-search]", "─" * 120, "❯ {}", "─" * 120,
               " Interactive · Manual Approval · @ files · # issues" + " " * 64 + "Auto"]


def _box(box: list[str], shows: str) -> list[str]:
    return [row.replace("{}", shows) for row in box]


@pytest.mark.parametrize(
    "agent, box, shows, seen",
    [
        ("opencode", OPENCODE_BOX, 'Ask anything… "What is the tech stack of this project?"', False),
        ("opencode", OPENCODE_BOX, "[Pasted ~15 lines]", True),
        ("opencode", OPENCODE_BOX, "[Pasted ~4 lines]", False),
        ("copilot", COPILOT_BOX, "", False),
        ("copilot", COPILOT_BOX, "[Paste #1 - 15 lines]", True),
        ("copilot", COPILOT_BOX, "[Paste #2 - 3 lines]", False),
        ("gemini", ["▄" * 120, " > " + "Continue from that state. Do not start over, and do not revert work you did not write.", "▀" * 120], "", True),
    ],
    ids=["opencode-empty", "opencode-folded-paste", "opencode-another-paste", "copilot-empty", "copilot-folded-paste",
         "copilot-another-paste", "gemini-last-line-in-its-box"],
)
def test_the_swap_submits_a_typed_brief_once_it_shows_in_the_input_box(agent, box, shows, seen):
    """What the SUBMIT step waits for: the brief's text, or the CLI's placeholder for a paste of as many lines."""
    spec = load_plugins(None, entry_points=False).agents[agent]
    assert swap.brief_shown(BRIEF, spec, _box(box, shows)) is seen
