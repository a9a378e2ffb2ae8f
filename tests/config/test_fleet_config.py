"""[fleet] and `share` in [accounts.NAME]: read, checked, shown; with none of it, nothing changes."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from afd.config.settings import ConfigError, effective_items, load_config


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def test_fleet_keys_are_read(xdg_dirs):
    cfg = write(xdg_dirs["HOME"] / "afd.toml", """
        [fleet]
        pull_interval = "2m"
        timeout = "5s"
        share = true

        [accounts.claude-work]
        agent = "claude"
        env = { CLAUDE_CONFIG_DIR = "~/.claude-work" }
        share = true

        [accounts.codex-team]
        agent = "codex"
        env = { CODEX_HOME = "~/.codex-team" }
        """)
    config = load_config(cfg)
    assert (config.fleet_pull_interval, config.fleet_timeout, config.fleet_share) == (120.0, 5.0, True)
    assert config.accounts["claude-work"].share is True and config.accounts["codex-team"].share is False
    shown = {key: value for key, value, _ in effective_items(config)}
    assert shown["fleet.pull_interval"] == "2m" and shown["accounts.claude-work.share"] is True


def test_no_fleet_table_shares_nothing(xdg_dirs):
    config = load_config(write(xdg_dirs["HOME"] / "afd.toml", 'poll_interval = "1s"\n'))
    assert (config.fleet_pull_interval, config.fleet_timeout, config.fleet_share) == (60.0, 10.0, False)


@pytest.mark.parametrize("text, where", [
    ('[fleet]\npull_interval = "0s"\n', "fleet.pull_interval"),
    ('[fleet]\ntimeout = "10m"\n', "fleet.timeout"),
    ('[fleet]\nshare = "yes"\n', "fleet.share"),
    ('[fleet]\npul_interval = "1m"\n', "fleet.pul_interval"),
    ('[accounts.w]\nagent = "claude"\nenv = { CLAUDE_CONFIG_DIR = "~/w" }\nshare = 1\n', "accounts.w.share"),
], ids=["interval-zero", "timeout-too-long", "share-not-a-bool", "misspelt", "account-share-not-a-bool"])
def test_bad_fleet_values_are_named(xdg_dirs, text, where):
    cfg = write(xdg_dirs["HOME"] / "afd.toml", text)
    with pytest.raises(ConfigError) as info:
        load_config(cfg)
    assert any(where in str(p) for p in info.value.problems), info.value.problems
