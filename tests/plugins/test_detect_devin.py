"""The devin detector plugin: the quota banner, its healthy status line, and the shape traps."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path

import pluggy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from afd import PROJECT, hookspecs
from afd.kit.text import capture_rows, normalise_row
from afd.model import AgentSpec, Clock, Detection, PromptDelivery
from harness import load_builtin_plugin

CORPUS = Path(__file__).resolve().parent.parent / "data" / "corpus" / "devin"




devin = load_builtin_plugin("devin")

NOW = datetime(2026, 7, 13, 9, 0, tzinfo=timezone.utc)
CLOCK = Clock(now=NOW, local_zone=timezone.utc)


def detect(rows: list[str], pattern: re.Pattern[str] | None = None) -> Detection | None:
    return devin.afd_detect(agent="devin", lines=[normalise_row(r) for r in rows], clock=CLOCK, pattern=pattern)


def screen(*rows: str) -> list[str]:
    return [
        "  v3000.2.17 · Teams · 59% remaining (resets in 3d 11h)",
        "",
        "❭ split the pricing module",
        "",
        "  Editing src/shop/pricing.py",
        "",
        *rows,
        "",
        "❭ Ask Devin to build features, fix bugs, or work on your code",
    ]


BANNER_AT = 6


BANNERS = [
    pytest.param("Quota exhausted", id="bare"),
    pytest.param("Quota exhausted.", id="with-period"),
    pytest.param("Quota exhausted: You have used all of your ACUs for this billing cycle.", id="with-message"),
    pytest.param("Quota exhausted: contact your workspace admin", id="message-without-period"),
    pytest.param("✗ Quota exhausted: You have used all of your ACUs for this billing cycle.", id="after-a-marker"),
    pytest.param("Error: Quota exhausted", id="error-lead-in"),
    pytest.param("Quota exhausted (resets in 3d 11h)", id="with-a-parenthesis"),
]


@pytest.mark.parametrize("banner", BANNERS)
def test_quota_banner_is_a_limit_without_a_reset_time(banner):
    found = detect(screen(banner))
    assert found is not None
    assert (found.first_row, found.last_row) == (BANNER_AT, BANNER_AT)
    assert found.reset_at is None
    assert not found.has_reset_time
    assert found.kind == "devin.quota-exhausted"
    assert found.agent == "devin"
    assert found.banner == banner


def test_wrapped_quota_message_is_joined_until_its_sentence_ends():
    found = detect(screen("Quota exhausted: You have used all of your ACUs for this", "billing cycle."))
    assert (found.first_row, found.last_row) == (BANNER_AT, BANNER_AT + 1)
    assert found.banner == "Quota exhausted: You have used all of your ACUs for this billing cycle."


def test_finished_quota_sentence_does_not_swallow_the_next_row():
    rows = ["Quota exhausted: You have used all of your ACUs for this billing cycle.", "Upgrade at app.devin.ai/billing"]
    found = detect(rows)
    assert (found.first_row, found.last_row) == (0, 0)


def test_bare_quota_banner_does_not_swallow_the_next_row():
    found = detect(["Quota exhausted", "Try /usage for details"])
    assert (found.first_row, found.last_row) == (0, 0)


def test_lowest_of_several_banners_decides():
    rows = screen("Quota exhausted", "", "❭ try again", "", "Quota exhausted: still out of ACUs.")
    found = detect(rows)
    assert found.first_row == BANNER_AT + 4
    assert found.banner == "Quota exhausted: still out of ACUs."


def test_raw_capture_with_ansi():
    raw = "\x1b[2m❭ \x1b[0msplit it\r\n\r\n\x1b[31mQuota exhausted:\x1b[0m You have used all of your ACUs.\n\n\x1b[2m❭ Ask Devin\x1b[0m\n\n\n"
    found = devin.afd_detect(agent="devin", lines=capture_rows(raw), clock=CLOCK, pattern=None)
    assert found is not None and found.first_row == 2
    assert found.banner == "Quota exhausted: You have used all of your ACUs."


NOT_A_LIMIT = [
    pytest.param(["  v3000.2.17 · Teams · 59% remaining (resets in 3d 11h)"], id="healthy-quota-line"),
    pytest.param(["59% remaining (resets in 3d 11h)"], id="healthy-quota-line-at-column-zero"),
    pytest.param(["  0% remaining (resets in 11h)"], id="empty-quota-line-is-status-not-the-banner"),
    pytest.param(["❭ Quota exhausted"], id="typed-in-the-composer"),
    pytest.param(["  Quota exhausted: You have used all of your ACUs."], id="indented-tool-output"),
    pytest.param(["  $ grep -rn Quota src", "  src/errors.py:12:Quota exhausted"], id="grep-output"),
    pytest.param(["src/errors.py:12:    raise QuotaError('Quota exhausted')"], id="grep-line-at-column-zero"),
    pytest.param(["+Quota exhausted: You have used all of your ACUs."], id="diff-line"),
    pytest.param(["```", "Quota exhausted", "```"], id="inside-a-code-fence"),
    pytest.param(["Quota exhausted errors are retried by the client."], id="a-sentence-that-goes-on"),
    pytest.param(["When the quota is exhausted Devin stops."], id="a-sentence-mentioning-it"),
    pytest.param(["• Devin prints Quota exhausted when the ACUs run out."], id="reply-bullet"),
    pytest.param([], id="nothing"),
]


@pytest.mark.parametrize("rows", NOT_A_LIMIT)
def test_not_a_limit(rows):
    assert detect(screen(*rows)) is None


def test_other_agents_are_not_answered():
    assert devin.afd_detect(agent="codex", lines=["Quota exhausted"], clock=CLOCK, pattern=None) is None


def test_pattern_replaces_the_banner_regex():
    pattern = re.compile(r"^Out of ACUs")
    found = detect(screen("Out of ACUs for this cycle."), pattern=pattern)
    assert found is not None
    assert found.kind == "devin.pattern"
    assert found.reset_at is None
    assert detect(screen("Quota exhausted"), pattern=pattern) is None


def test_pattern_still_respects_the_screen_shape():
    pattern = re.compile(r"Out of ACUs")
    assert detect(screen("  Out of ACUs", "❭ Out of ACUs", "```", "Out of ACUs", "```"), pattern=pattern) is None


CORPUS_CASES = sorted(p.name for p in CORPUS.iterdir() if p.is_dir())


@pytest.mark.parametrize("case", CORPUS_CASES)
def test_corpus_case(case):
    folder = CORPUS / case
    expect = json.loads((folder / "expect.json").read_text(encoding="utf-8"))
    last = sorted(folder.glob("*.txt"), key=lambda p: int(p.stem))[-1]
    clock = Clock(now=datetime.fromisoformat(expect["now"].replace("Z", "+00:00")), local_zone=timezone.utc)
    found = devin.afd_detect(agent="devin", lines=capture_rows(last.read_text(encoding="utf-8")), clock=clock, pattern=None)
    assert (found is not None) is expect["limited"]
    assert expect["reset_at"] is None
    assert found is None or found.reset_at is None


def test_corpus_has_every_devin_case():
    assert set(CORPUS_CASES) >= {"acus-exhausted", "healthy-header"}


def test_agent_spec():
    (spec,) = devin.afd_agents()
    assert isinstance(spec, AgentSpec)
    assert spec.name == "devin"
    assert spec.executables == ("devin",)
    assert spec.command == ("devin",)
    assert spec.resume_args == ("--continue",)
    assert spec.prompt_delivery is PromptDelivery.ARGUMENT


@pytest.mark.parametrize(
    "row",
    [
        pytest.param("❭ Ask Devin to build features, fix bugs, or work on your code", id="composer-placeholder"),
        pytest.param("❭ split the pricing module", id="composer-typed"),
        pytest.param("❭ Quota exhausted", id="composer-typed-banner"),
        pytest.param("  v3000.2.17 · Teams · 59% remaining (resets in 3d 11h)", id="healthy-quota-line"),
        pytest.param("────────────────────", id="rule"),
    ],
)
def test_chrome_rows(row):
    (spec,) = devin.afd_agents()
    assert any(p.search(row) for p in spec.chrome)


@pytest.mark.parametrize(
    "row",
    [
        pytest.param("Quota exhausted: You have used all of your ACUs for this billing cycle.", id="the-banner"),
        pytest.param("  Editing src/shop/pricing.py", id="work"),
        pytest.param("  You have 59% remaining (resets in 3d 11h), plenty for this.", id="a-reply-quoting-the-quota"),
    ],
)
def test_not_chrome_rows(row):
    (spec,) = devin.afd_agents()
    assert not any(p.search(row) for p in spec.chrome)


def test_plugin_answers_through_a_plugin_manager():
    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(hookspecs)
    pm.register(devin, name="devin")
    found = pm.hook.afd_detect(agent="devin", lines=["Quota exhausted"], clock=CLOCK, pattern=None)
    assert isinstance(found, Detection)


ROW = st.one_of(
    st.text(max_size=120),
    st.lists(st.sampled_from(["Quota exhausted", ":", " ACUs", ".", "❭ ", "```", "  ", "✗ ", ""]), max_size=5).map("".join),
)


def _check(found: Detection | None, rows: list[str]) -> None:
    if found is not None:
        assert 0 <= found.first_row <= found.last_row < len(rows)
        assert found.reset_at is None


@settings(max_examples=300, deadline=None)
@given(st.lists(ROW, max_size=30))
def test_arbitrary_rows_never_crash(rows):
    rows = [normalise_row(r) for r in rows]
    _check(devin.afd_detect(agent="devin", lines=rows, clock=CLOCK, pattern=None), rows)
    _check(devin.afd_detect(agent="devin", lines=rows, clock=CLOCK, pattern=re.compile("Quota")), rows)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2000))
def test_arbitrary_bytes_never_crash(data):
    rows = capture_rows(data.decode("utf-8", errors="replace"))
    _check(devin.afd_detect(agent="devin", lines=rows, clock=CLOCK, pattern=None), rows)
