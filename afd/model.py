"""Value objects shared by plugins, gates and the supervisor."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from datetime import datetime, tzinfo


class SessionState(enum.StrEnum):
    """Where a session stands; the values are what the store and `--json` show.

    A StrEnum, so stored rows and JSON keep their plain strings. Actions add
    their own in-progress states here (and a transition for each in
    `afd/judge/sessions.py`).
    """

    WORKING = "working"
    IDLE = "idle"
    LIMITED = "limited"
    EXITED = "exited"  # the pane is there, its agent is not (a shell, or another program)
    GONE = "gone"  # the pane itself is gone (closed, or its tmux server ended)
    UNKNOWN = "unknown"  # tmux did not answer: the pane may well be there
    HANDING_OFF = "handing_off"  # a handoff owns the pane until it settles (afd.act.handoff)
    ALL_LIMITED = "all_limited"  # limited, and every agent of handoff_order is too: the loop guard's stop


# The states in which a session stands at a limit (the loop guard's stop is one too).
LIMITED_STATES = frozenset({SessionState.LIMITED, SessionState.ALL_LIMITED})


class IdentityKind(enum.StrEnum):
    """Which agent runs in a pane, in three values (afd.observe.identity says how it is found)."""

    KNOWN = "known"  # the agent is named
    UNKNOWN = "unknown"  # something other than a shell runs, and matches no spec: never authorises anything
    NONE = "none"  # only a shell, or nothing at all


@dataclass(frozen=True, slots=True)
class ProcessEnv:
    """What afd reads of an agent process's environment: never a credential's value.

    `selecting`: the account variables (of any agent) that are set, with
    their values; `credentials`: the names of the credential variables that
    are set; `home`: its HOME, which `~` in its values means.
    """

    selecting: tuple[tuple[str, str], ...]
    credentials: tuple[str, ...]
    home: str | None

    def value(self, name: str) -> str | None:
        return dict(self.selecting).get(name) or None


@dataclass(frozen=True, slots=True)
class Identity:
    """Which agent runs in a pane, and the process that says so (afd.observe.identity finds it)."""

    kind: IdentityKind
    agent: str | None
    pid: int | None  # the agent process (or, for UNKNOWN, the unidentified one)
    create_time: float | None  # with pid, names the process even after pid reuse
    argv: tuple[str, ...]
    reason: str
    # The account variables of `pid`'s environment, read when the identity was
    # established (afd.observe.account_env); None: not read, or unreadable.
    env: ProcessEnv | None = None


class IdentitySource(enum.StrEnum):
    """Who says which agent runs in a session's pane."""

    PROCESS = "process"  # afd saw it in the pane's process tree
    USER = "user"  # the user vouched for it (`sessions adopt --agent`)


class PromptDelivery(enum.Enum):
    """How an agent CLI takes its first prompt."""

    ARGUMENT = "argument"  # `claude "fix the test"`
    TYPED = "typed"  # started bare, the prompt is pasted into its composer


@dataclass(frozen=True, slots=True)
class InputRow:
    """One way an agent draws its input row (its composer), for afd to read what sits there before typing."""

    # Matched (re.match) against one captured row. What sits in the input row
    # is its group named "text" when it has one, else the rest of the row
    # after the match; either is read stripped.
    pattern: re.Pattern[str]
    # The row counts only with a horizontal rule (a row of `─`) directly above
    # and below it: a prompt echoed into the transcript may be drawn with the
    # same glyph, but not between two rules.
    between_rules: bool = False


@dataclass(frozen=True, slots=True)
class LimitMenu:
    """A menu an agent opens at its wall, and what afd answers in it before it types a continuation."""

    # Searched (re.search) in the menu's title and options, joined by spaces.
    pattern: re.Pattern[str]
    # The option afd takes, by its exact text (never by its number); None: only a person answers this menu.
    answer: str | None
    # What the person is asked to do when `answer` is None (after "needs you: ").
    ask: str = ""


@dataclass(frozen=True, slots=True)
class ComposerBox:
    """An input box told from the transcript by its shape, not by its glyph.

    Some agents draw their input box with the same side bar as a prompt (or
    an error) in their history (OpenCode's `┃`). The box is the run of rows
    ``side`` matches directly above the lowest row ``edge`` matches (its
    bottom edge), and that edge: those rows are chrome; the same bar higher
    up is the transcript.
    """

    side: re.Pattern[str]
    edge: re.Pattern[str]


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """What afd knows about one kind of agent CLI; supplied by a plugin."""

    name: str
    # Basenames that identify the agent's own executable or script in argv
    # (argv[0], or the script an interpreter runs: `node .../bin/claude`).
    executables: tuple[str, ...]
    command: tuple[str, ...]
    resume_args: tuple[str, ...] = ()
    prompt_delivery: PromptDelivery = PromptDelivery.ARGUMENT
    # Regexes, each matched (re.search) against one normalised screen row;
    # a matching row belongs to the agent's UI (prompt box, footer, status,
    # turn summary), not to its output.
    chrome: tuple[re.Pattern[str], ...] = ()
    # Extra argv regexes (matched against the space-joined argv) for CLIs
    # that rewrite process.title or run under an unusual launcher.
    argv_patterns: tuple[re.Pattern[str], ...] = ()
    # Regexes, each matched (re.search) against one normalised screen row; a
    # matching row shows the agent busy on a request that is going through
    # (its spinner, "esc to interrupt"). A retry or reconnect row must not
    # match: a spinner on a failing request is no evidence the plan has room.
    busy: tuple[re.Pattern[str], ...] = ()
    # Environment variables that select which account the agent runs as
    # (`CLAUDE_CONFIG_DIR`), the value each has when unset (`~/.claude`: set
    # to that, it is still the default account), and those that carry its
    # credentials: afd reads only whether one of these is set, never its
    # value (afd.judge.accounts says how an account is told).
    account_env: tuple[str, ...] = ()
    credential_env: tuple[str, ...] = ()
    account_defaults: tuple[tuple[str, str], ...] = ()
    # Regexes for spans of a row that change while the agent waits at a wall
    # without doing anything (a spinner's cells, a countdown to its own
    # retry): while a wall is on screen they are masked out of every row
    # before two captures are compared (`afd.judge.gates.compared_content`),
    # so a wall the agent animates still counts as unchanged. Match the
    # span, never a whole row: what is masked can never show work.
    volatile: tuple[re.Pattern[str], ...] = ()
    # Detection kinds of walls the agent retries past by itself at the reset
    # (OpenCode's `Rate Limited [retrying in 2h5m …]`): waited out like
    # Claude's armed auto-continue, never typed into.
    self_continuing_kinds: tuple[str, ...] = ()
    # The agent's turn goes on after its TUI is stopped (Codex runs it in a
    # detached `app-server` daemon, which a swap leaves alone as every
    # process in a session of its own): a handoff may only stop it between
    # turns — limited, or idle at its prompt — or the old turn would keep
    # editing the worktree beside the new agent.
    turn_outlives_pane: bool = False
    # How the agent draws its input row, tried on each captured row from the
    # bottom of the screen up: the first row one of them matches is the input
    # row. Empty: afd cannot find this agent's input row, so not seeing one
    # proves nothing, and typing is judged from the last rows instead.
    input_rows: tuple[InputRow, ...] = ()
    # What the input row shows while nothing is typed in it (read as empty).
    input_placeholders: tuple[str, ...] = ()
    # Regexes, each matched (re.search) against one normalised row: how the
    # input row shows a paste the agent folded into a placeholder instead of
    # its text (`[Pasted ~15 lines]`). A group named "lines" is the number of
    # lines pasted; a placeholder counts as the paste only when that matches.
    paste_markers: tuple[re.Pattern[str], ...] = ()
    # The menus the agent opens at its wall, tried in order on the menu a
    # resume finds where its input row should be: the first whose pattern
    # matches says which option afd takes, or that a person must answer it.
    # A menu none of them matches is a person's to answer.
    limit_menus: tuple[LimitMenu, ...] = ()
    # Rows of the agent's own auto-continue at a wall (it types "continue"
    # itself at the reset): a row matching one of `auto_continue_armed` arms
    # it, and its group named "at", when it has one, is when it fires (read
    # as a reset clause; without the group it fires now); a row matching one
    # of `auto_continue_cancelled` disarms it. The lowest such row wins. An
    # armed auto-continue is waited out, never typed over.
    auto_continue_armed: tuple[re.Pattern[str], ...] = ()
    auto_continue_cancelled: tuple[re.Pattern[str], ...] = ()
    # The agent's input box, found by its shape on each capture (its rows are
    # chrome there, see `afd.judge.gates.chrome_of`); None: `chrome` says it all.
    composer_box: ComposerBox | None = None
    # The agent runs a status-line command of the user's on every refresh, with a JSON payload on stdin
    # that carries its rate limits and prompt cache (Claude Code's `statusLine`): `afd statusline` can be
    # that command, and its figures are this agent's (afd.observe.statusline). At most one agent says so.
    status_line: bool = False


@dataclass(frozen=True, slots=True)
class Clock:
    """The instant to judge by and the zone a banner without one is read in."""

    now: datetime  # timezone-aware
    local_zone: tzinfo


@dataclass(frozen=True, slots=True)
class Detection:
    """A detector's answer for one capture."""

    agent: str
    first_row: int  # first row of the banner block, index into the rows given
    last_row: int  # last row of the banner block (inclusive)
    reset_at: datetime | None  # aware UTC, or None when no reset time is stated or parseable
    kind: str  # banner family, e.g. "claude.session-limit", "codex.usage-limit"
    banner: str  # the normalised banner text (joined if it was wrapped)
    # The first row of the agent's own chrome as the detector read the screen
    # (its composer and everything below it: footers, a user's statusLine);
    # None when the detector saw no composer. The tail gate counts output
    # only above it, whatever text those rows carry.
    chrome_row: int | None = None
    # The wall says waiting lifts it but not when ("try again later", a plan
    # window whose reset clause is cut off or unreadable). With `reset_at`
    # set this changes nothing; without it, it is what keeps a plan window
    # from reading as a wall only a person can lift.
    reset_unstated: bool = False
    # The wall offers another model to go on with ("switch models with
    # /model", "Switch to another model now"): nothing to wait for, but no
    # person has to raise a limit either; switching is the user's call.
    offers_other_model: bool = False

    @property
    def has_reset_time(self) -> bool:
        return self.reset_at is not None

    @property
    def needs_human(self) -> bool:
        """Only a person lifts this wall (raise a limit, add credits, ask an admin); see `person_must_act`."""
        return person_must_act(self.reset_at, reset_unstated=self.reset_unstated, offers_other_model=self.offers_other_model)


def person_must_act(reset_at: datetime | None, *, reset_unstated: bool = False, offers_other_model: bool = False) -> bool:
    """The one rule for "a person must act", whatever the wall is called.

    A wall that names a reset (a time, or "try again later") lifts at that
    reset: a spend cap, org cap or model cap that also says `· resets 2pm`
    is waited out like a plan window. A wall that names none but offers
    another model is the user's call, not a person's chore. Any other wall
    that names no reset stays until someone raises a limit, adds credits or
    asks an admin or owner. The wall's name (its `kind`) never decides.
    """
    if reset_at is not None or reset_unstated:
        return False
    return not offers_other_model


# Suffixes of `Detection.kind` that used to decide `needs_human`. Kept so
# plugins importing the name still load; nothing decides by it any more
# (`person_must_act` does, from what the wall says).
NEEDS_HUMAN_KINDS = (".spend-cap", ".billing")


@dataclass(frozen=True, slots=True)
class Event:
    """One thing that happened, as stored and as handed to `afd_event`."""

    at: datetime
    kind: str
    message: str
    session: str | None = None
    data: dict = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Notice:
    """An event told for a person: what `afd_event` gets beside the `Event`.

    Made by afd when the event is stored, from the session's record and the
    user's zone, so a notifier needs nothing but this to write its message.
    """

    title: str  # short: "shop-fix needs you"
    text: str  # one sentence: "shop-fix (claude) needs you: spend cap — add credits"
    where: str | None  # the session's location: "shop:1.0 (%3) · ~/src/shop-fix · afd/shop-fix"
    agent: str | None  # the session's agent, when the event is about a session
    account: str | None  # the session's account (`claude-work`, `unknown`); None when the event is about no session
    host: str  # the machine afd runs on
    priority: int = 3  # 1 (least) to 5 (most urgent), ntfy's scale
    tags: tuple[str, ...] = ()  # short words a notifier may show (ntfy tags, emoji shortcodes)
    # What the webhook and command notifiers send: the event as `afd events
    # --json` prints it, plus "agent", "account", "host", "where" and "text".
    payload: dict = field(default_factory=dict)


class WitnessState(enum.Enum):
    """What an agent's own records say about its usage limit."""

    LIMITED = "limited"
    NOT_LIMITED = "not_limited"
    # No record found, unreadable, too old, or not saying either way.
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class AgentProcess:
    """The agent process a witness is asked about; None where it is not known (`afd detect --record`)."""

    pid: int | None
    cwd: str | None
    start_time: datetime | None  # aware UTC
    # The account variables (and HOME) of the process as afd read them when
    # it named the agent, so the witness reads that account's records (the
    # transcript under that CLAUDE_CONFIG_DIR); None: not read, the witness
    # reads the process's own environment.
    account_env: tuple[tuple[str, str], ...] | None = None


@dataclass(frozen=True, slots=True)
class WitnessVerdict:
    """A witness plugin's answer: the agent's own records, read back."""

    state: WitnessState
    why: str
    reset_at: datetime | None = None  # aware UTC, from the record, when it states one
    window: str | None = None  # "five_hour", "weekly", … as the record names or implies it
    record: str | None = None  # the file the verdict was read from
    at: datetime | None = None  # when the deciding record was written


@dataclass(frozen=True, slots=True)
class UsageWindow:
    """One rate-limit window as the agent itself reports it: how much of it is used, and when it resets.

    ``window`` names the window by its length, never by its position in the
    agent's report: ``five_hour``, ``seven_day``, ``spend_limit``, or
    ``<minutes>m`` for any other length. ``used_percent`` is the agent's own
    figure (above 100 for a spend window once exceeded); None when it
    reported the window without a usable figure.
    """

    window: str
    used_percent: float | None
    resets_at: datetime | None  # aware UTC
    window_minutes: int | None = None
    # Which of the provider's limits the window belongs to (Codex's `limit_id`:
    # `codex`, or a model's own); None when the agent names only one.
    limit_id: str | None = None
    # When the agent reported this window, when it differs from the reading's `at`.
    observed_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class UsageReading:
    """What an agent reported of its account's usage at one instant (`afd_usage`, Claude Code's status line)."""

    agent: str
    at: datetime  # aware UTC: when the agent wrote it
    windows: tuple[UsageWindow, ...]
    source: str  # "statusline", "rollout", …: where afd read it
    plan_type: str | None = None  # the plan as the agent names it ("plus", "pro", "max"), when it does
    # Limits the reading names with no window figures at all (Codex switched to a
    # model's own limit whose windows are null): known to exist, not measured.
    unmeasured: tuple[str, ...] = ()
