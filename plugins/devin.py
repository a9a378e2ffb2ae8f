"""Devin CLI: how to recognise and launch it, and where its quota banner is.

Devin is detect-only: its wall reads ``Quota exhausted`` (or ``Quota
exhausted: <why>``) on a row of its own and states no reset time, so a
detection never carries one. Its healthy quota line, ``59% remaining (resets
in 3d 11h)``, is status, not a limit.
"""

from __future__ import annotations

import re

from afd import hookimpl
from afd.kit.text import answered_prompt_below, composer_top, is_own_banner_row, lowest_block
from afd.model import AgentSpec, Clock, Detection, InputRow, PromptDelivery

AGENT = "devin"

# Optional marker and `Error:` lead-in, then the banner as the whole row: a
# sentence that merely mentions quota exhaustion goes on after the words.
_BANNER = re.compile(
    r"^(?:[✗✘×⚠■!]\ufe0f?\s*)?(?:(?:[A-Za-z]+\s+){0,2}error\b[^:]{0,40}:\s*)?"
    r"Quota exhausted(?:\s*[.:!(—–-].*)?$",
    re.IGNORECASE,
)
# Indented rows are tool output or reply text; these markers lead other UI rows.
_NOT_OWN_ROW = re.compile(r"^(?:\s|[❭›>•└├│╭╰─])")
_FENCE = re.compile(r"^\s*(?:[•❭]\s*)?(?:```|~~~)")
_SENTENCE_END = re.compile(r"[.!?][)\"']?$")
_MAX_BLOCK_ROWS = 4

_CHROME = (
    re.compile(r"^\s*❭(?:\s|$)"),  # the frameless composer, placeholder or typed text
    # Status items stand at the row's start or after a "·"/two spaces, never mid-sentence.
    re.compile(r"(?:^\s*|\s{2}|·\s*)\d{1,3}% remaining \(resets in [^)]*\)"),
    re.compile(r"(?:^\s*|\s{2}|·\s*)\?\s+for shortcuts\b"),
    re.compile(r"^\s*[─━]{3,}\s*$"),
)

# A braille spinner and an elapsed counter: `⠋ Working… (12s)`.
_BUSY = (re.compile(r"^\s*[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]\s+(?!.*\b(?:retrying|reconnecting)\b)\S.*\(\d+s\b[^)]*\)\s*$", re.IGNORECASE),)

SPEC = AgentSpec(
    name=AGENT,
    executables=("devin",),
    command=("devin",),
    resume_args=("--continue",),
    prompt_delivery=PromptDelivery.ARGUMENT,
    chrome=_CHROME,
    busy=_BUSY,
    input_rows=(InputRow(re.compile(r"^❭(?P<text>.*)$")),),  # the frameless composer
    input_placeholders=("Ask Devin to build features, fix bugs, or work on your code",),
)


@hookimpl
def afd_agents() -> list[AgentSpec]:
    return [SPEC]


@hookimpl
def afd_detect(agent: str, lines: list[str], clock: Clock, pattern: re.Pattern[str] | None) -> Detection | None:
    if agent != AGENT:
        return None
    return find_banner(lines, pattern)


def find_banner(lines: list[str], pattern: re.Pattern[str] | None = None) -> Detection | None:
    """The lowest devin quota banner in ``lines``, or None.

    The composer (``❭``) and everything below it are chrome; a prompt
    submitted below the banner that Devin answered ends the episode.
    """
    chrome_row = composer_top(lines, _COMPOSER, _OWN_BELOW_COMPOSER)
    body = lines[:chrome_row] if chrome_row is not None else lines
    block = lowest_block(body, lambda row: is_own_banner_row(row, _BANNER, _NOT_OWN_ROW, pattern), lambda i: _block_end(body, i), _FENCE)
    if block is None:
        return None
    first, last = block
    if answered_prompt_below(body, last, _SUBMITTED, _ANSWER):
        return None
    kind = f"{AGENT}.pattern" if pattern is not None else f"{AGENT}.quota-exhausted"
    # Devin's quota is a window (its status line counts down to the reset):
    # it lifts by itself though the banner does not say when.
    text = " ".join(r.strip() for r in body[first : last + 1])
    return Detection(AGENT, first, last, None, kind, text, chrome_row, reset_unstated=True)


_COMPOSER = re.compile(r"^❭(?:\s|$)")
# Devin prints its own rows (banners, prompts) at column 0 and its work
# indented; a column-0 row under a ❭ row means that ❭ was a submitted prompt.
_OWN_BELOW_COMPOSER = re.compile(r"^[^\s❭]")
_SUBMITTED = re.compile(r"^❭\s*\S")
_ANSWER = re.compile(r"^\s*\S")



def _block_end(lines: list[str], first: int) -> int:
    """The last row of a banner whose message the TUI wrapped onto column-0 rows."""
    last = first
    text = lines[first].strip()
    while (
        ":" in text
        and not _SENTENCE_END.search(text)
        and last + 1 < len(lines)
        and last - first + 1 < _MAX_BLOCK_ROWS
    ):
        nxt = lines[last + 1]
        if not nxt.strip() or _NOT_OWN_ROW.match(nxt) or _FENCE.match(nxt) or _BANNER.match(nxt):
            break
        text = f"{text} {nxt.strip()}"
        last += 1
    return last
