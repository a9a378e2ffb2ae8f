"""Volatile spans: a row an agent animates while it waits still reads as unchanged to the idle and stability gates.

OpenCode waits out a rate limit in its status row, beside a spinner whose
cells move several times a second and a countdown that ticks each minute
(with the padding that right-aligns `esc interrupt` after it). An agent's
spec names those spans (`AgentSpec.volatile`); the gates compare rows with
them masked, and nothing else changes.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from afd.config.userpattern import UserPattern
from afd.judge.gates import compared_content, content_of, judge
from afd.kit.text import capture_rows, masked
from afd.model import Detection
from afd.observe.watch import PaneWatch

# OpenCode's own, as its shipped manifest names them.
SPINNER = re.compile(r"^\s*[⬝■]{2,}(?=\s)")
COUNTDOWN = re.compile(r"(?<=\[retrying in )\d[\dhms ]*?(?= attempt #\d)")
PADDING = re.compile(r"(?<=\])\s{2,}(?=esc interrupt\s*$)")
VOLATILE = (SPINNER, COUNTDOWN, PADDING)
CHROME = (re.compile(r"^\s*┃"), re.compile(r"^\s*╹▀+\s*$"))

ROW = "   {spin} Rate limit reached for requests [retrying in {left} attempt #{n}]{pad}esc interrupt"


def row(spin="⬝⬝■■■■■■", left="2h 1m", n=1, pad=" " * 31):
    return ROW.format(spin=spin, left=left, n=n, pad=pad)


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        pytest.param(row(), row(spin="■■■■■■⬝⬝"), True, id="spinner-cells-moved"),
        pytest.param(row(), row(left="2h", pad=" " * 34), True, id="countdown-ticked-and-its-padding-grew"),
        pytest.param(row(left="10m 5s"), row(left="9m 59s", pad=" " * 32), True, id="countdown-lost-a-digit"),
        pytest.param(row(), row(n=2), False, id="a-new-attempt-is-a-change"),
        pytest.param(row(), row().replace("requests", "tokens"), False, id="other-words-are-a-change"),
        pytest.param(row(), "   ■■■■■■⬝⬝ Sure, here is the fix.", False, id="the-row-became-output"),
    ],
)
def test_rows_that_differ_only_in_volatile_spans_compare_equal(a, b, same):
    assert (masked(a, VOLATILE) == masked(b, VOLATILE)) is same


def test_a_masked_row_still_reads_as_the_wall():
    assert masked(row(), VOLATILE) == "… Rate limit reached for requests [retrying in … attempt #1] esc interrupt"
    assert masked(row(), ()) == row()


def test_volatile_spans_are_masked_only_while_a_wall_is_on_screen():
    rows = ["  ┃  fix the test", "", row()]
    assert compared_content(rows, wall(rows), CHROME, VOLATILE)[-1] == masked(row(), VOLATILE)
    assert compared_content(rows, None, CHROME, VOLATILE)[-1] == row()


def test_content_masks_volatile_spans_and_still_drops_chrome():
    screen = ["  ┃  fix the login test", "", "     ▣  Build · Mock Model", "  ┃  Build · Mock Model Mock"]
    a = content_of([*screen, row()], CHROME, VOLATILE)
    b = content_of([*screen, row(spin="⬝⬝⬝⬝⬝⬝⬝⬝", left="2h", pad=" " * 34)], CHROME, VOLATILE)
    assert a == b and not any("┃" in r for r in a)
    assert content_of([*screen, row()], CHROME) != content_of([*screen, row(spin="■■■■■■⬝⬝")], CHROME)


def wall(rows):
    last = len(rows) - 1
    return Detection("opencode", last, last, None, "opencode.rate-limited", masked(rows[-1], VOLATILE))


@pytest.mark.parametrize(
    ("volatile", "limited"),
    [pytest.param(VOLATILE, True, id="volatile-spans-named"), pytest.param((), False, id="none-named")],
)
def test_a_wall_its_agent_animates_is_stable_only_when_its_spans_are_named(volatile, limited):
    captures = [["  ┃  fix the test", "", row()], ["  ┃  fix the test", "", row(spin="■■■■■■⬝⬝", left="2h", pad=" " * 34)]]
    v = judge("opencode", captures, [wall(c) for c in captures], CHROME, tail_lines=3, stability_polls=2, volatile=volatile)
    assert v.hit and v.anchored and v.limited is limited, v.reason


def test_output_below_an_animated_row_is_still_work():
    captures = [["  ┃  fix the test", "", row()], ["  ┃  fix the test", "", row(spin="■■■■■■⬝⬝"), "     I fixed it."]]
    v = judge("opencode", captures, [wall(captures[0]), wall(captures[1][:-1])], CHROME, tail_lines=3,
              stability_polls=2, volatile=VOLATILE)
    assert not v.stable


def test_the_watch_calls_a_pane_idle_when_only_volatile_spans_moved():
    watch = PaneWatch(keep=2)
    first = ["  ┃  fix the test", "", row()]
    assert watch.record(first, wall(first), (1,), 0.0, CHROME, VOLATILE) is None
    second = ["  ┃  fix the test", "", row(spin="■■■■■■⬝⬝")]
    assert watch.record(second, wall(second), (2,), 1.0, CHROME, VOLATILE) is True
    third = ["  ┃  fix the test", "", row(spin="■■■■■■⬝⬝"), "     I fixed it."]
    assert watch.record(third, None, (3,), 2.0, CHROME, VOLATILE) is False


def test_a_spinner_beside_a_request_going_through_is_still_work():
    # The same cells move while OpenCode waits on a model call; with no wall on screen they are not masked.
    watch = PaneWatch(keep=2)
    busy = "   {spin}  esc interrupt"
    watch.record(["  ┃  fix the test", "", busy.format(spin="⬝⬝⬝■■■■■")], None, (1,), 0.0, CHROME, (SPINNER,))
    assert watch.record(["  ┃  fix the test", "", busy.format(spin="■■■■■⬝⬝⬝")], None, (2,), 1.0, CHROME, (SPINNER,)) is False


def test_a_budgeted_pattern_masks_and_a_tripped_one_leaves_the_row_alone():
    spinner = UserPattern(SPINNER.pattern)
    assert masked(row(), (spinner,)).startswith("… Rate limit")
    spinner.tripped = True  # as after a match that ran past its time budget
    assert masked(row(), (spinner,)) == row()
    runaway = UserPattern(r"^(a|aa)+$")
    assert runaway.sub("…", "a" * 40 + "b") == "a" * 40 + "b"


REAL = Path(__file__).parent.parent / "data" / "real" / "opencode" / "rate-limited-countdown-tick"


def test_the_real_retry_row_across_a_countdown_tick_is_one_unchanged_pane():
    a, b = (capture_rows((REAL / f"{i}.txt").read_text(encoding="utf-8")) for i in (1, 2))
    assert a != b  # the spinner and `2h 1m` → `2h` moved
    assert content_of(a, CHROME, VOLATILE) == content_of(b, CHROME, VOLATILE)
