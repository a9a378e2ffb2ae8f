"""The manifest keys for what Gemini CLI, OpenCode and Copilot CLI draw, on a CLI of their shapes.

`boxcli` draws its input box with the same bar as its history (told apart
by shape), a status row below it, dialogs under its walls, walls with blank
rows inside and walls drawn like a prompt; each key is checked on its own,
and a broken one is named with its line.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from afd.judge.gates import chrome_of, is_anchored, is_chrome
from afd.kit.text import box_rows
from afd.model import Clock
from afd.pluginset import load_plugins

NOW = datetime(2026, 7, 13, 9, 0, tzinfo=timezone.utc)
CLOCK = Clock(NOW, timezone.utc)

BOXCLI = r"""
name = "boxcli"
[process]
executables = ["boxcli"]

[screen]
composer_box = { side = '^\s*┃', edge = '^\s*╹▀{5,}\s*$' }
walls_below_composer = true
chrome = ['ctrl\+p commands\s*$', '^\s*▣\s']
busy = ['esc interrupt']
trim = ['\s+│\s*$']

[[banner]]
kind = "retry"
regex = '\[retrying in (?P<relative>\d+h(?: \d+m)?) #\d+\]'
continues_by_itself = true

[[banner]]
kind = "provider"
regex = '^\s*┃\s{2}(?=.*\bcredits\b)'
continuation = '^\s*┃\s{2}\S'
under = '^\s*┃\s+\S'
nothing_after = true
reset_unstated = '(?i)\btry again later\b'

[[banner]]
kind = "quota"
regex = '^✗ Quota used up\.'
continuation = '^  +\S'
spans_blank_rows = true
reset = 'resets in (?P<relative>[\d.]+s|~?\d+ \w+)'
offers_other_model = 'Switching to [\w-]+'

[[dialog]]
start = '^╭─+╮$'
end = '^╰─+╯$'
offers_other_model = '^│\s*\d\. Switch to '
"""

BOX = ["  ┃", "  ┃  type here", "  ┃  Build · model", "  ╹▀▀▀▀▀▀▀▀▀▀"]
FOOTER = ["   ~/proj                      ctrl+p commands"]
PROMPT = ["  ┃", "  ┃  fix the test", "  ┃", ""]


@pytest.fixture(scope="module")
def boxcli(tmp_path_factory):
    folder = tmp_path_factory.mktemp("plugins")
    (folder / "boxcli.toml").write_text(BOXCLI, encoding="utf-8")
    plugins = load_plugins(folder, entry_points=False)
    assert not plugins.failures
    return plugins


def detect(plugins, rows):
    return plugins.detect("boxcli", rows, CLOCK)


def anchored(plugins, rows, found) -> bool:
    return is_anchored(rows, found, chrome_of(plugins.agents["boxcli"], rows), 3)


def test_the_input_box_is_found_by_its_shape_and_only_its_rows_are_chrome(boxcli):
    rows = [*PROMPT, "     done.", "", *BOX, *FOOTER]
    assert box_rows(rows, re.compile(r"^\s*┃"), re.compile(r"^\s*╹▀+")) == (6, 9)
    chrome = chrome_of(boxcli.agents["boxcli"], rows)
    assert is_chrome("  ┃  type here", chrome) and not is_chrome("  ┃  fix the test", chrome)
    # Without a box on screen the spec's patterns are all there is.
    assert chrome_of(boxcli.agents["boxcli"], ["     done."]) == boxcli.agents["boxcli"].chrome


def test_a_wall_in_the_status_row_below_the_box_names_no_composer(boxcli):
    rows = [*PROMPT, *BOX, "   ⬝⬝■■ Rate limited [retrying in 2h 4m #1]"]
    found = detect(boxcli, rows)
    assert found.kind == "boxcli.retry" and found.chrome_row is None and found.first_row == len(rows) - 1
    assert found.reset_at == NOW + timedelta(hours=2, minutes=4) and anchored(boxcli, rows, found)


def test_a_providers_message_under_the_prompt_it_answers_is_a_wall_above_the_box(boxcli):
    rows = [*PROMPT, "  ┃", "  ┃  Insufficient credits. Try again later.", "  ┃", "", "     ▣  Build", "", *BOX, *FOOTER]
    found = detect(boxcli, rows)
    assert found.kind == "boxcli.provider" and found.chrome_row == 10 and anchored(boxcli, rows, found)
    assert found.reset_at is None and found.reset_unstated and not found.needs_human


@pytest.mark.parametrize(
    "rows",
    [
        # the user's own prompt with the words, under the agent's reply, answered
        pytest.param(["     done.", "", "  ┃", "  ┃  why no credits?", "  ┃", "", "     Because.", "", *BOX, *FOOTER], id="typed"),
        # under an old error, but answered: not its last word
        pytest.param([*PROMPT, "  ┃", "  ┃  out of credits", "  ┃", "", "  ┃", "  ┃  why no credits?", "  ┃", "",
                      "     Because.", "", *BOX, *FOOTER], id="answered"),
        # under an old error, still going: the status row is busy
        pytest.param([*PROMPT, "  ┃", "  ┃  out of credits", "  ┃", "", "  ┃", "  ┃  add credits then", "  ┃", "",
                      *BOX, "   ⬝■■ thinking   esc interrupt"], id="working"),
    ],
)
def test_the_same_bar_over_a_prompt_is_no_wall(boxcli, rows):
    assert detect(boxcli, rows) is None


def test_a_dialog_under_a_wall_is_part_of_it_and_its_option_offers_another_model(boxcli):
    wall = ["✗ Quota used up. It resets in 10177.564s.", "", "", "╭────╮", "│ Switch model?", "│ 1. Switch to flash",
            "│ 2. No", "╰────╯"]
    rows = ["     done.", "", *wall]
    found = detect(boxcli, rows)
    assert (found.first_row, found.last_row) == (2, 9) and found.offers_other_model
    assert found.reset_at == NOW + timedelta(seconds=10177.564) and anchored(boxcli, rows, found)
    # the banner is the wall's words, not its dialog's: answering the dialog leaves the same wall
    assert found.banner == "✗ Quota used up. It resets in 10177.564s."


def test_a_dialog_drawn_later_under_other_output_is_not_the_walls(boxcli):
    rows = ["✗ Quota used up.", "", "● next answer", "", "╭────╮", "│ 1. Switch to flash", "╰────╯"]
    found = detect(boxcli, rows)
    assert found.last_row == 0 and not found.offers_other_model and not anchored(boxcli, rows, found)


def test_a_wall_spans_blank_rows_inside_its_message_and_reads_the_screens_offer(boxcli):
    rows = ["✗ Quota used up. It resets in ~3 days.", "", "  💡 Tip: use your own project:", "    gcloud config set project",
            "  Switching to flash for the rest of this session.", "", *BOX, *FOOTER]
    found = detect(boxcli, rows)
    assert found.last_row == 4 and found.offers_other_model and found.reset_at == NOW + timedelta(days=3)


def test_a_scrollbar_is_trimmed_before_walls_are_read(boxcli):
    rows = ["✗ Quota used up. It resets in                            │", "  ~3 days.                         │"]
    assert detect(boxcli, rows).reset_at == NOW + timedelta(days=3)


BROKEN = r"""
name = "broken"
[process]
executables = ["b"]
[screen]
composer = '^› '
composer_box = { side = '┃' }
walls_below_composer = "yes"
[[banner]]
kind = "k"
regex = 'x'
offers_other_model = 3
nothing_after = "no"
[[dialog]]
start = 'a'
colour = "red"
"""


def test_broken_structure_keys_are_named_with_their_lines(tmp_path):
    (tmp_path / "broken.toml").write_text(BROKEN, encoding="utf-8")
    plugins = load_plugins(tmp_path, entry_points=False)
    [failure] = [f for f in plugins.failures if f.name == "broken"]
    path = Path(tmp_path / "broken.toml")
    assert f"{path}:7: screen.composer_box: expected {{ side = '<regex>', edge = '<regex>' }}" in failure.error
    assert f"{path}:8: screen.walls_below_composer: expected true or false, got 'yes'" in failure.error
    assert f"{path}:12: banner.1.offers_other_model: expected true or false or a regex, got 3" in failure.error
    assert f"{path}:13: banner.1.nothing_after: expected true or false, got 'no'" in failure.error
    assert f"{path}:14: dialog.1: needs a end" in failure.error
    assert f"{path}:16: dialog.1.colour: unknown key" in failure.error
