"""The command that starts an agent in a pane: one function for every caller.

First launch (`sessions create`), resume after the agent exited, the target
of a handoff and a hand-back all start an agent; `afd doctor` checks the same
command is on PATH. They used to work it out each in its own way and
disagreed; now each asks `launch_argv`.

The user's `[agents.NAME]` override wins over the plugin's `AgentSpec`, key
by key: `command` replaces the command, and `resume_args` — when it is set at
all, even to `[]` — replaces the resume arguments. `resume_args = []` means
"resume with no arguments", for a resume and a hand-back alike.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from afd.config.settings import AgentOverride
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
