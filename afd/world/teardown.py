"""Stopping an agent's whole process tree, and confirming it is gone.

A swap may start the next agent only once the old one and everything it
started are gone: two agents writing one worktree is the one failure a
retry cannot undo (DESIGN rule 4, seed §4.5). So stopping is three steps,
each its own call so the poll loop never blocks on them: SIGTERM to the
agent's process group, SIGKILL to that group after a bounded wait, and a
*confirmation* that every process of the tree is gone. The outcome is
three-valued; only GONE lets a swap go on.

What belongs to the agent: its process and every descendant in the same
session (sid). A descendant that made a session of its own is a daemon by
its own choice (Codex's `codex app-server` outlives the TUI and serves other
TUIs too); it is never signalled, never waited for, and is reported.
"""

from __future__ import annotations

import enum
import os
import signal
from collections.abc import Iterable
from dataclasses import dataclass

import psutil


class Gone(enum.Enum):
    GONE = "gone"  # every process of the tree has exited (a zombie counts)
    ALIVE = "alive"  # at least one is still running
    UNKNOWN = "unknown"  # could not tell (no permission to look); never treated as gone


@dataclass(frozen=True, slots=True)
class Proc:
    """A process named so that a reused pid is not mistaken for it."""

    pid: int
    # None: the start time was not known; the pid alone then names it, and a
    # live process with that pid is never taken for gone (DESIGN rule 4).
    create_time: float | None

    def as_list(self) -> list:
        return [self.pid, self.create_time]


@dataclass(frozen=True, slots=True)
class Tree:
    """The agent's processes at one look, and the detached ones left alone."""

    pgid: int | None
    procs: tuple[Proc, ...]
    detached: tuple[Proc, ...] = ()


def _proc(p: psutil.Process) -> Proc | None:
    try:
        return Proc(p.pid, p.create_time())
    except psutil.Error:
        return None


def look(agent: Proc, known: Iterable[Proc] = ()) -> Tree:
    """The agent and its descendants in its session, plus any already `known` still alive."""
    root: psutil.Process | None
    try:
        root = psutil.Process(agent.pid)
        if agent.create_time is not None and root.create_time() != agent.create_time:
            root = None
    except psutil.Error:
        root = None
    procs: dict[int, Proc] = {}
    detached: list[Proc] = []
    pgid = None
    if root is not None:
        try:
            sid, pgid = os.getsid(root.pid), os.getpgid(root.pid)
            family = [root, *root.children(recursive=True)]
        except (OSError, psutil.Error):
            family, sid = [root], None
        for p in family:
            fact = _proc(p)
            if fact is None:
                continue
            try:
                own_session = sid is not None and os.getsid(p.pid) != sid
            except OSError:
                continue  # exited while we looked
            if own_session:
                detached.append(fact)
            else:
                procs[fact.pid] = fact
    for fact in known:
        procs.setdefault(fact.pid, fact)
    return Tree(pgid, tuple(procs.values()), tuple(detached))


def signal_group(pgid: int | None, sig: int) -> bool:
    """Send `sig` to the process group; False when the group is already empty."""
    if pgid is None or pgid <= 1 or pgid == os.getpgid(0):
        return False  # never our own group, never init's
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    return True


def state_of(proc: Proc) -> Gone:
    try:
        p = psutil.Process(proc.pid)
        if proc.create_time is not None and p.create_time() != proc.create_time:
            return Gone.GONE  # the pid now names another process
        return Gone.GONE if p.status() in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD) else Gone.ALIVE
    except psutil.NoSuchProcess:
        return Gone.GONE
    except psutil.Error:
        return Gone.UNKNOWN


def confirm_gone(procs: Iterable[Proc]) -> tuple[Gone, tuple[Proc, ...]]:
    """GONE only when every process is gone; else ALIVE (or UNKNOWN) with the ones not known gone."""
    states = {proc: state_of(proc) for proc in procs}
    left = tuple(p for p, found in states.items() if found is not Gone.GONE)
    if not left:
        return Gone.GONE, ()
    return (Gone.ALIVE if Gone.ALIVE in states.values() else Gone.UNKNOWN), left


TERM, KILL = signal.SIGTERM, signal.SIGKILL
