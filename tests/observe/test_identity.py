"""Agent identity from a pane's process tree, and the mission from its argv."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import psutil
import pytest
from hypothesis import given
from hypothesis import strategies as st

from afd.model import AgentSpec, PromptDelivery
from afd.observe.identity import (
    IdentityKind,
    ProcessFact,
    identify,
    mission_from_argv,
    mission_from_start_command,
    pane_processes,
)
from afd.world import tmux
from harness import wait_for

CLAUDE = AgentSpec(
    name="claude",
    executables=("claude",),
    command=("claude",),
    argv_patterns=(re.compile(r"@anthropic-ai/claude-code/cli\.js"),),
)
CODEX = AgentSpec(name="codex", executables=("codex",), command=("codex",), resume_args=("resume", "--last"))
DEVIN = AgentSpec(name="devin", executables=("devin",), command=("devin",), prompt_delivery=PromptDelivery.TYPED)
SPECS = {"claude": CLAUDE, "codex": CODEX, "devin": DEVIN}


def proc(pid, argv, *, ppid=None, name=None, exe="", status=psutil.STATUS_SLEEPING, foreground=True):
    argv = tuple(argv)
    if name is None:
        name = os.path.basename((argv[0].split() or ["?"])[0] if argv else "?")[:15]
    return ProcessFact(
        pid=pid,
        ppid=ppid if ppid is not None else pid - 1,
        name=name,
        exe=exe,
        argv=argv,
        create_time=1000.0 + pid,
        status=status,
        pgid=pid,
        foreground=foreground,
    )


SHELL = proc(100, ["-bash"], ppid=1, foreground=False)

IDENTIFY_CASES = [
    ("argv0-basename", [SHELL, proc(101, ["/home/u/.local/bin/claude", "fix it"])], "known", "claude"),
    ("codex-binary", [SHELL, proc(101, ["codex"])], "known", "codex"),
    ("python-script-path", [SHELL, proc(101, ["python3", "/tmp/x/bin/claude"])], "known", "claude"),
    ("python-flags-before-script", [SHELL, proc(101, ["python3.11", "-u", "-X", "dev", "/opt/codex"])], "known", "codex"),
    ("node-bin-symlink", [SHELL, proc(101, ["node", "/usr/local/bin/claude", "--continue"])], "known", "claude"),
    (
        "node-cli-js-path",
        [SHELL, proc(101, ["node", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js"])],
        "known",
        "claude",
    ),
    ("process-title-rewrite", [SHELL, proc(101, ["claude"], name="claude", exe="/usr/bin/node")], "known", "claude"),
    ("process-title-with-spaces", [SHELL, proc(101, ["claude --model opus"], exe="/usr/bin/node")], "known", "claude"),
    ("exe-basename", [SHELL, proc(101, ["agent-x"], name="agent-x", exe="/opt/devin/bin/devin")], "known", "devin"),
    ("env-shebang-launcher", [SHELL, proc(101, ["/usr/bin/env", "-S", "node", "/usr/local/bin/codex"])], "known", "codex"),
    (
        "interpreter-shim",
        [SHELL, proc(101, ["bash", "/home/u/.pyenv/shims/python3", "/tmp/x/bin/claude"], name="python3")],
        "known",
        "claude",
    ),
    ("bash-running-script", [SHELL, proc(101, ["bash", "/home/u/bin/codex", "go"])], "known", "codex"),
    ("agent-is-pane-process", [proc(100, ["codex", "fix it"], ppid=1)], "known", "codex"),
    (
        "agent-nearest-root-wins",
        [SHELL, proc(101, ["claude"]), proc(102, ["codex", "exec", "x"], ppid=101)],
        "known",
        "claude",
    ),
    (
        "background-agent-ignored-when-foreground-is-shell",
        [proc(100, ["bash"], ppid=1, foreground=True), proc(101, ["codex"], foreground=False)],
        "none",
        None,
    ),
    (
        "foreground-beats-background",
        [SHELL, proc(101, ["codex"], foreground=False), proc(102, ["claude"], ppid=100)],
        "known",
        "claude",
    ),
    (
        "wrapper-script-unknown",
        [SHELL, proc(101, ["sh", "/home/u/bin/my-wrapper"]), proc(102, ["sleep", "600"], ppid=101)],
        "unknown",
        None,
    ),
    ("unreadable-interpreter-unknown", [SHELL, proc(101, ["node", "-e", "require('x')"])], "unknown", None),
    ("editor-unknown", [SHELL, proc(101, ["vim", "notes.md"])], "unknown", None),
    ("bare-login-shell-none", [proc(100, ["-bash"], ppid=1)], "none", None),
    ("shell-with-flags-none", [proc(100, ["/usr/bin/zsh", "-l", "-i"], ppid=1)], "none", None),
    ("sh-dash-c-is-a-shell", [proc(100, ["sh", "-c", "sleep 1; true"], ppid=1)], "none", None),
    ("nothing-none", [], "none", None),
    ("zombie-agent-is-gone", [SHELL, proc(101, ["claude"], status=psutil.STATUS_ZOMBIE)], "none", None),
    (
        "zombie-foreground-falls-back-to-live",
        [proc(100, ["bash"], ppid=1, foreground=False), proc(101, ["codex"], status=psutil.STATUS_ZOMBIE)],
        "none",
        None,
    ),
    (
        "no-foreground-info-uses-all",
        [proc(100, ["bash"], ppid=1, foreground=False), proc(101, ["codex"], foreground=False)],
        "known",
        "codex",
    ),
]


@pytest.mark.parametrize("processes, kind, agent", [c[1:] for c in IDENTIFY_CASES], ids=[c[0] for c in IDENTIFY_CASES])
def test_identify(processes, kind, agent):
    identity = identify(processes, SPECS)
    assert (identity.kind.value, identity.agent) == (kind, agent), identity.reason
    if kind == "none":
        assert identity.pid is None
    else:
        assert identity.pid is not None and identity.reason


def test_known_identity_names_the_agent_process_and_its_start_time():
    agent = proc(101, ["python3", "/tmp/x/bin/claude", "fix it"])
    identity = identify([SHELL, agent], SPECS)
    assert (identity.pid, identity.create_time, identity.argv) == (101, agent.create_time, agent.argv)


def test_configured_command_identifies_a_wrapper_as_the_users_word():
    wrapper = proc(101, ["bash", "/home/u/bin/my-claude", "--fast"])
    assert identify([SHELL, wrapper], SPECS).kind is IdentityKind.UNKNOWN
    identity = identify([SHELL, wrapper], SPECS, overrides={"claude": ("/home/u/bin/my-claude", "--fast")})
    assert (identity.kind, identity.agent) == (IdentityKind.KNOWN, "claude")
    assert "configured command" in identity.reason


@pytest.mark.parametrize(
    "command",
    [("node",), ("bash", "-l"), ("python3",), ()],
    ids=["bare-node", "bare-shell", "bare-python", "empty"],
)
def test_a_generic_configured_command_claims_nothing(command):
    processes = [SHELL, proc(101, ["node", "/srv/app/server.js"])]
    assert identify(processes, SPECS, overrides={"claude": command}).kind is IdentityKind.UNKNOWN


def test_configured_interpreter_command_is_known_by_its_script():
    processes = [SHELL, proc(101, ["node", "/opt/agents/start.js", "--x"])]
    identity = identify(processes, SPECS, overrides={"codex": ("node", "/opt/agents/start.js")})
    assert (identity.kind, identity.agent) == (IdentityKind.KNOWN, "codex")


def test_unknown_reason_says_what_runs():
    identity = identify([SHELL, proc(101, ["vim", "notes.md"])], SPECS)
    assert "vim notes.md" in identity.reason and "matches no agent" in identity.reason


def test_custom_shell_set_is_honoured():
    processes = [proc(100, ["xonsh"], ppid=1)]
    assert identify(processes, SPECS).kind is IdentityKind.UNKNOWN
    assert identify(processes, SPECS, shells=frozenset({"xonsh"})).kind is IdentityKind.NONE


MISSION_ARGV_CASES = [
    ("bare-prompt", CLAUDE, ["claude", "fix the login redirect"], "fix the login redirect"),
    ("full-path", CLAUDE, ["/home/u/.local/bin/claude", "fix the login redirect"], "fix the login redirect"),
    ("boolean-flag-before", CLAUDE, ["claude", "--continue", "fix the tests"], "fix the tests"),
    ("print-flag", CLAUDE, ["claude", "-p", "explain the build"], "explain the build"),
    ("value-flag-skipped", CLAUDE, ["claude", "--model", "opus", "fix the tests"], "fix the tests"),
    ("flag-equals-value", CLAUDE, ["claude", "--model=opus", "fix the tests"], "fix the tests"),
    ("flags-after-prompt", CODEX, ["codex", "fix the tests", "-m", "o3"], "fix the tests"),
    ("double-dash", CLAUDE, ["claude", "--", "-x is broken"], "-x is broken"),
    ("interpreter-script", CLAUDE, ["python3", "/tmp/bin/claude", "fix it now"], "fix it now"),
    ("interpreter-shim", CLAUDE, ["bash", "/u/.pyenv/shims/python3", "-u", "/tmp/bin/claude", "fix it"], "fix it"),
    ("node-cli-js", CLAUDE, ["node", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js", "fix it"], "fix it"),
    ("no-prompt", CLAUDE, ["claude"], None),
    ("only-flags", CLAUDE, ["claude", "--continue"], None),
    ("value-flag-only", CLAUDE, ["claude", "--model", "opus"], None),
    ("subcommand-resume", CODEX, ["codex", "resume", "--last"], None),
    ("subcommand-with-prompt-is-ambiguous", CODEX, ["codex", "exec", "fix it"], None),
    ("single-bare-word", CLAUDE, ["claude", "doctor"], None),
    ("unknown-value-flag-leaves-two-positionals", CLAUDE, ["claude", "--weird", "x y", "fix it"], None),
    ("rewritten-title", CLAUDE, ["claude fix the login"], None),
    ("typed-prompt-agent", DEVIN, ["devin", "fix the login"], None),
    ("empty", CLAUDE, [], None),
    ("blank-prompt", CLAUDE, ["claude", "  "], None),
]


@pytest.mark.parametrize("spec, argv, mission", [c[1:] for c in MISSION_ARGV_CASES], ids=[c[0] for c in MISSION_ARGV_CASES])
def test_mission_from_argv(spec, argv, mission):
    assert mission_from_argv(argv, spec) == mission


MISSION_START_CASES = [
    # What tmux 3.3a shows as pane_start_command for each way of starting a pane.
    ("shell-string", r'"claude \"fix the login redirect\""', "fix the login redirect"),
    ("shell-string-single-quotes", "\"claude 'fix the login redirect'\"", "fix the login redirect"),
    ("argv-form", r'claude "fix the login redirect"', "fix the login redirect"),
    ("argv-form-escapes", r'claude "fix \$HOME and \"quotes\"\tnow"', 'fix $HOME and "quotes"\tnow'),
    ("argv-form-newline", r"claude fix\nthe\nlogin", "fix\nthe\nlogin"),
    ("compound-shell-string", r'"cd app && claude --model opus \"fix it\""', "fix it"),
    ("env-assignment", r'"FOO=1 exec claude \"fix it\""', "fix it"),
    ("bash-lc", r'bash -lc "claude \"fix it\""', "fix it"),
    ("interpreter", r'node /usr/local/bin/claude "fix it"', "fix it"),
    ("other-program", r'"vim notes.md"', None),
    ("empty", "", None),
    ("bare-agent", "claude", None),
    ("unbalanced", r'"claude \"fix', None),
]


@pytest.mark.parametrize("start, mission", [c[1:] for c in MISSION_START_CASES], ids=[c[0] for c in MISSION_START_CASES])
def test_mission_from_start_command(start, mission):
    assert mission_from_start_command(start, CLAUDE) == mission


def test_pane_processes_of_a_vanished_pid_is_empty():
    child = psutil.Popen(["true"])
    child.wait()
    assert pane_processes(child.pid) == []


# --- real processes in real tmux panes -------------------------------------


def _script(bin_dir: Path, name: str, body: str) -> Path:
    path = bin_dir / name
    path.write_text(body)
    path.chmod(0o755)
    return path


def _pane_running(tmux_server, command: str, tmp_path: Path):
    """A pane with an interactive shell (job control, as a user's) that was told to run `command`."""
    server = tmux.ServerRef(socket_name=tmux_server.name)
    started = tmux.new_session(server, "w", str(tmp_path), ["bash", "--norc", "--noprofile", "-i"])
    assert started.ok, started.error
    pane = wait_for(lambda: tmux.list_panes(server).panes, timeout=20.0, message="the pane")[0]
    assert tmux.send_text(server, started.value, command).ok
    return pane


@pytest.mark.tmux
@pytest.mark.parametrize(
    "script_name, body, kind, agent",
    [
        ("claude", "#!/usr/bin/env python3\nimport time\ntime.sleep(600)\n", IdentityKind.KNOWN, "claude"),
        ("my-wrapper", "#!/bin/sh\nsleep 600\n", IdentityKind.UNKNOWN, None),
    ],
    ids=["script-named-after-agent-is-known", "wrapper-script-is-unknown"],
)
def test_identity_of_a_real_process_in_a_pane(tmux_server, tmp_path, script_name, body, kind, agent):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = _script(bin_dir, script_name, body)
    pane = _pane_running(tmux_server, f"{shlex.quote(str(script))} 'fix the login redirect'", tmp_path)

    # The script's final process: the interpreter after any shim or `env`
    # has exec'd, or the sleep the wrapper runs.
    final = "python" if script_name == "claude" else "sleep"

    def settled():
        facts = pane_processes(pane.pane_pid)
        done = any(f.foreground and f.argv and os.path.basename(f.argv[0]).startswith(final) for f in facts)
        return facts if done else None

    facts = wait_for(settled, timeout=20.0, message=f"{script_name} to run in the foreground")
    identity = identify(facts, SPECS)
    assert (identity.kind, identity.agent) == (kind, agent), identity.reason
    if kind is IdentityKind.KNOWN:
        assert mission_from_argv(identity.argv, SPECS[agent]) == "fix the login redirect"


@pytest.mark.tmux
def test_identity_of_a_bare_shell_pane_is_none(tmux_server, tmp_path):
    server = tmux.ServerRef(socket_name=tmux_server.name)
    assert tmux.new_session(server, "w", str(tmp_path), ["bash", "--norc", "--noprofile", "-i"]).ok
    pane = wait_for(lambda: tmux.list_panes(server).panes, timeout=20.0, message="the pane")[0]
    # Until the forked pane process execs bash it still looks like the tmux server.
    facts = wait_for(lambda: [f for f in pane_processes(pane.pane_pid) if f.name == "bash"] and pane_processes(pane.pane_pid),
                     timeout=20.0, message="the shell")
    identity = identify(facts, SPECS)
    assert identity.kind is IdentityKind.NONE, identity.reason


@pytest.mark.tmux
def test_mission_from_a_real_pane_start_command(tmux_server, tmp_path):
    server = tmux.ServerRef(socket_name=tmux_server.name)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = _script(bin_dir, "claude", "#!/bin/sh\nsleep 600\n")
    assert tmux.new_session(server, "w", str(tmp_path), [str(script), 'fix the "login" $redirect']).ok
    tmux_server.run("new-window", "-d", "-t", "w", f"{shlex.quote(str(script))} 'tidy up\tthe docs'")
    panes = wait_for(lambda: len(tmux.list_panes(server).panes) == 2 and tmux.list_panes(server).panes, timeout=20.0, message="both panes")
    missions = sorted(mission_from_start_command(p.start_command, CLAUDE) or "" for p in panes)
    assert missions == ['fix the "login" $redirect', "tidy up\tthe docs"]


# --- arbitrary input never crashes the readers -------------------------------


@given(st.text())
def test_any_start_command_gives_a_mission_or_none(start):
    mission = mission_from_start_command(start, CLAUDE)
    assert mission is None or mission.strip() == mission != ""


@given(st.lists(st.text(), max_size=6))
def test_any_argv_gives_an_identity_and_a_mission_or_none(argv):
    identity = identify([SHELL, proc(101, argv or ["?"])], SPECS)
    assert identity.kind in IdentityKind
    mission = mission_from_argv(argv, CLAUDE)
    assert mission is None or mission in [a.strip() for a in argv]  # taken from argv, never made up


def test_interactive_shell_with_an_rcfile_is_only_a_shell():
    from afd.observe.identity import IdentityKind, ProcessFact, identify

    shell = ProcessFact(10, 1, "bash", "/usr/bin/bash", ("bash", "--noprofile", "--rcfile", "/tmp/rc", "-i"), 1.0, "sleeping", 10, True)
    assert identify([shell], {}).kind is IdentityKind.NONE
