"""Real Claude Codes on two accounts: one on its default config directory, one on a second one.

afd tells them apart by the CLAUDE_CONFIG_DIR in each process's environment,
and the second account's own transcript (under its directory) witnesses its
wall; the default account stays free.
"""

from __future__ import annotations

import pytest
import shapes
from test_claude_real import start
from verdicts import Supervisor, iso, minutes_ahead


@pytest.fixture
def afd_with_accounts(rig, xdg_dirs):
    """afd's supervisor with a second Claude account configured, its directory in the rig's scratch."""
    work = rig.scratch / "claude-work" / ".claude-work"
    config = xdg_dirs["XDG_CONFIG_HOME"] / "afd" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[accounts.claude-work]\nagent = "claude"\nenv = {{ CLAUDE_CONFIG_DIR = "{work}" }}\n',
                      encoding="utf-8")
    supervisor = Supervisor(rig.tmux.name, rig.scratch / "afd.log")
    try:
        yield supervisor, work
    finally:
        supervisor.stop()


def test_a_second_config_directory_is_its_own_account_and_its_transcript_witnesses_its_wall(rig, shop, afd_with_accounts):
    afd, work = afd_with_accounts
    default = start(rig, shop)
    other = start(rig, shop, config_dir=work)

    assert afd.session(default.pane, "idle")["account"] == "claude"
    reset = minutes_ahead(150)
    rig.answer("claude", shapes.claude_limit(reset, "five_hour"))
    other.type("fix the login redirect")
    other.wait_for_text("Continuing automatically at")
    seen = afd.agreed(other.pane)  # its pane and its own transcript, under .claude-work, agree
    assert (seen["account"], seen["reset_at"]) == ("claude-work", iso(reset))

    accounts = {a["name"]: a for a in afd.status()["accounts"]}
    assert accounts["claude-work"]["state"] == "limited" and accounts["claude-work"]["reset_at"] == iso(reset)
    assert accounts["claude"]["state"] != "limited"
    assert afd.session(default.pane, "idle")["account"] == "claude"
