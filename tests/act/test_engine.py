"""The action engine's contracts: one launch command, what was tried survives a restart, no agent named in core code."""

from __future__ import annotations

import io
import re
import tokenize
from datetime import datetime, timezone
from pathlib import Path

import pytest

from afd.act.launch import Launch, launch_argv
from afd.config.settings import AgentOverride
from afd.decide import policy
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
    rows = []
    ctx = SimpleNamespace(
        config=config, plugins=SimpleNamespace(agents={"tool": SPEC}), clock=lambda: T0, run="r",
        store=SimpleNamespace(journal_begin=lambda s, a, row, at=None: rows.append(row) or 1, get_session=lambda n: None),
        event=lambda *a, **k: None,
    )
    rec = SimpleNamespace(name="s", agent="tool", mission="m", pane_id="%1", worktree="/w", next_action=None, account="tool")
    resume.begin(ctx, rec, attempt=1, why="reset", episode="e")
    assert tuple(rows[0]["respawn_argv"]) == launch_argv(SPEC, config.agents["tool"], Launch.RESUME) == ("tool",)


def test_a_prompt_goes_on_the_command_line_only_for_agents_that_take_it_there():
    typed = AgentSpec(name="t", executables=("t",), command=("t",), prompt_delivery=PromptDelivery.TYPED)
    assert launch_argv(SPEC, None, Launch.FIRST, prompt="fix it") == ("tool", "fix it")
    assert launch_argv(typed, None, Launch.FIRST, prompt="fix it") == ("t",)


# --- what was tried for a wall is stored -------------------------------------------------


def test_a_restart_between_trying_a_handoff_and_deciding_does_not_try_again(tmp_path):
    wall = policy.wall_key(T0, "pane,records")
    store = Store(tmp_path / "state.db")
    history = policy.observe(store.resume_history("s"), policy.Limit("claude.session-limit", "e", T0, None), now=T0)
    store.save_resume_history("s", policy.tried(history, wall, policy.HandoffTry.DECLINED))
    store.close()

    restarted = Store(tmp_path / "state.db")  # nothing in memory survives, the state file does
    history = restarted.resume_history("s")
    tried = policy.tried_for(history, wall)
    assert tried is policy.HandoffTry.DECLINED
    path = policy.limit_path(limit_action="handoff", handoff_order=["codex"], state="limited", tried=tried)
    assert path is policy.Path.WAIT  # not a second try: the wait path has the wall
    # The pane looked at again (same wall) keeps what was tried.
    again = policy.observe(history, policy.Limit("claude.session-limit", "e2", T0, None), now=T0)
    assert policy.tried_for(again, wall) is policy.HandoffTry.DECLINED
    restarted.close()


@pytest.mark.parametrize(
    "action, order, state, tried, expected",
    [
        ("wait", [], "limited", None, policy.Path.WAIT),
        ("handoff", ["codex"], "limited", None, policy.Path.HANDOFF),
        ("handoff", ["codex"], "limited", policy.HandoffTry.STARTED, policy.Path.NONE),
        ("handoff", ["codex"], "limited", policy.HandoffTry.DECLINED, policy.Path.WAIT),
        ("handoff", ["codex"], "exited", None, policy.Path.NONE),
        ("handoff", [], "limited", None, policy.Path.NONE),
    ],
    ids=["wait", "first-try", "started-owns-it", "declined-waits", "exited-not-handed-off", "no-order"],
)
def test_which_path_a_limit_takes(action, order, state, tried, expected):
    assert policy.limit_path(limit_action=action, handoff_order=order, state=state, tried=tried) is expected


def test_a_new_wall_is_tried_afresh():
    history = policy.tried(policy.ResumeHistory(), policy.wall_key(T0, "pane"), policy.HandoffTry.DECLINED)
    # Records confirming the wall a poll later make a new key: the handoff may go ahead then.
    assert policy.tried_for(history, policy.wall_key(T0, "pane,records")) is None


# --- no agent's name in core code ------------------------------------------------------------

AFD = Path(__file__).resolve().parents[2] / "afd"
# Where naming an agent is the point: fakes and scenarios for tests and the demo. Help texts and
# examples may mention agents; code must not compare with one, which is a string that is just its name.
NAMES_ALLOWED = ("testing/", "cli/demo")
AGENT_NAME = re.compile(r"[rbuf]*(['\"])(claude|codex|devin)\1", re.IGNORECASE)


def _string_literals(source: str):
    """String tokens that are not docstrings or comments (a docstring is a string statement of its own)."""
    previous = tokenize.NEWLINE
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.STRING and previous not in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.NL):
            yield tok
        if tok.type not in (tokenize.COMMENT, tokenize.NL):
            previous = tok.type


def test_no_core_module_names_an_agent():
    found = []
    for path in sorted(AFD.rglob("*.py")):
        rel = path.relative_to(AFD).as_posix()
        if rel.startswith(NAMES_ALLOWED):
            continue
        for tok in _string_literals(path.read_text()):
            if AGENT_NAME.fullmatch(tok.string):
                found.append(f"afd/{rel}:{tok.start[0]}: {tok.string}")
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    "account, argv",
    [
        ("claude-work", ("env", "CLAUDE_CONFIG_DIR=/home/u/.claude-work", "claude", "--continue")),
        ("claude", ("env", "-u", "CLAUDE_CONFIG_DIR", "claude", "--continue")),
        ("unknown", ("claude", "--continue")),  # never a guessed account: the pane's environment stands
    ],
)
def test_a_resume_starts_the_agent_again_on_the_account_the_session_was_on(monkeypatch, account, argv):
    from types import SimpleNamespace

    from afd.act import resume
    from afd.config.loader import load_plugins
    from afd.config.settings import Config
    from afd.judge.accounts import Account

    monkeypatch.setenv("HOME", "/home/u")
    config = Config(accounts={"claude-work": Account("claude-work", "claude", (("CLAUDE_CONFIG_DIR", "~/.claude-work"),))})
    rows = []
    ctx = SimpleNamespace(
        config=config, plugins=SimpleNamespace(agents=load_plugins(None, entry_points=False).agents), clock=lambda: T0,
        run="r", store=SimpleNamespace(journal_begin=lambda s, a, row, at=None: rows.append(row) or 1, get_session=lambda n: None),
        event=lambda *a, **k: None,
    )
    rec = SimpleNamespace(name="s", agent="claude", mission="m", pane_id="%1", worktree="/w", next_action=None, account=account)
    resume.begin(ctx, rec, attempt=1, why="reset", episode="e")
    assert tuple(rows[0]["respawn_argv"]) == argv
