import json
import os
import textwrap
from dataclasses import fields
from pathlib import Path

import pytest

from afd.cli.main import main
from afd.config.settings import (
    AgentOverride,
    Config,
    ConfigError,
    compiled_limit_patterns,
    default_config_path,
    effective_items,
    load_config,
    set_value,
)
from afd.decide.policy import LimitAction

REPO = Path(__file__).resolve().parents[2]
KNOWN = {"claude", "codex", "devin"}
NOT_STATE = {"path", "from_file", "warnings"}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def problems_of(path: Path, **kwargs) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config(path, **kwargs)
    return [str(p) for p in info.value.problems]


@pytest.fixture
def cfg(xdg_dirs) -> Path:
    """Where a test's explicit config file goes (not the default path)."""
    return xdg_dirs["HOME"] / "afd.toml"


@pytest.fixture
def default_file(xdg_dirs) -> Path:
    return xdg_dirs["XDG_CONFIG_HOME"] / "afd" / "config.toml"


# -- where the config comes from --------------------------------------------


def test_default_path_follows_xdg_config_home_at_call_time(xdg_dirs, monkeypatch, tmp_path):
    assert default_config_path() == xdg_dirs["XDG_CONFIG_HOME"] / "afd" / "config.toml"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert default_config_path() == tmp_path / "afd" / "config.toml"


def test_relative_xdg_config_home_is_ignored(xdg_dirs, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/dir")
    assert default_config_path() == xdg_dirs["HOME"] / ".config" / "afd" / "config.toml"


def test_missing_default_file_means_all_defaults(xdg_dirs):
    config = load_config()
    assert config == Config()
    assert config.path is None
    assert config.from_file == frozenset()


def test_defaults_resume_and_hand_off_nothing(xdg_dirs):
    config = load_config()
    assert config.limit_action == "wait"
    assert config.limit_auto_resume is False
    assert config.handoff_order == ()


def test_default_dirs_follow_xdg(xdg_dirs):
    config = Config()
    assert config.worktree_root == xdg_dirs["XDG_DATA_HOME"] / "afd" / "worktrees"
    assert config.plugins_dir == xdg_dirs["XDG_CONFIG_HOME"] / "afd" / "plugins"


def test_missing_explicit_file_is_an_error(cfg):
    assert problems_of(cfg) == [f"{cfg}: no such config file"]


def test_default_file_is_read_when_present(default_file):
    write(default_file, 'tail_lines = 5\n')
    config = load_config()
    assert config.tail_lines == 5
    assert config.path == default_file


def test_config_in_current_directory_is_ignored(xdg_dirs, monkeypatch, tmp_path, capsys):
    write(tmp_path / "config.toml", "tail_lines = 9\n")
    write(tmp_path / "afd" / "config.toml", "tail_lines = 9\n")
    write(tmp_path / ".afd.toml", "tail_lines = 9\n")
    monkeypatch.chdir(tmp_path)
    assert load_config().tail_lines == 3
    assert main(["config", "show", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tail_lines"] == {"value": 3, "source": "default"}


def test_unreadable_file_is_one_clear_problem(cfg):
    cfg.mkdir()
    assert problems_of(cfg) == [f"{cfg}: is a directory, not a config file"]


# -- reading values ---------------------------------------------------------


def test_every_key_is_read(cfg, xdg_dirs):
    write(
        cfg,
        """
        poll_interval = "500ms"
        tail_lines = 4
        stability_polls = 3
        limit_action = "handoff"
        limit_auto_resume = true
        limit_retry_interval = "1h30m"
        resume_grace = "90s"
        handoff_order = ["codex", "claude"]
        handoff_brief = "Run the tests first."
        handoff_max_per_session = 5
        watch_all_panes = false
        watch_ignore = ["scratch:*", "*:9.*"]
        worktree_root = "~/wt"
        plugins_dir = "/opt/afd-plugins"

        [tmux]
        socket_name = "work"

        [agents.codex]
        command = ["codex", "--full-auto"]
        resume_args = ["resume", "--last"]

        [agents.claude]
        resume_args = []

        [limit_patterns]
        devin = 'Quota\\s+exhausted'
        """,
    )
    config = load_config(cfg, known_agents=KNOWN)
    assert config.poll_interval == 0.5
    assert config.tail_lines == 4
    assert config.stability_polls == 3
    assert config.limit_action is LimitAction.HANDOFF  # typed, and still the word in the file
    assert config.limit_auto_resume is True
    assert config.limit_retry_interval == 5400
    assert config.resume_grace == 90
    assert config.handoff_order == ("codex", "claude")
    assert config.handoff_brief == "Run the tests first."
    assert config.handoff_max_per_session == 5
    assert config.watch_all_panes is False
    assert config.watch_ignore == ("scratch:*", "*:9.*")
    assert config.worktree_root == xdg_dirs["HOME"] / "wt"
    assert config.plugins_dir == Path("/opt/afd-plugins")
    assert config.tmux_socket_name == "work"
    assert config.tmux_socket_path is None
    assert dict(config.agents) == {
        "codex": AgentOverride(command=("codex", "--full-auto"), resume_args=("resume", "--last")),
        "claude": AgentOverride(command=None, resume_args=()),
    }
    assert dict(config.limit_patterns) == {"devin": r"Quota\s+exhausted"}
    assert config.path == cfg
    assert "tmux.socket_name" in config.from_file
    assert "agents.codex.command" in config.from_file
    assert "limit_patterns.devin" in config.from_file
    assert "tail_lines" in config.from_file
    assert "tmux.socket_path" not in config.from_file


@pytest.mark.parametrize(
    "value, expected",
    [('"0"', None), ('""', None), ("0", None), ('"45m"', 2700.0)],
    ids=["zero-string", "empty-string", "bare-zero", "duration"],
)
def test_retry_interval_zero_or_empty_disables_the_fallback(cfg, value, expected):
    write(cfg, f"limit_retry_interval = {value}\n")
    assert load_config(cfg).limit_retry_interval == expected


def test_resume_grace_may_be_zero(cfg):
    write(cfg, 'resume_grace = "0"\n')
    assert load_config(cfg).resume_grace == 0


def test_handoff_with_an_order_is_valid(cfg):
    write(cfg, 'limit_action = "handoff"\nhandoff_order = ["codex"]\n')
    assert load_config(cfg, known_agents=KNOWN).handoff_order == ("codex",)


# -- problems, each with its line -------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            'tail_lines = 3\npoll_intervall = "2s"\n',
            '2: poll_intervall: unknown key (did you mean "poll_interval"?)',
        ),
        ("tail_line = 2\n", '1: tail_line: unknown key (did you mean "tail_lines"?)'),
        ("colour = 1\n", "1: colour: unknown key (`afd config show` lists every key)"),
        ('socket_name = "x"\n', '1: socket_name: unknown key here (did you mean "tmux.socket_name"?)'),
        ('[tmux]\nsockt_path = "/tmp/s"\n', '2: tmux.sockt_path: unknown key (did you mean "socket_path"?)'),
        ('[agents.codex]\ncomand = ["codex"]\n', '2: agents.codex.comand: unknown key (did you mean "command"?)'),
        ('tail_lines = "3"\n', '1: tail_lines: expected an integer, got string "3"'),
        ("tail_lines = true\n", "1: tail_lines: expected an integer, got boolean true"),
        ("tail_lines = 0\n", "1: tail_lines: must be at least 1, got 0"),
        ("stability_polls = 0\n", "1: stability_polls: must be at least 1, got 0"),
        (
            "handoff_max_per_session = 0\n",
            "1: handoff_max_per_session: must be at least 1, got 0 (to turn handoff off, set handoff_order = [])",
        ),
        ('limit_auto_resume = "yes"\n', '1: limit_auto_resume: expected true or false, got string "yes"'),
        ('limit_action = "handof"\n', '1: limit_action: must be "wait" or "handoff", got "handof"'),
        (
            'poll_interval = "2x"\n',
            '1: poll_interval: "2x" is not a duration (use a number with a unit: ms, s, m, h, d, e.g. "90s" or "1h30m")',
        ),
        (
            'poll_interval = "30"\n',
            '1: poll_interval: "30" has no unit (use a number with a unit: ms, s, m, h, d, e.g. "90s" or "1h30m")',
        ),
        ("poll_interval = 2\n", '1: poll_interval: expected a duration string such as "90s", got integer 2'),
        ('poll_interval = "0"\n', '1: poll_interval: must be longer than zero, got "0"'),
        ('poll_interval = "2h"\n', '1: poll_interval: must be at most "1h", got "2h"'),
        ('resume_grace = "400d"\n', '1: resume_grace: "400d" is too long (at most "365d")'),
        (
            'limit_retry_interval = "soon"\n',
            '1: limit_retry_interval: "soon" is not a duration (use a number with a unit: ms, s, m, h, d, '
            'e.g. "90s" or "1h30m"); "0" or "" turns it off',
        ),
        (
            'handoff_order = "codex"\n',
            '1: handoff_order: expected an array of strings such as ["codex", "claude"], got string "codex"',
        ),
        ('handoff_order = ["codex", "codex"]\n', '1: handoff_order: "codex" is listed twice'),
        (
            "watch_ignore = [1]\n",
            '1: watch_ignore: expected an array of strings such as ["scratch:*"], but it holds integer 1',
        ),
        ('worktree_root = "wt"\n', '1: worktree_root: must be an absolute path or start with ~, got "wt"'),
        ('plugins_dir = ""\n', "1: plugins_dir: must not be empty"),
        ('tmux = "work"\n', '1: tmux: expected a table ([tmux]), got string "work"'),
        (
            '[tmux]\nsocket_name = "work"\nsocket_path = "/tmp/s"\n',
            "3: tmux.socket_path: set socket_name or socket_path, not both",
        ),
        ('[agents.codex]\ncommand = []\n', '2: agents.codex.command: must name the program to run, e.g. ["codex"]'),
        (
            '[agents.codex]\nresume_args = "resume"\n',
            '2: agents.codex.resume_args: expected an array of strings such as ["resume", "--last"], '
            'got string "resume"',
        ),
        ('[limit_patterns]\ncodex = 3\n', "2: limit_patterns.codex: expected a regex string, got integer 3"),
        (
            "[limit_patterns]\ncodex = '(unclosed'\n",
            "2: limit_patterns.codex: invalid regex: missing ), unterminated subpattern at position 0",
        ),
        (
            'limit_action = "handoff"\nhandoff_order = []\n',
            '1: limit_action: "handoff" needs a non-empty handoff_order, e.g. handoff_order = ["codex"] '
            '(or set limit_action = "wait")',
        ),
    ],
    ids=[
        "unknown-key-suggested",
        "unknown-key-near-miss",
        "unknown-key-no-match",
        "table-key-at-top-level",
        "unknown-tmux-key",
        "unknown-agent-key",
        "int-as-string",
        "bool-is-not-int",
        "tail-lines-zero",
        "stability-polls-zero",
        "max-handoffs-zero",
        "bool-as-string",
        "bad-limit-action",
        "bad-duration-unit",
        "duration-without-unit",
        "duration-not-a-string",
        "poll-interval-zero",
        "poll-interval-too-long",
        "duration-longer-than-a-year",
        "bad-optional-duration",
        "order-not-a-list",
        "order-duplicate",
        "ignore-not-strings",
        "relative-path",
        "empty-path",
        "table-as-string",
        "both-sockets",
        "empty-command",
        "resume-args-not-a-list",
        "pattern-not-a-string",
        "pattern-does-not-compile",
        "handoff-without-order",
    ],
)
def test_problem_names_file_line_and_key(cfg, text, expected):
    write(cfg, text)
    assert problems_of(cfg) == [f"{cfg}:{expected}"]


@pytest.mark.parametrize(
    "text, line, col",
    [
        ("a = 1\nb = \n", 2, 5),
        ('tail_lines = 3\n[tmux]\nsocket_name = "abc\n', 3, 19),
        # A key given twice is found as a whole line: the column is its start.
        ("tail_lines = 3\ntail_lines = 4\n", 2, 1),
        ("x = 1 2\n", 1, 7),
    ],
    ids=["missing-value", "unterminated-string", "duplicate-key", "two-values"],
)
def test_syntax_error_has_line_and_column(cfg, text, line, col):
    write(cfg, text)
    (problem,) = problems_of(cfg)
    assert problem.startswith(f"{cfg}:{line}:{col}: invalid TOML: ")


def test_syntax_error_at_the_end_of_the_file_names_the_last_line(cfg):
    write(cfg, 'tail_lines = 3\nhandoff_order = ["codex"\n')
    assert problems_of(cfg) == [f"{cfg}:2: invalid TOML: unclosed array at the end of the file"]


def test_a_byte_order_mark_is_not_a_syntax_error(cfg):
    cfg.write_bytes(b'\xef\xbb\xbftail_lines = 4\n')
    assert load_config(cfg).tail_lines == 4


def test_every_problem_is_listed_not_just_the_first(cfg):
    write(
        cfg,
        """
        poll_interval = "fast"
        tail_lines = 0
        limit_action = "maybe"

        [tmux]
        socket = "x"
        """,
    )
    problems = problems_of(cfg)
    assert [p.split(": ")[1] for p in problems] == ["poll_interval", "tail_lines", "limit_action", "tmux.socket"]
    assert [int(p.split(":")[1]) for p in problems] == [1, 2, 3, 6]


def test_key_inside_a_multiline_string_is_not_taken_for_its_line(cfg):
    write(
        cfg,
        '''
        handoff_brief = """
        tail_lines = 1
        """
        tail_lines = 0
        ''',
    )
    assert problems_of(cfg) == [f"{cfg}:4: tail_lines: must be at least 1, got 0"]


def test_problem_in_inline_table_points_at_its_line(cfg):
    write(cfg, 'tail_lines = 3\ntmux = { sockt_name = "x" }\n')
    assert problems_of(cfg) == [f'{cfg}:2: tmux.sockt_name: unknown key (did you mean "socket_name"?)']


# -- agent names ------------------------------------------------------------


def test_unknown_agent_in_handoff_order_names_the_known_ones(cfg):
    write(cfg, 'tail_lines = 3\nhandoff_order = ["codex", "gemni"]\n')
    assert problems_of(cfg, known_agents=KNOWN) == [
        f'{cfg}:2: handoff_order: "gemni" is neither an agent any plugin provides (known: claude, codex, devin) '
        "nor an account (accounts: none configured)"
    ]


def test_unknown_agent_in_tables_is_reported_at_its_header(cfg):
    write(
        cfg,
        """
        [agents.gemni]
        command = ["gemini"]

        [limit_patterns]
        cursor = 'limit'
        """,
    )
    assert problems_of(cfg, known_agents=KNOWN) == [
        f'{cfg}:1: agents.gemni: "gemni" is not an agent any plugin provides (known: claude, codex, devin)',
        f'{cfg}:5: limit_patterns.cursor: "cursor" is not an agent any plugin provides (known: claude, codex, devin)',
    ]


def test_agent_names_are_not_checked_before_plugins_are_known(cfg):
    write(cfg, 'handoff_order = ["gemni"]\n')
    assert load_config(cfg).handoff_order == ("gemni",)


def test_partial_config_keeps_the_valid_keys(cfg):
    write(cfg, 'tail_lines = 0\nplugins_dir = "/opt/p"\n')
    with pytest.raises(ConfigError) as info:
        load_config(cfg)
    assert info.value.partial.plugins_dir == Path("/opt/p")
    assert info.value.partial.tail_lines == 3


# -- limit patterns: strict for check, lenient for a running daemon ---------


def test_lenient_patterns_keep_the_builtin_and_warn(cfg):
    write(cfg, "[limit_patterns]\ncodex = '(unclosed'\ndevin = 'Quota'\n")
    config = load_config(cfg, lenient_patterns=True)
    assert dict(config.limit_patterns) == {"devin": "Quota"}
    assert [str(w) for w in config.warnings] == [
        # the caller that reports it adds what happens next, so the problem does not say it
        f"{cfg}:2: limit_patterns.codex: invalid regex: missing ), unterminated subpattern at position 0"
    ]
    assert compiled_limit_patterns(config)["devin"].pattern == "Quota"


def test_lenient_patterns_still_refuse_other_problems(cfg):
    write(cfg, "tail_lines = 0\n[limit_patterns]\ncodex = '('\n")
    assert problems_of(cfg, lenient_patterns=True) == [f"{cfg}:1: tail_lines: must be at least 1, got 0"]


# -- config set -------------------------------------------------------------

COMMENTED = """\
# my afd settings
poll_interval = "2s"  # fast enough
tail_lines = 3

# handoff is off for now
handoff_order = []

[tmux]
# the work server
socket_name = "work"
"""


def test_set_keeps_comments_and_order(cfg):
    cfg.write_text(COMMENTED)
    config = set_value(cfg, "poll_interval", '"5s"', known_agents=KNOWN)
    assert config.poll_interval == 5
    assert cfg.read_text() == COMMENTED.replace('"2s"', '"5s"')


def test_set_adds_a_new_top_level_key_before_the_tables(cfg):
    cfg.write_text(COMMENTED)
    set_value(cfg, "watch_all_panes", "false", known_agents=KNOWN)
    text = cfg.read_text()
    assert text.index("watch_all_panes = false") < text.index("[tmux]")
    assert "# the work server" in text and "# fast enough" in text
    assert load_config(cfg).watch_all_panes is False


@pytest.mark.parametrize(
    "key, value, problem",
    [
        ("tail_lines", "0", "tail_lines: must be at least 1, got 0"),
        ("limit_action", "handoff", 'limit_action: "handoff" needs a non-empty handoff_order'),
        ("handoff_order", '["gemni"]', 'handoff_order: "gemni" is neither an agent any plugin provides'),
        ("poll_intervall", '"5s"', 'poll_intervall: unknown key (did you mean "poll_interval"?)'),
        ("handoff_order", "[codex", "handoff_order: [codex is not a TOML value"),
        ("tmux.socket_name.x", "1", "tmux.socket_name: is string \"work\", not a table"),
        ("limit_patterns.codex", "'('", "limit_patterns.codex: invalid regex"),
        ("tail_lines", "3\nx = 1", "tail_lines: a value must fit on one line"),
    ],
    ids=["out-of-range", "half-configured", "unknown-agent", "unknown-key", "not-toml", "into-a-scalar", "bad-regex", "newline"],
)
def test_set_refuses_an_invalid_result_and_leaves_the_file_untouched(cfg, key, value, problem):
    cfg.write_text(COMMENTED)
    before = cfg.read_bytes()
    with pytest.raises(ConfigError) as info:
        set_value(cfg, key, value, known_agents=KNOWN)
    assert any(problem in str(p) for p in info.value.problems), info.value.problems
    assert cfg.read_bytes() == before
    assert sorted(p.name for p in cfg.parent.iterdir()) == [cfg.name]


def test_set_refuses_when_the_existing_file_is_broken(cfg):
    cfg.write_text("tail_lines = 3\nbad = \n")
    before = cfg.read_bytes()
    with pytest.raises(ConfigError) as info:
        set_value(cfg, "tail_lines", "4", known_agents=KNOWN)
    assert str(info.value.problems[0]).startswith(f"{cfg}:2:")
    assert cfg.read_bytes() == before


def test_refused_set_points_at_lines_of_the_file_as_it_is(cfg):
    cfg.write_text(COMMENTED)
    with pytest.raises(ConfigError) as info:
        set_value(cfg, "tail_lines", "0", known_agents=KNOWN)
    assert [str(p) for p in info.value.problems] == [f"{cfg}:3: tail_lines: must be at least 1, got 0"]


def test_refused_set_of_a_new_key_names_no_line_the_file_lacks(cfg):
    cfg.write_text(COMMENTED)
    with pytest.raises(ConfigError) as info:
        set_value(cfg, "poll_intervall", '"5s"', known_agents=KNOWN)
    assert [str(p) for p in info.value.problems] == [
        f'{cfg}: poll_intervall: unknown key (did you mean "poll_interval"?)'
    ]


def test_set_of_a_new_table_leaves_the_file_ending_in_a_newline(cfg):
    cfg.write_text(COMMENTED)
    set_value(cfg, "limit_patterns.devin", "'Quota'", known_agents=KNOWN)
    assert cfg.read_text().endswith("devin = 'Quota'\n")


@pytest.mark.parametrize(
    "value, expected",
    [("handoff", "handoff"), ("hello", "hello"), ('"quoted words"', "quoted words"), ("two words", "two words")],
    ids=["word", "another-word", "toml-string", "bare-words"],
)
def test_set_takes_a_bare_word_as_a_string(cfg, value, expected):
    set_value(cfg, "handoff_brief", value, known_agents=KNOWN)
    assert load_config(cfg).handoff_brief == expected


def test_set_typed_values(cfg):
    set_value(cfg, "handoff_order", '["codex", "claude"]', known_agents=KNOWN)
    set_value(cfg, "limit_action", "handoff", known_agents=KNOWN)
    set_value(cfg, "limit_auto_resume", "true", known_agents=KNOWN)
    set_value(cfg, "tail_lines", "4", known_agents=KNOWN)
    set_value(cfg, "limit_retry_interval", "0", known_agents=KNOWN)
    config = set_value(cfg, "resume_grace", "90s", known_agents=KNOWN)
    assert config.handoff_order == ("codex", "claude")
    assert config.limit_action == "handoff"
    assert config.limit_auto_resume is True
    assert config.tail_lines == 4
    assert config.limit_retry_interval is None
    assert config.resume_grace == 90


def test_set_dotted_keys_make_tables(cfg):
    set_value(cfg, "agents.codex.command", '["codex", "--full-auto"]', known_agents=KNOWN)
    set_value(cfg, "agents.codex.resume_args", '["resume", "--last"]', known_agents=KNOWN)
    set_value(cfg, "tmux.socket_name", "work", known_agents=KNOWN)
    config = set_value(cfg, "limit_patterns.devin", r"'Quota\s+exhausted'", known_agents=KNOWN)
    assert config.agents["codex"] == AgentOverride(("codex", "--full-auto"), ("resume", "--last"))
    assert config.tmux_socket_name == "work"
    assert config.limit_patterns["devin"] == r"Quota\s+exhausted"
    text = cfg.read_text()
    assert "[agents.codex]" in text and "[agents]\n" not in text
    assert "[tmux]" in text and "[limit_patterns]" in text


def test_set_replaces_a_value_inside_an_existing_table(cfg):
    cfg.write_text(COMMENTED)
    set_value(cfg, "tmux.socket_name", "play", known_agents=KNOWN)
    assert cfg.read_text() == COMMENTED.replace('"work"', '"play"')


def test_set_creates_the_file_and_its_directory(xdg_dirs):
    path = xdg_dirs["XDG_CONFIG_HOME"] / "afd" / "config.toml"
    assert not path.parent.exists()
    set_value(path, "tail_lines", "5", known_agents=KNOWN)
    assert path.read_text() == "tail_lines = 5\n"
    assert load_config().tail_lines == 5


def test_set_writes_through_a_symlink_and_keeps_the_mode(cfg, tmp_path):
    real = tmp_path / "dotfiles" / "afd.toml"
    write(real, COMMENTED)
    real.chmod(0o640)
    cfg.symlink_to(real)
    set_value(cfg, "tail_lines", "4", known_agents=KNOWN)
    assert cfg.is_symlink()
    assert "tail_lines = 4" in real.read_text()
    assert real.stat().st_mode & 0o777 == 0o640


# -- effective values -------------------------------------------------------


def test_effective_items_mark_file_and_default(cfg):
    write(cfg, 'tail_lines = 4\nlimit_retry_interval = ""\n[agents.codex]\ncommand = ["codex"]\n')
    items = {key: (value, source) for key, value, source in effective_items(load_config(cfg))}
    assert items["tail_lines"] == (4, "file")
    assert items["limit_retry_interval"] == ("0", "file")
    assert items["poll_interval"] == ("2s", "default")
    assert items["tmux.socket_name"] == (None, "default")
    assert items["agents.codex.command"] == (["codex"], "file")
    assert "agents.codex.resume_args" not in items


# -- the example file -------------------------------------------------------


def test_example_config_holds_exactly_the_defaults(xdg_dirs):
    config = load_config(REPO / "config.example.toml", known_agents=KNOWN)
    for f in fields(Config):
        if f.name not in NOT_STATE:
            assert getattr(config, f.name) == getattr(Config(), f.name), f.name


def test_example_config_names_every_key():
    text = (REPO / "config.example.toml").read_text()
    for key, _, _ in effective_items(Config()):
        assert key.split(".")[-1] in text, key
    for key in ("agents.", "command", "resume_args", "limit_patterns"):
        assert key in text


def test_example_config_passes_check(xdg_dirs, capsys):
    assert main(["config", "check", "--config", str(REPO / "config.example.toml")]) == 0
    assert capsys.readouterr().out.startswith("ok")


# -- the CLI ----------------------------------------------------------------


def test_cli_check_ok_without_a_file(xdg_dirs, capsys):
    assert main(["config", "check"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ok: ") and "does not exist" in out


def test_cli_check_lists_every_problem_one_per_line(cfg, capsys):
    write(cfg, 'tail_lines = 0\npoll_intervall = "2s"\nhandoff_order = ["gemni"]\n')
    assert main(["config", "check", "--config", str(cfg)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{cfg}:1: tail_lines: must be at least 1, got 0"
    assert lines[1] == f'{cfg}:2: poll_intervall: unknown key (did you mean "poll_interval"?)'
    assert lines[2].startswith(f'{cfg}:3: handoff_order: "gemni" is neither an agent any plugin provides (known: ')
    assert len(lines) == 3


def test_cli_check_syntax_error(cfg, capsys):
    write(cfg, "a = 1\nb = \n")
    assert main(["config", "check", "--config", str(cfg)]) == 1
    assert capsys.readouterr().out.startswith(f"{cfg}:2:5: invalid TOML")


def test_cli_check_missing_explicit_file_is_usage_error(cfg, capsys):
    assert main(["config", "check", "--config", str(cfg)]) == 2
    assert "no such config file" in capsys.readouterr().err


def test_cli_check_knows_agents_from_a_drop_in_plugin(cfg, tmp_path, capsys):
    plugins = tmp_path / "plugins"
    write(
        plugins / "cfgtest_fakeagent.py",
        """
        from afd import hookimpl
        from afd.model import AgentSpec

        @hookimpl
        def afd_agents():
            return [AgentSpec(name="fakeagent", executables=("fakeagent",), command=("fakeagent",))]
        """,
    )
    write(cfg, f'plugins_dir = "{plugins}"\nhandoff_order = ["fakeagent"]\n')
    assert main(["config", "check", "--config", str(cfg)]) == 0, capsys.readouterr().out


def test_cli_show_json_is_one_object_of_value_and_source(cfg, capsys):
    write(cfg, '[tmux]\nsocket_name = "work"\n[limit_patterns]\ndevin = "Quota"\n')
    assert main(["config", "show", "--config", str(cfg), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert all(set(entry) == {"value", "source"} for entry in shown.values())
    assert shown["tmux.socket_name"] == {"value": "work", "source": "file"}
    assert shown["tmux.socket_path"] == {"value": None, "source": "default"}
    assert shown["limit_patterns.devin"] == {"value": "Quota", "source": "file"}
    assert shown["poll_interval"] == {"value": "2s", "source": "default"}
    assert shown["handoff_order"] == {"value": [], "source": "default"}
    assert shown["limit_auto_resume"] == {"value": False, "source": "default"}


def test_cli_show_table_marks_sources(cfg, capsys):
    write(cfg, "tail_lines = 7\n")
    assert main(["config", "show", "--config", str(cfg)]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if "tail_lines" in line)
    assert "7" in row and "file" in row
    row = next(line for line in out.splitlines() if "poll_interval" in line)
    assert "default" in row


def test_cli_show_refuses_an_invalid_config(cfg, capsys):
    write(cfg, "tail_lines = 0\n")
    assert main(["config", "show", "--config", str(cfg)]) == 1
    assert f"{cfg}:1: tail_lines" in capsys.readouterr().err


def test_cli_path_says_whether_the_file_exists(default_file, capsys):
    assert main(["config", "path"]) == 0
    assert capsys.readouterr().out.strip() == f"{default_file} (does not exist; the defaults are in force)"
    write(default_file, "")
    assert main(["config", "path", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"path": str(default_file), "exists": True}


def test_cli_path_of_a_missing_explicit_file_does_not_promise_defaults(cfg, capsys):
    assert main(["config", "path", "--config", str(cfg)]) == 0
    out = capsys.readouterr().out
    assert str(cfg) in out and "defaults are in force" not in out and "refuses" in out


def test_cli_check_warns_about_a_skipped_drop_in_and_still_passes(cfg, tmp_path, capsys):
    plugins = tmp_path / "plugins"
    write(plugins / "cfgtest_broken.py", "import nonexistent_module_for_afd\n")
    write(cfg, f'plugins_dir = "{plugins}"\n')
    assert main(["config", "check", "--config", str(cfg)]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("ok:")
    assert "plugin cfgtest_broken" in err and "nonexistent_module_for_afd" in err


def test_cli_set_refusal_on_a_missing_file_says_nothing_was_created(default_file, capsys):
    assert main(["config", "set", "limit_action", "handoff"]) == 1
    assert f"{default_file} not created" in capsys.readouterr().err
    assert not default_file.exists()


def test_cli_set_round_trip(default_file, capsys):
    write(default_file, COMMENTED)
    assert main(["config", "set", "handoff_order", '["codex"]']) == 0
    assert main(["config", "set", "limit_action", "handoff"]) == 0
    out = capsys.readouterr().out
    assert f'limit_action = "handoff" in {default_file}' in out
    text = default_file.read_text()
    assert "# handoff is off for now" in text and 'handoff_order = ["codex"]' in text
    assert load_config().limit_action == "handoff"


def test_cli_set_refusal_exits_1_and_leaves_the_file(default_file, capsys):
    write(default_file, COMMENTED)
    before = default_file.read_bytes()
    assert main(["config", "set", "limit_action", "handoff"]) == 1
    err = capsys.readouterr().err
    assert "left unchanged" in err and "needs a non-empty handoff_order" in err
    assert default_file.read_bytes() == before


def test_cli_config_without_subcommand_is_usage_error(xdg_dirs, capsys):
    with pytest.raises(SystemExit) as info:
        main(["config"])
    assert info.value.code == 2


def test_cli_help_on_every_subcommand_and_option(xdg_dirs):
    import argparse

    from afd.cli.main import build_parser

    def subparsers(parser):
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        return action

    top = subparsers(build_parser())
    config = top.choices["config"]
    assert config.description
    commands = subparsers(config)
    assert set(commands.choices) == {"check", "show", "path", "set"}
    helps = {choice.dest: choice.help for choice in commands._choices_actions}
    for name, parser in commands.choices.items():
        assert helps[name], name
        for action in parser._actions:
            assert action.help, f"config {name} {action.dest}"


def test_running_as_module_works(xdg_dirs):
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "afd", "config", "check"], capture_output=True, text=True, env=dict(os.environ), timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok")


# --- hardening: what a config cannot do to afd -----------------------------------


@pytest.mark.parametrize("depth", [pytest.param(5000, id="deep-array"), pytest.param(100_000, id="very-deep-array")])
def test_a_deeply_nested_config_is_a_config_problem(tmp_path, depth):
    cfg = tmp_path / "afd.toml"
    cfg.write_text("watch_ignore = " + "[" * depth + "]" * depth + "\n")
    with pytest.raises(ConfigError) as caught:
        load_config(cfg, known_agents=KNOWN)
    assert "nested too deeply" in str(caught.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param('poll_interval = "1ms"\n', '1: poll_interval: must be at least "200ms", got "1ms"', id="poll-too-fast"),
        pytest.param("stability_polls = 1000\n", "1: stability_polls: must be at most 20, got 1000", id="too-many-polls"),
    ],
)
def test_poll_interval_and_stability_polls_have_sane_bounds(tmp_path, text, message):
    cfg = tmp_path / "afd.toml"
    cfg.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(cfg, known_agents=KNOWN)
    assert str(caught.value) == f"{cfg}:{message}"


def test_the_bounds_themselves_are_accepted(tmp_path):
    cfg = tmp_path / "afd.toml"
    cfg.write_text('poll_interval = "200ms"\nstability_polls = 20\n')
    config = load_config(cfg, known_agents=KNOWN)
    assert (config.poll_interval, config.stability_polls) == (0.2, 20)


def test_a_catastrophic_user_pattern_cannot_hang_detection(tmp_path):
    import threading
    from datetime import datetime, timezone

    from afd.model import Clock
    from afd.pluginset import load_plugins

    cfg = tmp_path / "afd.toml"
    cfg.write_text('[limit_patterns]\nclaude = "(a|aa)+$"\n')
    config = load_config(cfg, known_agents=KNOWN)
    plugins = load_plugins(config.plugins_dir)
    pattern = compiled_limit_patterns(config)["claude"]
    rows = ["a" * 60 + "!"] * 5
    clock = Clock(now=datetime(2026, 7, 1, tzinfo=timezone.utc), local_zone=timezone.utc)
    found: list[object] = []
    worker = threading.Thread(target=lambda: found.append(plugins.detect("claude", rows, clock, pattern)), daemon=True)
    worker.start()
    worker.join(timeout=60)  # a guard against the hang itself, not a timing assertion
    assert not worker.is_alive(), "the user's pattern held detection"
    assert found == [None]
    # Tripped: from now on the plugin's built-in pattern is in force for claude.
    assert "claude" not in compiled_limit_patterns(config)


# -- usage before the wall: percents -------------------------------------------


def test_usage_keys_default_to_off_except_the_warnings(xdg_dirs):
    config = Config()
    assert (config.handoff_before, config.spend_warn_at, config.cold_cache_tokens) == (None, None, 0)
    assert config.usage_warn_at == (80.0, 95.0) and config.usage_stale_after == 900.0
    assert (config.handoff_rank, config.handoff_before_min_wait) == ("order", 1800.0)


@pytest.mark.parametrize(
    "value, expected",
    [('"95%"', 95.0), ("95", 95.0), ("97.5", 97.5), ('" 90 % "', 90.0), ('""', None), ('"0"', None)],
    ids=["percent-string", "number", "fraction", "spaces", "empty-is-off", "zero-is-off"],
)
def test_a_percent_is_a_string_with_a_sign_or_a_number(cfg, value, expected):
    write(cfg, f'handoff_order = ["codex"]\nhandoff_before = {value}\nspend_warn_at = {value}\n')
    config = load_config(cfg, known_agents=KNOWN)
    assert (config.handoff_before, config.spend_warn_at) == (expected, expected)


@pytest.mark.parametrize(
    "text, expected",
    [
        ('handoff_order = ["codex"]\n\nhandoff_before = "95 percent"\n',
         '3: handoff_before: expected a percent such as "95%", got "95 percent"; "" turns it off'),
        ('handoff_order = ["codex"]\nhandoff_before = "120%"\n',
         '2: handoff_before: must be a percent above 0 and at most 100, got string "120%"; "" turns it off'),
        ("handoff_order = [\"codex\"]\nhandoff_before = true\n",
         '2: handoff_before: expected a percent such as "95%", got boolean true; "" turns it off'),
        ('usage_warn_at = [80, "ninety"]\n', '1: usage_warn_at: expected a percent such as "80%", got "ninety"'),
        ("usage_warn_at = [80, 80]\n", "1: usage_warn_at: lists a percent twice"),
        ('usage_warn_at = "80%"\n',
         '1: usage_warn_at: expected an array of percents such as [80, 95] ([] turns it off), got string "80%"'),
        ('handoff_before = "95%"\n',
         '1: handoff_before: needs a non-empty handoff_order to hand off to, e.g. handoff_order = ["codex"] '
         '(or set handoff_before = "" to turn it off)'),
        ('handoff_rank = "random"\n', '1: handoff_rank: must be "order" or "headroom", got "random"'),
        ("cold_cache_tokens = -1\n", "1: cold_cache_tokens: must be at least 0, got -1"),
    ],
    ids=["percent-words", "percent-over-100", "percent-boolean", "warn-at-words", "warn-at-twice", "warn-at-not-a-list",
         "handoff-before-without-order", "rank-unknown", "tokens-negative"],
)
def test_usage_key_problems_name_file_and_line(cfg, text, expected):
    write(cfg, text)
    assert problems_of(cfg) == [f"{cfg}:{expected}"]


def test_usage_warn_at_is_kept_in_order_and_may_be_empty(cfg):
    write(cfg, 'usage_warn_at = [95, "80%"]\n')
    assert load_config(cfg).usage_warn_at == (80.0, 95.0)
    write(cfg, "usage_warn_at = []\n")
    assert load_config(cfg).usage_warn_at == ()
