"""Plugin loading: built-ins, entry points and drop-ins through one manager, failures isolated."""

from __future__ import annotations

import json
import logging
import textwrap
from datetime import datetime, timezone

import pytest

from afd.cli.main import main
from afd.model import Clock
from afd.pluginset import BUILTIN, DROP_IN, ENTRY_POINT, load_plugins

CLOCK = Clock(now=datetime(2026, 7, 13, 9, tzinfo=timezone.utc), local_zone=timezone.utc)

ECHO_PLUGIN = textwrap.dedent(
    '''
    from afd import hookimpl
    from afd.model import AgentSpec, Detection

    @hookimpl
    def afd_agents():
        return [AgentSpec(name="{agent}", executables=("{agent}",), command=("{agent}",))]

    @hookimpl
    def afd_detect(agent, lines, clock, pattern):
        if agent != "{agent}":
            return None
        for i, row in enumerate(lines):
            if "{marker}" in row:
                return Detection(agent, i, i, None, "{name}.test", row)
        return None
    '''
)


def write_plugin(folder, name, agent, marker="OUT OF QUOTA"):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    path.write_text(ECHO_PLUGIN.format(agent=agent, marker=marker, name=name))
    return path


def test_builtins_provide_claude_codex_and_devin():
    plugins = load_plugins(None, entry_points=False)
    assert {"claude", "codex", "devin"} <= set(plugins.agents)
    assert {p.name: p.source for p in plugins.plugins if p.name in ("claude", "codex", "devin")} == {
        "claude": BUILTIN,
        "codex": BUILTIN,
        "devin": BUILTIN,
    }
    assert not plugins.failures


def test_drop_in_file_adds_an_agent(tmp_path):
    write_plugin(tmp_path, "gemini_watch", "gemini")
    plugins = load_plugins(tmp_path, entry_points=False)
    info = next(p for p in plugins.plugins if p.name == "gemini_watch")
    assert info.source == DROP_IN and info.agents == ("gemini",)
    assert set(info.hooks) == {"afd_agents", "afd_detect"}
    found = plugins.detect("gemini", ["working", "OUT OF QUOTA"], CLOCK)
    assert found is not None and found.first_row == 1


def test_broken_drop_in_is_named_and_skipped_while_others_load(tmp_path):
    (tmp_path / "broken.py").write_text("import nonexistent_module_for_afd\n")
    write_plugin(tmp_path, "good", "gemini")
    plugins = load_plugins(tmp_path, entry_points=False)
    assert [f.name for f in plugins.failures] == ["broken"]
    assert "nonexistent_module_for_afd" in plugins.failures[0].error
    assert "gemini" in plugins.agents and "claude" in plugins.agents


def test_plugin_whose_agents_hook_raises_is_skipped(tmp_path):
    (tmp_path / "bad_agents.py").write_text(
        "from afd import hookimpl\n@hookimpl\ndef afd_agents():\n    raise RuntimeError('boom')\n"
    )
    plugins = load_plugins(tmp_path, entry_points=False)
    assert [f.name for f in plugins.failures] == ["bad_agents"]
    assert "boom" in plugins.failures[0].error


def test_raising_detector_counts_as_no_detection_and_is_logged_once(tmp_path, caplog):
    (tmp_path / "raiser.py").write_text(
        textwrap.dedent(
            """
            from afd import hookimpl
            from afd.model import AgentSpec

            @hookimpl
            def afd_agents():
                return [AgentSpec(name="flaky", executables=("flaky",), command=("flaky",))]

            @hookimpl
            def afd_detect(agent, lines, clock, pattern):
                if agent == "flaky":
                    raise ValueError("cannot parse")
            """
        )
    )
    plugins = load_plugins(tmp_path, entry_points=False)
    with caplog.at_level(logging.ERROR, logger="afd.plugins"):
        assert plugins.detect("flaky", ["x"], CLOCK) is None
        assert plugins.detect("flaky", ["y"], CLOCK) is None
    assert sum("cannot parse" in r.getMessage() for r in caplog.records) == 1
    # the built-ins still answer for their own agents
    assert plugins.detect("devin", ["Quota exhausted"], CLOCK) is not None


def test_third_party_plugin_overrides_a_builtin_agent(tmp_path):
    write_plugin(tmp_path, "my_claude", "claude", marker="CUSTOM WALL")
    plugins = load_plugins(tmp_path, entry_points=False)
    assert plugins.owners["claude"] == "my_claude"
    info = next(p for p in plugins.plugins if p.name == "my_claude")
    assert info.overrides == ("claude (from claude)",)
    # the override replaces the built-in: its banner counts, the built-in's does not
    assert plugins.detect("claude", ["CUSTOM WALL"], CLOCK) is not None
    assert plugins.detect("claude", ["Claude AI usage limit reached|1783940400"], CLOCK) is None


def test_entry_point_plugin_is_loaded(tmp_path, monkeypatch):
    site = tmp_path / "site"
    write_plugin(site, "afd_ep_plugin", "amp")
    dist = site / "afd_ep_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: afd-ep-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[afd.detectors]\namp = afd_ep_plugin\n")
    monkeypatch.syspath_prepend(str(site))
    plugins = load_plugins(None)
    info = next(p for p in plugins.plugins if p.name == "amp")
    assert info.source == ENTRY_POINT and "afd-ep-plugin" in info.origin
    assert plugins.detect("amp", ["OUT OF QUOTA"], CLOCK) is not None


def test_event_plugin_failure_never_raises(tmp_path, caplog):
    (tmp_path / "notifier.py").write_text(
        "from afd import hookimpl\n@hookimpl\ndef afd_event(event):\n    raise OSError('webhook down')\n"
    )
    seen = tmp_path / "seen.txt"
    (tmp_path / "recorder.py").write_text(
        f"from afd import hookimpl\n@hookimpl\ndef afd_event(event):\n    open({str(seen)!r}, 'a').write(event.kind + '\\n')\n"
    )
    from afd.model import Event

    plugins = load_plugins(tmp_path, entry_points=False)
    with caplog.at_level(logging.ERROR, logger="afd.plugins"):
        plugins.emit(Event(at=CLOCK.now, kind="session.limited", message="m"))
    assert seen.read_text() == "session.limited\n"
    assert any("webhook down" in r.getMessage() for r in caplog.records)


def test_drop_in_named_like_a_builtin_overrides_it(tmp_path):
    # plugins_dir/claude.py is the obvious name for a replacement of the built-in claude
    write_plugin(tmp_path, "claude", "claude", marker="CUSTOM WALL")
    plugins = load_plugins(tmp_path, entry_points=False)
    assert not plugins.failures
    info = next(p for p in plugins.plugins if p.source == DROP_IN)
    assert info.name == "drop-in:claude" and info.overrides == ("claude (from claude)",)
    assert plugins.owners["claude"] == "drop-in:claude"
    assert plugins.detect("claude", ["CUSTOM WALL"], CLOCK) is not None


def test_drop_in_that_exits_is_skipped_not_fatal(tmp_path):
    (tmp_path / "quitter.py").write_text("import sys\nsys.exit(3)\n")
    write_plugin(tmp_path, "good", "gemini")
    plugins = load_plugins(tmp_path, entry_points=False)
    assert [(f.name, f.error) for f in plugins.failures] == [("quitter", "SystemExit: 3")]
    assert "gemini" in plugins.agents


def test_detector_that_exits_counts_as_no_detection(tmp_path):
    (tmp_path / "exiter.py").write_text(
        textwrap.dedent(
            """
            import sys
            from afd import hookimpl
            from afd.model import AgentSpec

            @hookimpl
            def afd_agents():
                return [AgentSpec(name="exiter", executables=("exiter",), command=("exiter",))]

            @hookimpl
            def afd_detect(agent, lines, clock, pattern):
                sys.exit(1)
            """
        )
    )
    plugins = load_plugins(tmp_path, entry_points=False)
    assert plugins.detect("exiter", ["x"], CLOCK) is None


def test_misspelt_hook_is_named_and_the_plugin_skipped(tmp_path):
    (tmp_path / "typo.py").write_text(
        "from afd import hookimpl\n@hookimpl\ndef afd_detct(agent, lines, clock, pattern):\n    return None\n"
    )
    plugins = load_plugins(tmp_path, entry_points=False)
    assert [(f.name, f.error) for f in plugins.failures] == [
        ("typo", "afd_detct is not an afd hook (did you mean afd_detect?)")
    ]
    assert all(p.name != "typo" for p in plugins.plugins)


# -- `afd plugins` -----------------------------------------------------------


@pytest.fixture
def plugins_config(xdg_dirs, tmp_path):
    """A config whose plugins_dir holds an overriding drop-in and a broken one."""
    folder = tmp_path / "a-rather-long-folder-name-for-drop-in-plugins" / "plugins"
    write_plugin(folder, "claude", "claude", marker="CUSTOM WALL")
    (folder / "broken.py").write_text("import nonexistent_module_for_afd\n")
    config = tmp_path / "afd.toml"
    config.write_text(f'plugins_dir = "{folder}"\n')
    return config, folder


def test_cli_plugins_json_is_pure_json_with_warnings_on_stderr(plugins_config, capsys):
    config, folder = plugins_config
    assert main(["plugins", "--json", "--config", str(config)]) == 0
    out, err = capsys.readouterr()
    shown = json.loads(out)
    assert set(shown) == {"plugins_dir", "plugins", "agents", "failed"}
    assert {p["name"] for p in shown["plugins"]} >= {"claude", "codex", "devin", "drop-in:claude"}
    assert shown["agents"]["claude"] == "drop-in:claude"
    assert [f["name"] for f in shown["failed"]] == ["broken"]
    assert "plugin broken" in err


def test_cli_plugins_piped_keeps_each_path_whole_on_its_row(plugins_config, capsys):
    config, folder = plugins_config
    assert main(["plugins", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "\x1b[" not in out
    row = next(line for line in out.splitlines() if "drop-in:claude" in line)
    assert str(folder / "claude.py") in row and "overrides claude (from claude)" in row
    assert any(line.startswith("failed broken") for line in out.splitlines())


CLAUDE_WALL = ["⏺ Working on it", "", "⎿  You've hit your 5-hour limit · resets 9:42pm (UTC)", "", "> "]

HOOK_PLUGIN = textwrap.dedent(
    '''
    from datetime import datetime
    from afd import hookimpl
    from afd.model import Detection

    CALLS = []

    @hookimpl({opts})
    def afd_detect(agent, lines, clock, pattern):
        CALLS.append(agent)
        if agent != "claude":
            return None
        return {result}
    '''
)


def hook_plugin(folder, name, result, opts=""):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.py").write_text(HOOK_PLUGIN.format(opts=opts, result=result))
    plugins = load_plugins(folder, entry_points=False)
    assert not plugins.failures, plugins.failures
    return plugins


def test_tryfirst_detector_is_asked_before_the_builtin(tmp_path):
    plugins = hook_plugin(tmp_path, "first", 'Detection(agent, 2, 2, None, "first.custom", lines[2])', "tryfirst=True")
    assert plugins.detect("claude", CLAUDE_WALL, CLOCK).kind == "first.custom"


def test_trylast_detector_is_asked_only_after_the_builtin(tmp_path):
    plugins = hook_plugin(tmp_path, "last", 'Detection(agent, 2, 2, None, "last.custom", lines[2])', "trylast=True")
    assert plugins.detect("claude", CLAUDE_WALL, CLOCK).kind.startswith("claude.")


WRAPPER_PLUGIN = textwrap.dedent(
    '''
    from dataclasses import replace
    from afd import hookimpl

    SEEN = []

    @hookimpl(wrapper=True)
    def afd_detect(agent, lines, clock, pattern):
        found = yield
        SEEN.append(found)
        return replace(found, kind="wrapped") if found is not None else None
    '''
)


def test_a_standard_hook_wrapper_wraps_detection_and_does_not_crash_afd_detect(tmp_path, capsys):
    (tmp_path / "wrap.py").write_text(WRAPPER_PLUGIN)
    plugins = load_plugins(tmp_path, entry_points=False)
    assert plugins.detect("claude", CLAUDE_WALL, CLOCK).kind == "wrapped"
    assert plugins.detect("claude", ["nothing here"], CLOCK) is None
    capture = tmp_path / "capture.txt"
    capture.write_text("\n".join(CLAUDE_WALL) + "\n")
    config = tmp_path / "config.toml"
    config.write_text(f'plugins_dir = "{tmp_path}"\n')
    code = main(["detect", "--config", str(config), "--agent", "claude", "--json", str(capture), str(capture)])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["hit"] is True


@pytest.mark.parametrize(
    "result",
    [
        'Detection(agent, 2, 2, datetime(2026, 7, 13, 21, 42), "bad.naive", lines[2])',
        'Detection(agent, 2, 99, None, "bad.rows", lines[2])',
        'Detection(agent, "2", 2, None, "bad.type", lines[2])',
        '"a limit!"',
    ],
    ids=["naive reset_at", "rows past the capture", "row not an int", "not a Detection"],
)
def test_a_bad_detection_is_isolated_like_a_raising_one(tmp_path, caplog, result):
    plugins = hook_plugin(tmp_path, "bad", result, "tryfirst=True")
    with caplog.at_level(logging.ERROR, logger="afd.plugins"):
        first = plugins.detect("claude", CLAUDE_WALL, CLOCK)
        plugins.detect("claude", CLAUDE_WALL, CLOCK)
    # the bad one counts as no detection and the built-in behind it still answers
    assert first is not None and first.kind.startswith("claude.")
    assert sum("bad" in r.getMessage() and "afd_detect" in r.getMessage() for r in caplog.records) == 1
