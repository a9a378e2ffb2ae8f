"""Claude Code: its agent spec, its screen chrome, and its usage-limit banners.

Loaded like any drop-in plugin (by path), so it imports only ``afd`` and the
standard library.

A banner counts only in the shape Claude prints it: at the start of its own
row, after nothing but indentation and Claude's own markers (``⎿``, ``⏺``,
``●``). That one rule turns away the traps real screens set: a banner quoted
in a sentence, a ``grep``/``git diff`` line (``file:12:``, ``+``, ``-``), text
typed into the prompt (``│ >``, ``❯``). Rows inside a code fence never count.
"""

# No `from __future__ import annotations`: a drop-in loaded by path may not be
# in sys.modules, and dataclasses would then fail to resolve string annotations.
import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from afd import hookimpl
from afd.kit.resettime import from_epoch, parse_reset
from afd.kit.text import normalise_row
from afd.model import AgentSpec, Clock, Detection, PromptDelivery

AGENT = "claude"

# How many screen rows one wrapped banner may span.
_MAX_WRAP_ROWS = 4

# The turn summary, any verb ("Worked", "Cooked", "Sautéed"); the live
# spinner ("… (1s · esc to interrupt)") is work, not chrome.
_TURN_SUMMARY = re.compile(
    r"^\s*+[✻✽✢✳✶*]\s++(?!.*\binterrupt\b)[^\W\d_][^\W\d_'-]*(?:\s+[^\W\d_]+)?\s+for\s+"
    r"\d+\s*[hms](?:\s*\d+\s*[hms])*(?:\s*·.*)?$"
)

_CHROME = (
    # The boxed prompt: top and bottom border, the input row, its continuation
    # rows (but not a numbered menu option or a menu footer drawn in a box).
    re.compile(r"^\s*╭─.*╮\s*$"),
    re.compile(r"^\s*╰─.*╯\s*$"),
    re.compile(r"^\s*│\s*>(?:\s.*)?│\s*$"),
    re.compile(r"^\s*+│\s{2,}+(?![❯>›]?\s*\d+\.\s)(?!.*\b(?:Enter to confirm|Esc to cancel)\b).*│\s*$"),
    re.compile(r"^\s*│\s*│\s*$"),
    # Horizontal rules around the frameless composer.
    re.compile(r"^\s*[─━]{3,}"),
    # The frameless composer row; `❯ 1. …` is a menu option, not a composer.
    re.compile(r"^\s*❯(?!\s*\d+\.\s)(?:\s.*)?$"),
    # Footers and status lines.
    re.compile(r"^\s*\?\s+for shortcuts\b"),
    re.compile(r"^\s*[!/@#&]\s+for\s+\w+"),
    re.compile(r"^\s*⏵⏵?\s"),
    re.compile(r"^\s*⏸\s"),
    re.compile(r"\(shift\+tab to cycle\)"),
    # Footer phrases stand at the row's start, after the mode glyph, or in a
    # column of their own (two spaces or a "·" before): never mid-sentence,
    # or a reply row ("keep plan mode on while you review") would be stripped
    # and a banner the agent worked past would look like the last thing on screen.
    re.compile(r"(?:^\s*|\s{2}|[⏵⏸·]\s*)(?:accept edits|plan mode|bypass permissions|auto-accept edits) on\b"),
    re.compile(r"\bContext left until auto-compact:\s*\d+%"),
    re.compile(r"^\s*Context low\b.*%"),
    re.compile(r"(?:^\s*|\s{2}|·\s*)\d+%\s+context left\b", re.IGNORECASE),
    re.compile(r"^\s*new task\? /clear to save\b"),
    re.compile(r"^\s*Press Ctrl-[CD] again to exit\s*$", re.IGNORECASE),
    _TURN_SUMMARY,
    # The footer of an armed wall, below the composer: it names the limit but
    # is UI, never a banner of its own nor output after one.
    re.compile(r"^\s*⚠\s*Usage limit reached\s*·\s*limit resets\b", re.I),
    re.compile(r"^\s*Continuing (?:automatically at\b.*|shortly\b.*)·\s*Esc to cancel\s*$", re.I),
)


# The spinner row while a request runs: `✻ Thinking… (12s · ↑ 1.2k tokens · esc
# to interrupt)`. While a 429 is retried it reads `… · retrying in 12s ·
# attempt 6/10`: busy, but on a request that is failing, so not evidence.
_BUSY = (re.compile(r"^(?!.*\b(?:retrying|attempt \d+/\d+)\b).*\besc to interrupt\b", re.IGNORECASE),)


@hookimpl
def afd_agents() -> list[AgentSpec]:
    return [
        AgentSpec(
            name=AGENT,
            executables=("claude",),
            command=("claude",),
            resume_args=("--continue",),
            prompt_delivery=PromptDelivery.ARGUMENT,
            chrome=_CHROME,
            busy=_BUSY,
            argv_patterns=(re.compile(r"@anthropic-ai/claude-code|claude-code/cli\.js"),),
            # A second subscription is a second config directory; a token or API key
            # in the environment bills whoever owns it, which no directory names.
            account_env=("CLAUDE_CONFIG_DIR",),
            account_defaults=(("CLAUDE_CONFIG_DIR", "~/.claude"),),
            credential_env=(
                "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN",
                "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX",
            ),
        )
    ]


# --- reading one banner's text ------------------------------------------------

# Family heads, tried in order, matched at the start of a row's text.
_HEADS = (
    ("claude.headless", re.compile(r"(?:(?:API\s+)?Error:\s*)?Claude AI usage limit reached\|(?P<epoch>\d*)")),
    # Walls no reset lifts (a spend limit, a disabled or zero allocation, no
    # funds), before the plan heads: "hit your monthly spend limit" must not
    # read as a plan window. Each stands at the start of its own row.
    (
        "claude.spend-cap",
        re.compile(
            r"(?:API\s+Error:\s*)?(?:"
            r"You(?:'re| are) out of (?:usage )?(?:credits|funds)\s*[·•|,–—.]\s*add funds to continue"
            r"|(?:(?:You|Your|This|The|Organization|Org|Workspace|Team|Group)\b[^.·•|]{0,80}?\s)?"
            r"(?:(?:monthly )?spend(?:ing)? (?:limit|cap)(?: (?:has been |was )?(?:reached|exceeded|hit))?"
            r"|usage allocation (?:has been |is |was )?disabled(?: by (?:your |the )?[\w' ]{0,40}?(?:admin|owner)\w*)?"
            r"|usage limit is set to \$0(?:\.00)?"
            r"|add funds to continue)"
            r"(?: for (?:this|the) (?:month|billing period))?"
            r")(?=\W|$)",
            re.I,
        ),
    ),
    (
        "claude.billing",
        re.compile(r"(?:API\s+Error:\s*)?(?:Your )?credit balance is too low(?: to access the [\w ]{0,40}?API)?\b", re.I),
    ),
    ("claude.legacy", re.compile(r"Claude (?:(?:AI|Pro|Max|Team) )?usage limit reached(?![|\w])\.?", re.I)),
    (
        "claude.auto-continue",
        re.compile(r"Usage limit reached\s*·\s*(?:continuing|set to continue) automatically\b", re.I),
    ),
    ("claude.hit-limit", re.compile(r"You(?:'ve| have) hit your (?:[\w-]+ ){0,2}?limit\b", re.I)),
    ("claude.extra-usage", re.compile(r"You(?:'re| are) out of extra usage\b", re.I)),
    (
        "claude.limit-reached",
        re.compile(
            r"(?:(?:Opus|Sonnet)\s+)?(?:\d+-hour|session|weekly|daily|monthly|opus|sonnet) limit reached\b",
            re.I,
        ),
    ),
)
# Kinds that state no reset: the text after the head may go on with a clause
# ("· add funds to continue", ". Contact your admin."), never with prose.
_NO_RESET_KINDS = ("claude.spend-cap", "claude.billing")
# The first words of a head, so a banner wrapped inside its head is still tried.
_HEAD_START = re.compile(
    r"^(?:You(?:'ve| have)? hit|You(?:'ve| have)? reached your|You(?:'re| are)? out|Claude(?: AI)? usage|"
    r"Usage limit|Usage allocation|Your|Spend|Add funds|API Error: (?:You|Your|Credit)|"
    r"Credit balance|\d+-hour|Session|Opus|Sonnet|Weekly|Daily|Monthly)\b",
    re.I,
)
_LEGACY_LINK = " Your limit will reset at "
_LEGACY_CLAUSE = re.compile(r"\s*+Your limit will reset at\s+(?P<clause>.*)$", re.I | re.S)
# Possessive quantifiers keep a row of blanks from costing quadratic time.
_RESETS_CLAUSE = re.compile(r"\s*+(?:[·•|,–—]\s*+)?resets?(?:\s++at)?\s++(?P<clause>.*)$", re.I | re.S)
_AT_CLAUSE = re.compile(r"\s+at\s+(?P<clause>.*)$", re.I | re.S)
_SEPARATOR = re.compile(r"\s*+[·•|–—]\s*+")
_CLAUSE_BOUNDARY = re.compile(r"\s*[.·•|,:;–—!]")
_SEPARATOR_MARK = re.compile(r"[·•|–—]")
# Where the sentence of a reset clause ends when it names no zone.
_SENTENCE_END = re.compile(r"\.(?=\s++[A-Z/]|\s*+$)")
# Anywhere in a row, for a user's own banner pattern.
_ANY_CLAUSE = re.compile(
    r"\b(?:resets?(?:\s+at)?|reset at|continuing automatically at|try again at)\s+(?P<clause>.*)$", re.I | re.S
)
_ANY_EPOCH = re.compile(r"\|(?P<epoch>\d{9,13})\s*$")


@dataclass(frozen=True, slots=True)
class _Reading:
    """What one banner's (possibly joined) text says."""

    kind: str
    text: str
    reset_at: datetime | None
    zone: str | None  # the name in parentheses, as printed
    zone_open: bool  # "(America/Bog" — a parenthesis the wrap has not closed yet
    complete: bool  # the sentence visibly ended, so no further row belongs to it


def _read_clause(
    kind: str, text: str, clause: str, clock: Clock, zone_default: str | None, strict: bool = True
) -> _Reading | None:
    tail = _SEPARATOR_MARK.search(clause)
    if tail:
        clause = clause[: tail.start()]
    clause = clause.strip()
    zone, zone_open, complete = None, False, tail is not None
    if "(" in clause:
        open_at = clause.index("(")
        close_at = clause.find(")", open_at)
        when = clause[:open_at]
        if close_at == -1:
            zone, zone_open = clause[open_at + 1 :].strip(), True
        else:
            zone, complete = clause[open_at + 1 : close_at].strip(), True
            if strict and clause[close_at + 1 :].strip() not in ("", "."):
                return None  # "(UTC), so I'll wait": a sentence that quotes a banner
    else:
        end = _SENTENCE_END.search(clause)
        when = clause[: end.start()] if end else clause
        complete = complete or end is not None
    when = when.strip()
    reset_at = None
    if when and not zone_open:
        reset_at = parse_reset(when, zone if zone is not None else zone_default, clock)
        if reset_at is None and zone is None and strict and _runs_on_as_prose(when, zone_default, clock):
            return None  # "resets 11pm is what the CLI prints …": a sentence that quotes a banner
    return _Reading(kind, text, reset_at, zone, zone_open, complete)


def _runs_on_as_prose(when: str, zone: str | None, clock: Clock) -> bool:
    """Whether a reset clause is a time followed by a sentence's worth of words.

    An unreadable clause ("resets soon") is still a limit; but a time that
    parses and then goes on for three words or more is prose around a quoted
    banner, the zone-less twin of "(UTC), so I'll wait".
    """
    words = when.split()
    return any(parse_reset(" ".join(words[:k]), zone, clock) is not None for k in range(1, len(words) - 2))


def _no_clause(kind: str, text: str, complete: bool) -> _Reading:
    return _Reading(kind, text, None, None, False, complete)


def _read(text: str, clock: Clock, zone_default: str | None = None) -> _Reading | None:
    """Read a banner's text (markers already removed); None if it is not one."""
    for kind, head in _HEADS:  # noqa: B007 (the kind that matched is read after the break)
        m = head.match(text)
        if m:
            break
    else:
        return None
    rest = text[m.end() :]
    if kind in _NO_RESET_KINDS:
        if rest.strip() and not _CLAUSE_BOUNDARY.match(rest):
            return None  # "… is set to $0 in the fixture": a sentence that quotes a wall
        return _no_clause(kind, text, complete=bool(rest.strip()))
    if kind != "claude.auto-continue":
        zone_default = None  # only the auto-continue line borrows its banner's zone
    if kind == "claude.headless":
        if rest.strip():
            return None
        epoch = m["epoch"]
        return _Reading(kind, text, from_epoch(epoch) if epoch else None, None, False, len(epoch) >= 10)
    if kind == "claude.legacy":
        link = _LEGACY_CLAUSE.match(rest)
        if link:
            return _read_clause(kind, text, link["clause"], clock, zone_default)
        if _LEGACY_LINK.startswith(rest.rstrip() or " "):
            return _no_clause(kind, text, complete=False)  # wrapped before its reset clause
        if not rest[0].isspace():
            return None
        return _no_clause(kind, text, complete=True)
    link = (_AT_CLAUSE if kind == "claude.auto-continue" else _RESETS_CLAUSE).match(rest)
    if link:
        return _read_clause(kind, text, link["clause"], clock, zone_default)
    if not rest.strip() or rest.strip() == ".":
        return _no_clause(kind, text, complete=rest.strip() == ".")
    sep = _SEPARATOR.match(rest)
    if sep:
        after = rest[sep.end() :]
        pending = kind != "claude.auto-continue" and "resets".startswith(after.lower().rstrip())
        return _no_clause(kind, text, complete=not pending)
    return None  # the sentence goes on: quoted prose, not a banner


def _read_pattern(text: str, clock: Clock, zone_default: str | None = None) -> _Reading:
    """A row a user's pattern picked: find whatever reset clause it carries."""
    epoch = _ANY_EPOCH.search(text)
    if epoch:
        return _Reading("claude.pattern", text, from_epoch(epoch["epoch"]), None, False, True)
    clause = _ANY_CLAUSE.search(text)
    if clause:
        return _read_clause("claude.pattern", text, clause["clause"], clock, zone_default, strict=False)
    return _no_clause("claude.pattern", text, complete=False)


def _improves(old: _Reading | None, new: _Reading | None) -> bool:
    """Whether joining the next row made the banner say more (the wrap rule)."""
    if new is None:
        return False
    if old is None:
        return True  # the head itself was wrapped
    if new.reset_at is not None:
        return old.reset_at is None or new.reset_at != old.reset_at or (new.zone is not None and old.zone is None)
    if new.zone_open:
        # The clause reached its zone, or more of a zone broken inside its name.
        return not old.zone_open or len(new.zone or "") > len(old.zone or "")
    return old.zone_open and new.zone is not None


# --- where banners may stand --------------------------------------------------

_ROW = re.compile(r"^(?P<indent>\s*)(?P<markers>(?:[⎿⏺●]\s*)*)(?P<text>.*)$")
# The rest of a zone name: "s_Aires)", "/Argentina/Buenos_Aires)", ")".
_ZONE_TAIL = re.compile(r"^[\w/+-]*\)?\.?$")
_NOT_CONTINUATION = re.compile(r"^(?:[⎿⏺●/>❯│╭╰─━✻✽✢✳✶*$#]|```|~~~)")
_DIFF_HEADER = re.compile(r"^(?:@@ -\d|diff --git |--- a/|\+\+\+ b/)")
_FENCE = re.compile(r"^\s*(?:[⎿⏺●]\s*)*(?:```|~~~)")
_HINT = re.compile(r"^\s*(?:⎿\s*)?(?:(?:Run|Use|Type|Try|Or)\s+)?/[a-z][\w-]*(?=[\s,.]|$)", re.I)
_RATE_LIMIT_COMMAND = re.compile(r"^\s*(?:[>❯⎿]\s*)?/rate-limit-options\s*$")
_MENU_OPTION = re.compile(r"^\s*(?:[❯>›]\s*)?\d+\.\s+\S")
_MENU_FOOTER = re.compile(r"\b(?:Enter to (?:confirm|select|continue)|Esc to (?:cancel|exit|go back))\b", re.I)
_MENU_QUESTION = re.compile(r"^\s*[^\s⎿⏺●>❯].*\?\s*$")
_RULE = re.compile(r"^\s*[╭╰]?[─━═▔▁]{3,}")
_LIMIT_RESET = re.compile(r"Usage limit reset\b", re.I)
_TYPED = re.compile(r"^\s*(?:│\s*)?[>❯]\s")
_HEADS_ANY = re.compile("|".join(f"(?:{head.pattern})" for _, head in _HEADS), re.I)


def _quoted(lines: list[str]) -> list[bool]:
    """Rows inside a code fence or a diff hunk: text shown, never printed by Claude as a banner."""
    fenced, in_diff, out = False, False, []
    for row in lines:
        text = _ROW.match(row)["text"]
        if _FENCE.match(row):
            fenced = not fenced
            out.append(True)
            continue
        if _DIFF_HEADER.match(text):
            in_diff = True
        elif in_diff and (not row.strip() or _ROW.match(row)["markers"].startswith(("⏺", "●"))):
            in_diff = False  # a diff ends at a blank row or Claude's next message
        out.append(fenced or in_diff)
    return out


_COMPOSER_ROW = re.compile(r"^\s*❯(?!\s*\d+\.\s)(?:\s|$)")
_BARE_RULE = re.compile(r"^\s*[─━]{3,}\s*$")
# The composer's rules may carry a label (a mode, a session name) inside the line.
_COMPOSER_RULE = re.compile(r"^\s*[─━]{3,}(?:[^─━]{1,60}[─━]{2,})?\s*$")


# A tool call reads ``Name(args)`` (``Bash(…)``, ``Web Search(…)``, an MCP
# tool's ``name (MCP)(…)``) or is a collapsed summary; Claude's other messages
# (replies, ``Teammate @x failed: …``, ``Background command … completed``)
# are not, and a ``⎿`` row under them is Claude's own.
_TOOL_CALL = re.compile(r"^[A-Za-z][\w.:-]*(?:(?: - | )[A-Za-z][\w.:-]*)?(?: \(MCP\))?\(|\(ctrl\+\w to expand\)")
# Claude draws its markers at the message column (0) and the result column
# (2); a marker indented deeper sits inside a result: a quoted screen.
_OWN_MARKER_INDENT = 3
# Where a result's text starts (`  ⎿  text`); its rows continue at or past it.
_RESULT_COLUMN = 5
# `❯ ! cat log.txt`: a shell command the user ran in bash mode; what follows is its output.
_BASH_MODE = re.compile(r"^(?:[>❯]\s*)?!\s*\S")


def _continuing(lines: list[str]) -> list[bool]:
    """Rows that carry on something above them, so they never open a banner.

    Claude sets each message of its transcript off with a blank row, and a
    banner is a message of its own. So a row directly under a reply or a tool
    call with no blank between is part of it: the reply's wrapped text, the
    first result row of a tool (a ``cat``, a ``Read``, a ``grep`` match) and
    that result's continuation rows. A second ``⎿`` row of the block is
    Claude's own again and is left alone. A ``⎿`` under a message that is no
    tool call (a notification) is Claude's own. Markers indented past the
    result column are a screen quoted inside a result, and bash-mode output is
    a command's; both are text. The rows under the frameless composer's ``❯``
    row, up to its closing rule, are what the user typed.
    """
    out, block, typing = [], None, False
    in_result = False  # inside a tool's result, which may hold blank rows of its own
    for k, row in enumerate(lines):
        shape = _ROW.match(row)
        text, markers = shape["text"].rstrip(), shape["markers"]
        if row.strip():
            if in_result and len(shape["indent"]) >= _RESULT_COLUMN:
                out.append(True)  # the result goes on past a blank row: its text, never Claude's own
                continue
            in_result = False
        if typing:
            typing = not _BARE_RULE.match(row)
            out.append(typing)
            continue
        if _COMPOSER_ROW.match(row) and k and _BARE_RULE.match(lines[k - 1]):
            typing = True
            out.append(False)  # the ❯ row itself is chrome
            continue
        if not row.strip():
            block = None
            out.append(False)
        elif markers and len(shape["indent"]) > _OWN_MARKER_INDENT:
            out.append(True)
        elif _BASH_MODE.match(row):
            block = "bash"
            out.append(False)
        elif block == "bash" and (markers.startswith("⎿") or shape["indent"]):
            in_result = True
            out.append(True)
        elif markers.startswith(("⏺", "●")):
            banner_like = _HEADS_ANY.match(text) or _HEAD_START.match(text)
            block = None if banner_like else ("call" if _TOOL_CALL.search(text) else "message")
            out.append(False)
        elif markers.startswith("⎿"):
            out.append(block == "call")
            in_result = block == "call"
            block = "result" if block == "call" else None
        elif shape["indent"] and not markers and block is not None:
            out.append(True)
        else:
            block = None
            out.append(False)
    return out


def _unbox(row: str) -> str:
    """A menu row drawn inside a box, without its side borders."""
    return re.sub(r"^\s*│(.*?)│?\s*$", r"\1", row) if row.lstrip().startswith("│") else row


def _is_chrome(row: str) -> bool:
    return any(p.search(row) for p in _CHROME)


def _continuation(row: str, banner_at_margin: bool, zone_open: bool = False) -> str | None:
    """The text of ``row`` if it can continue a wrapped banner: Claude indents the rest.

    A zone name broken inside a word (a hard wrap, or tmux reflowing a resized
    pane to column 0) continues with the rest of the name, whatever its column.
    """
    text = row.strip()
    if zone_open and _ZONE_TAIL.match(text):
        return text
    if not text or _NOT_CONTINUATION.match(text) or _is_chrome(row):
        return None
    if row[:1].isspace() or banner_at_margin:
        return text
    return None


def _banner_at(lines: list[str], i: int, clock: Clock, pattern: re.Pattern[str] | None, zone: str | None):
    """The banner starting at row ``i`` as (reading, last row of its text), or None.

    ``zone`` is the zone of the banner above, for a line that names none.
    """
    row = lines[i]
    shape = _ROW.match(row)
    text = shape["text"].rstrip()
    if pattern is not None:
        if not pattern.search(row) or _TYPED.match(row):
            return None
        reader = _read_pattern
    else:
        reader = _read
        if _HEADS_ANY.match(text) is None and not _HEAD_START.match(text):
            return None
    reading = reader(text, clock, zone)
    at_margin = not shape["indent"] and not shape["markers"]
    last = i
    for j in range(i + 1, min(len(lines), i + _MAX_WRAP_ROWS)):
        if reading is not None and reading.complete:
            break
        zone_open = reading is not None and reading.zone_open
        more = _continuation(lines[j], at_margin, zone_open)
        if more is None:
            break
        spaced, glued = reader(text + " " + more, clock, zone), reader(text + more, clock, zone)
        joins = [glued, spaced] if zone_open else [spaced, glued]  # zone names hold no spaces
        better = [r for r in joins if _improves(reading, r)]
        if not better:
            break
        reading = next((r for r in better if r.reset_at is not None), better[0])
        text, last = reading.text, j
    return (reading, last) if reading is not None else None


# Rows Claude prints as part of one limit episode, around the banner and its
# menu: the options opening, the armed or cancelled auto-continue and its
# right-aligned note, the footer's two rows when no composer separates them.
_EPISODE_ROW = re.compile(
    r"^\s*(?:[⏺●]\s*)?(?:Automatic continue cancelled\b|Opening your options\b|"
    r"⚠\s*Usage limit reached\b|Continuing (?:automatically at\b|shortly\b).*·\s*Esc to cancel\s*$)",
    re.I,
)


def _block_end(lines: list[str], end: int, fenced: list[bool], clock: Clock, zone: str | None):
    """Extend a banner over what Claude prints with it; returns (last row, auto-continue reading)."""
    last, hint_open, auto = end, False, None
    option_at = None  # column of the last menu option's number, for its wrapped or described rows
    j = end
    while j + 1 < len(lines):
        j += 1
        row = lines[j]
        if fenced[j]:
            break
        if not row.strip():
            hint_open = False
            continue
        boxed = _unbox(row)
        shape = _ROW.match(row)
        indent = len(boxed) - len(boxed.lstrip())
        banner = _banner_at(lines, j, clock, None, zone)
        if banner is not None and banner[0].kind == "claude.auto-continue" and auto is None:
            auto, (last, hint_open) = banner[0], (banner[1], False)
            j = last  # a narrow pane wraps the auto-continue row too
        elif banner is not None or _LIMIT_RESET.match(shape["text"]):
            break  # another banner, or the wall lifting: not part of this block
        elif _EPISODE_ROW.match(boxed):
            last, hint_open = j, False
        elif _TURN_SUMMARY.match(row):
            hint_open = False  # the turn's summary: in the block when more of the episode follows
        elif boxed is not row and _read(_ROW.match(boxed.strip())["text"], clock, zone) is not None:
            last, hint_open = j, False  # the banner repeated inside the menu's box
        elif _HINT.match(row) and not _RATE_LIMIT_COMMAND.match(row):
            last, hint_open = j, not row.rstrip().endswith((".", ")"))
        elif hint_open and row[:1].isspace() and _continuation(row, False):
            last, hint_open = j, not row.rstrip().endswith((".", ")"))
        elif _MENU_OPTION.match(boxed):
            last, hint_open, option_at = j, False, re.search(r"\d", boxed).start()
            continue
        elif _RATE_LIMIT_COMMAND.match(row) or _MENU_FOOTER.search(boxed):
            last, hint_open = j, False
        elif option_at is not None and indent > option_at and not _NOT_CONTINUATION.match(boxed.strip()):
            last = j  # an option's text wrapped in a narrow pane, or its description row
            continue
        elif _RULE.match(boxed) or _MENU_QUESTION.match(boxed) or boxed.strip() in ("", "│"):
            hint_open = False  # part of the block only if a menu row follows
        elif _opens_a_wrapped_question(lines, j):
            hint_open = False  # the first rows of a question a narrow pane wrapped
        elif last > end and _menu_row_follows(lines, j):
            last = j  # an option wrapped without its indent, inside the menu's box
        else:
            break
        option_at = None
    return last, auto


def _menu_row_follows(lines: list[str], j: int) -> bool:
    """Whether a menu option or footer follows row ``j`` within a few rows, with no message between."""
    for k in range(j + 1, min(len(lines), j + 4)):
        boxed = _unbox(lines[k])
        if _MENU_OPTION.match(boxed) or _MENU_FOOTER.search(boxed):
            return True
        if _ROW.match(boxed)["markers"] or _SUBMITTED.match(boxed):
            return False
    return False


def _opens_a_wrapped_question(lines: list[str], j: int) -> bool:
    """Whether row ``j`` starts a menu question wrapped over rows, the last ending in "?"."""
    for k in range(j, min(len(lines), j + 3)):
        boxed = _unbox(lines[k])
        if not boxed.strip() or _ROW.match(boxed)["markers"] or _NOT_CONTINUATION.match(boxed.strip()):
            return False
        if _MENU_QUESTION.match(boxed):
            return k > j  # like the question itself, in the block only if a menu row follows
    return False


def _block_start(lines: list[str], start: int) -> int:
    """Include the `/rate-limit-options` line that opened a menu around the banner."""
    for j in range(start - 1, max(-1, start - 4), -1):
        if _RATE_LIMIT_COMMAND.match(lines[j]):
            return j
        if lines[j].strip() and not _RULE.match(lines[j]):
            break
    return start


def _wall_lifted_below(lines: list[str], row: int, fenced: list[bool]) -> bool:
    """A later ``Usage limit reset · continuing automatically`` says the wall is gone."""
    for j in range(row + 1, len(lines)):
        if not fenced[j] and _LIMIT_RESET.match(_ROW.match(lines[j])["text"]):
            return True
    return False


_BOX_TOP = re.compile(r"^\s*╭─.*╮\s*$")
_BOX_INPUT = re.compile(r"^\s*│\s*>(?:\s.*)?│\s*$")


def _composer_top(lines: list[str]) -> int | None:
    """The first row of the lowest composer (the rule above ``❯``, or the box top), or None.

    Everything from there down is Claude's UI: the composer, what is typed in
    it, and below it the footers, the armed-wall notice and any statusLine a
    user configured, whatever it says. A ``❯`` with a menu below it is the
    echoed ``/rate-limit-options`` and its menu, not the composer.
    """
    for k in range(len(lines) - 1, 0, -1):
        if _BOX_INPUT.match(lines[k]) and _BOX_TOP.match(lines[k - 1]):
            return k - 1
        if _COMPOSER_ROW.match(lines[k]) and not lines[k][:1].isspace() and _COMPOSER_RULE.match(lines[k - 1]):
            below = lines[k + 1 :]
            if any(_COMPOSER_RULE.match(r) for r in below) and not any(_MENU_OPTION.match(_unbox(r)) for r in below):
                return k - 1
    return None


# A prompt the user submitted, echoed in the transcript (not bash mode, not a menu option).
_SUBMITTED = re.compile(r"^[>❯](?!\s*\d+\.\s)(?!\s*!)\s*\S")
# What Claude prints when it takes a prompt up: a message, a result, a spinner.
_ANSWER = re.compile(r"^\s{0,3}[⏺●⎿✻✽✢✳✶]")


def _answered_prompt_below(lines: list[str], last: int, fenced: list[bool]) -> bool:
    """Whether the user submitted a prompt after the block and Claude took it up.

    Then the agent is past the wall, however short its answer: the block is
    an old episode, and its bare clock time must not roll to tomorrow.
    """
    prompt = next(
        (j for j in range(last + 1, len(lines)) if not fenced[j] and _SUBMITTED.match(lines[j]) and not _RATE_LIMIT_COMMAND.match(lines[j])),
        None,
    )
    return prompt is not None and any(_ANSWER.match(r) for r in lines[prompt + 1 :])


# Claude's footer once the reset time has come and its auto-continue waits its jitter.
_RESET_ARRIVED = re.compile(r"^\s*Continuing shortly\b", re.I)


def _lowest_block(lines: list[str], fenced: list[bool], continuing: list[bool], clock: Clock, pattern: re.Pattern[str] | None):
    """The lowest banner block as (first row, last row, reading, auto-continue reading), or None."""
    found, zone = None, None
    i = 0
    while i < len(lines):
        banner = None if fenced[i] or continuing[i] else _banner_at(lines, i, clock, pattern, zone)
        if banner is None:
            i += 1
            continue
        reading, end = banner
        if reading.zone is not None and not reading.zone_open:
            zone = reading.zone
        last, auto = _block_end(lines, end, fenced, clock, zone)
        found = (i, last, reading, auto)
        i = last + 1
    return found


@hookimpl
def afd_detect(agent: str, lines: list[str], clock: Clock, pattern: re.Pattern[str] | None) -> Detection | None:
    if agent != AGENT:
        return None
    screen = [normalise_row(row) for row in lines]
    chrome_row = _composer_top(screen)
    # Below the composer every row is UI, never a banner.
    lines = screen[:chrome_row] if chrome_row is not None else screen
    fenced = _quoted(lines)
    continuing = _continuing(lines)
    found = _lowest_block(lines, fenced, continuing, clock, pattern)
    if found is None:
        return None
    start, last, reading, auto = found
    if _wall_lifted_below(lines, start, fenced) or _answered_prompt_below(lines, last, fenced):
        return None
    if any(_RESET_ARRIVED.match(row) for row in screen[last + 1 :]):
        # "Continuing shortly": the reset is the one that just passed, not the
        # same clock time tomorrow; read the banner as a day earlier would.
        earlier = Clock(clock.now - timedelta(days=1), clock.local_zone)
        _, _, reading, auto = _lowest_block(lines, fenced, continuing, earlier, pattern) or found
    reset_at = reading.reset_at if reading.reset_at is not None else (auto.reset_at if auto else None)
    return Detection(
        agent=AGENT,
        first_row=_block_start(lines, start),
        last_row=last,
        reset_at=reset_at,
        kind=reading.kind,
        banner=reading.text,
        chrome_row=chrome_row,
    )


# --- the second witness: Claude's own transcript ---------------------------

from afd_plugins import _claude_records  # noqa: E402  (kept apart from the detector above)


@hookimpl
def afd_witness(agent, process, since, until, record):
    if agent != AGENT:
        return None
    return _claude_records.witness(process, since, until, record)
