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
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from afd import hookimpl
from afd.kit.resettime import from_epoch, parse_reset
from afd.kit.text import normalise_row
from afd.model import AgentSpec, Clock, Detection, InputRow, LimitMenu, PromptDelivery

AGENT = "claude"

# How many screen rows one wrapped banner may span (a spend cap with its
# remedy, URL and reset clause takes six at 40 columns).
_MAX_WRAP_ROWS = 8

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
    # Notices that come and go (a start-up hint for tmux, an update, a tip,
    # the approaching-limit note right-aligned above the composer, gone after
    # 12–15 s): UI, never output after a banner nor a change of the pane.
    re.compile(r"^\s*tmux focus-events (?:off|on)\b"),
    re.compile(r"·\s*add 'set -g focus-events on'"),
    re.compile(r"^\s*(?:[✓✗✔✘]\s*)?(?:Update (?:available|installed)\b|Auto-update failed\b)", re.I),
    re.compile(r"^\s*※\s*Tip:"),
    re.compile(
        r"^\s+(?:You've used \d+% of your\b.*\blimit\b|You're close to your\b.*\blimit\b|Over \d+% of your\b.*\blimit used\b"
        r"|Approaching your\b.*\blimit\b)",
        re.I,
    ),
    # The footer of an armed wall, below the composer: it names the limit but
    # is UI, never a banner of its own nor output after one.
    re.compile(r"^\s*⚠\s*Usage limit reached\s*·\s*limit resets\b", re.I),
    re.compile(r"^\s*Continuing (?:automatically at\b.*|shortly\b.*)·\s*Esc to cancel\s*$", re.I),
)


# The spinner row while a request runs: `✻ Thinking… (12s · ↑ 1.2k tokens · esc
# to interrupt)`. While a 429 is retried it reads `… · retrying in 12s ·
# attempt 6/10`: busy, but on a request that is failing, so not evidence.
_BUSY = (re.compile(r"^(?!.*\b(?:retrying|attempt \d+/\d+)\b).*\besc to interrupt\b", re.IGNORECASE),)

# The input row: the boxed `│ > text │` of older releases, or the `❯ text`
# row between two rules (a prompt in the transcript has the glyph, not the rules).
_INPUT_ROWS = (
    InputRow(re.compile(r"^│\s*>\s?(?P<text>.*?)\s*│$")),
    InputRow(re.compile(r"^❯(?P<text>.*)$"), between_rules=True),
)


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
            input_rows=_INPUT_ROWS,
            # /rate-limit-options at the wall: waiting is what afd does, so it takes that option.
            limit_menus=(
                LimitMenu(re.compile(r"Stop and wait for limit to reset|What do you want to do\?"),
                          answer="Stop and wait for limit to reset"),
            ),
            # "set to continue automatically at 9:42pm · …", "Continuing shortly".
            auto_continue_armed=(
                re.compile(r"(?:set to continue|Continuing) automatically at (?P<at>[^·]+?)\s*(?:·|$)", re.IGNORECASE),
                re.compile(r"Continuing shortly\b", re.IGNORECASE),
            ),
            auto_continue_cancelled=(re.compile(r"Automatic continue cancelled", re.IGNORECASE),),
            status_line=True,
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
            # A spend limit with its subject ("You've hit your monthly spend
            # limit"), or with its verb ("spend limit reached", a gateway's
            # words); never the bare noun, the wrapped tail of a hint row.
            r"|(?:You|Your|This|The|Organization|Org|Workspace|Team|Group)\b[^.·•|]{0,80}?\s"
            r"(?:monthly )?spend(?:ing)? (?:limit|cap)(?: (?:has been |was )?(?:reached|exceeded|hit))?"
            r"|(?:monthly )?spend(?:ing)? (?:limit|cap) (?:has been |was )?(?:reached|exceeded|hit)"
            r"|(?:(?:You|Your|This|The|Organization|Org|Workspace|Team|Group)\b[^.·•|]{0,80}?\s)?"
            r"(?:usage allocation (?:has been |is |was )?disabled(?: by (?:your |the )?[\w' ]{0,40}?(?:admin|owner)\w*)?"
            r"|usage limit is set to \$0(?:\.00)?"
            r"|add funds to continue)"
            r"(?: for (?:this|the) (?:month|billing period))?"
            r")(?=\W|$)",
            re.I,
        ),
    ),
    (
        "claude.billing",
        re.compile(r"(?:API\s+Error:\s*)?(?:Your )?credit balance (?:is )?too low(?: to access the [\w ]{0,40}?API)?\b", re.I),
    ),
    ("claude.legacy", re.compile(r"Claude (?:(?:AI|Pro|Max|Team) )?usage limit reached(?![|\w])\.?", re.I)),
    (
        "claude.auto-continue",
        re.compile(r"Usage limit reached(?: again)?\s*·\s*(?:continuing|set to continue) automatically\b", re.I),
    ),
    ("claude.plan", re.compile(r"You(?:'ve| have) hit your (?:[\w-]+ ){0,2}?limit\b", re.I)),
    ("claude.extra-usage", re.compile(r"You(?:'re| are) out of extra usage\b", re.I)),
    (
        "claude.limit-reached",
        re.compile(
            r"(?:(?:Opus|Sonnet)\s+)?(?:\d+-hour|session|weekly|daily|monthly|opus|sonnet) limit reached\b",
            re.I,
        ),
    ),
)
# Kinds read by their sentence (`_read_wall`): the text after the head goes
# on with clauses ("· add funds to continue", ". Contact your admin.", "·
# your 5-hour limit resets 2pm"), never with prose.
_SENTENCE_KINDS = ("claude.spend-cap", "claude.billing", "claude.extra-usage")
# The first words of a head, so a banner wrapped inside its head is still tried.
_HEAD_START = re.compile(
    r"^(?:\*\*)?(?:API Error:?\s*(?:\d{3}\s+)?(?:(?:Request rejected \(\d{3}\)|Server is temporarily limiting requests "
    r"\(not your usage limit\))\s*·\s*)?)?(?:You(?:'ve| have)? (?:hit|exceeded|used up|run out|reached)|"
    r"You(?:'re| are)? (?:all )?out|Claude(?: AI)? usage|Claude stopped|Usage limit|Usage allocation|Usage (?:is|has)|Access (?:is|has)|Usage credits|Extra usage|Your|Spend|"
    r"Add funds|API Error: (?:You|Your|Credit)|Credit balance|\d+-hour|Session|Opus|Sonnet|Weekly|Daily|Monthly|"
    r"Limit reached|Third-party|This service|Lower-priority|Failed to authenticate|Request rejected \(\d{3}\)\s*·?\s*$|Server is temporarily\b|"
    r"(?:Claude\s+)?(?:Fable|Haiku|Mythos)|(?-i:[A-Z][a-z]+)\s+\d+(?:\.\d+)?\s+(?:now\s+)?(?:requires|needs))(?:\b|(?<=·)$)",
    re.I,
)
_LEGACY_LINK = " Your limit will reset at "
_LEGACY_CLAUSE = re.compile(r"\s*+Your limit will reset at\s+(?P<clause>.*)$", re.I | re.S)
# Possessive quantifiers keep a row of blanks from costing quadratic time.
_RESETS_CLAUSE = re.compile(r"\s*+(?:[·•|,–—]\s*+)?resets?(?:\s++at)?\s++(?P<clause>.*)$", re.I | re.S)
_AT_CLAUSE = re.compile(r"\s+at\s+(?P<clause>.*)$", re.I | re.S)
_SEPARATOR = re.compile(r"\s*+[·•|–—]\s*+")
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
    # The facts `afd.model.person_must_act` decides by (see `Detection`).
    reset_unstated: bool = False  # it names a reset it does not time ("resets soon", a clause cut off)
    offers_other_model: bool = False
    # A wall read by its sentence (`_read_wall`): its clauses may go on in
    # the next row until the sentence visibly ends.
    open_ended: bool = False


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


def _read_window(text: str, clock: Clock, zone_default: str | None = None) -> _Reading | None:
    """Read a plan window's banner (markers already removed); None if it is not one."""
    for kind, head in _HEADS:  # noqa: B007 (the kind that matched is read after the break)
        m = head.match(text)
        if m:
            break
    else:
        return None
    rest = text[m.end() :]
    if kind in _SENTENCE_KINDS:
        return None  # read by its sentence, `_read_wall`
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



def _read(text: str, clock: Clock, zone_default: str | None = None) -> _Reading | None:
    """Read a banner's text (markers already removed); None if it is not one."""
    text = _MARKDOWN.sub("", text)
    lead = _API_LEAD.match(text)
    if _NOTICE.search(text[lead.end() :] if lead else text):
        return None
    reading = _read_window(text, clock, zone_default)
    if reading is None:
        return _read_wall(text, clock)
    if reading.kind == "claude.plan" and reading.reset_at is None and not reading.zone_open:
        # Its clauses may still say who lifts it ("· contact your admin",
        # "· raise it at …"): read it as a sentence when it reads as one.
        wall = _read_wall(text, clock)
        if wall is not None:
            return wall
    # "your Opus limit" is a model's window, "· contact your admin to
    # increase it" a cap an admin lifts, "your fast limit" no wall at all.
    kind = reading.kind
    if kind == "claude.plan":
        head = _HEAD_NOUN.match(text)
        kind = _classify(head["np"] if head else "", text)
        if kind is None:
            return None  # "You've hit your fast limit": fast mode pauses, requests go on
        if _OUT_OF_CREDITS.search(text):
            kind = "claude.extra-usage"  # the window, and no usage credits to go on with

    return replace(
        reading, kind=kind, reset_unstated=_names_reset(text), offers_other_model=bool(_OTHER_MODEL.search(text))
    )


# --- walls read by their sentence -----------------------------------------------
#
# Claude Code words its caps as one sentence shape, reworded release after
# release: a wall verb and a limit noun ("You've hit your org's monthly
# spend limit", "Your org is out of usage", "Usage is paused for your
# organization", "spend limit reached", "Opus 5 requires usage credits"),
# then clauses set off by "·" (or whole sentences): a reset ("· resets
# Dec 9", "· your 5-hour limit resets 2pm (UTC)", "It resets …"), a remedy
# ("raise it at <url>", "Run /usage-credits …", "contact your admin") or
# another model ("switch models with /model"). The heads are those shapes,
# not the strings; `_classify` names the family from the noun's own words.

_NP = r"(?P<np>(?:[\w$.'-]+\s+){0,5}?)"  # the noun's qualifiers: "org's monthly", "team's pooled group", "Claude Opus 4.5"
_OWNER = r"(?:org(?:ani[sz]ation)?|team|group|workspace|enterprise|company|channel|account)"
_NOUN = r"(?:limits?|budget|cap|allowance|quota)"
_OUT_OF = r"(?:usage credits|extra usage|credits|usage|funds)"
_MODEL = (
    r"(?:(?:Claude\s+)?(?:Fable|Haiku|Mythos|Opus|Sonnet)(?:\s+\d+(?:\.\d+)?)?"
    r"|(?-i:[A-Z][a-z]+)\s+\d+(?:\.\d+)?)"
)
_WALL_HEADS = tuple(
    re.compile(head, re.I)
    for head in (
        # You've hit / reached your <np> limit | budget | cap
        rf"You(?:'ve| have)\s+(?:hit|reached|exceeded|used up|run out of)\s+(?:your|the)\s+{_NP}{_NOUN}\b",
        # You're out of usage credits | extra usage | credits
        rf"You(?:'re| are)\s+(?:all\s+)?out of\s+(?P<np>{_OUT_OF})\b",
        # Your org is out of usage; Your organization is out of usage credits
        rf"(?:Your|The)\s+(?P<np>{_OWNER}(?:'s)?(?:\s+[\w-]+){{0,2}}?)\s+(?:is|are|has|have)\s+(?:run\s+)?out of\s+{_OUT_OF}\b",
        # Your organization's usage credit cap is reached; … monthly spend limit has been reached
        rf"(?:Your|The)\s+{_NP}{_NOUN}\s+(?:is|has been|was|have been)\s+(?:reached|exceeded|hit|used up|exhausted)\b",
        # Your organization has reached its monthly spend limit
        rf"(?:Your|The)\s+{_OWNER}\s+(?:has|have)\s+(?:hit|reached|exceeded|used up)\s+(?:its|their|the)\s+{_NP}{_NOUN}\b",
        # spend limit reached; Limit reached – contact an admin ("Usage limit
        # reached" alone is Claude's own status row beside a wall, never the wall)
        rf"(?!Usage limit reached)(?!Usage limit (?:again|reset))(?:API\s+Error:\s*)?{_NP}(?:limit|budget|cap|quota)\s+(?:reached|exceeded)\b",
        # Usage is paused for your organization
        rf"(?P<np>(?:Usage|Access)\s+(?:is|has been)\s+(?:paused|disabled|suspended|stopped|blocked|turned off)\s+for\s+(?:your|this)\s+{_OWNER})\b",
        # This service is disabled for your org
        rf"(?P<np>This service)\s+is\s+(?:disabled|paused|turned off)\s+for\s+(?:your|this)\s+{_OWNER}\b",
        # Your seat type doesn't include usage credits | usage | extra usage
        rf"Your\s+(?P<np>seat(?: type)?)\s+(?:doesn't|does not)\s+include\s+{_OUT_OF}\b",
        # Opus 5 requires usage credits ("needs usage credits, which …" is the
        # consent dialog's description of its "Not now" choice, not a wall)
        rf"(?:Claude stopped here because\s+)?(?P<np>{_MODEL})\s+(?:now\s+)?requires\s+(?:usage credits|extra usage)\b",
        # Extra usage is required for long context
        r"(?P<np>Extra usage|Usage credits)\s+(?:is|are)\s+(?:required|needed)\b(?:\s+for\s+[\w -]{1,30}?(?=\s*[.·]|$))?",
        # Third-party apps now draw from your extra usage
        r"(?P<np>Third-party apps) now draw from your extra usage\b(?:,[^.·]{0,80})?",
        # Failed to authenticate: your claude.ai login expired … doesn't have enough credit
        r"(?P<np>Failed to authenticate|your claude\.ai login expired)\b.{0,240}?\b(?:doesn't|does not) have enough credit\b",
    )
)
# An API error's lead-in: the wall it carries is read as the sentence it is.
# A gateway's own message comes after the CLI's words for the status it
# answered with: "Request rejected (429) ·", or, for a 429 without the plan's
# headers, "Server is temporarily limiting requests (not your usage limit) ·"
# — a throttle by itself, a wall when a wall follows.
_GATEWAY_LEAD = r"(?:Request rejected \(\d{3}\)|Server is temporarily limiting requests \(not your usage limit\))\s*·\s*"
_API_LEAD = re.compile(rf"(?:API\s+Error:?\s*)(?:\d{{3}}\s+)?(?:{_GATEWAY_LEAD})?(?!\{{)", re.I)
_MARKDOWN = re.compile(r"\*\*")
# What the head's words say the wall is. A noun that names no usage wall
# ("rate limit", "context limit") is no wall at all.
_NOT_USAGE = re.compile(
    r"\b(?:rate|context|tokens?|output|input|retry|retries|request|requests|length|size|file|turn|tool|time|timeout|"
    r"character|message|recursion|memory|disk|storage|fast)\b",
    re.I,
)
# Tried in order: the first family whose words the noun phrase holds.
_FAMILY_WORDS = (
    ("claude.extra-usage", re.compile(r"\bextra usage\b|\bThird-party\b", re.I)),
    # A member's own allowance, set by an admin.
    ("claude.admin-cap", re.compile(r"\ballocation\b|\$0\b|\bseat\b|\bservice\b|\bindividual\b", re.I)),
    ("claude.org-cap", re.compile(r"\b(?:org|organi[sz]ation|team|group|workspace|enterprise|company|pooled)(?:'s)?\b", re.I)),
    # A channel's limit is a spend limit its managers set, whether it says spend or usage.
    ("claude.spend-cap", re.compile(r"\bspend(?:ing)?\b|\bchannel(?:'s)?\b", re.I)),
    ("claude.model-cap", re.compile(rf"^(?:Claude stopped here because\s+)?{_MODEL}\s*$", re.I)),
    ("claude.billing", re.compile(r"\bauthenticate\b|\blogin expired\b|\bcredit balance\b", re.I)),
    # Usage credits are what Claude Code calls extra usage now.
    ("claude.extra-usage", re.compile(r"\bcredits?\b|\bfunds\b", re.I)),
)
# A wall that says it resets, though no time could be read from it ("resets
# soon", "resets next week", a clause the pane cut off), lifts by itself.
_NAMES_RESET = re.compile(r"\bresets?\b|\breset at\b|\bregain access\b|\bcontinu\w* automatically\b|\btry again later\b", re.I)


def _names_reset(text: str) -> bool:
    return _NAMES_RESET.search(text) is not None
_OUT_OF_CREDITS = re.compile(r"·\s*out of (?:usage\s+credits|extra\s+usage)\b", re.I)
_HEAD_NOUN = re.compile(rf"You(?:'ve| have)\s+hit\s+your\s+{_NP}limit\b", re.I)
_ADMIN_REMEDY = re.compile(r"\b(?:contact|ask|request\b.{0,20}?from)\s+(?:your|an|the)\s+(?:\w+\s+)?(?:admin|administrator|owner)", re.I)
_OTHER_MODEL = re.compile(
    r"\bswitch(?:ing)?\s+(?:to\s+)?(?:another\s+|a\s+different\s+|other\s+)?models?\b|/model\b"
    r"|\b(?:use|pick|choose)\s+(?:another|a different)\s+model\b",
    re.I,
)
# Notices the agent goes on working after ("Opus limit reached, now using
# Sonnet", "now using usage credits"), and the throttle that says it is not one.
# "Usage limit reached · wrapping up" says Claude is still finishing its step.
# "See Usage in Settings" ends the usage-credits consent dialog's description
# of a choice, and "raise it below" the /usage-credits panel's status line:
# text the user opened, not a wall.
_NOTICE = re.compile(
    r"\bnow\s*using|\bnot your usage limit\b|\bswitched to\b|wrap(?:ping)?[- ]?up\b|\bSee Usage in Settings\b"
    r"|\b(?:raise|buy|add) (?:it|more) below\b",
    re.I,
)
# Right after the head: the end, a clause mark, or a sentence's end.
_WALL_BOUNDARY = re.compile(r"^(?:\s*$|\s*[·•|–—:;]|\s*[.!?](?:\s|$)|\s+for (?:this|the) (?:week|month|day|period|billing period)\b)", re.I)
_CLAUSES = re.compile(r"\s*[·•|–—]\s*|(?<=[.!?])\s+")
# A sentence after the wall's own is its remedy or its reset, never prose.
_REMEDY = re.compile(
    r"^(?:/|Run\b|Use\b|Type\b|Try\b|Switch|See\b|It\b|Resets?\b|Your\b|Contact|Ask\b|Add\b|Buy\b|Raise|Request|"
    r"Increase|Upgrade|Visit|Go to|For help|Please|Learn|Wait|Manage|To\b|Or\b|You can|Choose|Check|Get\b|Purchase|"
    r"Keep|Turn|Enable|Claude Code|https?:|claude\.ai)",
    re.I,
)
_RESET_IN_CLAUSE = re.compile(
    r"(?:^|\s)(?:resets?|regain access|(?:is|be|are) available again)(?:\s+(?:at|on))?\s+(?P<when>\S.*)$", re.I | re.S
)
# An API's own wording of a time: "2026-12-03 at 10:13 UTC".
_ISO_DATE = re.compile(r"^(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})\b")
_BARE_ZONE = re.compile(r"\s+(?P<zone>UTC|GMT|[A-Z][A-Za-z_]+/[A-Za-z_/]+)(?P<end>\.?)\s*$")
_MONTH_NAMES = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _as_banner_clause(when: str) -> str:
    """A reset clause in the shape Claude's banners print it: "Dec 3, 2026 at 10:13 (UTC)"."""
    m = _ISO_DATE.match(when)
    if m and 1 <= int(m["m"]) <= 12:
        when = f"{_MONTH_NAMES[int(m['m']) - 1]} {int(m['d'])}, {m['y']}{when[m.end():]}"
    z = _BARE_ZONE.search(when)
    if z and "(" not in when:
        when = f"{when[: z.start()]} ({z['zone']}){z['end']}"
    return when
_ENDED = re.compile(r"[.!?)]\s*$")
_SUBJECT = re.compile(r"(?:You|Your|The|This|Usage|Access|Claude|Extra|Third)\b|\S+\s+(?:\d+(?:\.\d+)?\s+)?(?:now\s+)?requires\b", re.I)
_GLUED_RESET = re.compile(r"\bresets?(?=\d|(?-i:[A-Z]))", re.I)


def _classify(np: str, text: str) -> str | None:
    """The family a wall's noun phrase names, or None when it names no usage wall."""
    if _NOT_USAGE.search(np):
        return None
    # A noun no family claims ("your limit", "Budget limit reached", a model
    # this module does not know yet) is a plan window, unless an admin lifts it.
    kind = next((k for k, words in _FAMILY_WORDS if words.search(np)), None) or "claude.plan"
    if kind == "claude.plan" and _ADMIN_REMEDY.search(text):
        kind = "claude.admin-cap"  # "You've hit your usage limit · contact your admin to increase it"
    return kind


def _family(kind: str, np: str, text: str, subject: bool) -> str:
    """The family once the whole wall is read: what its clauses add to its noun."""
    if kind == "claude.spend-cap" and not subject:
        return "claude.org-cap"  # "spend limit reached": a gateway's words for the organisation's cap
    if kind == "claude.extra-usage" and _OTHER_MODEL.search(text) and not re.search(r"\bextra usage\b", np, re.I):
        return "claude.model-cap"  # out of credits for this model: another model goes on
    return kind


def _wall_head(body: str):
    """(kind, match, noun phrase) of the wall head ``body`` starts with, or None."""
    for kind, head in _HEADS:
        if kind in _SENTENCE_KINDS and (m := head.match(body)):
            np = m.group()
            return (_classify(np, body) if kind == "claude.spend-cap" else kind), m, np
    for head in _WALL_HEADS:
        m = head.match(body)
        if m is None:
            continue
        np = m.groupdict().get("np") or ""
        kind = _classify(np, body)
        return (kind, m, np) if kind else None
    return None


def _read_wall(text: str, clock: Clock) -> _Reading | None:
    """A wall read by its sentence: its head, then clauses that say when and what to do."""
    lead = _API_LEAD.match(text)
    body = text[lead.end() :] if lead else text
    if _NOTICE.search(body):
        return None
    found = _wall_head(body)
    if found is None:
        return None
    kind, m, np = found
    kind = _family(kind, np, body, subject=bool(_SUBJECT.match(body)))
    rest = body[m.end() :]
    if not _WALL_BOUNDARY.match(rest):
        return None  # "… is set to $0 in the fixture": a sentence that quotes a wall
    reset_at, zone, zone_open = None, None, False
    pieces = _CLAUSES.split(rest)
    marks = [sep.group() for sep in _CLAUSES.finditer(rest)]
    for k, clause in enumerate(pieces[1:]):
        clause = clause.strip()
        if not clause:
            continue
        sentence = not marks[k].strip()  # set off by a sentence's end, not by "·"
        when = _RESET_IN_CLAUSE.search(clause)
        if when is None and _GLUED_RESET.search(clause):
            return None  # "resets11pm": a join that glued two words, not the wall's reset
        if sentence and not _REMEDY.match(clause) and when is None:
            return None  # prose after a quoted wall ("I'll wait until then.")
        if when is not None and reset_at is None and not zone_open:
            read = _read_clause(kind, text, _as_banner_clause(when["when"]), clock, None)
            if read is None:
                return None  # "resets 11pm (UTC), so I'll wait": prose around a quoted wall
            reset_at, zone, zone_open = read.reset_at, read.zone, read.zone_open
    return _Reading(
        kind,
        text,
        reset_at,
        zone,
        zone_open,
        complete=not zone_open and bool(_ENDED.search(text)),
        reset_unstated=_names_reset(body),
        offers_other_model=bool(_OTHER_MODEL.search(body)),
        open_ended=True,
    )


def _read_pattern(text: str, clock: Clock, zone_default: str | None = None) -> _Reading:
    """A row a user's pattern picked: find whatever reset clause it carries."""
    # The user's pattern stands for their plan's wall: waited out like a
    # plan window (the retry interval when it names no reset).
    epoch = _ANY_EPOCH.search(text)
    if epoch:
        return _Reading("claude.pattern", text, from_epoch(epoch["epoch"]), None, False, True, reset_unstated=True)
    clause = _ANY_CLAUSE.search(text)
    if clause:
        read = _read_clause("claude.pattern", text, clause["clause"], clock, zone_default, strict=False)
        if read is not None:
            return replace(read, reset_unstated=True)
    return replace(_no_clause("claude.pattern", text, complete=False), reset_unstated=True)


def _improves(old: _Reading | None, new: _Reading | None) -> bool:
    """Whether joining the next row made the banner say more (the wrap rule)."""
    if new is None:
        return False
    if old is None:
        return True  # the head itself was wrapped
    if old.open_ended and not old.complete and new.kind == old.kind and len(new.text) > len(old.text):
        return old.reset_at is None or new.reset_at is not None  # the wall's clauses go on
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
# A /command starts a hint row; "//host/…" is a URL the wrap cut after
# "https:", and "$0" an amount, both the rest of a wall's sentence.
_URL_TAIL = re.compile(r"https?:\S*$")
_NOT_CONTINUATION = re.compile(r"^(?:[⎿⏺●>❯│╭╰─━✻✽✢✳✶*#]|/(?!/)|\$(?!\d)|```|~~~)")
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
_UNNAMED = re.compile(r"[(][?]P<\w+>")  # one alternation of every head cannot repeat a group name
_HEADS_ANY = re.compile(
    r"(?:\*\*)?(?:API\s+Error:?\s*(?:\d{3}\s+)?(?:" + _GATEWAY_LEAD + r")?)?(?:"
    + "|".join("(?:" + _UNNAMED.sub("(?:", head.pattern) + ")" for head in (*(h for _, h in _HEADS), *_WALL_HEADS))
    + ")",
    re.I,
)


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


# An API error that carries its body: `API Error: 400 {"type":"error","error":
# {…,"message":"You're out of extra usage. …"}}`, hard-wrapped anywhere,
# inside a word of the message too.
_API_JSON = re.compile(r"^(?:\*\*)?API\s+Error:?\s*(?:\d{3}\s*)?(?:\{|$)", re.I)
_JSON_MESSAGE = re.compile(r'"message"\s*:\s*"(?P<msg>(?:[^"\\]|\\.)*+)"')
_MAX_JSON_ROWS = 12
# When the message cannot be joined back into words, its letters still say
# which wall it is (every space and wrap removed, lower case).
_SQUASHED_WALLS = (
    ("claude.extra-usage", re.compile(r"outofextrausage|drawfromyourextrausage|extrausageis(?:required|needed)")),
    ("claude.billing", re.compile(r"creditbalance(?:is)?toolow|doesn'thaveenoughcredit")),
    ("claude.spend-cap", re.compile(r"spend(?:ing)?(?:limit|cap)(?:has been|is|was)?(?:reached|exceeded)|hityour(?:\w+')?monthlyspendlimit")),
    ("claude.org-cap", re.compile(r"(?:org|organi[sz]ation|team|workspace)(?:'s)?isoutof(?:usage|credits)|usageispausedforyour")),
    ("claude.credits", re.compile(r"outofusagecredits|requiresusagecredits")),
    ("claude.admin-cap", re.compile(r"limitreached\W*contactanadmin")),
)
_SQUASHED_NOT = re.compile(r"notyourusagelimit|rate_limit_error|overloaded")


def _api_error_at(lines: list[str], i: int, clock: Clock):
    """The wall an API error's JSON body carries, as (reading, last row), or None."""
    at_margin = not lines[i][:1].isspace()
    last = i
    rows = [lines[i]]
    text = _ROW.match(lines[i])["text"].strip()
    while ("{" not in text or text.count("{") > text.count("}")) and last + 1 < min(len(lines), i + _MAX_JSON_ROWS):
        row = lines[last + 1]
        if not row.strip() or _ROW.match(row)["markers"] or _is_chrome(row) or not (row[:1].isspace() or at_margin):
            break
        rows.append(row)
        text += "\n" + row.strip()
        last += 1
    # A row as long as the longest was cut at the pane's edge (no space lost);
    # a shorter one ended at a word.
    full = max(len(r) for r in rows)
    parts = text.split("\n")
    joined = parts[0] + "".join(("" if len(rows[k]) >= full else " ") + part for k, part in enumerate(parts[1:]))
    squashed = re.sub(r"\s+", "", joined).lower()
    if _SQUASHED_NOT.search(squashed):
        return None
    message = _JSON_MESSAGE.search(joined)
    reading = _read(message["msg"], clock) if message else None
    if reading is None:
        kind = next((k for k, pattern in _SQUASHED_WALLS if pattern.search(squashed)), None)
        if kind is None:
            return None
        reading = _Reading(kind, joined, None, None, False, True, offers_other_model="/model" in squashed or "switchmodels" in squashed)
    return replace(reading, text=joined, complete=True), last


def _banner_at(lines: list[str], i: int, clock: Clock, pattern: re.Pattern[str] | None, zone: str | None):
    """The banner starting at row ``i`` as (reading, last row of its text), or None.

    ``zone`` is the zone of the banner above, for a line that names none.
    """
    row = lines[i]
    shape = _ROW.match(row)
    text = shape["text"].rstrip()
    if pattern is None and _API_JSON.match(text):
        return _api_error_at(lines, i, clock)
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
        if reading is not None and reading.complete and not reading.open_ended:
            break
        zone_open = reading is not None and reading.zone_open
        more = _continuation(lines[j], at_margin, zone_open)
        tentative = more is None  # a /command or a URL's rest: the wall's own words only if they read as such
        if more is None and reading is not None and reading.open_ended and not reading.complete and lines[j][:1].isspace() \
                and re.match(r"\s*/(?!/)", lines[j]):
            more = lines[j].strip()  # the sentence wrapped before a /command it names ("… or" / "/model to switch models.")
        if more is None and _URL_TAIL.search(text) and lines[j][:1].isspace() and lines[j].lstrip().startswith("/"):
            more = lines[j].strip()  # a URL cut at the pane's edge, not a /command hint
        if more is None:
            break
        spaced, glued = reader(text + " " + more, clock, zone), reader(text + more, clock, zone)
        joins = [glued, spaced] if zone_open else [spaced, glued]  # zone names hold no spaces
        if reading is not None and reading.open_ended and _NOTICE.search(_API_LEAD.sub("", f"{text} {more}", count=1)):
            return None  # the rest of the row makes it a notice ("… See Usage in / Settings")
        if reading is not None and reading.open_ended:
            # A wall read by its sentence runs over every row of its message;
            # a row that turns it into prose ("…limit before, so I will…")
            # makes it a quoted wall, not one. Claude wraps at words: a row
            # glues onto the next only when it was cut at the pane's edge.
            if not zone_open and len(lines[j - 1]) < _message_width(lines, i):
                joins = [spaced]
            grown = [r for r in joins if r is not None and len(r.text) > len(reading.text)]
            if not grown and tentative:
                break  # a hint row under the wall ("/usage-credits to finish …")
            if not grown:
                return None
            # The join that reads a reset, or reaches into its zone, is the one the wrap made.
            reading = max(grown, key=lambda r: (r.reset_at is not None, r.zone is not None, r.offers_other_model))
            text, last = reading.text, j
            continue
        better = [r for r in joins if _improves(reading, r)]
        if not better:
            if reading is None:
                text = f"{text} {more}"  # a long head ("Failed to authenticate: …") still wrapping
                continue
            break
        reading = next((r for r in better if r.reset_at is not None), better[0])
        text, last = reading.text, j
    return (reading, last) if reading is not None else None


def _message_width(lines: list[str], i: int) -> int:
    """The longest row of the message that starts at row ``i`` (up to its first blank row): its wrap width."""
    width = 0
    for row in lines[i : i + _MAX_WRAP_ROWS]:
        if not row.strip():
            break
        width = max(width, len(row))
    return width


# Rows Claude prints as part of one limit episode, around the banner and its
# menu: the options opening, the armed or cancelled auto-continue and its
# right-aligned note, the footer's two rows when no composer separates them.
_EPISODE_ROW = re.compile(
    r"^\s*(?:[⏺●⎿]\s*)?(?:Automatic continue cancelled\b|Opening your options\b|"
    r"⚠\s*Usage limit reached\b|Usage limit reached(?: again)?\s*·|Request sent to your admin\b|"
    r"Continuing (?:automatically at\b|shortly\b).*·\s*Esc to cancel\s*$)",
    re.I,
)
# What a wall's own hint rows say besides a /command: what to buy or switch to.
_REMEDY_ROW = re.compile(
    r"^\s*(?:⎿\s*)?(?:Buy more to keep using\b|Switch models to keep working\b|Ask your admin for more\b|"
    r"Add funds\b|Raise it at\b)",
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
        elif (_HINT.match(row) or _REMEDY_ROW.match(row)) and not _RATE_LIMIT_COMMAND.match(row):
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
    # The offer of another model may stand in a hint row of the block ("/model
    # to switch models."), a clause in a row the reading stopped before.
    tail = next((j for j in range(last + 1, len(lines)) if not lines[j].strip() or _ROW.match(lines[j])["markers"]), len(lines))
    block_text = " ".join(" ".join(row.split()) for row in lines[start:tail])
    other_model = reading.offers_other_model or bool(_OTHER_MODEL.search(block_text))
    kind = "claude.plan" if reading.kind == "claude.auto-continue" else reading.kind
    if kind == "claude.plan" and _OUT_OF_CREDITS.search(block_text):
        kind = "claude.extra-usage"
    elif kind == "claude.extra-usage" and other_model and not re.search(r"\bextra usage\b", reading.text, re.I):
        kind = "claude.model-cap"  # out of credits for this model: another model goes on
    if reset_at is None and chrome_row is not None:
        # Some admin walls name no time, yet Claude arms its own
        # auto-continue: the footer below the composer is chrome for the
        # gates, but its time is the wall's reset.
        reset_at = _footer_reset(screen[chrome_row:], clock, reading.zone)
    return Detection(
        agent=AGENT,
        first_row=_block_start(lines, start),
        last_row=last,
        reset_at=reset_at,
        kind=kind,  # the auto-continue row is the plan wall's own message row
        banner=reading.text,
        chrome_row=chrome_row,
        reset_unstated=reading.reset_unstated,
        offers_other_model=other_model,
    )


_FOOTER_RESET = re.compile(
    r"^\s*(?:⚠\s*Usage limit reached\s*·\s*limit resets|Continuing automatically at)\s+(?P<at>[^·]+?)\s*(?:·|$)", re.I
)


def _footer_reset(rows: list[str], clock: Clock, zone: str | None) -> datetime | None:
    """The time Claude's armed auto-continue footer names, or None."""
    for row in rows:
        m = _FOOTER_RESET.match(row)
        if m and (at := parse_reset(m["at"], zone, clock)) is not None:
            return at
    return None


# --- the second witness: Claude's own transcript ---------------------------

from afd_plugins import _claude_records  # noqa: E402  (kept apart from the detector above)


@hookimpl
def afd_witness(agent, process, since, until, record):
    if agent != AGENT:
        return None
    return _claude_records.witness(process, since, until, record)
