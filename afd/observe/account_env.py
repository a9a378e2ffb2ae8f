"""Reading the few variables of an agent process's environment that say which account it runs on.

Read once when the pane's identity is established (a walk of its process
tree), not every poll. Only the account variables the loaded agents name,
HOME, and *whether* a credential variable is set are kept: a credential's
value is never copied out of the process's environment, stored or shown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace

import psutil

from afd.model import AgentSpec, Identity, ProcessEnv

EnvReader = Callable[[int], Mapping[str, str] | None]


def process_environ(pid: int) -> Mapping[str, str] | None:
    """The environment `pid` was started with; None when it cannot be read (another user's, or gone)."""
    try:
        env = psutil.Process(pid).environ()
    except psutil.Error:
        return None
    # Empty for a zombie or a process caught mid-exec: nothing to tell its account by.
    return env or None


def account_view(env: Mapping[str, str], specs: Iterable[AgentSpec]) -> ProcessEnv:
    """What afd keeps of `env`: the account variables set, the credential variables' names, HOME."""
    selecting: set[str] = set()
    credentials: set[str] = set()
    for spec in specs:
        selecting.update(spec.account_env)
        credentials.update(spec.credential_env)
    return ProcessEnv(
        selecting=tuple(sorted((k, env[k]) for k in selecting if env.get(k))),
        credentials=tuple(sorted(k for k in credentials if env.get(k))),
        home=env.get("HOME") or None,
    )


def with_account_env(ident: Identity, specs: Mapping[str, AgentSpec], read: EnvReader = process_environ) -> Identity:
    """`ident` with its process's account variables read, for any pane that runs something.

    An unidentified process is read too: a user may vouch for it as an agent
    (`sessions adopt --agent`), and its account is then told the same way.
    """
    if ident.pid is None:
        return ident
    env = read(ident.pid)
    return replace(ident, env=None if env is None else account_view(env, specs.values()))
