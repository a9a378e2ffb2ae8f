"""Accounts: which account a pane runs, told from its agent's environment; limits kept per account.

The table tests are the pure rules (afd.judge.accounts); the rest run fake
agents on a real tmux server, one pane per account, and read what the
supervisor, the store and `afd status` make of them.
"""

from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pytest

from afd.act.launch import bare, on_account
from afd.cli.status import render
from afd.config.settings import Config, ConfigError, load_config
from afd.daemon.status import build_status
from afd.daemon.supervisor import Supervisor
from afd.decide.policy import LimitAction
from afd.judge.accounts import UNKNOWN, Account, AgentVars, account_of, agent_of_account, env_of, expand
from afd.model import Identity, IdentityKind, ProcessEnv
from afd.observe.account_env import account_view, process_environ, with_account_env
from afd.pluginset import load_plugins
from afd.record.schema import MIGRATIONS
from afd.record.store import Store
from afd.record.types import LimitFact, LimitState
from afd.world.tmux import ServerRef
from harness import start_fake, wait_for

HOME = "/home/u"
CLAUDE = AgentVars(
    ("CLAUDE_CONFIG_DIR",), (("CLAUDE_CONFIG_DIR", "~/.claude"),), ("CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_API_KEY")
)
WORK = Account("claude-work", "claude", (("CLAUDE_CONFIG_DIR", "~/.claude-work"),))
TEAM = Account("codex-team", "codex", (("CODEX_HOME", "~/.codex-team"),))
# A symlinked directory, as a dotfile manager makes them: resolved, it is the work account's.
LINKS = {"/home/u/work-link": "/home/u/.claude-work"}


def env(credentials: tuple[str, ...] = (), home: str | None = HOME, **selecting: str) -> ProcessEnv:
    return ProcessEnv(tuple(sorted(selecting.items())), credentials, home)


def resolve(path: str) -> str:
    path = os.path.normpath(path)
    return LINKS.get(path, path)


@pytest.mark.parametrize(
    "seen, account",
    [
        pytest.param(env(), "claude", id="no-variable-is-the-default"),
        pytest.param(env(CLAUDE_CONFIG_DIR=""), "claude", id="an-empty-variable-is-unset"),
        pytest.param(env(CLAUDE_CONFIG_DIR="/home/u/.claude"), "claude", id="the-default-directory-is-the-default"),
        pytest.param(env(CLAUDE_CONFIG_DIR="~/.claude/"), "claude", id="the-default-with-a-tilde-and-a-slash"),
        pytest.param(env(CLAUDE_CONFIG_DIR="$HOME/.claude"), "claude", id="the-default-with-HOME"),
        pytest.param(env(CLAUDE_CONFIG_DIR="/home/u/.claude-work"), "claude-work", id="a-configured-directory"),
        pytest.param(env(CLAUDE_CONFIG_DIR="${HOME}/.claude-work"), "claude-work", id="a-configured-directory-with-HOME"),
        pytest.param(env(CLAUDE_CONFIG_DIR="/home/u/work-link"), "claude-work", id="a-symlink-to-it-resolved"),
        pytest.param(env(CLAUDE_CONFIG_DIR="/home/u/.claude-x"), "claude@/home/u/.claude-x", id="a-directory-no-one-named"),
        pytest.param(env(CODEX_HOME="/home/u/.codex-team"), "claude", id="another-agents-variable-says-nothing"),
        pytest.param(env(("ANTHROPIC_API_KEY",)), UNKNOWN, id="a-credential-names-no-account"),
        pytest.param(env(("ANTHROPIC_API_KEY",), CLAUDE_CONFIG_DIR="/home/u/.claude-work"), UNKNOWN,
                     id="a-credential-beside-a-directory"),
        pytest.param(env(("OPENAI_API_KEY",)), "claude", id="another-agents-credential-says-nothing"),
        pytest.param(None, UNKNOWN, id="an-unreadable-environment-is-never-the-default"),
    ],
)
def test_which_account_a_claude_process_runs(seen, account):
    assert account_of("claude", CLAUDE, seen, [WORK, TEAM], home=HOME, resolve=resolve) == account


def test_tilde_in_the_process_means_its_own_home():
    # The config's `~` is the user's; a process with another HOME reads `~` as its own.
    seen = env(home="/srv/other", CLAUDE_CONFIG_DIR="~/.claude-work")
    assert account_of("claude", CLAUDE, seen, [WORK], home=HOME, resolve=resolve) == "claude@/srv/other/.claude-work"
    assert expand("$HOME/x", None) == "$HOME/x"


def test_an_account_name_belongs_to_its_agent():
    configured = {"claude-work": WORK}
    assert agent_of_account("claude-work", configured, ["claude", "codex"]) == "claude"
    assert agent_of_account("codex", configured, ["claude", "codex"]) == "codex"
    assert agent_of_account("claude@/home/u/.claude-x", configured, ["claude"]) == "claude"
    assert agent_of_account("nobody", configured, ["claude"]) is None


def test_only_that_a_credential_is_set_is_kept_never_its_value():
    plugins = load_plugins(None, entry_points=False)
    secret = "sk-ant-oat01-do-not-keep-me"
    view = account_view({"HOME": HOME, "CLAUDE_CODE_OAUTH_TOKEN": secret, "CLAUDE_CONFIG_DIR": "/x", "PATH": "/bin"},
                        plugins.agents.values())
    assert view == ProcessEnv((("CLAUDE_CONFIG_DIR", "/x"),), ("CLAUDE_CODE_OAUTH_TOKEN",), HOME)
    assert secret not in repr(view)


def test_the_builtin_agents_name_their_account_variables():
    agents = load_plugins(None, entry_points=False).agents
    assert agents["claude"].account_env == ("CLAUDE_CONFIG_DIR",)
    assert ("CLAUDE_CONFIG_DIR", "~/.claude") in agents["claude"].account_defaults
    assert {"CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"} <= set(agents["claude"].credential_env)
    assert agents["codex"].account_env == ("CODEX_HOME",)
    assert ("CODEX_HOME", "~/.codex") in agents["codex"].account_defaults
    assert {"OPENAI_API_KEY", "CODEX_API_KEY"} <= set(agents["codex"].credential_env)


def test_an_unreadable_process_environment_reads_as_none():
    ident = Identity(IdentityKind.KNOWN, "claude", 2**22 + 12345, 1.0, (), "a pid no process has")
    assert process_environ(ident.pid) is None
    assert with_account_env(ident, load_plugins(None, entry_points=False).agents).env is None


# --- the config -----------------------------------------------------------------


def _config(tmp_path: Path, text: str):
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_accounts_in_the_config(tmp_path):
    path = _config(tmp_path, '''route_new_sessions = "least-limited"

[accounts.claude-work]
agent = "claude"
env = { CLAUDE_CONFIG_DIR = "~/.claude-work" }

[accounts.codex-team]
agent = "codex"
env = { CODEX_HOME = "~/.codex-team" }
''')
    config = load_config(path, known_agents=load_plugins(None, entry_points=False).agents)
    assert config.route_new_sessions == "least-limited"
    assert list(config.accounts) == ["claude-work", "codex-team"]
    assert config.accounts["claude-work"] == Account("claude-work", "claude", (("CLAUDE_CONFIG_DIR", "~/.claude-work"),))
    assert Config().accounts == {} and Config().route_new_sessions == "off"


@pytest.mark.parametrize(
    "table, line, words",
    [
        pytest.param('[accounts.x]\nagent = "gemni"\nenv = { A = "b" }\n', 2, '"gemni" is not an agent', id="unknown-agent"),
        pytest.param('[accounts.x]\nagent = "claude"\nenv = { CLAUDE_HOME = "~/.c" }\n', 3,
                     "CLAUDE_HOME is not a variable claude reads", id="a-variable-the-agent-does-not-read"),
        pytest.param('[accounts.x]\nagent = "claude"\nenv = { ANTHROPIC_API_KEY = "sk" }\n', 3,
                     "carries a credential", id="a-credential"),
        pytest.param('[accounts.x]\nagent = "claude"\nenv = { CLAUDE_CONFIG_DIR = "~/.claude" }\n', 3,
                     "selects claude's default account", id="the-default-directory"),
        pytest.param('[accounts.a]\nagent = "claude"\nenv = { CLAUDE_CONFIG_DIR = "~/.cw" }\n'
                     '[accounts.b]\nagent = "claude"\nenv = { CLAUDE_CONFIG_DIR = "$HOME/.cw/" }\n', 6,
                     "selects the same account as [accounts.a]", id="two-accounts-with-the-same-env"),
        pytest.param('[accounts.codex]\nagent = "codex"\nenv = { CODEX_HOME = "~/.ct" }\n', 1,
                     "is the name of codex's default account", id="named-like-an-agent"),
        pytest.param('[accounts.x]\nagent = "claude"\n', 1, "needs env", id="no-env"),
        pytest.param('[accounts.x]\nenv = { CLAUDE_CONFIG_DIR = "~/.cw" }\n', 1, "needs the agent", id="no-agent"),
        pytest.param('[accounts.unknown]\nagent = "claude"\nenv = { CLAUDE_CONFIG_DIR = "~/.cw" }\n', 1,
                     "account it cannot name", id="named-unknown"),
        pytest.param('route_new_sessions = "round-robin"\n', 1, '"off" or "least-limited"', id="a-routing-no-one-knows"),
    ],
)
def test_a_bad_account_is_reported_with_its_line(tmp_path, table, line, words):
    from afd.config.settings import ConfigError

    path = _config(tmp_path, table)
    with pytest.raises(ConfigError) as caught:
        load_config(path, known_agents=load_plugins(None, entry_points=False).agents)
    assert any(p.line == line and words in p.message for p in caught.value.problems), caught.value.problems


# --- the store ----------------------------------------------------------------

ACCOUNTS_STEP = next(i for i, step in enumerate(MIGRATIONS) if "limits_by_account" in step)


def test_the_migration_moves_each_agents_fact_to_its_default_account(tmp_path):
    db = tmp_path / "state.db"
    with Store(db, migrations=MIGRATIONS[:ACCOUNTS_STEP]) as old:
        old.execute("INSERT INTO limits (agent, state, reset_at, observed_at, source_session, banner) VALUES "
                    "('claude', 'limited', '2026-07-13T12:00:00.000000+00:00', '2026-07-13T09:00:00.000000+00:00', 'w:1.0', 'b')")
    with Store(db) as store:
        assert store.backup_path is not None and store.backup_path.exists()
        fact = store.load_limits()["claude"]
        assert (fact.agent, fact.account, fact.account_name, fact.state) == ("claude", None, "claude", LimitState.LIMITED)
        store.save_limit(LimitFact("claude", LimitState.AVAILABLE, None, fact.observed_at, "w:2.0", account="claude-work"))
        assert store.load_limits()["claude"].state is LimitState.LIMITED  # one account's fact leaves the other's alone
        assert store.load_limits()["claude-work"].account == "claude-work"


# --- on tmux ------------------------------------------------------------------

def real_now() -> datetime:
    return datetime.now(timezone.utc)


@pytest.fixture
def supervise(tmux_server, xdg_dirs):
    stores = []

    def make(config: Config, **kwargs) -> Supervisor:
        store = Store(xdg_dirs["XDG_STATE_HOME"] / "afd" / "state.db")
        stores.append(store)
        plugins = load_plugins(None, entry_points=False)
        return Supervisor(config, plugins, store, ServerRef(socket_name=tmux_server.name), clock=real_now, **kwargs)

    yield make
    for store in stores:
        store.close()


def work_config() -> Config:
    # `~` is the test's HOME, as the config of the user afd runs as.
    return Config(poll_interval=0.05, accounts={"claude-work": WORK})


def session_of(sup: Supervisor, pane: str):
    return next((r for r in sup.store.list_sessions() if r.pane_id == pane), None)


def settle(sup: Supervisor, pane: str, predicate, message: str):
    def step():
        sup.poll()
        rec = session_of(sup, pane)
        return rec if rec is not None and predicate(rec) else None

    return wait_for(step, timeout=20, message=message)


@pytest.mark.tmux
def test_the_default_account_at_its_wall_leaves_the_work_account_free(tmux_server, supervise, xdg_dirs, capsys):
    home = xdg_dirs["HOME"]
    walled = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, scenario={"limit_now": True, "records": "agree"},
                        prompt="personal")
    work_dir = tmux_server.scratch / "work"
    work_dir.mkdir()
    working = start_fake(tmux_server, "claude", cwd=work_dir, scenario={"records": "agree", "work_seconds": 60},
                         prompt="work", env={"CLAUDE_CONFIG_DIR": str(home / ".claude-work")})
    walled.wait_for_event("limit")
    working.wait_for_event("work_start")
    sup = supervise(work_config())
    rec = settle(sup, walled.pane, lambda r: r.state == "limited", "the default account limited")
    # Seen busy on a request: evidence about its own account's plan, and no other's.
    settle(sup, working.pane, lambda r: "claude-work" in sup.store.load_limits(), "the work account seen working")
    other = session_of(sup, working.pane)
    assert (rec.account, other.account) == ("claude", "claude-work")
    assert rec.witnesses == "pane+record"  # its own transcript, under ~/.claude
    limits = sup.store.load_limits()
    assert limits["claude"].state is LimitState.LIMITED
    assert limits["claude-work"].state is LimitState.AVAILABLE and limits["claude-work"].source_session == other.name
    assert other.state != "limited"

    report = build_status(sup.store, sup.plugins.agents, {"running": False})
    rows = {a["name"]: a for a in report["accounts"]}
    assert rows["claude"]["state"] == "limited" and rows["claude"]["agent"] == "claude"
    assert rows["claude-work"]["state"] == "available" and rows["claude-work"]["agent"] == "claude"
    assert {s["name"]: s["account"] for s in report["sessions"]} == {rec.name: "claude", other.name: "claude-work"}
    assert next(a for a in report["agents"] if a["name"] == "claude")["state"] == "limited"  # the default's, as before
    assert "claude-work" not in [a["name"] for a in report["agents"]]
    render(report, as_json=False)  # captured, so piped: one line per account, under a header
    out = capsys.readouterr().out.splitlines()
    assert any(line.split()[:4] == ["account", "agent", "state", "reset"] for line in out)
    assert any(line.split()[:3] == ["claude-work", "claude", "available"] for line in out), out


@pytest.mark.tmux
def test_the_work_accounts_wall_is_witnessed_by_its_own_transcript(tmux_server, supervise, xdg_dirs):
    home = xdg_dirs["HOME"]
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, scenario={"limit_now": True, "records": "agree"},
                      prompt="work", env={"CLAUDE_CONFIG_DIR": str(home / ".claude-work")})
    fake.wait_for_event("limit")
    assert list((home / ".claude-work" / "projects").rglob("*.jsonl")) and not (home / ".claude").exists()
    sup = supervise(work_config())
    rec = settle(sup, fake.pane, lambda r: r.state == "limited", "limited")
    assert rec.account == "claude-work" and rec.witnesses == "pane+record"
    limits = sup.store.load_limits()
    assert limits["claude-work"].state is LimitState.LIMITED and limits["claude-work"].agent == "claude"
    assert "claude" not in limits
    kinds = {e.event.kind: e.event for e in sup.store.recent_events(20)}
    assert kinds["agent.limited"].message.startswith("claude-work is limited")
    assert kinds["agent.limited"].data["account"] == "claude-work"


@pytest.mark.tmux
def test_a_directory_no_account_names_is_an_account_of_its_own(tmux_server, supervise, xdg_dirs):
    home = xdg_dirs["HOME"]
    elsewhere = home / ".claude-x"
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, scenario={"limit_now": True},
                      prompt="x", env={"CLAUDE_CONFIG_DIR": str(elsewhere)})
    fake.wait_for_event("limit")
    sup = supervise(work_config())
    rec = settle(sup, fake.pane, lambda r: r.state == "limited", "limited")
    name = f"claude@{os.path.realpath(elsewhere)}"
    assert rec.account == name
    assert sup.store.load_limits()[name].state is LimitState.LIMITED and "claude" not in sup.store.load_limits()
    report = build_status(sup.store, sup.plugins.agents, {"running": False})
    assert {a["name"]: a["state"] for a in report["accounts"]}[name] == "limited"


@pytest.mark.tmux
@pytest.mark.parametrize("how", ["unreadable", "credential"])
def test_an_account_afd_cannot_name_is_unknown_and_limits_no_account(tmux_server, supervise, xdg_dirs, how):
    extra = {"ANTHROPIC_API_KEY": "sk-ant-api03-not-read"} if how == "credential" else {}
    fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, scenario={"limit_now": True, "records": "agree"},
                      prompt="go", env=extra)
    fake.wait_for_event("limit")

    def read_env(pid: int):
        # As the kernel answers for another user's process (afd cannot read its /proc/PID/environ).
        if how == "unreadable" and _is_fake(pid):
            return None
        return process_environ(pid)

    sup = supervise(work_config(), read_env=read_env)
    rec = settle(sup, fake.pane, lambda r: r.state == "limited", "limited by the pane")
    assert rec.account == UNKNOWN
    # An unreadable environment gives no records to read; a credential's account keeps its directory's.
    assert rec.witnesses == ("pane" if how == "unreadable" else "pane+record")
    assert sup.store.load_limits() == {}  # never counted against the default account
    report = build_status(sup.store, sup.plugins.agents, {"running": False})
    assert report["sessions"][0]["account"] == UNKNOWN
    assert UNKNOWN not in [a["name"] for a in report["accounts"]]
    assert "sk-ant" not in json.dumps(report) and "sk-ant" not in (sup.store.path.read_bytes().decode("latin-1"))


def _is_fake(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"claude" in f.read()
    except OSError:
        return False


@pytest.mark.tmux
def test_a_pane_whose_environment_cannot_be_read_is_not_handed_off_automatically(tmux_server, supervise, worktree):
    wt = worktree("feature")
    fake = start_fake(tmux_server, "claude", cwd=wt, prompt="Fix the login test", scenario={"limit_now": True})
    fake.wait_for_event("limit")
    config = Config(poll_interval=0.05, limit_action=LimitAction.HANDOFF, handoff_order=("codex",), handoff_requires_witness=False,
                    accounts={"claude-work": WORK})
    sup = supervise(config, read_env=lambda pid: None if _is_fake(pid) else process_environ(pid))
    rec = settle(sup, fake.pane, lambda r: r.state == "limited", "limited")
    assert rec.account == UNKNOWN
    sup.start_handoffs()
    refused = [e.event for e in sup.store.recent_events(50) if e.event.kind == "handoff.refused"]
    assert refused and "cannot tell which account" in refused[0].message
    for _ in range(5):
        sup.poll()
    rec = session_of(sup, fake.pane)
    assert rec.agent == "claude" and rec.state == "limited" and sup.store.ledger(rec.name) == []
    assert not [e for e in fake.events() if e.get("agent") == "codex"]  # codex never started in the pane


# --- launching on an account -------------------------------------------------------------


def test_an_account_is_read_back_as_the_variables_that_start_it():
    configured = {"claude-work": WORK, "codex-team": TEAM}
    assert env_of("claude", "claude", CLAUDE, configured) == ()
    assert env_of("claude-work", "claude", CLAUDE, configured) == (("CLAUDE_CONFIG_DIR", "~/.claude-work"),)
    assert env_of("claude@/home/u/.claude-x", "claude", CLAUDE, configured) == (("CLAUDE_CONFIG_DIR", "/home/u/.claude-x"),)
    assert env_of("claude@CLAUDE_CONFIG_DIR=rel", "claude", CLAUDE, configured) == (("CLAUDE_CONFIG_DIR", "rel"),)
    assert env_of("codex-team", "claude", CLAUDE, configured) is None  # another agent's account
    assert env_of(UNKNOWN, "claude", CLAUDE, configured) is None
    assert env_of(None, "claude", CLAUDE, configured) is None
    assert env_of("claude@HOME=/x", "claude", CLAUDE, configured) is None  # not a variable claude reads


def test_every_launch_sets_its_accounts_variables_and_unsets_the_others():
    spec = load_plugins(None, entry_points=False).agents["claude"]
    argv = ("/usr/bin/claude", "--continue")
    work = on_account(argv, spec, (("CLAUDE_CONFIG_DIR", "~/.claude-work"),), home=HOME)
    assert work == ("env", "CLAUDE_CONFIG_DIR=/home/u/.claude-work", "/usr/bin/claude", "--continue")
    default = on_account(argv, spec, (), home=HOME)
    assert default == ("env", "-u", "CLAUDE_CONFIG_DIR", "/usr/bin/claude", "--continue")
    assert on_account(argv, spec, None, home=HOME) == argv  # an account afd cannot name is never guessed
    assert bare(work) == bare(default) == argv and bare(argv) == argv
    assert subprocess.run([*default[:-2], "sh", "-c", 'echo "${CLAUDE_CONFIG_DIR-unset}"'], capture_output=True, text=True,
                          env={**os.environ, "CLAUDE_CONFIG_DIR": "/elsewhere"}).stdout == "unset\n"


def test_handoff_order_may_name_accounts(tmp_path):
    path = tmp_path / "afd.toml"
    path.write_text('limit_action = "handoff"\nhandoff_order = ["claude-work", "codex"]\n'
                    '[accounts.claude-work]\nagent = "claude"\nenv = { CLAUDE_CONFIG_DIR = "~/.claude-work" }\n')
    agents = load_plugins(None, entry_points=False).agents
    assert load_config(path, known_agents=agents).handoff_order == ("claude-work", "codex")
    path.write_text('handoff_order = ["claude-wrok"]\n[accounts.claude-work]\nagent = "claude"\n'
                    'env = { CLAUDE_CONFIG_DIR = "~/.claude-work" }\n')
    with pytest.raises(ConfigError) as info:
        load_config(path, known_agents=agents)
    assert str(info.value.problems[0]).endswith('handoff_order: "claude-wrok" is neither an agent any plugin provides '
                                                f"(known: {', '.join(sorted(agents))}) nor an account (accounts: claude-work)")
