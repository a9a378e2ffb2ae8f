"""`neutral`: any text from outside, shown to a person, moves no cursor, sets no colour and poses as no markup."""

from __future__ import annotations

import io
import re
import unicodedata

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from afd.display.text import cell, neutral

BIDI = {"\u061c", "\u200e", "\u200f", *map(chr, range(0x202A, 0x202F)), *map(chr, range(0x2066, 0x206A))}
# Text as hostile as it comes: any code point (surrogates included) and the pieces escape sequences are made of.
HOSTILE = st.lists(
    st.one_of(
        st.characters(codec=None, exclude_categories=()),
        st.sampled_from(["\x1b", "\x1b[", "\x9b", "\x07", "\r", "\n", "\r\n", "\t", "\x1b]52;c;", "[bold]", "[/]", "\u202e"]),
    ),
    max_size=40,
).map("".join)
# rich's own styling: SGR sequences only.
SGR = re.compile(r"\x1b\[[0-9;]*m")


def _unsafe(char: str, lines: bool) -> bool:
    if lines and char == "\n":
        return False
    category = unicodedata.category(char)
    return category in ("Cc", "Cs", "Zl", "Zp") or char in BIDI


@given(HOSTILE, st.booleans())
@example("ls\x1b[2J\x1b]0;pwned\x07\rrm -rf ~", False)
@example("a\u202eevil\u202c", True)
@example("\udcff broken byte", False)
def test_nothing_that_acts_on_a_terminal_survives(text, lines):
    shown = neutral(text, lines=lines)
    assert not any(_unsafe(c, lines) for c in shown), ascii(shown)
    shown.encode("utf-8")  # a lone surrogate would make the print itself fail
    assert neutral(shown, lines=lines) == shown


@given(st.text(alphabet=st.characters(exclude_categories=("Cc", "Cs", "Zl", "Zp")).filter(lambda c: c not in BIDI)))
def test_text_with_nothing_to_neutralise_is_shown_as_it_is(text):
    assert neutral(text) == text
    assert neutral(text, lines=True) == text


@given(HOSTILE)
def test_line_breaks_are_kept_only_when_asked_for(text):
    assert "\n" not in neutral(text)
    one_line = text.replace("\r\n", "\n").replace("\u2028", "\n").replace("\u2029", "\n")
    assert neutral(text, lines=True).count("\n") == one_line.count("\n")


@settings(deadline=None)  # its first example pays for importing rich
@given(HOSTILE)
@example("[bold red]not a style[/] and [/unclosed]")
def test_rich_prints_the_neutral_text_itself_and_no_markup(text):
    from rich.console import Console

    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system="truecolor", width=10_000, highlight=False)
    console.print(cell(text, style="bold"), soft_wrap=True)
    printed = SGR.sub("", out.getvalue()).removesuffix("\n")
    assert "\x1b" not in printed
    assert printed == neutral(text)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        pytest.param("a\x1b[31mred", "a\\x1b[31mred", id="escape-sequence"),
        pytest.param("ok\rEVIL", "ok\\x0dEVIL", id="carriage-return"),
        pytest.param("\x9b2J", "\\x9b2J", id="c1-csi"),
        pytest.param("abc\u202edcba", "abc\\u202edcba", id="bidi-override"),
        pytest.param("one\n\ntwo", "one two", id="newlines-in-a-line"),
        pytest.param("tab\there", "tab here", id="tab"),
        pytest.param("[red]x[/red]", "[red]x[/red]", id="markup-is-text"),
        pytest.param("naïve 🟢 日本", "naïve 🟢 日本", id="printable-unicode"),
    ],
)
def test_each_kind_of_hostile_character_is_shown_as_an_escape(text, shown):
    assert neutral(text) == shown
