"""`afd help agents`: the reference an agent reads names every agent and account it can start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The agents afd ships: the Python built-ins and the manifests beside them.
SHIPPED = {"claude", "codex", "devin", *(p.stem for p in (REPO / "plugins" / "agents").glob("*.toml"))}

MANIFEST = """\
name = "mycli"
[process]
executables = ["mycli"]
[[banner]]
kind = "quota"
regex = '^■ Quota used up\\.'
"""


def _help(tmp_path: Path, config: str) -> subprocess.CompletedProcess:
    home = tmp_path / "cfg"
    (home / "afd" / "plugins").mkdir(parents=True, exist_ok=True)
    (home / "afd" / "config.toml").write_text(config, encoding="utf-8")
    (home / "afd" / "plugins" / "mycli.toml").write_text(MANIFEST, encoding="utf-8")
    env = {**os.environ, "XDG_CONFIG_HOME": str(home), "HOME": str(tmp_path)}
    return subprocess.run([sys.executable, "-m", "afd", "help", "agents"], capture_output=True, text=True,
                          env=env, timeout=60, check=True)


def _agent_line(out: str) -> str:
    start = out.index("AGENT is one of:")
    return " ".join(out[start:out.index("afd jobs list")].split())


def test_lists_every_shipped_agent_a_drop_in_manifest_and_the_configured_accounts(tmp_path):
    done = _help(tmp_path, '[accounts.claude-work]\nagent = "claude"\nenv = { CLAUDE_CONFIG_DIR = "~/.claude-work" }\n')
    line = _agent_line(done.stdout)
    listed = set(line.removeprefix("AGENT is one of: ").split(";")[0].rstrip(".").split(", "))
    assert listed == SHIPPED | {"mycli"}, line
    assert line.endswith("or an account: claude-work."), line
    assert "claude, codex or devin" not in done.stdout


def test_a_broken_config_still_gets_the_shipped_agents_and_a_warning(tmp_path):
    done = _help(tmp_path, "poll_interval = 3\n")
    line = _agent_line(done.stdout)
    assert set(line.removeprefix("AGENT is one of: ").rstrip(".").split(", ")) == SHIPPED, line
    assert "config.toml:1: poll_interval" in done.stderr
