"""Identity per pane, re-established only when something that could change it changed.

Walking a pane's process tree means reading every process on the machine
through psutil (about a thousand /proc reads a poll at 100 panes), though an
agent that sits at its prompt does not change from one second to the next.
So each pane keeps what it looked like when last walked -- its pid, the
terminal's foreground process group (field 8 of /proc/<pane_pid>/stat), the
group leader's start time and argv, `pane_current_command`, and the start
times of the processes its identity names -- and a poll reads just those
(two or three small /proc files a pane). The tree is walked again only when
one differs, when a named process is gone (a zombie counts as gone) or has
another start time (its pid was reused), or every REWALK_EVERY seconds in
any case.

What this sees at once: an agent exiting, a new agent started in the pane
(the foreground group changes), a wrapper exec-ing the agent (same pid, new
argv), a respawned pane. What it deliberately does not chase: children of
the foreground process (an agent's own `bash` or `git`; they must not look
like a new agent, and identity prefers the process nearest the pane's root
anyway). A wrapper that starts its agent as a child without exec is seen at
the next walk; that is the price of not scanning /proc every poll.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from afd import identity
from afd.identity import Identity, ProcessFact
from afd.tmux import PaneInfo

# The safety net: whatever the probes say, each pane's tree is walked this often.
REWALK_EVERY = 30.0

_GONE_STATES = frozenset("ZXx")  # zombie, dead: the process has exited


@dataclass(frozen=True, slots=True)
class ProcStat:
    """The few fields of /proc/<pid>/stat a probe needs."""

    state: str  # field 3: R, S, D, T, Z, X, ...
    tpgid: int  # field 8: the foreground process group of the process's terminal
    start_ticks: int  # field 22: start time in clock ticks since boot; with the pid it names one process


class ProcReader(Protocol):
    def stat(self, pid: int) -> ProcStat | None: ...

    def argv(self, pid: int) -> tuple[str, ...] | None: ...


class LinuxProc:
    """Reads /proc directly: one open and read per call, no psutil objects."""

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


@dataclass(frozen=True, slots=True)
class PaneProbe:
    """What a pane looks like from the outside; a different probe means its tree must be walked again."""

    pane_pid: int
    pane_started: int | None
    dead: bool
    current_command: str
    foreground: int | None  # tpgid of the pane's terminal
    leader_started: int | None  # the foreground group leader's start ticks
    leader_argv: tuple[str, ...] | None  # an exec (a wrapper becoming its agent) changes this, not the pid
    bound: tuple[int | None, float | None] | None  # the session's agent (pid, start) the walk was made for


@dataclass(frozen=True, slots=True)
class Seen:
    probe: PaneProbe
    processes: tuple[ProcessFact, ...]
    identity: Identity
    watched: tuple[tuple[int, int], ...]  # (pid, start ticks) of processes that must still run
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
        self.walks = 0  # pane walks since start: what the tests and the benchmark count
        self.tree_scans = 0  # full /proc scans (at most one a poll)

    def begin_poll(self, rules: object = None) -> None:
        """Start a poll; `rules` (the specs and overrides identity is judged by) changing drops every entry."""
        self._stats = {}
        self._tree = None
        if rules != self._rules:
            self._seen.clear()
            self._rules = rules

    def clear(self) -> None:
        self._seen.clear()

    def retain(self, pane_ids: Iterable[str]) -> None:
        keep = set(pane_ids)
        for pane_id in [p for p in self._seen if p not in keep]:
            del self._seen[pane_id]

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
        probe = self._probe(pane, bound)
        seen = self._seen.get(pane.pane_id)
        if seen is not None and seen.probe == probe and self._still_running(seen) and not self._due(seen):
            return list(seen.processes), seen.identity
        processes = [] if pane.dead else self._walk(pane.pane_pid)
        ident = identify(processes)
        watched = self._watched(processes, ident, bound)
        self._seen[pane.pane_id] = Seen(probe, tuple(processes), ident, watched, self._monotonic())
        self.walks += 1
        return processes, ident

    # --- probes -------------------------------------------------------------

    def _stat(self, pid: int) -> ProcStat | None:
        if pid not in self._stats:
            self._stats[pid] = self._proc.stat(pid)
        return self._stats[pid]

    def _probe(self, pane: PaneInfo, bound: tuple[int | None, float | None] | None) -> PaneProbe:
        if pane.dead or pane.pane_pid <= 0:
            return PaneProbe(pane.pane_pid, None, pane.dead, pane.current_command, None, None, None, bound)
        own = self._stat(pane.pane_pid)
        tpgid = own.tpgid if own is not None and own.tpgid > 0 else None
        leader = self._stat(tpgid) if tpgid is not None else None
        argv = self._proc.argv(tpgid) if leader is not None else None
        return PaneProbe(
            pane.pane_pid,
            own.start_ticks if own is not None else None,
            pane.dead,
            pane.current_command,
            tpgid,
            leader.start_ticks if leader is not None else None,
            argv,
            bound,
        )

    def _still_running(self, seen: Seen) -> bool:
        for pid, ticks in seen.watched:
            st = self._stat(pid)
            if st is None or st.start_ticks != ticks or st.state in _GONE_STATES:
                return False
        return True

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

    def _watched(
        self, processes: Sequence[ProcessFact], ident: Identity, bound: tuple[int | None, float | None] | None
    ) -> tuple[tuple[int, int], ...]:
        named = {(ident.pid, ident.create_time)} if ident.pid is not None else set()
        if bound is not None and bound[0] is not None:
            named.add(bound)
        watched = []
        for fact in processes:
            if (fact.pid, fact.create_time) in named and fact.alive:
                st = self._stat(fact.pid)
                if st is not None:
                    watched.append((fact.pid, st.start_ticks))
        return tuple(sorted(watched))


def rules_key(specs: Mapping[str, object], overrides: Mapping[str, Sequence[str]]) -> tuple:
    """What identity is judged by: when it changes (a reload), every cached identity is stale."""
    return (tuple(specs.items()), tuple((name, tuple(cmd)) for name, cmd in sorted(overrides.items())))
