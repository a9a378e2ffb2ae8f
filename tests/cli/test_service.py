"""The systemd user unit and `afd service install|uninstall`."""

from __future__ import annotations

import configparser
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from afd.cli import service
from afd.cli.main import build_parser, main
from afd.errors import EXIT_USAGE

REPO = Path(__file__).resolve().parents[2]


def parse_unit(text: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str  # systemd keys are case-sensitive
    parser.read_string(text)
    return parser


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def exec_start_words(unit: str) -> list[str]:
    line = parse_unit(unit)["Service"]["ExecStart"]
    # Undo systemd's specifier/variable doubling; quoting follows shell rules closely enough here.
    return shlex.split(line.replace("%%", "%").replace("$$", "$"))


def test_packaged_unit_and_contrib_unit_are_identical():
    assert (REPO / "afd" / "data" / "afd.service").read_bytes() == (REPO / "contrib" / "systemd" / "afd.service").read_bytes()


def test_packaged_unit_is_readable_as_package_data():
    assert service.template() == (REPO / "contrib" / "systemd" / "afd.service").read_text()


@pytest.mark.parametrize(
    ("key", "value"),
    [
        pytest.param("Type", "notify", id="type-notify"),
        pytest.param("NotifyAccess", "main", id="notify-access"),
        pytest.param("ExecReload", "/bin/kill -HUP $MAINPID", id="reload-sends-sighup"),
        pytest.param("WatchdogSec", "30s", id="watchdog"),
        pytest.param("Restart", "on-failure", id="restart"),
        pytest.param("RestartPreventExitStatus", "78", id="no-restart-on-bad-config"),
        pytest.param("RestartSec", "5s", id="restart-delay"),
    ],
)
def test_unit_service_section_has(key, value):
    assert parse_unit(service.template())["Service"][key] == value


def test_unit_template_runs_afd_run_and_is_wanted_by_default_target():
    unit = parse_unit(service.template())
    assert unit["Service"]["ExecStart"].endswith("afd run")
    assert unit["Install"]["WantedBy"] == "default.target"


def test_unit_has_no_private_tmp_because_tmux_sockets_live_in_tmp():
    assert "PrivateTmp" not in parse_unit(service.template())["Service"]


def test_install_uninstall_round_trip(tmp_path, capsys):
    target = tmp_path / "units"
    code, out, _ = run_cli(capsys, "service", "install", "--dir", str(target))
    assert code == 0
    unit_file = target / "afd.service"
    assert f"Wrote {unit_file}" in out
    assert service.ENABLE_LINE in out
    assert oct(unit_file.stat().st_mode & 0o777) == "0o644"
    assert parse_unit(unit_file.read_text())["Service"]["Type"] == "notify"

    code, out, _ = run_cli(capsys, "service", "uninstall", "--dir", str(target))
    assert code == 0
    assert f"Removed {unit_file}" in out and service.STOP_LINE in out
    assert not unit_file.exists()

    code, out, _ = run_cli(capsys, "service", "uninstall", "--dir", str(target))
    assert code == 0
    # nothing was removed, so there is no service to stop
    assert "Nothing to remove" in out and service.STOP_LINE not in out


def test_install_json_names_the_path_and_the_next_step(tmp_path, capsys):
    code, out, err = run_cli(capsys, "service", "install", "--dir", str(tmp_path), "--json")
    assert code == 0
    result = json.loads(out)
    assert result["action"] == "installed"
    assert result["path"] == str(tmp_path / "afd.service")
    assert result["next"] == "systemctl --user daemon-reload && systemctl --user enable --now afd"
    assert result["exec_start"].endswith(" run")

    code, out, _ = run_cli(capsys, "service", "uninstall", "--dir", str(tmp_path), "--json")
    assert json.loads(out)["action"] == "removed"
    code, out, _ = run_cli(capsys, "service", "uninstall", "--dir", str(tmp_path), "--json")
    assert json.loads(out)["action"] == "absent"


def test_install_defaults_to_the_xdg_config_systemd_user_dir(xdg_dirs, capsys):
    code, out, _ = run_cli(capsys, "service", "install", "--json")
    assert code == 0
    expected = xdg_dirs["XDG_CONFIG_HOME"] / "systemd" / "user" / "afd.service"
    assert json.loads(out)["path"] == str(expected)
    assert expected.is_file()


def test_installed_exec_start_runs_this_afd(tmp_path, capsys):
    run_cli(capsys, "service", "install", "--dir", str(tmp_path))
    words = exec_start_words((tmp_path / "afd.service").read_text())
    assert words[-1] == "run"
    assert os.path.isabs(words[0])
    version = subprocess.run([*words[:-1], "--version"], capture_output=True, text=True, timeout=60)
    assert version.stdout.strip().startswith("afd ")


def test_install_again_with_the_same_unit_is_unchanged(tmp_path, capsys):
    run_cli(capsys, "service", "install", "--dir", str(tmp_path))
    code, out, _ = run_cli(capsys, "service", "install", "--dir", str(tmp_path), "--json")
    assert code == 0
    assert json.loads(out)["action"] == "unchanged"


def test_install_refuses_to_overwrite_a_different_unit_without_force(tmp_path, capsys):
    unit_file = tmp_path / "afd.service"
    unit_file.write_text("[Service]\nExecStart=/opt/my-own/afd run\n")
    code, out, err = run_cli(capsys, "service", "install", "--dir", str(tmp_path))
    assert code == EXIT_USAGE
    assert "--force" in err
    assert unit_file.read_text() == "[Service]\nExecStart=/opt/my-own/afd run\n"

    code, out, _ = run_cli(capsys, "service", "install", "--dir", str(tmp_path), "--force", "--json")
    assert code == 0
    assert json.loads(out)["action"] == "replaced"
    assert parse_unit(unit_file.read_text())["Service"]["Type"] == "notify"


def test_uninstall_keeps_an_enabled_unit_until_it_is_disabled_or_forced(tmp_path, capsys):
    run_cli(capsys, "service", "install", "--dir", str(tmp_path))
    wants = tmp_path / "default.target.wants"
    wants.mkdir()
    (wants / "afd.service").symlink_to(tmp_path / "afd.service")

    code, _, err = run_cli(capsys, "service", "uninstall", "--dir", str(tmp_path))
    assert code == EXIT_USAGE
    assert "systemctl --user disable --now afd" in err
    assert (tmp_path / "afd.service").exists()

    code, out, _ = run_cli(capsys, "service", "uninstall", "--dir", str(tmp_path), "--force")
    assert code == 0
    assert not (tmp_path / "afd.service").exists()
    assert not (wants / "afd.service").is_symlink()


def test_dir_that_is_a_file_is_refused(tmp_path, capsys):
    not_dir = tmp_path / "file"
    not_dir.write_text("")
    code, _, err = run_cli(capsys, "service", "install", "--dir", str(not_dir))
    assert code == EXIT_USAGE
    assert "is not a directory" in err


def test_afd_command_uses_the_console_script_it_was_started_as(tmp_path):
    script = tmp_path / "afd"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    assert service.afd_command(str(script), "/usr/bin/python3") == [str(script)]


@pytest.mark.parametrize(
    "argv0",
    [
        pytest.param("/somewhere/afd/__main__.py", id="python-m-afd"),
        pytest.param("/nonexistent/bin/afd", id="afd-that-is-not-there"),
        pytest.param("/usr/bin/pytest", id="embedded"),
    ],
)
def test_afd_command_falls_back_to_this_interpreter(argv0):
    assert service.afd_command(argv0, "/venv/bin/python") == ["/venv/bin/python", "-m", "afd"]


@pytest.mark.parametrize(
    ("word", "quoted"),
    [
        pytest.param("/home/me/.local/bin/afd", "/home/me/.local/bin/afd", id="plain"),
        pytest.param("/home/my user/afd", '"/home/my user/afd"', id="space"),
        pytest.param("/opt/100%/afd", "/opt/100%%/afd", id="percent-specifier"),
        pytest.param("/opt/$HOME/afd", "/opt/$$HOME/afd", id="dollar-variable"),
        pytest.param('/opt/a"b/afd', '"/opt/a\\"b/afd"', id="double-quote"),
    ],
)
def test_systemd_word_quoting(word, quoted):
    assert service.systemd_word(word) == quoted


def test_unit_text_replaces_only_the_exec_start_line():
    rendered = service.unit_text(["/x/afd"])
    template = service.template()
    changed = [(a, b) for a, b in zip(template.splitlines(), rendered.splitlines(), strict=False) if a != b]
    assert changed == [("ExecStart=%h/.local/bin/afd run", "ExecStart=/x/afd run")]


def test_every_service_option_has_help_text():
    parser = build_parser()
    service_parser = parser._subparsers._group_actions[0].choices["service"]
    actions = service_parser._subparsers._group_actions[0].choices
    assert set(actions) == {"install", "uninstall"}
    for name, sub in actions.items():
        assert sub.description, name
        for action in sub._actions:
            assert action.help, f"{name} {action.option_strings}"


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed on this machine")
def test_installed_unit_passes_systemd_analyze_verify(xdg_dirs, capsys):
    run_cli(capsys, "service", "install")
    unit_file = xdg_dirs["XDG_CONFIG_HOME"] / "systemd" / "user" / "afd.service"
    result = subprocess.run(
        ["systemd-analyze", "--user", "verify", str(unit_file)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "SYSTEMD_LOG_LEVEL": "notice"},
    )
    report = result.stdout + result.stderr
    assert result.returncode == 0, report
    # verify exits 0 on unknown keys or bad values; it only warns about them.
    assert "afd.service" not in report, report


def test_cli_runs_as_a_module_with_service_help():
    result = subprocess.run(
        [sys.executable, "-m", "afd", "service", "install", "--help"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0
    assert "--force" in result.stdout
