"""Turning a raw pane capture into the rows detectors read."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Sequence

# CSI (colours, cursor moves), OSC (titles, hyperlinks; ended by BEL or ST),
# and the two-byte escapes; tmux keeps them with `capture-pane -e`, and
# captures saved by users often do too.
_ANSI = re.compile(
    r"""
    \x1b\[[0-?]*[ -/]*[@-~]          # CSI
  | \x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?  # OSC
  | \x1b[PX^_][^\x1b]*(?:\x1b\\)?    # DCS, SOS, PM, APC
  | \x1b[@-Z\\-_]                    # other two-byte escapes
  | \x9b[0-?]*[ -/]*[@-~]            # 8-bit CSI
    """,
    re.VERBOSE,
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")

_FOLD = str.maketrans(
    {
        "\u2019": "'",  # right single quote, as in "You’ve"
        "\u2018": "'",
        "\u02bc": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u2219": "·",  # bullet operator, as in "limit reached ∙ resets"
        "\u2022": "•",
        "\u00a0": " ",
        "\u2007": " ",
        "\u202f": " ",
        "\u2009": " ",
        "\u200b": "",
        "\ufeff": "",
    }
)


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


# An ordinary capitalised first word: a capital, then only small letters ("Connection", "Expected"), or "A".
_CAPITALISED = re.compile(r"(?:[A-Z][a-z]+|A)(?![A-Za-z0-9/._-])")


def lowered_first_word(text: str) -> str:
    """`text` to follow a colon: its first word lowercased when it is an ordinary capitalised word.

    "Connection reset by peer" becomes "connection reset by peer"; an acronym,
    a version or a name stays as written ("HTTP/1.1 200", "TLS", "IPv6").
    """
    if _CAPITALISED.match(text):
        return text[:1].lower() + text[1:]
    return text


# A pane's rows are mostly the rows of its last capture (and detectors may
# normalise what they were given again): a row seen lately is looked up.
@functools.lru_cache(maxsize=4096)
def normalise_row(row: str) -> str:
    """One screen row as detectors see it: no escapes, folded punctuation, no trailing blanks."""
    row = strip_ansi(row).replace("\t", "    ")
    row = _CONTROL.sub("", row)
    return row.translate(_FOLD).rstrip()


def capture_rows(text: str) -> list[str]:
    """Split a capture into normalised rows, dropping the blank rows below the last text.

    tmux pads a capture to the pane's height; the padding is not content.
    """
    rows = [normalise_row(r) for r in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    while rows and not rows[-1].strip():
        rows.pop()
    return rows


# What a volatile span of a row is replaced by: one mark, so rows that
# differ only there compare equal and a banner still reads as a sentence.
VOLATILE_MARK = "…"


def _mark(span: re.Match[str]) -> str:
    # Padding that moves with a shorter or longer text (a right-aligned hint) becomes one space.
    return VOLATILE_MARK if span.group().strip() else " "


def masked(row: str, volatile: Sequence[re.Pattern[str]]) -> str:
    """``row`` with each span a ``volatile`` pattern finds (a spinner's cells, a countdown) replaced by one mark.

    An agent that animates a row while it waits (OpenCode's retry row: a
    spinner and `retrying in 2h 3m` ticking down) shows the same screen to
    anyone asking whether it is doing anything; only the mark is compared.
    A span of blanks (padding) becomes one blank.
    """
    for p in volatile:
        row = p.sub(_mark, row)
    return row


def decode_capture(data: bytes) -> str:
    """Decode captured bytes; a garbled byte never fails a capture."""
    return data.decode("utf-8", errors="replace")


def is_own_banner_row(
    row: str, banner: re.Pattern[str], not_own_row: re.Pattern[str], pattern: re.Pattern[str] | None
) -> bool:
    """For detectors: the plugin's own banner regex, or the user's override on a row the agent printed itself."""
    if pattern is None:
        return bool(banner.match(row))
    return not not_own_row.match(row) and pattern.search(row) is not None


def lowest_block(
    lines: Sequence[str],
    is_banner_row: Callable[[str], bool],
    block_end: Callable[[int], int],
    fence: re.Pattern[str],
) -> tuple[int, int] | None:
    """The lowest (newest) banner block: the one that decides when several are on screen."""
    found = None
    for found in banner_blocks(lines, is_banner_row, block_end, fence):  # noqa: B007 (the last one is the answer)
        pass
    return found


def banner_blocks(
    lines: Sequence[str],
    is_banner_row: Callable[[str], bool],
    block_end: Callable[[int], int],
    fence: re.Pattern[str],
) -> Iterator[tuple[int, int]]:
    """The (first, last) rows of each banner block, top to bottom, outside code fences.

    For detectors: ``block_end(i)`` gives the last row of the block starting
    at row ``i``; a block's wrapped tail is never read as the start of
    another. The lowest block is the newest, the one that decides.
    """
    in_fence = False
    i = 0
    while i < len(lines):
        row = lines[i]
        if fence.match(row):
            in_fence = not in_fence
            i += 1
        elif in_fence or not is_banner_row(row):
            i += 1
        else:
            last = max(block_end(i), i)
            yield i, last
            i = last + 1


# --- a screen's regions, for detectors ------------------------------------------
#
# A detector reads a capture as regions before it judges a row: the
# transcript (messages, tool calls and their results, submitted prompts), a
# banner block with the rows of its episode, and the composer with everything
# below it. These helpers hold the parts two agents' screens share; each
# plugin passes the patterns of its own glyphs.


def composer_top(lines: Sequence[str], composer: re.Pattern[str], own_below: re.Pattern[str]) -> int | None:
    """The row of the lowest frameless composer, or None when none is on screen.

    The composer is the lowest row ``composer`` matches with no transcript row
    (``own_below``) under it: an echoed prompt in the history has the agent's
    answer below it; the composer has only footers and status rows, which are
    chrome whatever they say. A modal that replaced the composer leaves none.
    """
    for k in range(len(lines) - 1, -1, -1):
        if own_below.match(lines[k]):
            return None
        if composer.match(lines[k]):
            return k
    return None


def box_rows(lines: Sequence[str], side: re.Pattern[str], edge: re.Pattern[str]) -> tuple[int, int] | None:
    """(first, last) rows of the lowest box drawn as ``side`` rows above an ``edge`` row; None when none is.

    A box whose side bar is the same glyph the transcript uses (a prompt or
    an error drawn under the same bar) is told apart by its shape: only the
    run of side rows directly above the bottom edge belongs to it.
    """
    for k in range(len(lines) - 1, -1, -1):
        if edge.search(lines[k]):
            top = k
            while top > 0 and side.search(lines[top - 1]):
                top -= 1
            return top, k
    return None


def answered_prompt_below(lines: Sequence[str], last: int, submitted: re.Pattern[str], answer: re.Pattern[str]) -> bool:
    """Whether a prompt submitted after row ``last`` was taken up by the agent.

    A prompt the user submitted below a banner block, with the agent's answer
    (a message, a result, a spinner) below it, means the agent is past its
    wall: the block is an old episode however near the bottom it sits.
    """
    for j in range(last + 1, len(lines)):
        if submitted.match(lines[j]):
            return any(answer.match(row) for row in lines[j + 1 :])
    return False


def modal_end(lines: Sequence[str], last: int, option: re.Pattern[str], other: re.Pattern[str]) -> int | None:
    """The last row of a modal drawn right after row ``last``, or None when none is.

    A modal (a title, a question, numbered options, key hints) takes the
    composer's place after a limit: it is part of the banner's episode, not
    output after it. Any row that is neither an option nor modal text (a
    reply, command output, a prompt) means what follows is no such modal.
    """
    options, end = 0, None
    for j in range(last + 1, len(lines)):
        row = lines[j]
        if not row.strip():
            continue
        if option.match(row):
            options += 1
        elif not other.match(row):
            return None
        end = j
    return end if options >= 2 else None
