"""Bind, the poll's second stage: each listed pane to the session that holds it, or adopted as a new one.

A pane's agent is identified from its processes (through the identity
cache: re-walked only when the pane's probe changes) and the account it runs
on is told from the environment read with that identity. What the sessions
rulebook makes of each pane comes out as transitions, in order, for the
supervisor to write; nothing here writes the store.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime

from afd.config.settings import Config
from afd.judge import accounts, sessions
from afd.model import AgentSpec, Identity, IdentityKind, SessionState
from afd.observe import account_env, identity
from afd.observe.identity_cache import IdentityCache, rules_key
from afd.record.naming import is_ignored, unique_name
from afd.record.types import SessionRecord
from afd.world import git, tmux

# A live session this poll: its record (as the rules left it), its pane, its pane's identity.
Live = dict[str, tuple[SessionRecord, tmux.PaneInfo, Identity]]
# One transition to write: the record before it (None: a session made by it) and what the rules decided.
Step = tuple[SessionRecord | None, sessions.Transition]


@dataclass
class AccountsTold:
    """Accounts told this poll and the last, by what they were told from: telling resolves paths.

    Good for one config and one set of agents (`under`): a reload tells every account again.
    """

    last: dict = field(default_factory=dict)
    this: dict = field(default_factory=dict)
    under: tuple = ()

    def begin_poll(self, config: Config, agents: Mapping[str, AgentSpec]) -> None:
        self.last, self.this = self.this, {}
        if len(self.under) != 2 or self.under[0] is not config or self.under[1] is not agents:
            self.last, self.under = {}, (config, agents)

    def account(self, agent: str | None, ident: Identity, agents: Mapping[str, AgentSpec], config: Config) -> str | None:
        """The account `agent` runs on in this pane, from the environment read with its identity."""
        if agent is None or ident.pid is None:
            return None
        spec = agents.get(agent)
        key = (agent, ident.pid, ident.create_time, ident.env)
        if key in self.last:
            name = self.last[key]
        elif spec is None:
            name = accounts.UNKNOWN
        else:
            name = accounts.account_of(agent, accounts.vars_of(spec), ident.env, config.accounts.values(),
                                       home=os.path.expanduser("~"), resolve=os.path.realpath)
        self.this[key] = name
        return name


@dataclass(frozen=True, slots=True)
class Bound:
    live: Live
    steps: tuple[Step, ...]  # in the order the rules made them


def bind(inv: tmux.Inventory, records: Iterable[SessionRecord], *, identities: IdentityCache, agents: Mapping[str, AgentSpec],
         config: Config, told: AccountsTold, acting: frozenset[str], read_env: account_env.EnvReader,
         server: tmux.ServerRef, now: datetime) -> Bound:
    """The sessions of an answered listing: each pane seen by its session's rules, adopted, or closed."""
    named = {r.name: r for r in records}
    held_by = {r.pane_id: r for r in named.values() if r.state != SessionState.GONE and r.server_socket == inv.socket_path}
    overrides = {n: o.command for n, o in config.agents.items() if o.command}
    live: Live = {}
    steps: list[Step] = []

    def ruled(rec: SessionRecord, seen: sessions.Observation) -> SessionRecord:
        t = sessions.transition(rec, seen, now)
        steps.append((rec, t))
        return t.record

    identities.begin_poll(rules_key(agents, overrides))
    told.begin_poll(config, agents)
    for pane in inv.panes:
        held = held_by.get(pane.pane_id)
        procs, ident = identities.lookup(
            pane,
            # The account is read with the identity, not every poll.
            lambda ps: account_env.with_account_env(identity.identify(ps, agents, overrides), agents, read_env),
            (held.agent_pid, held.agent_started_at) if held is not None else None,
        )
        rec = held_by.pop(pane.pane_id, None)
        if rec is not None and rec.server_pid is None:
            # Created while tmux could not say which server pid it was: this is the first answer.
            rec = ruled(rec, sessions.ServerNamed(inv.server_pid))
        if rec is not None and rec.server_pid != inv.server_pid:
            # Pane ids restart at %0 on a new server: same id, unrelated pane.
            ruled(rec, sessions.ServerReplaced(rec.server_pid, inv.server_pid))
            rec = None
        if rec is not None and rec.name in acting:
            live[rec.name] = (rec, pane, ident)  # a handoff owns this pane until it settles
            continue
        if rec is not None:
            own_alive = rec.agent_pid is not None and any(
                p.pid == rec.agent_pid and p.create_time == rec.agent_started_at and p.alive for p in procs
            )
            agent = ident.agent if ident.kind is IdentityKind.KNOWN else rec.agent
            rec = ruled(rec, sessions.PaneSeen(ident, own_alive, pane.dead, pane.location,
                                               told.account(agent, ident, agents, config)))
        elif config.watch_all_panes and ident.kind is IdentityKind.KNOWN and not is_ignored(pane.location, config.watch_ignore):
            t = adoption(pane, ident, inv, set(named), now, agents=agents, server=server,
                         account_of=functools.partial(told.account, ident=ident, agents=agents, config=config))
            steps.append((None, t))
            rec = named[t.record.name] = t.record
        if rec is not None:
            live[rec.name] = (rec, pane, ident)

    for rec in held_by.values():
        ruled(rec, sessions.PaneClosed("the pane was closed"))
    identities.retain(p.pane_id for p in inv.panes)
    return Bound(live, tuple(steps))


def adoption(pane: tmux.PaneInfo, ident: Identity, inv: tmux.Inventory, taken, now: datetime, *,
             agents: Mapping[str, AgentSpec], server: tmux.ServerRef, account_of: Callable[[str], str | None],
             name: str | None = None, mission: str | None = None, vouched_agent: str | None = None) -> sessions.Transition:
    """A session made of a pane: found by the poll (`watch_all_panes`) or asked for (`sessions adopt`)."""
    agent = ident.agent if ident.kind is IdentityKind.KNOWN else vouched_agent
    if agent is None:
        raise ValueError(f"pane {pane.pane_id}: no agent to adopt it as (none identified, none vouched for)")
    spec = agents[agent]
    if pane.cwd is None or pane.start_command is None:
        # Gone since the listing: adopted without a mission or worktree, as a pane tmux said nothing about.
        pane = tmux.pane_details(server, pane) or replace(pane, start_command="", cwd="")
    start_command, cwd = pane.start_command or "", pane.cwd or ""
    if mission is None and ident.argv:
        mission = identity.mission_from_argv(ident.argv, spec) or identity.mission_from_start_command(start_command, spec)
    elif mission is None:
        mission = identity.mission_from_start_command(start_command, spec) if ident.kind is IdentityKind.KNOWN else None
    return sessions.adopted(
        name=name or unique_name(pane.location, taken),
        pane_id=pane.pane_id,
        server_socket=inv.socket_path or "",  # an answered listing always names its socket
        server_pid=inv.server_pid,
        identity=ident,
        mission=(mission or "").strip() or None,
        worktree=cwd or None,
        branch=git.branch_of(cwd),
        location=pane.location,
        now=now,
        vouched_agent=vouched_agent,
        account=account_of(agent),
    )
