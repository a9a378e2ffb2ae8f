"""The tail and stability gates, as tables over captured rows."""

from __future__ import annotations

import re
from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from afd.judge.gates import content_of, is_anchored, is_chrome, judge, same_content, strip_bottom_chrome
from afd.model import Detection, person_must_act

CHROME = (re.compile(r"^─{3,}"), re.compile(r"^❯"), re.compile(r"^\s*⏵⏵ "), re.compile(r"^\s*\? for shortcuts"), re.compile(r"^\s*\d\d:\d\d:\d\d$"))
BANNER = "You've hit your limit · resets 11pm"


def det(row, last=None):
    return Detection("claude", row, row if last is None else last, None, "claude.hit-limit", BANNER)


SCREEN = ["● Done.", "", BANNER, "", "────", "❯ ", "────", "  ⏵⏵ accept edits on", ""]


def test_bottom_chrome_is_stripped_and_indices_stay_valid():
    body = strip_bottom_chrome(SCREEN, CHROME)
    assert body == SCREEN[:3]


@pytest.mark.parametrize(
    "after,tail_lines,expected",
    [
        pytest.param([], 3, True, id="banner-last"),
        pytest.param(["/upgrade to increase your limit"], 3, True, id="one-line-after"),
        pytest.param(["a", "b"], 3, True, id="two-lines-after-tail-3"),
        pytest.param(["a", "b", "c"], 3, False, id="three-lines-after-tail-3"),
        pytest.param(["a"], 1, False, id="one-line-after-tail-1"),
        pytest.param(["", "", "a", ""], 2, True, id="blank-lines-do-not-count"),
    ],
)
def test_tail_anchoring(after, tail_lines, expected):
    rows = ["work", BANNER, *after, "────", "❯ ", "────"]
    assert is_anchored(rows, det(1), CHROME, tail_lines) is expected


def test_banner_inside_chrome_is_not_anchored():
    rows = ["work", "────", "❯ " + BANNER, "────"]
    assert not is_anchored(rows, det(2), CHROME, 3)


def test_ticking_footer_is_ignored_by_stability():
    a = ["work", BANNER, "────", "❯ ", "12:00:01"]
    b = ["work", BANNER, "────", "❯ ", "12:00:03"]
    assert content_of(a, CHROME) == content_of(b, CHROME)


def verdict(captures, **kw):
    detections = [next((det(i) for i, r in enumerate(c) if r == BANNER), None) for c in captures]
    return judge("claude", captures, detections, CHROME, tail_lines=kw.get("tail_lines", 3), stability_polls=kw.get("stability_polls", 2))


def test_two_identical_captures_at_the_banner_are_limited():
    v = verdict([SCREEN, SCREEN])
    assert (v.hit, v.anchored, v.stable, v.limited) == (True, True, True, True)
    assert "usage limit" in v.reason


def test_a_single_capture_is_never_stable():
    v = verdict([SCREEN])
    assert v.hit and v.anchored and not v.stable and not v.limited
    assert "2 identical polls" in v.reason


def test_changed_pane_is_not_stable():
    working = ["● Done.", "", BANNER, "", "✢ Reading (1s · esc to interrupt)", "────", "❯ ", "────"]
    working2 = ["● Done.", "", BANNER, "", "✢ Reading (2s · esc to interrupt)", "────", "❯ ", "────"]
    v = verdict([working, working2])
    assert v.hit and v.anchored and not v.stable


def test_banner_must_be_in_every_stable_capture():
    before = ["● Done.", "", "────", "❯ ", "────"]
    v = verdict([before, SCREEN], stability_polls=2)
    assert not v.stable


def test_banner_worked_past_is_not_anchored():
    rows = ["work", BANNER, "> continue", "● Reading file", "● Editing file", "● Done.", "────", "❯ ", "────"]
    v = verdict([rows, rows])
    assert v.hit and not v.anchored and not v.limited
    assert "followed by 4 lines" in v.reason


def test_no_banner_is_not_limited():
    v = verdict([["just work"], ["just work"]])
    assert not v.hit and not v.limited


def test_stability_polls_three_needs_three_captures():
    assert not verdict([SCREEN, SCREEN], stability_polls=3).stable
    assert verdict([SCREEN, SCREEN, SCREEN], stability_polls=3).limited


def test_block_whose_tail_reaches_into_the_chrome_is_anchored():
    rows = ["work", BANNER, "  Enter to confirm", "────", "❯ ", "────"]
    assert is_anchored(rows, det(1, last=4), CHROME, 1)


ROWS = st.lists(st.text(max_size=80), max_size=40)


@settings(max_examples=300, deadline=None)
@given(st.lists(ROWS, min_size=1, max_size=4), st.integers(0, 60), st.integers(0, 60), st.integers(1, 5), st.integers(1, 4))
def test_gates_never_crash_on_arbitrary_captures(captures, first, span, tail_lines, stability_polls):
    detections = [
        Detection("claude", min(first, max(len(c) - 1, 0)), min(first + span, max(len(c) - 1, 0)), None, "k", BANNER) if c else None
        for c in captures
    ]
    v = judge("claude", captures, detections, CHROME, tail_lines=tail_lines, stability_polls=stability_polls)
    assert v.limited == (v.hit and v.anchored and v.stable)
    assert isinstance(v.reason, str) and v.reason


# --- the detector's chrome row --------------------------------------------------

def det_above(row, chrome_row, last=None):
    return Detection("claude", row, row if last is None else last, None, "claude.hit-limit", BANNER, chrome_row)


def test_rows_below_the_detectors_chrome_row_never_count_as_output():
    # A statusLine and a wall footer no chrome pattern knows, below the composer.
    rows = ["work", BANNER, "", "────", "❯ ", "────", "  ⚠ Usage limit reached · limit resets 9pm", "  Opus │ ~/src │ 5h 100%", "  deploy green"]
    assert not is_anchored(rows, det(1), CHROME, 3)
    assert is_anchored(rows, det_above(1, chrome_row=3), CHROME, 3)


def test_output_above_the_chrome_row_still_counts():
    rows = ["work", BANNER, "a", "b", "c", "────", "❯ ", "────"]
    assert not is_anchored(rows, det_above(1, chrome_row=5), CHROME, 3)


def test_a_ticking_statusline_below_the_chrome_row_does_not_break_stability():
    a = ["work", BANNER, "────", "❯ ", "────", "  build 1841 · 22:14:09"]
    b = ["work", BANNER, "────", "❯ ", "────", "  build 1842 · 22:14:11"]
    v = judge("claude", [a, b], [det_above(1, 2), det_above(1, 2)], CHROME, tail_lines=3, stability_polls=2)
    assert v.limited, v.reason


def test_a_needs_human_wall_says_so_in_its_reason():
    found = Detection("codex", 1, 1, None, "codex.spend-cap", "Your workspace is out of credits.")
    rows = ["› go", "■ Your workspace is out of credits.", "› "]
    v = judge("codex", [rows, rows], [found, found], (re.compile(r"^› "),), tail_lines=3, stability_polls=2)
    assert v.limited and found.needs_human
    assert "a person has to act" in v.reason


RESET = datetime(2026, 12, 2, 0, 30, tzinfo=timezone.utc)

# (kind, reset_at, reset_unstated, offers_other_model, needs_human): the kind never decides.
NEEDS_HUMAN_RULE = [
    pytest.param("claude.spend-cap", RESET, False, False, False, id="spend-cap-that-names-a-reset-waits"),
    pytest.param("claude.org-cap", RESET, False, False, False, id="org-cap-that-names-a-reset-waits"),
    pytest.param("claude.model-cap", RESET, False, False, False, id="model-cap-that-names-a-reset-waits"),
    pytest.param("claude.spend-cap", None, False, False, True, id="spend-cap-without-a-reset-needs-a-person"),
    pytest.param("claude.admin-cap", None, False, False, True, id="admin-cap-without-a-reset-needs-a-person"),
    pytest.param("codex.billing", None, False, False, True, id="billing-needs-a-person"),
    pytest.param("claude.hit-limit", None, False, False, True, id="any-wall-naming-nothing-needs-a-person"),
    pytest.param("claude.model-cap", None, False, True, False, id="no-reset-but-another-model-is-the-users-call"),
    pytest.param("codex.usage-limit", None, True, False, False, id="try-again-later-names-a-reset"),
    pytest.param("devin.quota-exhausted", None, True, False, False, id="a-window-that-lifts-by-itself"),
]


@pytest.mark.parametrize(("kind", "reset_at", "unstated", "other_model", "needs_human"), NEEDS_HUMAN_RULE)
def test_needs_human_follows_the_one_rule_not_the_kind(kind, reset_at, unstated, other_model, needs_human):
    found = Detection("x", 0, 0, reset_at, kind, "b", reset_unstated=unstated, offers_other_model=other_model)
    assert found.needs_human is needs_human
    assert person_must_act(reset_at, reset_unstated=unstated, offers_other_model=other_model) is needs_human


ROWS = ("a", "b", "c", "d", "banner")


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        pytest.param(ROWS, ROWS, True, id="identical"),
        pytest.param(ROWS, ROWS[1:], True, id="top-row-scrolled-off-by-a-footer-notice"),
        pytest.param(ROWS[2:], ROWS, True, id="two-rows-came-back"),
        pytest.param(ROWS + ("x", "y"), ROWS[1:] + ("x", "y"), True, id="same-bottom"),
        pytest.param(ROWS, ROWS[1:] + ("new output",), False, id="new-output-at-the-bottom"),
        pytest.param(ROWS, ROWS[:-1], False, id="bottom-row-gone"),
        pytest.param(("0", "1", "2", "3") + ROWS, ROWS, False, id="more-than-the-slack"),
        pytest.param(ROWS, (), False, id="empty"),
    ],
)
def test_rows_lost_at_the_top_are_the_same_pane(a, b, same):
    assert same_content(a, b) is same and same_content(b, a) is same


def test_a_banner_whose_pane_scrolled_by_a_transient_row_is_stable():
    a = ["old", "work", BANNER, "────", "❯ ", "────", "  ⏵⏵ auto mode on"]
    b = ["work", BANNER, "────", "❯ ", "────", "  ⏵⏵ auto mode on", "  tmux focus-events off · add 'set -g focus-events on'"]
    v = judge("claude", [a, b], [det_above(2, 3), det_above(1, 2)], CHROME, tail_lines=3, stability_polls=2)
    assert v.limited, v.reason


@pytest.mark.parametrize(
    ("pattern", "flags", "body"),
    [
        (r"^\s*╭─.*╮\s*$", 0, r"\s*╭─.*╮\s*$"),
        (r"^\s*(?:a|b) on\b", 0, r"\s*(?:a|b) on\b"),
        (r"^a|b", 0, None),  # `b` may stand anywhere
        (r"^(a)|(b)", 0, None),
        (r"^[|(]x", 0, r"[|(]x"),  # `|` and `(` in a class are members
        (r"^[]|]x|y", 0, None),
        (r"^[^]|]x", 0, r"[^]|]x"),
        (r"^\|x", 0, r"\|x"),
        (r"^\\|x", 0, None),
        (r"^a", re.MULTILINE, None),  # any row's start within the text
        (r"^a", re.VERBOSE, None),
        (r"a^", 0, None),
        (r"\(shift\+tab to cycle\)", 0, None),
    ],
)
def test_a_chrome_pattern_is_tried_at_the_row_start_only_when_its_anchor_holds_all_of_it(pattern, flags, body):
    from afd.judge.gates import _after_start_anchor

    assert _after_start_anchor(re.compile(pattern, flags)) == body


def _every_spec_chrome():
    from afd.pluginset import load_plugins

    return {name: spec.chrome for name, spec in load_plugins(None, entry_points=False).agents.items() if spec.chrome}


def _captured_rows():
    from pathlib import Path

    from afd.kit.text import capture_rows

    data = Path(__file__).parent.parent / "data"
    return sorted({row for path in data.rglob("*.txt") for row in capture_rows(path.read_text(encoding="utf-8"))})


_ODD_ROWS = ["", "│", "╭─╮", "❯", "❯ 1. Yes", "  ⏵⏵ accept edits on", "a|b", "x ^ y", "[retrying in 3s]", "?? for shortcuts"]


def test_every_agents_chrome_joined_finds_what_its_patterns_find_one_by_one():
    rows = _captured_rows() + _ODD_ROWS
    assert len(rows) > 500
    for agent, chrome in _every_spec_chrome().items():
        for row in rows:
            assert is_chrome(row, chrome) == any(p.search(row) for p in chrome), (agent, row)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="│╭╮╰╯─❯>?⏵⏸·%!/@ abcdeonfrtsxy0123456789.()[]|^", max_size=60))
def test_any_row_is_chrome_joined_exactly_when_a_pattern_finds_it(row):
    for chrome in _every_spec_chrome().values():
        assert is_chrome(row, chrome) == any(p.search(row) for p in chrome)
