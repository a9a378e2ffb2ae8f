"""`afd statusline`: records the account's figures for the daemon, and the user's own status line shows unchanged."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from afd.cli.main import main
from afd.observe import statusline
from afd.pluginset import load_plugins

AFD = str(Path(sys.executable).with_name("afd"))
RESET = 1893456000
PAYLOAD = {
    "session_id": "0b7e1a52", "transcript_path": "/home/me/.claude/projects/x/0b7e1a52.jsonl", "cwd": "/home/me/shop",
    "model": {"id": "claude-opus-4-5", "display_name": "Opus 4.5"}, "version": "2.1.332",
    "workspace": {"current_dir": "/home/me/shop", "project_dir": "/home/me/shop"},
    "cost": {"total_cost_usd": 1.25},
    "rate_limits": {"five_hour": {"used_percentage": 42.3, "resets_at": RESET},
                    "seven_day": {"used_percentage": 13, "resets_at": RESET + 86400}},
    "prompt_cache": {"warm": True, "expires_at": RESET - 3600, "recache_tokens_if_cold": 48000},
}


def run_statusline(*args: str, payload: bytes | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    data = json.dumps(PAYLOAD).encode() if payload is None else payload
    return subprocess.run([AFD, "statusline", *args], input=data, capture_output=True, env={**os.environ, **(env or {})},
                          timeout=30)


def files(xdg_dirs) -> list[Path]:
    folder = xdg_dirs["XDG_RUNTIME_DIR"] / "afd" / "usage"
    return sorted(folder.iterdir()) if folder.exists() else []


def test_records_the_accounts_figures_in_a_private_file_and_prints_a_line_of_its_own(xdg_dirs):
    done = run_statusline()
    assert done.returncode == 0 and done.stderr == b""
    assert done.stdout.decode().startswith("Opus 4.5 · 5h 42% ↻") and "7d 13%" in done.stdout.decode()
    (path,) = files(xdg_dirs)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    kept = json.loads(path.read_text())
    assert kept["rate_limits"] == PAYLOAD["rate_limits"]
    assert kept["sessions"]["0b7e1a52"] == {
        "session_id": "0b7e1a52", "transcript_path": PAYLOAD["transcript_path"], "cwd": "/home/me/shop",
        "prompt_cache": PAYLOAD["prompt_cache"], "at": kept["written_at"]}
    # Only the rate limits, the prompt cache and the session's identity: not the cost, the model, the workspace.
    assert "cost" not in json.dumps(kept) and "Opus" not in json.dumps(kept) and "workspace" not in json.dumps(kept)


def test_the_users_command_gets_the_same_stdin_and_its_output_and_status_pass_through_unchanged(xdg_dirs, tmp_path):
    seen = tmp_path / "stdin"
    user = f"cat > {shlex.quote(str(seen))}; printf '\\033[32mmain\\033[0m ✓ no newline'; echo oops >&2; exit 4"
    data = json.dumps(PAYLOAD, indent=2).encode() + b"\n"
    done = run_statusline("--", "sh", "-c", user, payload=data)
    direct = subprocess.run(["sh", "-c", user], input=data, capture_output=True)
    assert (done.returncode, done.stdout, done.stderr) == (direct.returncode, direct.stdout, direct.stderr) == (
        4, "\033[32mmain\033[0m ✓ no newline".encode(), b"oops\n")
    assert seen.read_bytes() == data
    assert len(files(xdg_dirs)) == 1


def test_a_large_payload_reaches_the_users_command_whole(xdg_dirs, tmp_path):
    big = dict(PAYLOAD, padding="x" * 300_000)
    data = json.dumps(big).encode()
    done = run_statusline("--", "sh", "-c", "wc -c", payload=data)
    assert done.stdout.decode().strip() == str(len(data))


@pytest.mark.parametrize(
    "payload",
    [b"not json at all", b"[1, 2, 3]", b"", json.dumps({"session_id": 5, "rate_limits": "full"}).encode()],
    ids=["garbage", "not-an-object", "empty", "odd-types"],
)
def test_whatever_the_payload_the_status_line_still_shows(xdg_dirs, payload):
    done = run_statusline("--", "sh", "-c", "echo mine", payload=payload)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"mine\n", b"")
    assert run_statusline(payload=payload).returncode == 0


def test_an_unwritable_runtime_dir_never_fails_the_status_line(xdg_dirs, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    done = run_statusline("--", "sh", "-c", "echo mine", env={"XDG_RUNTIME_DIR": str(blocker)})
    assert (done.returncode, done.stdout, done.stderr) == (0, b"mine\n", b"")


def test_a_command_that_cannot_run_says_so_like_a_shell(xdg_dirs):
    done = run_statusline("--", "no-such-status-line-command")
    assert done.returncode == 127 and b"cannot run no-such-status-line-command" in done.stderr
    assert len(files(xdg_dirs)) == 1  # recorded all the same


def test_a_payload_without_rate_limits_keeps_the_last_figures_and_its_prompt_cache(xdg_dirs):
    run_statusline()
    later = {"session_id": "other", "cwd": "/home/me/cart", "prompt_cache": {"warm": False, "recache_tokens_if_cold": 9}}
    run_statusline(payload=json.dumps(later).encode())
    (path,) = files(xdg_dirs)
    kept = json.loads(path.read_text())
    assert kept["rate_limits"] == PAYLOAD["rate_limits"]
    assert list(kept["sessions"]) == ["0b7e1a52", "other"]


def test_one_file_per_account_told_by_its_config_dir(xdg_dirs):
    home = xdg_dirs["HOME"]
    (home / "work").mkdir()
    run_statusline()
    run_statusline(env={"CLAUDE_CONFIG_DIR": str(home / ".claude")})  # the default account, spelled out
    run_statusline(env={"CLAUDE_CONFIG_DIR": str(home / "work")})
    run_statusline(env={"CLAUDE_CONFIG_DIR": "~/work"})
    run_statusline(env={"ANTHROPIC_API_KEY": "sk-secret"})
    found = [json.loads(p.read_text())["env"] for p in files(xdg_dirs)]
    assert len(found) == 4  # the default, spelled out or not, is one file; ~/work and its path are one
    assert all("sk-secret" not in json.dumps(e) for e in found)
    assert {"selecting": {}, "credentials": ["ANTHROPIC_API_KEY"], "home": str(home)} in found


def test_the_status_line_never_opens_the_store_nor_loads_the_plugins(xdg_dirs):
    probe = ("import sys, io\n"
             "sys.stdin = io.TextIOWrapper(io.BytesIO(" + repr(json.dumps(PAYLOAD).encode()) + "))\n"
             "from afd.cli.main import main\n"
             "main(['statusline'])\n"
             "bad = sorted(m for m in sys.modules if m in ('sqlite3', 'pluggy', 'afd.record.store', 'afd.pluginset'))\n"
             "print('loaded:', bad)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=30)
    assert done.stdout.splitlines()[-1] == "loaded: []", done.stderr


def test_the_account_variables_are_claudes_own():
    spec = load_plugins(None).agents["claude"]
    assert statusline.ACCOUNT_VARS == spec.account_env
    assert statusline.CREDENTIAL_VARS == spec.credential_env


# --- install / uninstall ------------------------------------------------------------


def settings_of(folder: Path) -> dict:
    return json.loads((folder / "settings.json").read_text())


def test_install_wraps_the_users_command_keeps_every_key_backs_up_and_says_what_changed(xdg_dirs, capsys, monkeypatch):
    monkeypatch.setenv("PATH", f"{Path(AFD).parent}:{os.environ['PATH']}")
    folder = xdg_dirs["HOME"] / ".claude"
    folder.mkdir()
    user = """printf '%s' "$(basename "$PWD") it's mine" """.strip()
    original = {"theme": "dark", "statusLine": {"type": "command", "command": user, "padding": 1},
                "permissions": {"allow": ["Bash(git status)"]}, "model": "opus"}
    (folder / "settings.json").write_text(json.dumps(original, indent=4))
    before = (folder / "settings.json").read_text()
    assert main(["statusline", "install"]) == 0
    out = capsys.readouterr().out
    new = settings_of(folder)
    assert {k: v for k, v in new.items() if k != "statusLine"} == {k: v for k, v in original.items() if k != "statusLine"}
    command = new["statusLine"]["command"]
    assert new["statusLine"]["padding"] == 1
    assert command == f"{shlex.quote(AFD)} statusline -- sh -c {shlex.quote(user)}"  # afd by its absolute path
    (backup,) = folder.glob("settings.json.afd-backup-*")
    assert backup.read_text() == before
    assert f"before: {user}" in out and f"after:  {command}" in out and f"backup: {backup}" in out

    # What Claude Code would run shows what the user's command showed, on the same stdin.
    data = json.dumps(PAYLOAD).encode()
    ours = subprocess.run(["sh", "-c", command], input=data, capture_output=True, cwd=xdg_dirs["HOME"], timeout=30)
    theirs = subprocess.run(["sh", "-c", user], input=data, capture_output=True, cwd=xdg_dirs["HOME"])
    assert ours.stdout == theirs.stdout == b"home it's mine"

    assert main(["statusline", "install"]) == 0
    assert "already; nothing changed" in capsys.readouterr().out
    assert main(["statusline", "uninstall"]) == 0
    assert settings_of(folder) == original


def test_install_without_a_status_line_adds_afds_own_and_uninstall_takes_it_out(xdg_dirs, capsys):
    folder = xdg_dirs["HOME"] / ".claude"
    assert main(["statusline", "install", "--json"]) == 0
    change = json.loads(capsys.readouterr().out)
    assert (change["before"], change["backup"], change["changed"]) == (None, None, True)
    assert shlex.split(settings_of(folder)["statusLine"]["command"])[-1] == "statusline"
    assert main(["statusline", "uninstall"]) == 0
    assert settings_of(folder) == {}


def test_install_for_a_configured_account_edits_its_config_dir(xdg_dirs, capsys):
    config = xdg_dirs["XDG_CONFIG_HOME"] / "afd" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[accounts.claude-work]\nagent = "claude"\nenv = { CLAUDE_CONFIG_DIR = "~/.claude-work" }\n')
    assert main(["statusline", "install", "--account", "claude-work"]) == 0
    assert "statusLine" in settings_of(xdg_dirs["HOME"] / ".claude-work")
    assert not (xdg_dirs["HOME"] / ".claude").exists()
    assert main(["statusline", "install", "--account", "codex"]) == 2
    assert '"codex" is not a claude account (known: claude, claude-work)' in capsys.readouterr().err


def test_a_settings_file_that_is_not_json_is_left_alone(xdg_dirs, capsys):
    folder = xdg_dirs["HOME"] / ".claude"
    folder.mkdir()
    (folder / "settings.json").write_text('{"theme": "dark",,}')
    assert main(["statusline", "install"]) == 2
    assert "is not valid JSON" in capsys.readouterr().err
    assert (folder / "settings.json").read_text() == '{"theme": "dark",,}'
    assert list(folder.iterdir()) == [folder / "settings.json"]


def test_doctor_says_per_account_whether_it_is_installed_and_names_a_project_that_overrides_it(xdg_dirs, tmp_path):
    from afd.cli.common import load_effective
    from afd.cli.doctor import statusline_checks

    config = xdg_dirs["XDG_CONFIG_HOME"] / "afd" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[accounts.claude-work]\nagent = "claude"\nenv = { CLAUDE_CONFIG_DIR = "~/.claude-work" }\n')
    assert main(["statusline", "install", "--account", "claude-work"]) == 0
    project = tmp_path / "shop"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.local.json").write_text(json.dumps({"statusLine": {"type": "command", "command": "echo x"}}))
    cfg, plugins = load_effective(None)
    checks = statusline_checks(cfg, plugins, project_dirs=[str(project)])
    assert [(name, status) for name, status, _ in checks] == [
        ("statusline claude", "warn"), ("statusline claude-work", "ok"), ("statusline override", "warn")]
    assert "not installed" in checks[0][2] and "--account claude" in checks[0][2]
    assert str(project / ".claude" / "settings.local.json") in checks[2][2]
