"""The codex detector plugin: banner families, reset forms, wrapping, and the shape traps."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pluggy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from afd import PROJECT, hookspecs
from afd.kit.text import capture_rows, normalise_row
from afd.model import AgentSpec, Clock, Detection, PromptDelivery
from harness import load_builtin_plugin

CORPUS = Path(__file__).resolve().parent.parent / "data" / "corpus" / "codex"




codex = load_builtin_plugin("codex")

NOW = datetime(2026, 7, 13, 9, 0, tzinfo=timezone.utc)
CLOCK = Clock(now=NOW, local_zone=timezone.utc)


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=timezone.utc)


def detect(rows: list[str], clock: Clock = CLOCK, pattern: re.Pattern[str] | None = None) -> Detection | None:
    return codex.afd_detect(agent="codex", lines=[normalise_row(r) for r in rows], clock=clock, pattern=pattern)


def screen(*banner_rows: str) -> list[str]:
    """A codex screen with the given rows where the agent's last output goes."""
    return [
        "› fix the flaky checkout test",
        "",
        "• Ran pytest -q tests/test_checkout.py",
        "  └ ..F.",
        "    1 failed, 3 passed in 0.41s",
        "",
        *banner_rows,
        "",
        "› Ask Codex to do anything",
        "",
        "  ? for shortcuts                                            82% context left",
    ]


BANNER_AT = 6  # index of the first banner row inside `screen`


# --- banner families and reset forms -------------------------------------------------------

RESET_CASES = [
    pytest.param(
        "■ You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or try again at 2:51 PM.",
        utc(2026, 7, 13, 14, 51),
        id="upgrade-try-again-at-time-later-today",
    ),
    pytest.param(
        "■ You've hit your usage limit. Try again at 8:41 AM.",
        utc(2026, 7, 14, 8, 41),
        id="bare-time-already-past-today-is-tomorrow",
    ),
    pytest.param(
        "■ You've hit your usage limit. Try again at 9:00 AM.",
        utc(2026, 7, 14, 9, 0),
        id="bare-time-equal-to-now-is-strictly-after",
    ),
    pytest.param(
        "■ You've hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit "
        "https://chatgpt.com/codex/settings/usage to purchase more credits or try again at Jun 18th, 2026 8:41 AM.",
        utc(2026, 6, 18, 8, 41),
        id="full-date-in-the-past-returned-as-is",
    ),
    pytest.param(
        "■ You've hit your usage limit. To get more access now, send a request to your admin or try again at "
        "Feb 23rd, 2027 1:07 AM.",
        utc(2027, 2, 23, 1, 7),
        id="admin-request-full-date",
    ),
    pytest.param(
        "■ You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or try again in "
        "3 hours 2 minutes.",
        utc(2026, 7, 13, 12, 2),
        id="relative-hours-minutes",
    ),
    pytest.param(
        "■ You've hit your usage limit. Try again in 4 days 20 hours 9 minutes.",
        utc(2026, 7, 18, 5, 9),
        id="relative-days-hours-minutes",
    ),
    pytest.param(
        "■ You've hit your usage limit. Try again in 4 days 20 hours 9 minutes",
        utc(2026, 7, 18, 5, 9),
        id="relative-without-trailing-period",
    ),
    pytest.param(
        "■ You've hit your usage limit. Try again in 1 minute.",
        utc(2026, 7, 13, 9, 1),
        id="relative-singular-unit",
    ),
    pytest.param(
        "■ You've hit your usage limit. Try again at 2:51 PM (America/New_York).",
        utc(2026, 7, 13, 18, 51),
        id="named-zone-wins",
    ),
    pytest.param("■ You've hit your usage limit. Try again later.", None, id="try-again-later-no-reset"),
    pytest.param("■ You've hit your usage limit.", None, id="no-time-at-all"),
    pytest.param(
        "■ You've hit your usage limit. Limits reset every 5h and every week.", None, id="limits-reset-every-5h"
    ),
    pytest.param(
        "■ You've hit your usage limit. Try again at Flurbday.", None, id="unparseable-clause-is-still-a-limit"
    ),
    pytest.param(
        "■ You've hit your usage limit. Try again in 999999999 days.", None, id="relative-beyond-datetime-range"
    ),
    pytest.param(
        "■ You've hit your usage limit. Try again at 99999999999 minutes.", None, id="huge-number-after-at"
    ),
    pytest.param(
        "■ You've hit your usage limit. Try again at Dec 31st, 9999 11:59 PM (Etc/GMT+12).",
        None,
        id="date-beyond-datetime-range-in-utc",
    ),
    pytest.param(
        "■ You've hit your usage limit. Try again at 2:51 PM (Mars/Olympus_Mons).",
        None,
        id="unknown-zone-means-no-reset-not-a-guess",
    ),
]


@pytest.mark.parametrize(("banner", "reset_at"), RESET_CASES)
def test_banner_is_found_with_its_reset(banner, reset_at):
    found = detect(screen(banner))
    assert found is not None
    assert (found.first_row, found.last_row) == (BANNER_AT, BANNER_AT)
    assert found.reset_at == reset_at
    assert found.has_reset_time is (reset_at is not None)
    assert found.kind == "codex.usage-limit"
    assert found.agent == "codex"
    assert found.banner == banner


PREFIX_CASES = [
    pytest.param("■ ", id="square"),
    pytest.param("🖐  ", id="raised-hand"),
    pytest.param("🖐️ ", id="raised-hand-with-variation-selector"),
    pytest.param("⚠ ", id="warning-sign"),
    pytest.param("■ Error: ", id="square-error-lead-in"),
    pytest.param("stream error: ", id="stream-error-lead-in"),
    pytest.param("ERROR: ", id="headless-exec-error"),
    pytest.param("[2026-03-04T17:48:31] ERROR: ", id="timestamped-error"),
    pytest.param("", id="bare-at-column-zero"),
]


@pytest.mark.parametrize("prefix", PREFIX_CASES)
def test_banner_after_codex_markers_and_error_lead_ins(prefix):
    found = detect(screen(f"{prefix}You've hit your usage limit. Try again at 2:51 PM."))
    assert found is not None
    assert found.reset_at == utc(2026, 7, 13, 14, 51)


def test_bare_time_is_read_in_the_clocks_local_zone():
    clock = Clock(now=NOW, local_zone=ZoneInfo("America/New_York"))
    found = detect(screen("■ You've hit your usage limit. Try again at 2:51 PM."), clock=clock)
    assert found.reset_at == utc(2026, 7, 13, 18, 51)


def test_relative_reset_is_counted_from_the_clock_not_the_system():
    clock = Clock(now=utc(2030, 1, 1, 0, 0), local_zone=timezone.utc)
    found = detect(screen("■ You've hit your usage limit. Try again in 3 hours 2 minutes."), clock=clock)
    assert found.reset_at == utc(2030, 1, 1, 3, 2)


# --- wrapping --------------------------------------------------------------------------------

WRAP_CASES = [
    pytest.param(
        ["■ You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or try a", "gain at 2:51 PM."],
        utc(2026, 7, 13, 14, 51),
        "■ You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or try again at 2:51 PM.",
        id="mid-word-in-try-again",
    ),
    pytest.param(
        ["■ You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or try again at 2:5", "1 PM."],
        utc(2026, 7, 13, 14, 51),
        "■ You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or try again at 2:51 PM.",
        id="mid-number-in-the-time",
    ),
    pytest.param(
        ["■ You've hit your usage limit. Upgrade to Pro or try again at 2:51 P", "M."],
        utc(2026, 7, 13, 14, 51),
        "■ You've hit your usage limit. Upgrade to Pro or try again at 2:51 PM.",
        id="inside-am-pm",
    ),
    pytest.param(
        ["■ You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or try", "again at 2:51 PM."],
        utc(2026, 7, 13, 14, 51),
        "■ You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or try again at 2:51 PM.",
        id="at-a-space",
    ),
    pytest.param(
        ["🖐  You've hit your usage limit. Upgrade to Pro or try again in 3 hours 2 min", "utes"],
        utc(2026, 7, 13, 12, 2),
        "🖐  You've hit your usage limit. Upgrade to Pro or try again in 3 hours 2 minutes",
        id="mid-unit-relative-without-period",
    ),
    pytest.param(
        ["■ You've hit your usage limit. Try again in 1", "2 hours."],
        utc(2026, 7, 13, 21, 0),
        "■ You've hit your usage limit. Try again in 12 hours.",
        id="mid-number-relative",
    ),
    pytest.param(
        ["■ You've hit your usage limit.", "Upgrade to Pro (https://openai.com/chatgpt/pricing) or try again at", "Jun 18th, 2026 8:41 AM."],
        utc(2026, 6, 18, 8, 41),
        "■ You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or try again at Jun 18th, 2026 8:41 AM.",
        id="three-rows-break-after-first-sentence",
    ),
    pytest.param(
        ["■ You've hit your usage limit. To get more access now, send a request to your admin or try again at Feb 2", "3rd, 2027 1:07 AM."],
        utc(2027, 2, 23, 1, 7),
        "■ You've hit your usage limit. To get more access now, send a request to your admin or try again at Feb 23rd, 2027 1:07 AM.",
        id="mid-day-of-month",
    ),
    pytest.param(
        ["■ You've hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.", "com/codex/settings/usage to purchase more credits or try again at 2:51 PM."],
        utc(2026, 7, 13, 14, 51),
        None,
        id="split-inside-a-url",
    ),
    pytest.param(
        ["■ You've hit your usage limit. Upgrade to", " Pro or try again at 2:51 PM."],
        utc(2026, 7, 13, 14, 51),
        "■ You've hit your usage limit. Upgrade to Pro or try again at 2:51 PM.",
        id="wrapped-at-the-column-on-a-space",
    ),
    pytest.param(
        ["■ You've hit your usage limit.", " Try again in 4 days 20 hours 9 minutes."],
        utc(2026, 7, 18, 5, 9),
        "■ You've hit your usage limit. Try again in 4 days 20 hours 9 minutes.",
        id="wrapped-at-the-column-after-the-first-sentence",
    ),
]


@pytest.mark.parametrize(("rows", "reset_at", "banner"), WRAP_CASES)
def test_wrapped_banner_is_joined_and_its_reset_read(rows, reset_at, banner):
    found = detect(screen(*rows))
    assert found is not None
    assert (found.first_row, found.last_row) == (BANNER_AT, BANNER_AT + len(rows) - 1)
    assert found.reset_at == reset_at
    if banner is not None:
        assert found.banner == banner


def test_wrapped_banner_directly_above_the_composer_stops_before_it():
    rows = ["■ You've hit your usage limit. Upgrade to Pro or try a", "gain at 2:51 PM.", "› Ask Codex to do anything"]
    found = detect(rows)
    assert (found.first_row, found.last_row) == (0, 1)
    assert "Ask Codex" not in found.banner


@pytest.mark.parametrize(
    "next_row",
    [
        pytest.param("Run /status for a breakdown.", id="a-hint"),
        pytest.param("Token usage: total=1200 input=1000 output=200", id="token-usage"),
        pytest.param("  ? for shortcuts", id="indented-footer"),
    ],
)
def test_banner_stops_where_its_sentence_ends(next_row):
    rows = ["■ You've hit your usage limit. Try again at 2:51 PM.", next_row]
    found = detect(rows)
    assert found.reset_at == utc(2026, 7, 13, 14, 51)
    assert (found.first_row, found.last_row) == (0, 0)
    assert found.banner == "■ You've hit your usage limit. Try again at 2:51 PM."


def test_banner_row_directly_below_a_banner_is_a_newer_banner_not_a_wrap():
    rows = ["■ You've hit your usage limit.", "You've hit your usage limit. Try again later."]
    found = detect(rows)
    assert (found.first_row, found.last_row) == (1, 1)
    assert found.reset_at is None


# --- several banners, raw captures --------------------------------------------------------


def test_lowest_of_several_banners_decides():
    rows = screen(
        "■ You've hit your usage limit. Try again at 2:51 PM.",
        "",
        "› continue",
        "",
        "■ You've hit your usage limit. Try again in 4 days 20 hours 9 minutes.",
    )
    found = detect(rows)
    assert found.first_row == BANNER_AT + 4
    assert found.reset_at == utc(2026, 7, 18, 5, 9)


def test_lowest_banner_decides_even_without_a_reset_time():
    rows = screen("■ You've hit your usage limit. Try again at 2:51 PM.", "", "■ You've hit your usage limit. Try again later.")
    found = detect(rows)
    assert found.first_row == BANNER_AT + 2
    assert found.reset_at is None


def test_raw_capture_with_ansi_and_curly_quote():
    raw = (
        "\x1b[1m› \x1b[0mfix the test\r\n"
        "\r\n"
        "\x1b[31m■\x1b[0m \x1b[1mYou\u2019ve hit your usage limit.\x1b[0m Upgrade to Pro\u00a0or try a\n"
        "gain at 2:51\u202fPM.\n"
        "\n"
        "\x1b[2m› \x1b[0mAsk Codex to do anything\n"
        "\n"
        "  \x1b[2m? for shortcuts\x1b[0m                 82% context left\n"
        "\n\n\n"
    )
    found = codex.afd_detect(agent="codex", lines=capture_rows(raw), clock=CLOCK, pattern=None)
    assert found is not None
    assert (found.first_row, found.last_row) == (2, 3)
    assert found.banner == "■ You've hit your usage limit. Upgrade to Pro or try again at 2:51 PM."
    assert found.reset_at == utc(2026, 7, 13, 14, 51)


# --- not limits, and the shape traps -------------------------------------------------------

NOT_A_LIMIT = [
    pytest.param(["⚠ Heads up, you have less than 5% of your weekly limit left. Run /status for a breakdown."], id="heads-up-5"),
    pytest.param(["⚠ Heads up, you have less than 25% of your 5h limit left. Run /status for a breakdown."], id="heads-up-25"),
    pytest.param(["■ stream error: exceeded retry limit, last status: 429 Too Many Requests"], id="retry-limit-429"),
    pytest.param(["■ exceeded retry limit, last status: 429 Too Many Requests"], id="retry-limit-429-bare"),
    pytest.param(
        ["• Ran sed -n 1,20p docs/configuration.md", "  └ limit_patterns: e.g. codex = \"You've hit your usage limit\""],
        id="sed-output-under-ran",
    ),
    pytest.param(
        ["• Ran cat docs/limits.md", "  └ # Limits", "    ■ You've hit your usage limit. Try again at 2:51 PM."],
        id="cat-output-continuation",
    ),
    pytest.param(["  └ You've hit your usage limit. Try again later."], id="command-output-first-row"),
    pytest.param(
        ["• Ran grep -rn usage limit docs", "  └ docs/limits.md:3:You've hit your usage limit. Try again later."],
        id="grep-output",
    ),
    pytest.param(["docs/limits.md:3:You've hit your usage limit. Try again later."], id="grep-line-at-column-zero"),
    pytest.param(
        ["• Ran git diff", "  └ +■ You've hit your usage limit. Try again at 2:51 PM.", "    -old"], id="git-diff-output"
    ),
    pytest.param(["+■ You've hit your usage limit. Try again at 2:51 PM."], id="diff-line-at-column-zero"),
    pytest.param(["```", "■ You've hit your usage limit. Try again at 2:51 PM.", "```"], id="inside-a-code-fence"),
    pytest.param(
        ["• Here is the banner:", "", "  ```text", "  You've hit your usage limit. Try again later.", "  ```"],
        id="inside-an-indented-code-fence",
    ),
    pytest.param(
        ["• When codex says You've hit your usage limit. Try again at 2:51 PM. it is stalled."], id="reply-sentence"
    ),
    pytest.param(
        ["• I checked the detector.", "  You've hit your usage limit. Try again later. is what it matches."],
        id="reply-continuation-row",
    ),
    pytest.param(
        ["The message reads: You've hit your usage limit. Try again later."], id="sentence-at-column-zero"
    ),
    pytest.param(["› You've hit your usage limit. Try again at 2:51 PM."], id="typed-in-the-composer"),
    pytest.param(["▌ You've hit your usage limit. Try again at 2:51 PM."], id="typed-in-the-old-composer"),
    pytest.param(["• Working (5s • esc to interrupt)"], id="working-status"),
    pytest.param([], id="empty-capture"),
]


@pytest.mark.parametrize("rows", NOT_A_LIMIT)
def test_not_a_limit(rows):
    assert detect(screen(*rows)) is None


def test_other_agents_are_not_answered():
    rows = screen("■ You've hit your usage limit. Try again at 2:51 PM.")
    assert codex.afd_detect(agent="claude", lines=rows, clock=CLOCK, pattern=None) is None


def test_banner_after_a_closed_code_fence_is_found():
    rows = ["```", "You've hit your usage limit.", "```", "", "■ You've hit your usage limit. Try again later."]
    found = detect(rows)
    assert found is not None and found.first_row == 4


# --- the user's pattern ----------------------------------------------------------------------


def test_pattern_replaces_the_banner_regex_and_keeps_the_reset_parser():
    pattern = re.compile(r"Usage cap reached")
    found = detect(screen("■ Usage cap reached. Try again in 2 hours."), pattern=pattern)
    assert found is not None
    assert found.kind == "codex.pattern"
    assert found.reset_at == utc(2026, 7, 13, 11, 0)


def test_pattern_means_the_builtin_banner_no_longer_matches():
    pattern = re.compile(r"Usage cap reached")
    assert detect(screen("■ You've hit your usage limit. Try again at 2:51 PM."), pattern=pattern) is None


def test_pattern_still_respects_the_screen_shape():
    pattern = re.compile(r"You've hit your usage limit")
    rows = ["• Ran sed -n 1,20p docs/configuration.md", "  └ codex = \"You've hit your usage limit\"", "› You've hit your usage limit"]
    assert detect(screen(*rows), pattern=pattern) is None


def test_pattern_banner_is_joined_when_wrapped():
    pattern = re.compile(r"^■ Usage cap")
    found = detect(screen("■ Usage cap reached. Try again at 2:5", "1 PM."), pattern=pattern)
    assert (found.first_row, found.last_row) == (BANNER_AT, BANNER_AT + 1)
    assert found.reset_at == utc(2026, 7, 13, 14, 51)


# --- the corpus -----------------------------------------------------------------------------

CORPUS_CASES = sorted(p.name for p in CORPUS.iterdir() if p.is_dir())


@pytest.mark.parametrize("case", CORPUS_CASES)
def test_corpus_case(case):
    folder = CORPUS / case
    expect = json.loads((folder / "expect.json").read_text(encoding="utf-8"))
    last = sorted(folder.glob("*.txt"), key=lambda p: int(p.stem))[-1]
    clock = Clock(now=datetime.fromisoformat(expect["now"].replace("Z", "+00:00")), local_zone=timezone.utc)
    found = codex.afd_detect(agent="codex", lines=capture_rows(last.read_text(encoding="utf-8")), clock=clock, pattern=None)
    assert (found is not None) is expect["limited"]
    want = expect["reset_at"] and datetime.fromisoformat(expect["reset_at"].replace("Z", "+00:00"))
    assert (found.reset_at if found else None) == (want or None)


def test_corpus_has_every_codex_case():
    assert set(CORPUS_CASES) >= {"admin-request-dated", "cat-config-doc", "heads-up-10", "relative-days-no-upgrade", "try-later"}


# --- the agent spec and its chrome ------------------------------------------------------------


def test_agent_spec():
    (spec,) = codex.afd_agents()
    assert isinstance(spec, AgentSpec)
    assert spec.name == "codex"
    assert spec.executables == ("codex",)
    assert spec.command == ("codex",)
    assert spec.resume_args == ("resume", "--last")
    assert spec.prompt_delivery is PromptDelivery.ARGUMENT
    assert any(p.search("node /usr/lib/node_modules/@openai/codex/bin/codex.js") for p in spec.argv_patterns)


CHROME_ROWS = [
    pytest.param("› Ask Codex to do anything", id="composer-placeholder"),
    pytest.param("› refactor the pricing module please", id="composer-typed"),
    pytest.param("›", id="composer-empty"),
    pytest.param("› You've hit your usage limit. Try again later.", id="composer-typed-banner"),
    pytest.param("  ? for shortcuts                                            82% context left", id="footer"),
    pytest.param("  100% context left", id="context-left"),
    pytest.param("  gpt-5.5 high · 82% context left · ~/src/shop", id="status-line-item"),
    pytest.param("  ⏎ send   ⇧⏎ newline   ⌃T transcript   ⌃C quit", id="old-footer"),
    pytest.param("  ctrl + c again to quit", id="quit-hint"),
    pytest.param("  esc again to edit previous message", id="edit-previous"),
    pytest.param("─ Worked for 1m 05s ──────────────────────", id="turn-separator"),
]


@pytest.mark.parametrize("row", CHROME_ROWS)
def test_chrome_rows(row):
    (spec,) = codex.afd_agents()
    assert any(p.search(row) for p in spec.chrome)


NOT_CHROME_ROWS = [
    pytest.param("• Working (5s • esc to interrupt)", id="working-status"),
    pytest.param("■ You've hit your usage limit. Try again at 2:51 PM.", id="the-banner"),
    pytest.param("gain at 2:51 PM.", id="a-wrapped-banner-tail"),
    pytest.param("• I'll run the suite first to see the failure.", id="a-reply"),
    pytest.param("• Press ? for shortcuts — you have 40% context left.", id="a-reply-quoting-the-footer"),
    pytest.param("  └ ..F.", id="command-output"),
]


@pytest.mark.parametrize("row", NOT_CHROME_ROWS)
def test_not_chrome_rows(row):
    (spec,) = codex.afd_agents()
    assert not any(p.search(row) for p in spec.chrome)


def test_plugin_answers_through_a_plugin_manager():
    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(hookspecs)
    pm.register(codex, name="codex")
    found = pm.hook.afd_detect(agent="codex", lines=screen("■ You've hit your usage limit. Try again later."), clock=CLOCK, pattern=None)
    assert isinstance(found, Detection)
    assert pm.hook.afd_detect(agent="devin", lines=["Quota exhausted"], clock=CLOCK, pattern=None) is None


# --- robustness --------------------------------------------------------------------------------

FRAGMENTS = st.sampled_from(
    [
        "■ You've hit your usage limit.",
        "You've hit your usage limit. Try again at ",
        "try a",
        "gain at 2:5",
        "1 PM.",
        " Try again in 4 days 20 hours 9 minutes",
        "Try again later.",
        "Feb 29th, 2027 25:99 AM.",
        "(Not/AZone)",
        "```",
        "› ",
        "  └ ",
        "🖐 ",
        "Error: ",
        "",
    ]
)
ROW = st.one_of(st.text(max_size=120), st.lists(FRAGMENTS, max_size=5).map("".join))


def _check(found: Detection | None, rows: list[str]) -> None:
    if found is None:
        return
    assert 0 <= found.first_row <= found.last_row < len(rows)
    assert found.reset_at is None or found.reset_at.utcoffset().total_seconds() == 0


@settings(max_examples=300, deadline=None)
@given(st.lists(ROW, max_size=30))
def test_arbitrary_rows_never_crash(rows):
    rows = [normalise_row(r) for r in rows]
    _check(codex.afd_detect(agent="codex", lines=rows, clock=CLOCK, pattern=None), rows)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=2000))
def test_arbitrary_capture_text_never_crashes(text):
    rows = capture_rows(text)
    _check(codex.afd_detect(agent="codex", lines=rows, clock=CLOCK, pattern=None), rows)
    _check(codex.afd_detect(agent="codex", lines=rows, clock=CLOCK, pattern=re.compile(r"limit")), rows)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2000))
def test_arbitrary_bytes_never_crash(data):
    rows = capture_rows(data.decode("utf-8", errors="replace"))
    _check(codex.afd_detect(agent="codex", lines=rows, clock=CLOCK, pattern=None), rows)
