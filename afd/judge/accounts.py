"""Which account an agent process runs on, from the variables in its environment (pure).

A usage limit belongs to an account, not to a program: `claude` run with
`CLAUDE_CONFIG_DIR=~/.claude-work` spends another plan than a bare
`claude`. An agent's `AgentSpec` names the variables that select its
account (`account_env`), the default each one has (`account_defaults`), and
those that carry credentials (`credential_env`).

Every agent has a default account named after it: the agent run with none
of its account variables set, or set to their defaults. A configured
account (`[accounts.NAME]`) is the agent run with exactly its `env`. Any
other set of values is an account of its own that no one named
(`claude@/home/u/.claude-x`): shown, keyed and limited on its own, never
merged into the default. Two answers are `unknown`, which never authorises
anything (DESIGN rule 1): an environment afd could not read (never guessed
as the default), and a credential variable set (the token, not the
directory, then says whose plan it is; afd reads only that it is set).

Paths are compared after `~`/`$HOME` expansion and resolving; resolving
reads symlinks, so the caller hands in the function that does it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from afd.model import AgentSpec, ProcessEnv

# The account of a process whose account cannot be named.
UNKNOWN = "unknown"

Resolver = Callable[[str], str]

_HOME_VAR = re.compile(r"^\$(?:HOME\b|\{HOME\})")


@dataclass(frozen=True, slots=True)
class Account:
    """A configured account: `[accounts.NAME]`, the agent it runs and the variables that select it."""

    name: str
    agent: str
    env: tuple[tuple[str, str], ...]  # as written in the config
    share: bool = False  # its limits are told to the hosts of the fleet, and theirs heard (docs/fleet.md)


@dataclass(frozen=True, slots=True)
class AgentVars:
    """The account variables of one agent, from its spec."""

    selecting: tuple[str, ...]
    defaults: tuple[tuple[str, str], ...] = ()
    credentials: tuple[str, ...] = ()


def vars_of(spec: AgentSpec) -> AgentVars:
    return AgentVars(spec.account_env, spec.account_defaults, spec.credential_env)


def expand(value: str, home: str | None) -> str:
    """`~` and `$HOME` at the start of `value`, in `home`'s terms (unchanged without a home)."""
    if home:
        if value == "~" or value.startswith("~/"):
            return home + value[1:]
        match = _HOME_VAR.match(value)
        if match:
            return home + value[match.end() :]
    return value


def normal(value: str, home: str | None, resolve: Resolver) -> str:
    """A variable's value as compared: a path expanded and resolved, anything else as written."""
    expanded = expand(value, home)
    return resolve(expanded) if os.path.isabs(expanded) else expanded


def selection(
    vars_: AgentVars, values: Mapping[str, str], home: str | None, resolve: Resolver
) -> tuple[tuple[str, str], ...]:
    """The account variables that select something other than the default, normalised; () for the default."""
    defaults = dict(vars_.defaults)
    chosen = []
    for name in vars_.selecting:
        raw = values.get(name)
        if not raw:
            continue  # unset or empty: the agent uses its default
        value = normal(raw, home, resolve)
        default = defaults.get(name)
        if default is not None and value == normal(default, home, resolve):
            continue
        chosen.append((name, value))
    return tuple(sorted(chosen))


def unnamed(agent: str, chosen: tuple[tuple[str, str], ...]) -> str:
    """The name of an account no one configured: `claude@/home/u/.claude-x`, or `gemini@VAR=value,…`.

    A key, not what a person reads: `afd.judge.accountlabel` makes `claude · ~/.claude-x` of it.
    """
    if len(chosen) == 1 and os.path.isabs(chosen[0][1]):
        return f"{agent}@{chosen[0][1]}"
    return f"{agent}@" + ",".join(f"{k}={v}" for k, v in chosen)


def account_of(
    agent: str,
    vars_: AgentVars,
    seen: ProcessEnv | None,
    accounts: Iterable[Account],
    *,
    home: str | None,
    resolve: Resolver = os.path.normpath,
) -> str:
    """The account `agent` runs on, from what its process's environment says (`seen`; None: unreadable).

    `home` is the user's own HOME, which `~` in the config means.
    """
    if seen is None:
        return UNKNOWN
    if any(name in vars_.credentials for name in seen.credentials):
        return UNKNOWN
    chosen = selection(vars_, dict(seen.selecting), seen.home or home, resolve)
    if not chosen:
        return agent
    for account in accounts:
        if account.agent == agent and selection(vars_, dict(account.env), home, resolve) == chosen:
            return account.name
    return unnamed(agent, chosen)


def agent_of_account(name: str, accounts: Mapping[str, Account], agents: Iterable[str]) -> str | None:
    """The agent an account name belongs to: a configured account's, a default's, an unnamed one's; else None."""
    if name in accounts:
        return accounts[name].agent
    known = set(agents)
    if name in known:
        return name
    agent = name.partition("@")[0]
    return agent if "@" in name and agent in known else None


def accounts_of(agent: str, accounts: Iterable[Account]) -> list[str]:
    """The named accounts of `agent`: its default first, then the configured ones in order."""
    return [agent, *(a.name for a in accounts if a.agent == agent)]


def env_of(name: str | None, agent: str, vars_: AgentVars, accounts: Mapping[str, Account]) -> tuple[tuple[str, str], ...] | None:
    """The account variables that start `agent` on account `name`: () for its default; None when it cannot be named.

    An unnamed account is read back from its name (`claude@/home/u/.claude-x`
    when the agent has one account variable, `agent@VAR=value,…` otherwise).
    """
    if name is None or name == UNKNOWN:
        return None
    if name == agent:
        return ()
    account = accounts.get(name)
    if account is not None:
        return account.env if account.agent == agent else None
    owner, at, rest = name.partition("@")
    if not at or owner != agent or not rest:
        return None
    if os.path.isabs(rest) and len(vars_.selecting) == 1:
        return ((vars_.selecting[0], rest),)
    pairs = tuple(tuple(part.split("=", 1)) for part in rest.split(","))
    if all(len(p) == 2 and p[0] in vars_.selecting for p in pairs):
        return tuple((p[0], p[1]) for p in pairs)
    return None
