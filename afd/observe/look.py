"""Look, the poll's third stage: capture the panes due a look, detect, remember banners, ask the gates and the witness.

Which panes are captured is the capture cadence's (afd/observe/watch.py):
a pane whose fingerprint did not move is not captured again until its
backstop. Each fresh capture becomes one `sessions.Observation` for the
rulebook: the detectors' finding, the banner's first sighting (the banner
memory, kept in the store so a restart does not move a reset), the gates'
verdict (afd/judge/gates.py) and the agent's own records' verdict (the
second witness) for an idle pane.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import psutil

from afd.config.settings import Config, compiled_limit_patterns
from afd.judge import accounts, sessions
from afd.judge.gates import chrome_of, judge
from afd.kit.resettime import local_zone
from afd.kit.text import capture_rows
from afd.model import AgentProcess, AgentSpec, Clock, Detection, Identity, SessionState, WitnessState, WitnessVerdict
from afd.observe.bind import Live
from afd.observe.watch import PaneWatch, occurrence_key
from afd.record.types import SessionRecord
from afd.world import tmux

if TYPE_CHECKING:
    from afd.record.store import Store

LIMITED, EXITED, GONE, UNKNOWN = SessionState.LIMITED, SessionState.EXITED, SessionState.GONE, SessionState.UNKNOWN


class Plugins(Protocol):
    """What looking asks of the plugins (afd.pluginset.PluginSet, which sits above this folder)."""

    agents: dict[str, AgentSpec]

    def detect(self, agent: str, rows: list[str], clock: Clock, pattern: Any = None) -> Detection | None: ...

    def has_witness(self, agent: str) -> bool: ...

    def witness(self, agent: str, process: AgentProcess, since: datetime | None, until: datetime,
                record: Path | None = None) -> WitnessVerdict | None: ...


def due(live: Live, watches: dict[str, PaneWatch], *, acting: frozenset[str], config: Config, plugins: Plugins,
        mono: float) -> list[str]:
    """The sessions whose pane is captured this poll (a new watch is made for each session looked at)."""
    wanted = []
    for name, (rec, pane, _ident) in live.items():
        if rec.state in (EXITED, GONE) or rec.awaiting_since is not None or rec.agent not in plugins.agents or name in acting:
            continue  # no agent of its own runs there (yet) to capture
        watch = watches.setdefault(name, PaneWatch(keep=config.stability_polls))
        watch.keep = config.stability_polls
        # Looked at afresh, whatever the fingerprint says: a state tmux left unknown (it did not
        # answer), and a pane last judged under another config or other plugins (a reload).
        under = watch.detected_under
        stale = rec.state == UNKNOWN or (
            watch.text is not None and not (isinstance(under, tuple) and under[0] is config and under[1] is plugins)
        )
        if stale or watch.needs_capture(pane.fingerprint, mono, settled=rec.state == LIMITED):
            wanted.append(name)
    return wanted


def look(wanted: Sequence[str], live: Live, watches: dict[str, PaneWatch], *, server: tmux.ServerRef, server_pid: int | None,
         store: Store, config: Config, plugins: Plugins, mono: float, listed_at: float, now: datetime,
         ) -> Iterator[tuple[str, sessions.Observation]]:
    """What each wanted pane shows, as an observation for its session's rules; one chained capture for them all.

    Lazy, so that the caller writes each session's transition (and updates `live`) before the
    next is looked at: which directories two sessions share is read from `live` as it stands
    when a witness is first asked.
    """
    results = tmux.capture_panes(server, [live[n][1].pane_id for n in wanted])
    patterns = compiled_limit_patterns(config)
    clock = Clock(now=now, local_zone=local_zone())
    rules = (config, plugins)
    crowd: list[frozenset] = []  # worked out only if a witness is asked: an idle poll reads no /proc cwd links
    for name in wanted:
        rec, pane, ident = live[name]
        result = results.get(pane.pane_id)
        if result is None or result.presence is tmux.Presence.UNKNOWN:
            yield name, sessions.CaptureUnanswered(result.error if result is not None else None)
        elif result.presence is tmux.Presence.GONE:
            yield name, sessions.PaneClosed("the pane vanished during the poll")
        elif result.server_pid is not None and result.server_pid != server_pid:
            continue  # the server restarted between list and capture: judge nothing
        elif watches[name].settled_on(result.text or "", rules) and not (
            # The agent's records can go on while its screen stands still:
            # a limited pane with a witness is looked at on each safety capture.
            rec.state == LIMITED and plugins.has_witness(rec.agent or "")
        ):
            watches[name].refresh(pane.fingerprint, mono, listed_at)
        else:
            text = result.text or ""
            rows = capture_rows(text)
            agent = rec.agent
            assert agent is not None  # only a session of an agent some plugin knows is captured
            spec = plugins.agents[agent]
            watch = watches[name]
            found = watch.detections[-1] if watch.repeats(rows, rules) else plugins.detect(agent, rows, clock, patterns.get(agent))
            watch.detected_under, watch.text = rules, text
            chrome = chrome_of(spec, rows)
            idle = watch.record(rows, found, pane.fingerprint, mono, chrome, spec.volatile, listed_at)
            sighting = None if found is None else _banner_memory(store, name, occurrence_key(rows, found, chrome), found, now)
            verdict = record = None
            if idle:
                verdict = judge(agent, list(watch.captures), list(watch.detections), chrome, tail_lines=config.tail_lines,
                                stability_polls=config.stability_polls, contents=list(watch.contents))
                if not crowd and plugins.has_witness(agent):
                    crowd.append(crowded_dirs(((r.agent, r.account), process_cwd(r.agent_pid) or r.worktree)
                                              for r, _, _ in live.values() if r.state not in (EXITED, GONE)))
                record = witness(rec, ident, sighting.first_seen_at if sighting else None, now, plugins=plugins,
                                 crowded=crowd[0] if crowd else frozenset(), poll_interval=config.poll_interval)
            busy = sessions.seen_busy(rows, spec.busy, chrome, config.tail_lines)
            yield name, sessions.Looked(idle, found, sighting, verdict, busy, record)


def _banner_memory(store: Store, name: str, key: str, found: Detection, now: datetime) -> sessions.BannerSighting:
    stored = store.banner_first_seen(name, key)
    if stored is None:
        # Parsed once, against the instant it was first seen; re-parsing a
        # static "in 3 hours" every poll would push the reset away forever.
        store.record_banner(name, key, now, found.reset_at)
        return sessions.BannerSighting(now, found.reset_at)
    return sessions.BannerSighting(stored.first_seen_at, stored.reset_at)


# --- the second witness: the agent's own records ------------------------

def witness(rec: SessionRecord, ident: Identity, banner_seen_at: datetime | None, now: datetime, *, plugins: Plugins,
            crowded: frozenset, poll_interval: float) -> WitnessVerdict | None:
    """The agent's own records' verdict for an idle pane, or None when no plugin reads them.

    Asked at most once a poll; the plugins re-read a file only when its
    size or mtime changed. The records read are the session's account's
    (the transcript under its CLAUDE_CONFIG_DIR), as afd read its
    environment when it named the agent.
    """
    if rec.agent is None or not plugins.has_witness(rec.agent):
        return None
    process = agent_process(rec, ident)
    if process is None:
        # Its environment could not be read: the default account's records may be another's.
        return WitnessVerdict(WitnessState.UNKNOWN, "its environment could not be read, so which account's records "
                                                    "are its own is unknown")
    if ((rec.agent, rec.account), process.cwd) in crowded:
        # Records are found by directory and recency: with two of them at
        # work in one directory, the newest file may be the other one's.
        return WitnessVerdict(WitnessState.UNKNOWN, f"another {rec.agent} session works in {process.cwd}; whose records are whose is unknown")
    since = process.start_time
    if since is None:
        # Whose process this is was the user's word: only what it wrote
        # since the banner appeared (a poll before it was first seen) counts.
        since = (banner_seen_at or now) - timedelta(seconds=poll_interval + 1)
    return plugins.witness(rec.agent, process, since, now)


def agent_process(rec: SessionRecord, ident: Identity | None) -> AgentProcess | None:
    """The session's agent process as a plugin reading its records sees it; None when whose it is cannot be said."""
    env = ident.env if ident is not None and ident.pid is not None and ident.pid == rec.agent_pid else None
    if env is None and rec.account == accounts.UNKNOWN:
        return None
    start = datetime.fromtimestamp(rec.agent_started_at, timezone.utc) if rec.agent_started_at else None
    shown = None if env is None else (*env.selecting, *((("HOME", env.home),) if env.home else ()))
    return AgentProcess(pid=rec.agent_pid, cwd=process_cwd(rec.agent_pid) or rec.worktree, start_time=start,
                        account_env=shown)


def crowded_dirs(pairs) -> frozenset[tuple[object, str]]:
    """The (agent, directory) pairs given more than once."""
    seen: set[tuple[object, str]] = set()
    crowded: set[tuple[object, str]] = set()
    for pair in pairs:
        if pair[1]:
            (crowded if pair in seen else seen).add(pair)
    return frozenset(crowded)


def process_cwd(pid: int | None) -> str | None:
    """The agent's own working directory (where its records are filed), or None when it cannot be read."""
    if pid is None:
        return None
    try:
        return psutil.Process(pid).cwd()
    except psutil.Error:
        return None


def live_processes(live: Mapping[str, tuple[SessionRecord, tmux.PaneInfo, Identity]]):
    """Each live session's agent process, as `agent_process` sees it (for the usage stage)."""
    idents = {name: ident for name, (_rec, _pane, ident) in live.items()}
    return lambda rec: agent_process(rec, idents.get(rec.name))
