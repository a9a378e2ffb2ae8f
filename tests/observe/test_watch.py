"""When a pane is captured afresh, and how adopted panes are named and ignored."""

from __future__ import annotations

import re

import pytest

from afd.model import Detection
from afd.observe.watch import MAX_CAPTURE_AGE, PaneWatch
from afd.record.naming import is_ignored, is_valid_name, unique_name

CHROME = (re.compile(r"^\s*\? for shortcuts"),)
FP = (100, 0, 10, 0)


def banner():
    return Detection("codex", 0, 0, None, "codex.usage-limit", "■ You've hit your usage limit.")


def test_first_look_always_captures():
    assert PaneWatch().needs_capture(FP, 0.0)


def test_unchanged_fingerprint_reuses_the_capture_but_not_for_long():
    w = PaneWatch()
    w.record(["work"], None, FP, 0.0, CHROME)
    assert w.needs_capture(FP, 0.5)  # one look: whether it has come to rest takes a second alike
    w.record(["work"], None, FP, 0.5, CHROME)
    assert not w.needs_capture(FP, 1.0)
    assert w.needs_capture(FP, 0.5 + MAX_CAPTURE_AGE)


def test_changed_fingerprint_captures():
    w = PaneWatch()
    w.record(["work"], None, FP, 0.0, CHROME)
    assert w.needs_capture((101, 0, 10, 0), 0.5)


def test_a_banner_on_screen_always_gets_fresh_captures():
    # a limit decision must never rest on a reused capture
    w = PaneWatch()
    w.record(["■ You've hit your usage limit."], banner(), FP, 0.0, CHROME)
    assert w.needs_capture(FP, 0.1)


def test_a_banner_already_judged_a_limit_reuses_the_capture_while_the_pane_is_unchanged():
    w = PaneWatch()
    w.record(["■ You've hit your usage limit."], banner(), FP, 0.0, CHROME)
    assert not w.needs_capture(FP, 0.1, settled=True)
    assert w.needs_capture((101, 0, 10, 0), 0.1, settled=True)
    assert w.needs_capture(FP, MAX_CAPTURE_AGE, settled=True)


def test_first_capture_is_neither_idle_nor_working_then_chrome_changes_are_idle():
    w = PaneWatch()
    assert w.record(["work", "  ? for shortcuts 80% left"], None, FP, 0.0, CHROME) is None
    assert w.record(["work", "  ? for shortcuts 79% left"], None, FP, 1.0, CHROME) is True
    assert w.record(["more work", "  ? for shortcuts 79% left"], None, FP, 2.0, CHROME) is False


def test_history_keeps_stability_polls_captures():
    w = PaneWatch(keep=3)
    for i in range(5):
        w.record([str(i)], None, FP, float(i), CHROME)
    assert [c[0] for c in w.captures] == ["2", "3", "4"] and len(w.contents) == 3


@pytest.mark.parametrize(
    "base,taken,expected",
    [
        pytest.param("work:1.0", set(), "work:1.0", id="free"),
        pytest.param("work:1.0", {"work:1.0"}, "work:1.0-2", id="taken"),
        pytest.param("work:1.0", {"work:1.0", "work:1.0-2"}, "work:1.0-3", id="taken-twice"),
        pytest.param("my session:0.0", set(), "my-session:0.0", id="space"),
    ],
)
def test_unique_names(base, taken, expected):
    assert unique_name(base, taken) == expected


@pytest.mark.parametrize(
    "name,ok",
    [
        ("fix-login", True), ("work:1.0", True), ("a/b", False), ("..", False), ("", False), ("-x", False),
        ("x\n", False), ("x\r", False),
    ],
)
def test_valid_session_names(name, ok):
    assert is_valid_name(name) is ok


def test_watch_ignore_globs_match_locations():
    assert is_ignored("scratch:2.1", ["scratch:*"])
    assert is_ignored("main:0.3", ["*:0.3"])
    assert not is_ignored("main:0.3", ["scratch:*", "*:1.*"])


def test_an_unchanged_capture_repeats_the_last_detection_only_under_the_same_rules():
    w = PaneWatch()
    rows = ["■ You've hit your usage limit."]
    assert not w.repeats(rows, "rules")  # nothing captured yet
    w.record(rows, banner(), FP, 0.0, CHROME)
    w.detected_under = "rules"
    assert w.repeats(list(rows), "rules")
    assert not w.repeats(rows + ["more"], "rules")
    assert not w.repeats(rows, "reloaded rules")


def test_a_capture_settled_on_changes_nothing_the_gates_see():
    w = PaneWatch(keep=2)
    w.record(["❯"], None, FP, 0.0, CHROME)
    w.detected_under, w.text = "rules", "❯"
    assert not w.settled_on("❯", "rules")  # one capture held: the next one still tells idle from working
    w.record(["❯"], None, FP, 1.0, CHROME)
    assert w.settled_on("❯", "rules")
    assert not w.settled_on("❯ x", "rules") and not w.settled_on("❯", "reloaded rules")
    w.record(["❯ x"], None, FP, 2.0, CHROME)
    w.text = "❯"  # the text again, but the captures held differ: it must be judged
    assert not w.settled_on("❯", "rules")
    w.refresh((1, 2, 3, 4), 12.0)
    assert w.fingerprint == (1, 2, 3, 4) and not w.needs_capture((1, 2, 3, 4), 13.0)


def test_a_pane_that_printed_in_its_listings_second_is_looked_at_once_more():
    w = PaneWatch()
    listed = 1_000.4
    w.record(["work"], None, (1_000, 0, 10, 0), 0.0, CHROME, listed_at=listed - 2)
    w.record(["work"], None, (1_000, 0, 10, 0), 0.0, CHROME, listed_at=listed)
    assert w.needs_capture((1_000, 0, 10, 0), 2.0)  # it may have printed again in second 1000, unseen
    w.refresh((1_000, 0, 10, 0), 2.0, listed_at=listed + 2)
    assert not w.needs_capture((1_000, 0, 10, 0), 4.0)  # its last output is behind the listing now
    assert w.needs_capture((1_003, 0, 10, 0), 4.0)
    w.record(["work"], None, (999, 0, 10, 0), 6.0, CHROME, listed_at=listed)
    assert not w.needs_capture((999, 0, 10, 0), 8.0)
    w.record(["more work"], None, (999, 0, 10, 0), 9.0, CHROME, listed_at=listed)
    assert w.needs_capture((999, 0, 10, 0), 10.0)  # it changed: looked at until two captures agree
