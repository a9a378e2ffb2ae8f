"""Agent manifests: reading with FILE:LINE errors, the generic detector, overrides, budgets, records."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from afd.model import AgentProcess, Clock, PromptDelivery, WitnessState
from afd.pluginset import BUILTIN_MANIFEST, MANIFEST, load_plugins

NOW = datetime(2026, 7, 13, 9, 0, tzinfo=timezone.utc)
CLOCK = Clock(NOW, timezone.utc)

MYCLI = r"""
name = "mycli"
description = "a test agent"

[process]
executables = ["mycli"]
argv_patterns = ['@acme/mycli']

[launch]
command = ["mycli", "--fast"]
resume_args = ["--continue"]
first_prompt = "typed"

[accounts]
select_env = ["MYCLI_HOME"]
credential_env = ["MYCLI_API_KEY"]

[screen]
composer = '^› '
transcript = '^[•■]'
chrome = ['^\s+\? for shortcuts']
busy = ['esc to interrupt']
volatile = ['(?<=retrying in )\d+s']
submitted = '^›\s*\S'
reset_notice = '^• Quota is back\b'

[[banner]]
kind = "quota"
regex = '^■ Quota used up\.'
continuation = '^\S'
reset = 'comes back (?:at (?:(?P<date>[A-Z][a-z]{2} \d{1,2}),? )?(?P<clock>\d{1,2}:\d{2}\s*[AP]M)(?: \((?P<zone>[^)]+)\))?|in (?P<relative>[\dhms ]+)|on (?P<epoch>\d{10}))'

[[banner]]
kind = "spend-cap"
regex = '^■ Your workspace spent its budget\.'
offers_other_model = true

[[not_limit]]
regex = '\bretrying in \d+s\b'
why = "a throttle it retries by itself"
"""


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def mycli(tmp_path):
    write(tmp_path / "plugins", "mycli.toml", MYCLI)
    return load_plugins(tmp_path / "plugins", entry_points=False)


def test_a_manifest_becomes_an_agent_spec_with_every_form(mycli):
    assert not mycli.failures
    spec = mycli.agents["mycli"]
    assert spec.executables == ("mycli",) and spec.command == ("mycli", "--fast")
    assert spec.resume_args == ("--continue",) and spec.prompt_delivery is PromptDelivery.TYPED
    assert spec.account_env == ("MYCLI_HOME",) and spec.credential_env == ("MYCLI_API_KEY",)
    assert [p.pattern for p in spec.chrome] == ["^› ", r"^\s+\? for shortcuts"]
    assert [p.pattern for p in spec.volatile] == [r"(?<=retrying in )\d+s"]
    info = next(p for p in mycli.plugins if p.name == "mycli")
    assert info.source == MANIFEST and info.hooks == ("afd_agents", "afd_detect")


def test_the_shipped_manifests_load(tmp_path):
    plugins = load_plugins(None, entry_points=False)
    shipped = [p for p in plugins.plugins if p.source == BUILTIN_MANIFEST]
    assert {p.name for p in shipped} >= {"gemini", "opencode", "copilot"}
    assert not plugins.failures


def detect(plugins, rows, pattern=None):
    return plugins.detect("mycli", rows, CLOCK, pattern)


SCREEN_TAIL = ["", "› ", "  ? for shortcuts"]


@pytest.mark.parametrize(
    ("wall", "reset"),
    [
        pytest.param(["■ Quota used up. It comes back at 11:45 PM (UTC)."], datetime(2026, 7, 13, 23, 45, tzinfo=timezone.utc), id="clock-zone"),
        pytest.param(["■ Quota used up. It comes back at 10:57 PM (GMT-3)."], datetime(2026, 7, 14, 1, 57, tzinfo=timezone.utc), id="offset-zone"),
        pytest.param(["■ Quota used up. It comes back at Jul 20, 8:00 AM (UTC)."], datetime(2026, 7, 20, 8, 0, tzinfo=timezone.utc), id="date-clock"),
        pytest.param(["■ Quota used up. It comes back in 2h5m."], NOW + timedelta(hours=2, minutes=5), id="compact-relative"),
        pytest.param(["■ Quota used up. It comes back on 1784000000."], datetime.fromtimestamp(1784000000, timezone.utc), id="epoch"),
        pytest.param(["■ Quota used up. It comes", "back in 3h."], NOW + timedelta(hours=3), id="wrapped"),
        pytest.param(["■ Quota used up. Try later."], None, id="no-reset"),
    ],
)
def test_a_wall_and_its_reset_clause(mycli, wall, reset):
    rows = ["• I'll take care of that.", "", *wall, *SCREEN_TAIL]
    found = detect(mycli, rows)
    assert found is not None and found.kind == "mycli.quota"
    assert (found.first_row, found.last_row, found.chrome_row) == (2, 1 + len(wall), 3 + len(wall))
    assert found.reset_at == reset


@pytest.mark.parametrize(
    "rows",
    [
        pytest.param(["• Let me show the docs:", "  ■ Quota used up. It comes back in 3h."], id="indented-output"),
        pytest.param(["■ Quota used up, retrying in 5s"], id="not-a-limit-rule"),
        pytest.param(["■ Quota used up. It comes back in 3h.", "", "› go on", "", "• Sure."], id="answered-prompt-below"),
        pytest.param(["■ Quota used up. It comes back in 3h.", "", "• Quota is back"], id="reset-notice"),
        pytest.param(["```", "■ Quota used up. It comes back in 3h.", "```"], id="code-fence"),
        pytest.param(["• fine", "", "›  ■ Quota used up. It comes back in 3h."], id="in-the-composer"),
    ],
)
def test_what_is_not_a_wall(mycli, rows):
    assert detect(mycli, [*rows, *SCREEN_TAIL[1:]] if rows[-1].startswith("›") else [*rows, *SCREEN_TAIL]) is None


def test_a_wall_that_offers_another_model_keeps_its_kind_and_states_no_reset(mycli):
    found = detect(mycli, ["■ Your workspace spent its budget.", *SCREEN_TAIL])
    assert found.kind == "mycli.spend-cap" and found.reset_at is None
    # the manifest states the offer; needs_human follows from it, never declared
    assert found.offers_other_model is True and found.needs_human is False


def test_a_users_limit_pattern_replaces_the_banner_rules(mycli):
    import re

    found = detect(mycli, ["• I am out of juice", *SCREEN_TAIL], re.compile("out of juice"))
    assert found.kind == "mycli.pattern" and found.reset_at is None


def test_a_backtracking_regex_is_tripped_and_named_not_left_to_hang_the_poll(tmp_path, caplog):
    text = MYCLI.replace("regex = '^■ Quota used up\\.'", "regex = '^(a|aa)+$'")
    write(tmp_path / "plugins", "mycli.toml", text)
    plugins = load_plugins(tmp_path / "plugins", entry_points=False)
    with caplog.at_level(logging.WARNING, logger="afd.config"):
        assert detect(plugins, ["a" * 40 + "b", *SCREEN_TAIL]) is None
        assert detect(plugins, ["a" * 40 + "b", *SCREEN_TAIL]) is None
    [warning] = [r.getMessage() for r in caplog.records if "took over" in r.getMessage()]
    assert f"{tmp_path / 'plugins' / 'mycli.toml'}:" in warning


BROKEN = """name = "Bad Name"
[process]
executables = ["x"]
argv_patterns = ['(unclosed']
[screen]
busy = ['(?P<clock>x)']
colour = "red"
volatile = ['[unclosed']
[[banner]]
kind = "quota"
regex = '^wall (?P<when>.+)'
[[banner]]
regex = '^other wall'
needs_human = true
"""


def test_every_problem_of_a_broken_manifest_is_named_with_its_line_and_the_rest_load(tmp_path):
    write(tmp_path / "plugins", "broken.toml", BROKEN)
    write(tmp_path / "plugins", "syntax.toml", 'name = "s"\n[process\nexecutables = []\n')
    write(tmp_path / "plugins", "mycli.toml", MYCLI)
    plugins = load_plugins(tmp_path / "plugins", entry_points=False)
    assert "mycli" in plugins.agents and "broken" not in plugins.agents
    failed = {f.name: f.error for f in plugins.failures}
    path = tmp_path / "plugins" / "broken.toml"
    lines = failed["broken"].split("; ")
    assert lines[0].startswith(f"{path}:1: name: expected an agent name")
    assert lines[1].startswith(f"{path}:4: process.argv_patterns: invalid regex")
    assert lines[2] == f"{path}:6: screen.busy: named groups mean something only in a [[banner]] regex or reset, or in screen.pasted"
    assert lines[3].startswith(f"{path}:7: screen.colour: unknown key")
    assert lines[4].startswith(f"{path}:8: screen.volatile: invalid regex")
    assert lines[5].startswith(f"{path}:11: banner.1.regex: unknown group 'when'")
    assert f"{path}:12: banner.2: needs a kind" in lines
    assert f"{path}:14: banner.2.needs_human: is derived from the reset clause and offers_other_model, never declared: remove it" in lines
    assert failed["syntax"].startswith(f"{tmp_path / 'plugins' / 'syntax.toml'}:2: invalid TOML")


def test_a_manifest_overrides_a_built_in_agent(tmp_path):
    text = MYCLI.replace('name = "mycli"', 'name = "devin"')
    write(tmp_path / "plugins", "devin.toml", text)
    plugins = load_plugins(tmp_path / "plugins", entry_points=False)
    assert plugins.owners["devin"] == "manifest:devin"
    info = next(p for p in plugins.plugins if p.name == "manifest:devin")
    assert info.overrides == ("devin (from devin)",)
    found = plugins.detect("devin", ["■ Quota used up. It comes back in 3h.", *SCREEN_TAIL], CLOCK)
    assert found.kind == "devin.quota"
    # The built-in's own banner is no longer this agent's wall.
    assert plugins.detect("devin", ["Quota exhausted", *SCREEN_TAIL], CLOCK) is None


def test_afd_detect_reads_captures_of_a_manifest_agent(tmp_path):
    write(tmp_path / "plugins", "mycli.toml", MYCLI)
    config = write(tmp_path, "config.toml", f'plugins_dir = "{tmp_path / "plugins"}"\n')
    capture = write(tmp_path, "1.txt", "\n".join(["• ok", "", "■ Quota used up. It comes back in 2h5m.", *SCREEN_TAIL]) + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "afd", "detect", "--agent", "mycli", "--config", str(config), "--now", NOW.isoformat(), "--json", str(capture), str(capture)],
        capture_output=True, text=True, timeout=30,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["limited"] is True and out["reset_at"] == "2026-07-13T11:05:00Z"


RECORDS = MYCLI + """
[records]
dir = ".mycli"
dir_env = "MYCLI_HOME"
files = "sessions/*.jsonl"
timestamp = "ts"
wall = { path = "error.type", equals = "quota_exhausted" }
progress = "reply"
reset = "error.resets_at"
cwd = "cwd"
"""


def test_a_manifests_records_witness_the_wall_and_what_came_after(tmp_path, monkeypatch):
    write(tmp_path / "plugins", "mycli.toml", RECORDS)
    plugins = load_plugins(tmp_path / "plugins", entry_points=False)
    assert plugins.has_witness("mycli")
    home = tmp_path / "mh"
    monkeypatch.setenv("MYCLI_HOME", str(home))
    reset = int((NOW + timedelta(hours=2)).timestamp())
    lines = [
        {"ts": "2026-07-13T08:50:00Z", "cwd": "/src/app", "reply": "done"},
        {"ts": "2026-07-13T08:55:00Z", "cwd": "/src/app", "error": {"type": "quota_exhausted", "resets_at": reset}},
    ]
    log = write(home / "sessions", "a.jsonl", "".join(json.dumps(r) + "\n" for r in lines))
    process = AgentProcess(pid=None, cwd="/src/app", start_time=None)
    verdict = plugins.witness("mycli", process, None, NOW)
    assert verdict.state is WitnessState.LIMITED and verdict.reset_at == NOW + timedelta(hours=2)
    assert verdict.record == str(log)
    assert plugins.witness("mycli", AgentProcess(None, "/elsewhere", None), None, NOW).state is WitnessState.UNKNOWN

    with log.open("a") as fh:
        fh.write(json.dumps({"ts": "2026-07-13T08:58:00Z", "cwd": "/src/app", "reply": "went on"}) + "\n")
    assert plugins.witness("mycli", process, None, NOW).state is WitnessState.NOT_LIMITED


GEMINI_RECORDS = Path(__file__).parent.parent / "data" / "real" / "gemini" / "records" / "session-2026-12-03T07-19-bc8ca697.jsonl"


@pytest.mark.parametrize(
    ("until", "state"),
    [
        # Gemini CLI 0.61.0 writes the error only once its quota dialog is answered.
        ("2026-12-03T07:20:10Z", WitnessState.UNKNOWN),
        ("2026-12-03T07:20:30Z", WitnessState.LIMITED),  # `exceeded your current quota. Please retry in 7200s`
        ("2026-12-03T07:21:40Z", WitnessState.NOT_LIMITED),  # a reply after it
        ("2026-12-03T07:22:00Z", WitnessState.LIMITED),  # `exhausted your daily quota`
    ],
)
def test_gemini_manifest_reads_a_real_gemini_session_record(until, state):
    plugins = load_plugins(None, entry_points=False)
    at = datetime.fromisoformat(until.replace("Z", "+00:00"))
    verdict = plugins.witness("gemini", AgentProcess(None, None, None), None, at, GEMINI_RECORDS)
    assert verdict.state is state, verdict.why
