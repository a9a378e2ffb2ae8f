"""One launch command for a first launch, a resume and a hand-back, from the plugin's spec and the user's override."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from afd.act.launch import Launch, launch_argv
from afd.config.settings import AgentOverride
from afd.model import AgentSpec, PromptDelivery
from afd.record.store import Store

SPEC = AgentSpec(name="tool", executables=("tool",), command=("tool",), resume_args=("--continue",))
T0 = datetime(2026, 7, 13, 9, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    "override, first, resumed",
    [
        (None, ("tool",), ("tool", "--continue")),
        (AgentOverride(command=("/opt/tool", "--fast")), ("/opt/tool", "--fast"), ("/opt/tool", "--fast", "--continue")),
        (AgentOverride(resume_args=()), ("tool",), ("tool",)),
        (AgentOverride(command=("t2",), resume_args=("resume", "--last")), ("t2",), ("t2", "resume", "--last")),
    ],
    ids=["plugin-defaults", "command-override", "resume-args-empty-means-none", "both-overridden"],
)
def test_one_launch_command_for_first_launch_resume_and_hand_back(override, first, resumed):
    assert launch_argv(SPEC, override, Launch.FIRST) == first
    # A resume of an exited agent and a hand-back both start the agent's own conversation: the same argv.
    assert launch_argv(SPEC, override, Launch.RESUME) == resumed


def test_resume_args_empty_gives_no_arguments_to_a_resume_and_a_hand_back_alike(tmp_path):
    from types import SimpleNamespace

    from afd.act import resume
    from afd.config.settings import Config

    config = Config(agents={"tool": AgentOverride(resume_args=())})
    ctx = SimpleNamespace(
        config=config, plugins=SimpleNamespace(agents={"tool": SPEC}), clock=lambda: T0, run="r",
        store=Store(tmp_path / "state.db"),
        event=lambda *a, **k: None,
    )
    rec = SimpleNamespace(name="s", agent="tool", mission="m", pane_id="%1", worktree="/w", next_action=None, account="tool")
    resume.begin(ctx, rec, attempt=1, why="reset", episode="e")
    [row] = ctx.store.pending_journal()
    assert tuple(row.intent["respawn_argv"]) == launch_argv(SPEC, config.agents["tool"], Launch.RESUME) == ("tool",)


def test_a_prompt_goes_on_the_command_line_only_for_agents_that_take_it_there():
    typed = AgentSpec(name="t", executables=("t",), command=("t",), prompt_delivery=PromptDelivery.TYPED)
    assert launch_argv(SPEC, None, Launch.FIRST, prompt="fix it") == ("tool", "fix it")
    assert launch_argv(typed, None, Launch.FIRST, prompt="fix it") == ("t",)


@pytest.mark.parametrize(
    "account, argv",
    [
        ("claude-work", ("env", "CLAUDE_CONFIG_DIR=/home/u/.claude-work", "claude", "--continue")),
        ("claude", ("env", "-u", "CLAUDE_CONFIG_DIR", "claude", "--continue")),
        ("unknown", ("claude", "--continue")),  # never a guessed account: the pane's environment stands
    ],
)
def test_a_resume_starts_the_agent_again_on_the_account_the_session_was_on(monkeypatch, tmp_path, account, argv):
    from types import SimpleNamespace

    from afd.act import resume
    from afd.config.settings import Config
    from afd.judge.accounts import Account
    from afd.pluginset import load_plugins

    monkeypatch.setenv("HOME", "/home/u")
    config = Config(accounts={"claude-work": Account("claude-work", "claude", (("CLAUDE_CONFIG_DIR", "~/.claude-work"),))})
    ctx = SimpleNamespace(
        config=config, plugins=SimpleNamespace(agents=load_plugins(None, entry_points=False).agents), clock=lambda: T0,
        run="r", store=Store(tmp_path / "state.db"),
        event=lambda *a, **k: None,
    )
    rec = SimpleNamespace(name="s", agent="claude", mission="m", pane_id="%1", worktree="/w", next_action=None, account=account)
    resume.begin(ctx, rec, attempt=1, why="reset", episode="e")
    [row] = ctx.store.pending_journal()
    assert tuple(row.intent["respawn_argv"]) == argv
