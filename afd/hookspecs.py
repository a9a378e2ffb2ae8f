"""The whole afd plugin API.

A plugin is a module (or object) with functions decorated ``@afd.hookimpl``
named after the specifications below. It reaches afd in one of three ways,
all through the same plugin manager:

* the built-ins shipped in afd's ``plugins/`` folder (claude, codex, devin);
* a distribution exposing an entry point in the group ``afd.detectors``;
* a single ``*.py`` file in ``plugins_dir`` (default
  ``$XDG_CONFIG_HOME/afd/plugins``).

Later registrations take precedence: a third-party plugin that provides an
agent a built-in also provides overrides the built-in for that agent.

Value types (``AgentSpec``, ``Clock``, ``Detection``, ``Event``,
``Notice``, ``AgentProcess``, ``WitnessVerdict``, ``UsageReading``) live in
``afd.model``; ``afd.kit.text`` and ``afd.kit.resettime`` hold helpers a detector may
use (normalising rows, resolving zones, reading reset clauses).
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import pluggy

from afd import PROJECT
from afd.model import AgentProcess, AgentSpec, Clock, Detection, Event, Notice, UsageReading, WitnessVerdict

hookspec = pluggy.HookspecMarker(PROJECT)


@hookspec
def afd_agents() -> list[AgentSpec]:
    """Return the agents this plugin knows.

    An ``AgentSpec`` says everything that differs per agent; afd's core
    never names an agent. Besides how to recognise it (``executables``,
    ``argv_patterns``) and read its screen (``chrome``, ``busy``, and
    ``input_rows`` with ``input_placeholders``: where its input row is, so
    afd never types over a person's text and sees its own text land;
    ``paste_markers``: the placeholder it draws there for a folded paste):
    ``command`` and ``resume_args`` start it (a user's ``[agents.NAME]``
    overrides each; one function in ``afd.act.launch`` builds every launch
    from them), ``prompt_delivery`` says whether its first prompt is an
    argument or typed, and ``turn_outlives_pane`` marks an agent whose turn
    goes on in a daemon after its TUI stops: a handoff then waits for the
    turn to end. A descendant process in a session of its own (such a
    daemon) is never signalled by a swap.

    Called once when plugins are loaded. Every plugin's list is collected;
    when two plugins name the same agent, the one registered later (a
    third-party plugin over a built-in) wins and ``afd plugins`` shows the
    override.
    """


@hookspec(firstresult=True)
def afd_detect(
    agent: str, lines: list[str], clock: Clock, pattern: re.Pattern[str] | None
) -> Detection | None:
    """Find a usage-limit banner in one capture of a pane running ``agent``.

    ``lines`` are the pane's screen rows, oldest first, ANSI escapes
    stripped and text folded by ``afd.kit.text.normalise_row`` (curly quotes to
    ``'``, ``∙`` to ``·``, non-breaking spaces to spaces).

    ``clock`` is the only source of time: a detector never reads the system
    clock. Reset times are returned as aware UTC datetimes.

    ``pattern`` is the user's ``[limit_patterns]`` override for this agent,
    or None. When given, the plugin must use it instead of its own banner
    regex (it keeps its own reset parsing).

    Return None for an agent the plugin does not know, or when there is no
    banner. When several banners are on screen, return the lowest one.
    First non-None result wins, in pluggy's order: ``tryfirst`` impls, then
    later-registered plugins before earlier ones (so a plugin that overrides
    a built-in's agent comes before it), then ``trylast``; hook wrappers run
    around the call. A plugin whose agent was overridden is not asked for
    that agent. A detector that raises, or returns anything but a valid
    ``Detection`` (rows within ``lines``, an aware ``reset_at``), is
    isolated: it counts as no detection, the next one is asked, and the
    error is logged once.

    Detection is pure: it must not touch tmux, files or the network. The
    tail and stability gates are applied by afd, not by the plugin.

    A detector that knows where the agent's composer starts sets
    ``Detection.chrome_row``: every row from there down is UI, and the gates
    count output only above it.

    Whether a person must act (``Detection.needs_human``) follows from what
    the wall says, never from its ``kind`` (``afd.model.person_must_act``):
    a wall that names a reset (``reset_at``; or ``reset_unstated=True`` for
    a plan window that says "try again later" or whose time is unreadable)
    lifts at that reset, whatever it is called — a spend, org or model cap
    included. A wall that names none but offers another model
    (``offers_other_model=True``) is the user's call: not ``needs_human``,
    and never resumed unattended. Any other wall that names no reset needs
    a person (a limit raised, credits added, an admin or owner asked). A
    detector sets both facts; left at their defaults, a wall without
    ``reset_at`` counts as one only a person lifts.
    ``kind`` names the family for people and logs (``claude.spend-cap``,
    ``claude.org-cap``, ``codex.usage-limit``, …).
    """


@hookspec
def afd_event(event: Event, notice: Notice) -> None:
    """Called for every event after it is stored, to tell someone about it.

    ``notice`` is the event told for a person (title, one sentence, the
    session's location in the user's zone, agent, host, priority) and the
    JSON ``payload`` afd's own webhook sends; an implementation may take
    ``event`` alone (pluggy passes only the arguments it names).

    Every implementation, afd's built-in notifiers included, runs on one
    notifier worker thread, never in the poll loop: a slow one delays the
    other implementations' events, never detection, actions or the control
    socket. Events reach it in the order they were stored; the queue is
    bounded, and events that overflow it are dropped (logged). It must not
    touch afd's store or tmux. Events whose kind starts with ``notify.``
    (afd's own reports about notifying) are never delivered, so a failing
    notifier cannot feed itself. An exception is logged once per plugin and
    kind of error and never stops the worker. Nothing is delivered again
    after the daemon restarts.
    """


@hookspec(firstresult=True)
def afd_witness(
    agent: str, process: AgentProcess, since: datetime | None, until: datetime, record: Path | None
) -> WitnessVerdict | None:
    """Read ``agent``'s own session records: does the agent itself say it is at its limit?

    A second witness beside the pane. Called by the supervisor for an idle
    pane of ``agent`` (at most once a poll; cache file reads by size and
    mtime), and by ``afd detect --record``. ``process`` is the agent's
    process in the pane (pid, cwd, start time; fields are None when not
    known). Only records written between ``since`` and ``until`` are
    evidence: the supervisor passes the process's start (records from
    before it belong to an earlier run of a resumed conversation) and the
    judging instant; ``afd detect --record`` passes None and ``--now``.
    ``record`` is a file to read instead of looking one up (``afd detect
    --record FILE``), else None.

    Return a ``WitnessVerdict``: ``LIMITED`` (with the reset instant and
    window kind when the record states them) when the latest wall in that
    window was not followed by a continuation; ``NOT_LIMITED`` when the
    conversation went on after it, or with no wall at all; ``UNKNOWN``
    otherwise (no file, unreadable, stale, ambiguous) — and when a prompt
    was recorded after the latest wall (a continuation afd typed, or the
    person's own) that the agent has not answered yet: that wall was
    answered, and whether the plan had room shows only in what comes next
    (an answer, or a new rejection). ``afd.kit.recordverdict.verdict_of``
    reads a timeline by these rules. Read only a bounded
    tail of a file, never its whole history. Return None for an agent the
    plugin does not know. First non-None result wins, in the order of
    ``afd_detect`` (a plugin whose agent was overridden is not asked;
    hook wrappers run around the call). A witness that raises counts as
    UNKNOWN and is logged once.
    """


@hookspec(firstresult=True)
def afd_usage(agent: str, process: AgentProcess, until: datetime) -> UsageReading | None:
    """Read ``agent``'s own records for what it last reported of its account's usage, before any wall.

    Called by the supervisor for every live session of ``agent``, idle or
    working (the witness is asked only of an idle pane, which is too late
    for usage before the wall), at most once per session every
    ``USAGE_READ_EVERY`` seconds; cache file reads by size and mtime, as a
    witness does (``afd.kit.recordtail``). ``process`` is the agent's process
    in the pane, as for ``afd_witness``; ``until`` the judging instant (a
    record written after it is not read as evidence).

    Return a ``UsageReading``: the windows of the agent's latest report,
    each named by its length (``five_hour``, ``seven_day``, ``<n>m``), with
    the limit it belongs to (``limit_id``) when the agent names several, and
    each window's own ``observed_at`` when reports of different limits came
    at different times. ``at`` is when the newest of them was written. A
    limit reported with null windows goes in ``unmeasured``, never as 0 %.
    Return None when the records say nothing of usage, and for an agent the
    plugin does not know. First non-None result wins, in the order of
    ``afd_detect``. A reader that raises counts as no reading and is logged
    once. The account the figures belong to is the session's: afd tells it,
    the plugin never does.
    """
