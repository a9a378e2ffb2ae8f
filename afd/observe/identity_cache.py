"""Identity per pane, re-established only when something that could change it changed.

Walking a pane's process tree means reading every process on the machine
through psutil (about a thousand /proc reads a poll at 100 panes), though an
agent that sits at its prompt does not change from one second to the next.
So each pane keeps what it looked like when last walked, and the tree is
walked again only when that differs, when a process its identity names has
exited (a zombie counts as gone; a reused pid is another process), or every
REWALK_EVERY seconds in any case.

What a poll compares costs next to nothing for a pane running a known
agent: tmux's own `pane_pid`, `pane_dead` and `pane_current_command`
(argv[0] of the terminal's foreground process group, which tmux reads
anyway), and one `poll()` over pidfds held on the named processes, which
become readable when their process exits and can never mean a later
process with the same pid. Reading /proc for every pane each poll would
cost about as much as the whole `list-panes` call. A pane without a known
agent (a shell, a wrapper, `vim`) is where an agent may appear, so it is
also probed through /proc: the foreground process group (field 8 of
/proc/<pane_pid>/stat), that group leader's start time and its argv.

What this sees at once: an agent exiting, a new agent started in the pane
(the foreground group changes), a wrapper exec-ing the agent (same pid, new
argv), a respawned pane, a reused pid. What it deliberately does not chase: children of
the foreground process (an agent's own `bash` or `git`; they must not look
like a new agent, and identity prefers the process nearest the pane's root
anyway). A wrapper that starts its agent as a child without exec is seen at
the next walk; that is the price of not scanning /proc every poll.
"""

from __future__ import annotations

import os
import select
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from afd.model import Identity, IdentityKind
from afd.observe import identity
from afd.observe.identity import ProcessFact
from afd.world.tmux import PaneInfo

# The safety net: whatever the probes say, each pane's tree is walked this often.
REWALK_EVERY = 30.0

_GONE_STATES = frozenset("ZXx")  # zombie, dead: the process has exited


@dataclass(frozen=True, slots=True)
class ProcStat:
    """The few fields of /proc/<pid>/stat a probe needs."""

    state: str  # field 3: R, S, D, T, Z, X, ...
    tpgid: int  # field 8: the foreground process group of the process's terminal
    start_ticks: int  # field 22: start time in clock ticks since boot; with the pid it names one process


@dataclass(frozen=True, slots=True, eq=False)
class Held:
    """One process being watched for its exit: a pidfd, or (without one) its pid and start."""

    pid: int
    start_ticks: int
    fd: int | None


class ProcReader(Protocol):
    def stat(self, pid: int) -> ProcStat | None: ...

    def argv(self, pid: int) -> tuple[str, ...] | None: ...

    def hold(self, pid: int, start_ticks: int) -> Held | None:
        """Watch this process (this pid with this start) for its exit; None when it is not running now."""

    def ended(self, held: Sequence[Held]) -> set[Held]:
        """Those of `held` whose process has exited."""

    def release(self, held: Held) -> None: ...


class LinuxProc:
    """Reads /proc directly (no psutil objects) and watches exits through pidfds."""

    def stat(self, pid: int) -> ProcStat | None:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                raw = f.read()
        except OSError:
            return None
        # comm (field 2) may hold spaces and parentheses; fields resume after the last ")".
        fields = raw[raw.rfind(b")") + 2 :].split()
        try:
            return ProcStat(fields[0].decode("ascii", "replace"), int(fields[5]), int(fields[19]))
        except (IndexError, ValueError):
            return None

    def argv(self, pid: int) -> tuple[str, ...] | None:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                raw = f.read()
        except OSError:
            return None
        words = raw.decode("utf-8", "replace").split("\0")
        if words and words[-1] == "":
            words.pop()  # argv ends in NUL, unless a program rewrote it (process.title)
        return tuple(words)

    def hold(self, pid: int, start_ticks: int) -> Held | None:
        try:
            fd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            fd = None  # no pidfds here (old kernel, out of fds): fall back to reading its stat each poll
        # The pid may have been reused between the walk and the open: the start tells.
        st = self.stat(pid)
        if st is None or st.start_ticks != start_ticks or st.state in _GONE_STATES:
            if fd is not None:
                os.close(fd)
            return None
        return Held(pid, start_ticks, fd)

    def ended(self, held: Sequence[Held]) -> set[Held]:
        gone = set()
        by_fd = {h.fd: h for h in held if h.fd is not None}
        if by_fd:
            poller = select.poll()
            for fd in by_fd:
                poller.register(fd, select.POLLIN)
            gone |= {by_fd[fd] for fd, _ in poller.poll(0)}  # a pidfd is readable once its process has exited
        for h in held:
            if h.fd is None:
                st = self.stat(h.pid)
                if st is None or st.start_ticks != h.start_ticks or st.state in _GONE_STATES:
                    gone.add(h)
        return gone

    def release(self, held: Held) -> None:
        if held.fd is not None:
            os.close(held.fd)


@dataclass(frozen=True, slots=True)
class PaneProbe:
    """What a pane looks like from the outside; a different probe means its tree must be walked again."""

    pane_pid: int
    dead: bool
    current_command: str
    bound: tuple[int | None, float | None] | None  # the session's agent (pid, start) the walk was made for
    # Read from /proc only for a pane without a known agent (None otherwise):
    pane_started: int | None = None
    foreground: int | None = None  # tpgid of the pane's terminal
    leader_started: int | None = None  # the foreground group leader's start ticks
    leader_argv: tuple[str, ...] | None = None  # an exec (a wrapper becoming its agent) changes this, not the pid


@dataclass(frozen=True, slots=True)
class Seen:
    probe: PaneProbe
    processes: tuple[ProcessFact, ...]
    identity: Identity
    held: tuple[Held, ...]  # the processes that must still run for this to hold
    walked_at: float


Walker = Callable[[int], list[ProcessFact]]


class IdentityCache:
    """The last walk of each pane, and the probe that says whether it still holds.

    Call `begin_poll` once a poll, then `lookup` per pane, then `retain`
    with the panes listed, so closed panes are forgotten.
    """

    def __init__(
        self,
        *,
        proc: ProcReader | None = None,
        walker: Walker | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        rewalk_every: float = REWALK_EVERY,
    ) -> None:
        self._proc = proc or LinuxProc()
        self._walker = walker
        self._monotonic = monotonic
        self.rewalk_every = rewalk_every
        self._seen: dict[str, Seen] = {}
        self._rules: object = None
        self._stats: dict[int, ProcStat | None] = {}
        self._tree: dict[int, list[int]] | None = None
        self._ended: set[Held] | None = None
        self.walks = 0  # pane walks since start: what the tests and the benchmark count
        self.tree_scans = 0  # full /proc scans (at most one a poll)

    def begin_poll(self, rules: object = None) -> None:
        """Start a poll; `rules` (the specs and overrides identity is judged by) changing drops every entry."""
        self._stats = {}
        self._tree = None
        self._ended = None
        if rules != self._rules:
            self.clear()
            self._rules = rules

    def clear(self) -> None:
        for pane_id in list(self._seen):
            self._forget(pane_id)

    def retain(self, pane_ids: Iterable[str]) -> None:
        keep = set(pane_ids)
        for pane_id in [p for p in self._seen if p not in keep]:
            self._forget(pane_id)

    def _forget(self, pane_id: str) -> None:
        for held in self._seen.pop(pane_id).held:
            self._proc.release(held)

    def lookup(
        self,
        pane: PaneInfo,
        identify: Callable[[Sequence[ProcessFact]], Identity],
        bound: tuple[int | None, float | None] | None = None,
    ) -> tuple[list[ProcessFact], Identity]:
        """The pane's processes (as of the last walk) and its identity (as of now).

        `bound` is the pane's session's agent (pid, create_time), if any: a
        walk watches that process too, so its exit is noticed at once.
        """
        seen = self._seen.get(pane.pane_id)
        known = seen is not None and seen.identity.kind is IdentityKind.KNOWN
        holds = seen is not None and seen.probe == self._probe(pane, bound, known) and self._still_running(seen)
        if holds and seen is not None and not self._due(seen):
            return list(seen.processes), seen.identity
        processes = [] if pane.dead else self._walk(pane.pane_pid)
        self.walks += 1
        if holds and seen is not None and tuple(processes) == seen.processes:
            # The safety walk found every process as it was: the identity made of them, the
            # account read from the same processes and the pidfds held on them all stand.
            self._seen[pane.pane_id] = replace(seen, walked_at=self._monotonic())
            return processes, seen.identity
        if seen is not None:
            self._forget(pane.pane_id)
        ident = identify(processes)
        probe = self._probe(pane, bound, ident.kind is IdentityKind.KNOWN)
        self._seen[pane.pane_id] = Seen(probe, tuple(processes), ident, self._hold(processes, ident, bound), self._monotonic())
        return processes, ident

    # --- probes -------------------------------------------------------------

    def _stat(self, pid: int) -> ProcStat | None:
        if pid not in self._stats:
            self._stats[pid] = self._proc.stat(pid)
        return self._stats[pid]

    def _probe(self, pane: PaneInfo, bound: tuple[int | None, float | None] | None, known: bool) -> PaneProbe:
        tmux_facts = PaneProbe(pane.pane_pid, pane.dead, pane.current_command, bound)
        if known or pane.dead or pane.pane_pid <= 0:
            return tmux_facts  # a known agent's exit or exec shows in its pidfd or in pane_current_command
        own = self._stat(pane.pane_pid)
        tpgid = own.tpgid if own is not None and own.tpgid > 0 else None
        leader = self._stat(tpgid) if tpgid is not None else None
        return PaneProbe(
            pane.pane_pid,
            pane.dead,
            pane.current_command,
            bound,
            own.start_ticks if own is not None else None,
            tpgid,
            leader.start_ticks if leader is not None else None,
            self._proc.argv(tpgid) if leader is not None and tpgid is not None else None,
        )

    def _still_running(self, seen: Seen) -> bool:
        if self._ended is None:
            # One look at every held process of every pane, once a poll.
            self._ended = self._proc.ended([h for s in self._seen.values() for h in s.held])
        return not any(h in self._ended for h in seen.held)

    def _due(self, seen: Seen) -> bool:
        return self._monotonic() - seen.walked_at >= self.rewalk_every

    # --- walks --------------------------------------------------------------

    def _walk(self, pane_pid: int) -> list[ProcessFact]:
        if self._walker is not None:
            return self._walker(pane_pid)
        if self._tree is None:
            # One scan of /proc serves every pane walked in this poll.
            self._tree = identity.process_tree()
            self.tree_scans += 1
        return identity.pane_processes(pane_pid, self._tree)

    def _hold(
        self, processes: Sequence[ProcessFact], ident: Identity, bound: tuple[int | None, float | None] | None
    ) -> tuple[Held, ...]:
        named = {(ident.pid, ident.create_time)} if ident.pid is not None else set()
        if bound is not None and bound[0] is not None:
            named.add((bound[0], bound[1]))
        held: list[Held] = []
        for fact in processes:
            if (fact.pid, fact.create_time) in named and fact.alive:
                st = self._stat(fact.pid)
                h = self._proc.hold(fact.pid, st.start_ticks) if st is not None else None
                if h is None:
                    # Gone already, or its pid reused since the walk: hold nothing, and walk again next poll.
                    for other in held:
                        self._proc.release(other)
                    return (Held(fact.pid, -1, None),)
                held.append(h)
        return tuple(held)


def rules_key(specs: Mapping[str, object], overrides: Mapping[str, Sequence[str]]) -> tuple:
    """What identity is judged by: when it changes (a reload), every cached identity is stale."""
    return (tuple(specs.items()), tuple((name, tuple(cmd)) for name, cmd in sorted(overrides.items())))
