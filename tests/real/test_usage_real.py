"""Usage before the wall with the real CLIs: their exact figures reach `afd usage --json` for their account.

Claude Code hands its status line the rate limits its API answers carry
(`anthropic-ratelimit-unified-5h-*`, `-7d-*`); with `afd statusline`
installed in the account's settings.json, afd records them, and the user's
own status line shows what it showed. Codex writes the `x-codex-*` headers'
figures into its rollout's `token_count` records, which afd reads for a
live session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import shapes
from test_claude_real import start
from verdicts import AFD_ENV, Supervisor, _xdg, iso, minutes_ahead

from harness import wait_for

# The user's own status line: it reads the payload (so afd must pass it on whole) and names the folder.
USER_LINE = """python3 -c 'import json,os,sys; d=json.load(sys.stdin); print("MINE " + os.path.basename(d["cwd"]) + " " + d["session_id"][:4])'"""


@pytest.fixture
def work_account(rig, xdg_dirs):
    """A second Claude account configured for afd, its directory in the rig's scratch, and afd running."""
    work = rig.scratch / "claude-work" / ".claude-work"
    work.mkdir(parents=True)
    config = xdg_dirs["XDG_CONFIG_HOME"] / "afd" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'poll_interval = "1s"\n[accounts.claude-work]\nagent = "claude"\n'
                      f'env = {{ CLAUDE_CONFIG_DIR = "{work}" }}\n', encoding="utf-8")
    supervisor = Supervisor(rig.tmux.name, rig.scratch / "afd.log")
    try:
        yield supervisor, work
    finally:
        supervisor.stop()


def afd_command(*args: str) -> subprocess.CompletedProcess:
    # As a user runs it: `afd` on PATH (install writes its absolute path into the settings).
    env = {**AFD_ENV, **_xdg(), "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    return subprocess.run([str(Path(sys.executable).with_name("afd")), *args], capture_output=True, text=True,
                          timeout=60, env=env)


def figures_for(afd: Supervisor, account: str, window: str, used: float, timeout: float = 60) -> dict:
    def found():
        done = afd.command("usage", "--json")
        if done.returncode != 0:
            return None
        for a in json.loads(done.stdout)["accounts"]:
            if a["account"] == account:
                return next((w for w in a["windows"] if w["window"] == window and w["used_percent"] == used), None)
        return None

    return wait_for(found, timeout=timeout, interval=0.5, message=f"{account}'s {window} at {used} % in afd usage")


def test_claude_code_hands_afd_its_exact_figures_and_the_users_status_line_shows_unchanged(rig, shop, work_account):
    afd, work = work_account
    (work / "settings.json").write_text(json.dumps({"statusLine": {"type": "command", "command": USER_LINE}}),
                                        encoding="utf-8")
    done = afd_command("statusline", "install", "--account", "claude-work")
    assert done.returncode == 0, done.stderr
    installed = json.loads((work / "settings.json").read_text())["statusLine"]["command"]
    assert installed.startswith(f"{Path(sys.executable).with_name('afd')} statusline -- sh -c ")

    # A pane of the user's sees the same runtime dir as afd (as a login session's panes do).
    pane = start(rig, shop, config_dir=work, env={"XDG_RUNTIME_DIR": os.environ["XDG_RUNTIME_DIR"]})
    five_reset, seven_reset = minutes_ahead(150), minutes_ahead(4 * 24 * 60)
    rig.answer("claude", shapes.claude_answer("All done.", headers=shapes.claude_usage_headers(0.42, five_reset, 0.13,
                                                                                                seven_reset)))
    pane.type("say hello")
    pane.wait_for_text("All done.", timeout=60)

    five = figures_for(afd, "claude-work", "five_hour", 42.0)
    assert (five["provenance"], five["source"], five["resets_at"], five["stale"]) == (
        "exact", "statusline", iso(five_reset), False)
    seven = figures_for(afd, "claude-work", "seven_day", 13.0)
    assert seven["resets_at"] == iso(seven_reset)

    # The user's own status line, drawn by Claude Code under the composer, is what their command prints.
    line = pane.wait_for_screen(lambda s: "MINE shop " in s, message="the user's own status line")
    shown = next(row.strip() for row in line.splitlines() if "MINE shop " in row)
    session_id = shown.split()[-1]
    payload = json.dumps({"cwd": str(shop), "session_id": session_id + "rest"})
    direct = subprocess.run(["sh", "-c", USER_LINE], input=payload, capture_output=True, text=True)
    assert shown == direct.stdout.strip()
    # The default account reported nothing: no figure.
    report = json.loads(afd.command("usage", "--json").stdout)
    assert next(a for a in report["accounts"] if a["account"] == "claude")["windows"] == []


def test_codex_rollout_figures_reach_afd_usage_and_a_switched_limit_keeps_its_own(rig, shop, afd):
    pane = rig.start_codex(shop)
    pane.wait_for_text("Ask Codex to do anything")
    five_reset, week_reset = minutes_ahead(120), minutes_ahead(3 * 24 * 60)
    rig.answer("codex", shapes.codex_answer("All done here.", headers=shapes.codex_both_windows(42.5, five_reset, 13,
                                                                                                week_reset)))
    pane.type("say hi")
    pane.wait_for_text("Worked for", timeout=60)
    account = afd.session(pane.pane, "idle")["account"]
    assert account == "codex"  # CODEX_HOME is the default under the pane's own HOME
    five = figures_for(afd, account, "five_hour", 42.5)
    assert (five["provenance"], five["source"], five["limit_id"], five["resets_at"]) == (
        "exact", "rollout", "codex", iso(five_reset))
    assert figures_for(afd, account, "seven_day", 13.0)["resets_at"] == iso(week_reset)

    # A model's own limit (`x-codex-active-limit`): Codex reports it as its own limit_id; the plan's figures stand.
    rig.answer("codex", shapes.codex_model_limit(five_reset))
    pane.type("again")
    spark = figures_for(afd, account, "five_hour", 100.0)
    assert spark["limit_id"] == "codex_spark"
    assert figures_for(afd, account, "five_hour", 42.5)["limit_id"] == "codex"
