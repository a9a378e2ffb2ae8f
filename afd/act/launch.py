"""The command that starts an agent in a pane: one function for every caller.

First launch (`sessions create`), resume after the agent exited, the target
of a handoff and a hand-back all start an agent; `afd doctor` checks the same
command is on PATH. They used to work it out each in its own way and
disagreed; now each asks `launch_argv`.

The user's `[agents.NAME]` override wins over the plugin's `AgentSpec`, key
by key: `command` replaces the command, and `resume_args` — when it is set at
all, even to `[]` — replaces the resume arguments. `resume_args = []` means
"resume with no arguments", for a resume and a hand-back alike.

Every launch of an agent that has account variables names its account
(`on_account`): the account's variables set and the agent's own other
account variables (those with a stated default) unset, through `env`, so a `CLAUDE_CONFIG_DIR` left in tmux's or
the pane's environment never starts the wrong account. `env` execs the
agent, so the pane's process is the agent itself, as without it.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping

from afd.config.settings import AgentOverride, Config
from afd.judge.accounts import env_of, expand, vars_of
from afd.model import AgentSpec, PromptDelivery


class Launch(enum.Enum):
    """Why the agent is started."""

    FIRST = "first"  # a new conversation: its first launch, or a handoff to an agent new to this worktree
    RESUME = "resume"  # its own conversation again: a resume after it exited, a hand-back, a rolled-back swap


def launch_argv(
    spec: AgentSpec, override: AgentOverride | None, how: Launch, *, prompt: str | None = None
) -> tuple[str, ...]:
    """The argv that starts `spec`'s agent: the command, its resume args when resuming, the prompt when it takes one as an argument."""
    command = tuple(override.command) if override is not None and override.command else tuple(spec.command)
    if not command:
        command = (spec.name,)
    argv = command
    if how is Launch.RESUME:
        resume = override.resume_args if override is not None and override.resume_args is not None else spec.resume_args
        argv += tuple(resume)
    if prompt is not None and spec.prompt_delivery is PromptDelivery.ARGUMENT:
        argv += (prompt,)
    return argv


def argv_for(
    agents: Mapping[str, AgentSpec], overrides: Mapping[str, AgentOverride], agent: str | None, how: Launch,
    *, prompt: str | None = None,
) -> tuple[str, ...] | None:
    """`launch_argv` by agent name; None for an agent no plugin provides."""
    spec = agents.get(agent) if agent else None
    if agent is None or spec is None:
        return None
    return launch_argv(spec, overrides.get(agent), how, prompt=prompt)


def on_account(
    argv: tuple[str, ...], spec: AgentSpec, env: tuple[tuple[str, str], ...] | None, *, home: str | None = None
) -> tuple[str, ...]:
    """`argv` started on the account `env` selects (`judge.accounts.env_of`): () its default, None unnamed.

    None leaves the environment as the pane gives it: an account afd cannot
    name is never replaced by a guess. `~` and `$HOME` mean `home` (the
    user's own HOME by default), as in the config.
    """
    if env is None or not spec.account_env or not argv:
        return argv
    home = home if home is not None else os.path.expanduser("~")
    chosen = {name: expand(value, home) for name, value in env}
    # Only the agent's own variables (those with a default, like CLAUDE_CONFIG_DIR) are unset: one
    # other programs read too (XDG_DATA_HOME) is the user's environment, not a leftover to clear.
    own = {name for name, _ in spec.account_defaults}
    unset = [arg for name in spec.account_env if name not in chosen and name in own for arg in ("-u", name)]
    return ("env", *unset, *(f"{name}={value}" for name, value in chosen.items()), *argv)


def account_env(config: Config, spec: AgentSpec, account: str | None) -> tuple[tuple[str, str], ...] | None:
    """The variables that start `spec`'s agent on `account` (for `on_account`); None when it cannot be named."""
    return env_of(account, spec.name, vars_of(spec), config.accounts)


def bare(argv: tuple[str, ...]) -> tuple[str, ...]:
    """`argv` without the `env` that `on_account` puts before it: the agent's own command, for people to read."""
    if argv[:1] != ("env",):
        return argv
    rest = list(argv[1:])
    while rest and (rest[0] == "-u" or "=" in rest[0]):
        rest = rest[2:] if rest[0] == "-u" else rest[1:]
    return tuple(rest)
