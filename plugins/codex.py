"""Codex CLI: how to recognise and launch it, and where its usage-limit banner is.

Codex prints the limit as an error cell at column 0 of its history, after its
own marker (``■``, older builds ``🖐``), sometimes behind an ``Error …:``
lead-in::

    ■ You've hit your usage limit. Upgrade to Pro (https://…) or try again at 2:51 PM.

The TUI wraps a long cell by continuing at column 0, even in the middle of a
word (``… or try a`` / ``gain at 2:51 PM.``). Everything codex shows that is
*not* its own error cell is indented or carries another marker: command output
sits under ``└`` and indented continuation rows, replies start with ``•``, the
composer with ``›``. That shape is what tells a stalled agent from an agent
that is merely displaying the banner text (a ``cat`` of the docs, a diff).
"""

from __future__ import annotations

import itertools
import re
from datetime import datetime, timezone

from afd import hookimpl
from afd.kit.resettime import parse_relative, parse_reset
from afd.kit.text import answered_prompt_below, composer_top, is_own_banner_row, lowest_block, modal_end
from afd.model import AgentSpec, Clock, Detection, InputRow, LimitMenu, PromptDelivery

AGENT = "codex"

# The markers codex puts in front of an error or warning cell; emoji may
# carry a variation selector.
_MARKER = r"(?:[■🖐⚠✖✗]\ufe0f?\s*)"
# `ERROR: `, `Error: `, `stream error: `, `[2026-03-04T17:48:31] ERROR: ` (headless `codex exec`).
_LEAD_IN = r"(?:\[[^\]]{1,40}\]\s*)?(?:(?:[A-Za-z]+\s+){0,2}error\b[^:]{0,40}:\s*)"
# The walls, by kind. A spend cap or a billing wall states no reset and is
# lifted by a person (an owner, a payment), not by waiting.
# Each is a sentence shape (who, a wall verb, a credit/spend noun), not one
# wording: "Your workspace is out of credits", "You're out of credits",
# "You've reached your workspace credit limit", "Your organization's spend
# cap has been reached".
_WHO = r"(?:workspace|organi[sz]ation|org|team|account)"
_KIND_HEADS = (
    (
        "codex.spend-cap",
        rf"You(?:'ve| have)? (?:hit|reached|exceeded) your (?:{_WHO}(?:'s)? )?(?:spend(?:ing)? (?:cap|limit)|credit (?:cap|limit))\b"
        rf"|(?:Your|The) {_WHO}(?:'s)? (?:is|has) (?:run )?out of (?:credits|funds)\b|You(?:'re| are) out of (?:credits|funds)\b"
        rf"|(?:Your |The )?(?:{_WHO}(?:'s)? )?(?:spend(?:ing)? (?:cap|limit)|credit limit) (?:has been |is |was )?(?:reached|exceeded)\b",
    ),
    (
        "codex.billing",
        r"Quota exceeded\b|To use Codex with your ChatGPT plan\b"
        r"|Usage limit reached\.\s*You(?:'ve| have) reached your usage limit\b|Your included usage is exhausted\b",
    ),
    # A model's own limit: "You've hit your usage limit for gpt-5.3-codex-spark."
    ("codex.model-cap", r"You(?:'ve| have) (?:hit|reached) your usage limit for\b"),
    ("codex.usage-limit", r"You(?:'ve| have) (?:hit|reached) your usage limit\b"),
)
_BANNER = re.compile(
    rf"^{_MARKER}?{_LEAD_IN}?(?:" + "|".join(f"(?P<k{n}>{head})" for n, (_, head) in enumerate(_KIND_HEADS)) + ")",
    re.IGNORECASE,
)

# Rows that are never a banner nor the wrapped tail of one: indented rows
# (command output, reply continuations) and rows led by another UI marker.
_NOT_OWN_ROW = re.compile(r"^(?:\s|[›▌•└├│╭╰╮╯─❯])")
# A terminal wrapping a long row at the column (or tmux reflowing a resized
# pane) carries the space it broke at onto the next row; codex itself never
# indents by one, its output rows are indented by two or more.
_WRAPPED_AT_A_SPACE = re.compile(r"^ \S")
_FENCE = re.compile(r"^\s*(?:[•›]\s*)?(?:```|~~~)")

# After a finished sentence, a column-0 row only continues the banner if it
# reads like the rest of codex's message (or the tail of a split URL/word).
_NEXT_SENTENCE = re.compile(
    r"^(?:[a-z0-9(/:.,)]|Upgrade|To |Try again|Visit|Limits|Purchase|Please|Or |Your |Wait|You can|"
    r"Contact|Send|Learn|See |Check|Go to|https?:|Increase|Ask |Add |Request|Refill|Switch|Get |Buy )"
)
_SENTENCE_END = re.compile(r"[.!?][)\"']?$")
_MAX_BLOCK_ROWS = 8

_TRY_AT = re.compile(
    r"\btry again at\s+(?P<phrase>.+?)\s*(?:\((?P<zone>[^()]+)\))?\s*(?:[.!](?=\s|$)|$)",
    re.IGNORECASE,
)
_TRY_IN = re.compile(r"\btry again in(?::\s*|\s+)(?P<phrase>.+?)\s*(?:[.!](?=\s|$)|$)", re.IGNORECASE)

_CHROME = (
    re.compile(r"^\s*[›▌](?:\s|$)"),  # the frameless composer, empty, placeholder or typed text
    # Footer items stand at the row's start or in a column of their own (two
    # spaces or a "·" before), never inside a reply sentence.
    re.compile(r"(?:^\s*|\s{2}|·\s*)\?\s+for shortcuts\b"),
    re.compile(r"(?:^\s*|\s{2}|·\s*)\d{1,3}% context left\b"),
    re.compile(r"(?:^\s*|\s{2}|·\s*)context\s+\d{1,3}% left\b", re.IGNORECASE),
    re.compile(r"^\s*⏎\s+send\b"),
    re.compile(r"^\s+(?:[⌃⇧⌥]|ctrl\s*\+\s*)\S*\s+\w+.*\b(?:newline|transcript|quit)\b", re.IGNORECASE),
    re.compile(r"^\s+esc\s+(?:again\s+)?to edit previous message\b", re.IGNORECASE),
    re.compile(r"^\s+(?:press\s+)?(?:ctrl|⌃)\s*\+?\s*c\s+again to (?:quit|exit)\b", re.IGNORECASE),
    re.compile(r"^\s+tab to queue message\b", re.IGNORECASE),
    re.compile(r"^\s+\d+(?:\.\d+)?[KkMm]? tokens used\b"),
    # the turn separator, `─ Worked for 1m 05s ─────`, and bare rules
    re.compile(r"^\s*─+(?:\s+Worked for\b[^─]*)?─*\s*$"),
    # The right-aligned status row above the composer (`⚠ 5h limit: only <1%
    # left · resets at 20:32 · /status`): it stays for the life of the process,
    # in a new thread too, so it is neither output nor a wall.
    re.compile(r"^\s*⚠\ufe0f?\s*[\w-]+(?: [\w-]+){0,3} limit: .*\b(?:left|used|resets?)\b"),
)

# `• Working (5s • esc to interrupt)`; a retry reads `• Reconnecting... 2/5
# (4s • esc to interrupt)` and proves nothing about the plan.
_BUSY = (re.compile(r"^(?!.*\b(?:reconnecting|retrying)\b).*\besc to interrupt\b", re.IGNORECASE),)

SPEC = AgentSpec(
    name=AGENT,
    executables=("codex",),
    command=("codex",),
    resume_args=("resume", "--last"),
    prompt_delivery=PromptDelivery.ARGUMENT,
    chrome=_CHROME,
    busy=_BUSY,
    argv_patterns=(re.compile(r"@openai/codex|codex-cli"),),
    turn_outlives_pane=True,  # its turn runs in `codex app-server`, which outlives the TUI
    # `› text`; a menu's highlighted option (`› 1. Switch to …`) has the glyph too.
    input_rows=(InputRow(re.compile(r"^›(?!\s*\d+\.\s+\S)(?P<text>.*)$")),),
    input_placeholders=("Ask Codex to do anything",),
    limit_menus=(
        # "Request a limit increase from your owner?": a question for the person whose plan it is.
        LimitMenu(re.compile(r"Request a limit increase|Request increase\?"), answer=None,
                  ask="answer the agent's question about requesting a limit increase"),
        # "Approaching rate limits / Switch to gpt-…-mini?": the model is the user's choice, so it stays.
        LimitMenu(re.compile(r"Keep current model"), answer="Keep current model"),
    ),
    # Each CODEX_HOME keeps its own login (auth.json); an API key in the environment bills its owner.
    account_env=("CODEX_HOME",),
    account_defaults=(("CODEX_HOME", "~/.codex"),),
    credential_env=("OPENAI_API_KEY", "CODEX_API_KEY"),
)


@hookimpl
def afd_agents() -> list[AgentSpec]:
    return [SPEC]


@hookimpl
def afd_detect(agent: str, lines: list[str], clock: Clock, pattern: re.Pattern[str] | None) -> Detection | None:
    if agent != AGENT:
        return None
    return find_banner(lines, clock, pattern)


def find_banner(lines: list[str], clock: Clock, pattern: re.Pattern[str] | None = None) -> Detection | None:
    """The lowest codex limit banner in ``lines``, or None.

    The screen is read as regions first: the composer and the footer below
    it are chrome (``chrome_row``), never a banner; a modal that took the
    composer's place right after the banner belongs to the banner's episode;
    a prompt the user submitted below the banner, and answered, ends it.
    """
    chrome_row = composer_top(lines, _COMPOSER, _OWN_BELOW_COMPOSER)
    body = lines[:chrome_row] if chrome_row is not None else lines
    # Each row as the start of a banner would read: a head the TUI wrapped
    # ("■ Error running remote compact task: You" / "r workspace is out of
    # credits") is judged with the rows it runs into.
    probe = body if pattern is not None else [_head_of(body, i) for i in range(len(body))]
    block = lowest_block(probe, lambda row: is_own_banner_row(row, _BANNER, _NOT_OWN_ROW, pattern), lambda i: _block_end(body, i), _FENCE)
    if block is None:
        return _dialog(body) if chrome_row is None and pattern is None else None
    first, last = block
    if answered_prompt_below(body, last, _SUBMITTED, _ANSWER):
        return None
    text, reset_at = _read_block(body[first : last + 1], clock)
    kind = f"{AGENT}.pattern" if pattern is not None else _kind_of(probe[first])
    last = modal_end(body, last, _MODAL_OPTION, _MODAL_OTHER) or last
    # A wall that names a reset lifts then; "or try again later" names one
    # without its time; a wall that names none waits for a person
    # (`afd.model.person_must_act`). A user's pattern stands for their plan's
    # wall and is waited out as before.
    squashed = re.sub(r"\s+", "", text).lower()
    unstated = kind == f"{AGENT}.pattern" or "tryagain" in squashed
    return Detection(
        AGENT, first, last, reset_at, kind, text, chrome_row,
        reset_unstated=unstated, offers_other_model=bool(_OTHER_MODEL.search(squashed)),
    )


# "Switch to another model now, or try again at 8:02 PM.", read with every
# space removed: the TUI breaks a row inside a word.
_OTHER_MODEL = re.compile(r"switchto(?:another|adifferent)model|switchmodels", re.IGNORECASE)
# The credit-limit dialogs that take the composer's place, with or without
# a banner above: a wall of their own, lifted by an owner.
_DIALOG = (
    ("codex.spend-cap", re.compile(rf"^\s*(?:Your {_WHO}(?:'s)? is out of credits|You(?:'ve| have) reached your {_WHO} credit limit)\b", re.I)),
    ("codex.billing", re.compile(r"^\s*Your included usage is exhausted\b", re.I)),
)


def _dialog(lines: list[str]) -> Detection | None:
    """A credit-limit dialog (its question, then options) at the bottom of a screen with no composer."""
    for k in range(len(lines) - 1, max(-1, len(lines) - 16), -1):
        for kind, head in _DIALOG:
            if head.match(lines[k]):
                end = modal_end(lines, k, _MODAL_OPTION, _MODAL_OTHER)
                if end is None:
                    return None
                first = k - 1 if k and lines[k - 1].strip() and _MODAL_OTHER.match(lines[k - 1]) else k  # its title
                return Detection(AGENT, first, end, None, kind, " ".join(lines[k].split()))
    return None


# The composer's row (`› Ask Codex…`, typed text); `› 1. …` is a modal's option.
_COMPOSER = re.compile(r"^[›▌](?!\s*\d+\.\s)(?:\s|$)")
# Rows codex prints into its history at column 0; none of them stands below the composer.
_OWN_BELOW_COMPOSER = re.compile(r"^(?:[•■🖐⚠✖✗└]|\s*(?:›\s*)?\d+\.\s+\S)")
_SUBMITTED = re.compile(r"^›(?!\s*\d+\.\s)\s*\S")
_ANSWER = re.compile(r"^(?:[•■🖐⚠✖✗─]|\s+└)")
_MODAL_OPTION = re.compile(r"^\s*(?:›\s*)?\d+\.\s+\S")
# What else a modal shows: its title and question (indented or not), its key hints.
_MODAL_OTHER = re.compile(r"^(?!\s*[•■🖐└›])\s*\S")


# How many rows a wrapped head may span before the words that name the wall.
_HEAD_ROWS = 3


def _head_of(lines: list[str], i: int) -> str:
    """Row ``i``, or, when a banner's head wraps from it, the rows joined the way that reads as one."""
    row = lines[i]
    if not row.strip() or _NOT_OWN_ROW.match(row) or _BANNER.match(row):
        return row
    texts = [row.rstrip()]
    for j in range(i + 1, min(len(lines), i + _HEAD_ROWS)):
        nxt = lines[j]
        if not nxt.strip() or (_NOT_OWN_ROW.match(nxt) and not _WRAPPED_AT_A_SPACE.match(nxt)):
            break
        # A break at the row's end may have been a space or the middle of a word.
        texts = [t + sep + nxt.strip() for t in texts for sep in (" ", "")]
        hit = next((t for t in texts if _BANNER.match(t)), None)
        if hit is not None:
            return hit
    return row


def _kind_of(row: str) -> str:
    m = _BANNER.match(row.lstrip(" "))
    if m is None:
        return f"{AGENT}.usage-limit"
    return next(kind for n, (kind, _) in enumerate(_KIND_HEADS) if m[f"k{n}"] is not None)



def _block_end(lines: list[str], first: int) -> int:
    """Index of the last row of the banner that starts at ``first`` (wrapped rows included)."""
    last = first
    text = lines[first].strip()
    while last + 1 < len(lines) and last - first + 1 < _MAX_BLOCK_ROWS:
        nxt = lines[last + 1]
        if not nxt.strip() or _FENCE.match(nxt) or _BANNER.match(nxt.lstrip(" ")):
            break
        if _NOT_OWN_ROW.match(nxt) and not _WRAPPED_AT_A_SPACE.match(nxt):
            break
        if _SENTENCE_END.search(text) and (_is_final(text) or not _NEXT_SENTENCE.match(nxt.lstrip(" "))):
            break
        text = f"{text} {nxt.strip()}"
        last += 1
    return last


def _is_final(text: str) -> bool:
    """Whether the text ends with codex's closing sentence, the one that says when to try again."""
    last_sentence = re.split(r"(?<=[.!?])\s+", text)[-1]
    return "tryagain" in re.sub(r"\s+", "", last_sentence).lower()


def _read_block(rows: list[str], clock: Clock) -> tuple[str, datetime | None]:
    """Join a wrapped banner and read its reset.

    A break between rows may have been a space or the middle of a word; try
    joins with the fewest glued breaks first and keep the first whose reset
    clause parses.
    """
    parts = [r.strip() for r in rows]
    breaks = len(parts) - 1
    default = " ".join(parts)
    for glued_count in range(breaks + 1):
        for glued in itertools.combinations(range(breaks), glued_count):
            text = _join(parts, frozenset(glued))
            reset_at = parse_codex_reset(text, clock)
            if reset_at is not None:
                return text, reset_at
    return default, None


def _join(parts: list[str], glued: frozenset[int]) -> str:
    out = parts[0]
    for k, part in enumerate(parts[1:]):
        out += part if k in glued else f" {part}"
    return out


def parse_codex_reset(text: str, clock: Clock) -> datetime | None:
    """The instant in ``… try again at <when>.`` / ``… try again in <duration>.``, or None.

    ``Try again later.``, or no clause at all, states no reset time.
    """
    # A reset beyond what datetime can hold (`in 999999999 days`, a year-9999
    # date in a zone east of UTC) makes the shared parser raise
    # OverflowError; it is an unreadable reset, and still a limit.
    try:
        m = _TRY_IN.search(text)
        if m:
            delta = parse_relative(m["phrase"])
            if delta is not None:
                return clock.now.astimezone(timezone.utc) + delta
        m = _TRY_AT.search(text)
        if m:
            return parse_reset(m["phrase"], m["zone"], clock)
    except (OverflowError, ValueError):
        return None
    return None


# --- the second witness: Codex's own rollout --------------------------------

from afd_plugins import _codex_records  # noqa: E402  (kept apart from the detector above)


@hookimpl
def afd_witness(agent, process, since, until, record):
    if agent != AGENT:
        return None
    return _codex_records.witness(process, since, until, record)


@hookimpl
def afd_usage(agent, process, until):
    if agent != AGENT:
        return None
    return _codex_records.usage(process, until)
