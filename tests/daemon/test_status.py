"""The status report read in a fixed number of queries says exactly what the record-by-record read said.

The reference below is the report as it was built before status was made
fast (one store call per session for its ledger, record types throughout);
the fast path must give the same answer, key for key and in the same order,
from the daemon's snapshot and, with the daemon down, from the store.
"""

from __future__ import annotations

import json
import os.path
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import pytest

from afd.daemon.status import SCHEMA, StatusSnapshot, build_status
from afd.decide import nextaction
from afd.judge.accountlabel import label
from afd.judge.limits import unknown_fact
from afd.model import Event
from afd.record.store import Store
from afd.record.types import LedgerEntry, LimitFact, LimitState, NextAction, Pause, PlanKind, SessionRecord, Witnesses

NOW = datetime(2026, 7, 13, 9, 0, 12, 345678, tzinfo=timezone.utc)
AGENTS = ("claude", "codex", "devin")
HOME = os.path.expanduser("~")


def _iso(value) -> str | None:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ") if value is not None else None


def reference_report(store: Store, agents, daemon: dict, events: int = 20) -> dict:
    """The report as the record-by-record read built it (kept here as the oracle)."""
    facts = store.load_limits()
    names = sorted(set(agents) | {f.agent for f in facts.values() if f.account is None})
    acting = {e.session for e in store.pending_journal() if e.action == "resume"}
    pauses = store.pauses()
    sessions = []
    for rec in store.list_sessions():
        plan = rec.next_action.as_json() if rec.next_action is not None else None
        ledger = store.ledger(rec.name)
        shown = rec.state
        if not (rec.state in ("gone", "exited") and rec.name not in acting):
            if rec.name in acting:
                shown = "resuming"
            elif plan is not None and plan.get("action") == "needs-human":
                shown = "needs_human"
        sessions.append({
            "name": rec.name, "pane": rec.pane_id, "server": rec.server_socket, "agent": rec.agent,
            "account": rec.account, "account_label": label(rec.account, HOME), "identity": rec.identity, "identity_source": rec.identity_source, "state": shown,
            "reset_at": _iso(rec.reset_at), "banner": rec.last_banner, "mission": rec.mission or None,
            "worktree": rec.worktree, "branch": rec.branch, "next_action": nextaction.words(plan), "next": plan,
            "location": rec.location, "witnesses": rec.witnesses, "updated_at": _iso(rec.updated_at),
            "paused": ({"since": _iso(pauses[rec.name].since), "until": _iso(pauses[rec.name].until)}
                       if rec.name in pauses else None),
            "handoffs": len(ledger),
            "ledger": [{"from": e.from_agent, "to": e.to_agent, "from_account": e.from_account,
                        "to_account": e.to_account, "at": _iso(e.at), "head_sha": e.head_sha,
                        "reason": e.reason, "automatic": e.automatic} for e in ledger],
        })  # fmt: skip
    def shown(fact) -> dict:
        return {
            "state": fact.state.value,
            "reset_at": _iso(fact.reset_at) if fact.state is LimitState.LIMITED else None,
            "observed_at": _iso(fact.observed_at), "source_session": fact.source_session,
            "source_host": fact.source_host,
        }  # fmt: skip

    agent_rows = [{"name": name, **shown(facts.get(name) or unknown_fact(name))} for name in names]
    owner = {name: name for name in agents}
    for name, agent in json.loads(store.get_meta("accounts") or "[]"):
        owner.setdefault(name, agent)
    for name, fact in facts.items():
        owner.setdefault(name, fact.agent)
    for rec in store.list_sessions():
        if rec.account not in (None, "unknown") and rec.agent and rec.state != "gone":
            owner.setdefault(rec.account, rec.agent)
    account_rows = [
        {"name": name, "label": label(name, HOME), "agent": owner[name], **shown(facts.get(name) or unknown_fact(owner[name], name))}
        for name in sorted(owner, key=lambda n: (owner[n], n != owner[n], n))
    ]
    return {
        "schema": SCHEMA,
        "daemon": daemon,
        "sessions": sessions,
        "agents": agent_rows,
        "accounts": account_rows,
        "events": [{"at": _iso(s.event.at), "session": s.event.session, "kind": s.event.kind, "message": s.event.message,
                    "data": s.event.data} for s in store.recent_events(events)],
    }  # fmt: skip


def without_usage(report: dict) -> dict:
    """The report but its usage figures, which carry the instant they were made (checked here, compared elsewhere)."""
    out = dict(report)
    usage = out.pop("usage")
    assert usage["schema"] == 1 and [a["account"] for a in usage["accounts"]] == [a["name"] for a in report["accounts"]]
    return out


def session(name: str, **changes) -> SessionRecord:
    base = dict(name=name, pane_id="%3", server_socket="/tmp/tmux-1000/default", server_pid=4242, agent="codex",
                identity="known", identity_source="process", state="working", created_at=NOW, updated_at=NOW)  # fmt: skip
    base.update(changes)
    return SessionRecord(**base)


def fill(store: Store) -> None:
    """Sessions in every shape status shows, ledgers, a resume under way, limits and events."""
    reset = NOW + timedelta(hours=2, minutes=3)
    store.upsert_session(session("a-plain", mission="fix the login", worktree="/src/a", branch="afd/a", location="a:0.0"))
    store.upsert_session(session(
        "b-limited", state="limited", agent="claude", reset_at=reset, last_banner="You've hit your limit · resets 11am",
        witnesses=Witnesses.BOTH, next_action=NextAction(PlanKind.RESUME, "reset", datetime(2026, 7, 13, 11, 5, 12, tzinfo=timezone.utc),
                                                         1, 5),
    ))  # fmt: skip
    store.upsert_session(session("c-human", state="limited", next_action=NextAction(PlanKind.NEEDS_HUMAN, "add credits (spend cap)", of=5)))
    store.upsert_session(session("d-resuming", state="limited", agent="codex"))
    store.upsert_session(session("e-gone", state="gone", mission="", next_action=NextAction(PlanKind.REPORT, "plain words from an old afd")))
    store.upsert_session(session("f-wrapped", identity="unknown", identity_source="user", agent="claude", state="exited"))
    store.upsert_session(session("g-odd-time", updated_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=5)))))
    store.upsert_session(session("h-work", agent="claude", account="claude-work"))
    store.upsert_session(session("i-elsewhere", agent="claude", account="claude@/home/u/.claude-x"))
    store.upsert_session(session("j-token", agent="codex", account="unknown"))
    store.upsert_session(session("k-gone-elsewhere", agent="codex", account="codex@/old", state="gone"))
    for i, (frm, to) in enumerate((("claude", "codex"), ("codex", "claude"))):
        store.add_ledger(LedgerEntry(session="a-plain", at=NOW + timedelta(minutes=i), from_agent=frm, to_agent=to,
                                     head_sha=f"{i}" * 40, reason="limit", automatic=bool(i)))  # fmt: skip
    store.add_ledger(LedgerEntry(session="e-gone", at=NOW, from_agent="devin", to_agent="codex", head_sha="f" * 40,
                                 reason="asked", automatic=False))  # fmt: skip
    store.save_pause(Pause("b-limited", NOW, reset))
    store.save_pause(Pause("h-work", NOW, None))  # until unpaused
    store.journal_begin("d-resuming", "resume", {"step": "scheduled"})
    store.journal_begin("a-plain", "handoff", {"step": "preflight"})  # not a resume: a-plain stays as it is
    store.save_limit(LimitFact("claude", LimitState.LIMITED, reset, NOW, "b-limited", "banner"))
    store.save_limit(LimitFact("codex", LimitState.AVAILABLE, None, NOW, "a-plain"))
    store.save_limit(LimitFact("gemini", LimitState.UNKNOWN, reset, NOW, None))  # no plugin names it any more
    store.save_limit(LimitFact("claude", LimitState.AVAILABLE, None, NOW, "h-work", account="claude-work"))
    store.save_limit(LimitFact("codex", LimitState.LIMITED, reset, NOW, "x", "banner", account="codex@/srv/codex"))
    store.set_meta("accounts", json.dumps([["claude-work", "claude"], ["codex-team", "codex"]]))
    for i in range(30):
        store.add_event(Event(at=NOW + timedelta(seconds=i), kind="session.adopted", message=f"event {i}",
                              session=None if i % 3 else "a-plain"))  # fmt: skip


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "afd" / "state.db") as s:
        fill(s)
        yield s


@pytest.mark.parametrize("events", [0, 1, 10, 20, 50], ids=lambda n: f"{n}-events")
def test_the_report_from_rows_is_the_record_by_record_report(store, events):
    daemon = {"running": True, "pid": 1}
    fast = without_usage(build_status(store, AGENTS, daemon, events))
    assert json.dumps(fast, indent=2) == json.dumps(reference_report(store, AGENTS, daemon, events), indent=2)


def test_the_snapshot_is_the_report_and_follows_every_write(store, tmp_path):
    agents = list(AGENTS)
    snapshot = StatusSnapshot(store, lambda: agents)
    first = snapshot.report({"running": True}, 10)
    assert without_usage(first) == reference_report(store, AGENTS, {"running": True}, 10)
    assert snapshot.report({"running": True}, 10)["sessions"] is first["sessions"]  # kept, not built again

    store.add_event(Event(at=NOW, kind="session.gone", message="written by the daemon itself"))
    assert snapshot.report({"running": True}, 10)["events"][-1]["message"] == "written by the daemon itself"

    with Store(tmp_path / "afd" / "state.db") as other:  # another process's connection
        other.upsert_session(session("h-new"))
    assert "h-new" in [s["name"] for s in snapshot.report({"running": True}, 10)["sessions"]]

    agents.append("gemini2")  # a reload that brings a plugin
    assert "gemini2" in [a["name"] for a in snapshot.report({"running": True}, 10)["agents"]]
    assert without_usage(snapshot.report({"running": True}, 10)) == reference_report(store, agents, {"running": True}, 10)


def _cli_status(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "afd", "status", "--json", *args], capture_output=True, text=True,
                          env=env, timeout=60)  # fmt: skip


def test_status_with_the_daemon_down_is_the_stored_report(xdg_dirs, monkeypatch):
    import os

    db = xdg_dirs["XDG_STATE_HOME"] / "afd" / "state.db"
    with Store(db) as store:
        fill(store)
        store.set_meta("version", "0.1.0")
        store.set_meta("started_at", "2026-07-13T08:00:00Z")
        store.set_meta("agents", json.dumps(list(AGENTS)))
        daemon = {"running": False, "pid": None, "version": "0.1.0", "started_at": "2026-07-13T08:00:00Z"}
        # Read by a program (a pipe): one line; the same object indented on a terminal.
        expected = reference_report(store, AGENTS, daemon, 10)
    done = _cli_status(dict(os.environ))
    assert done.returncode == 3 and "not running" in done.stderr
    assert done.stdout.count("\n") == 1 and without_usage(json.loads(done.stdout)) == expected


def test_status_from_a_store_written_before_agents_were_stored_loads_the_plugins(xdg_dirs):
    import os

    db = xdg_dirs["XDG_STATE_HOME"] / "afd" / "state.db"
    with Store(db) as store:
        fill(store)
    report = json.loads(_cli_status(dict(os.environ)).stdout)
    from afd.pluginset import load_plugins

    # every agent the plugins know (the shipped manifests included), and one the store alone names
    known = set(load_plugins(None, entry_points=False).agents)
    assert [a["name"] for a in report["agents"]] == sorted(known | {"gemini"})
    assert {"claude", "codex", "devin"} <= known


def test_a_damaged_state_file_is_reported_in_the_stores_words(xdg_dirs):
    import os

    db = xdg_dirs["XDG_STATE_HOME"] / "afd" / "state.db"
    db.parent.mkdir(parents=True)
    db.write_bytes(b"not a database at all" * 100)
    done = _cli_status(dict(os.environ))
    assert done.returncode == 3 and "is corrupt" in done.stderr and "Traceback" not in done.stderr


def _modules_after(argv: list[str], env: dict) -> set[str]:
    code = (
        "import contextlib, io, sys\n"
        "from afd.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        "    try:\n"
        f"        main({argv!r})\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60, check=True)
    return set(done.stdout.split())


# What only other commands (or the daemon) need: the record types, the writer, plugins, the screen, config parsing.
HEAVY = {"psutil", "rich", "pluggy_loaded_plugins", "afd.record.store", "afd.config.settings", "afd.pluginset",
         "afd.observe.identity", "afd.decide.policy", "afd.judge.gates", "tomlkit", "regex", "logging"}  # fmt: skip


@pytest.mark.parametrize("argv", [["status", "--json"], ["--help"], ["status", "--help"]], ids=" ".join)
def test_the_cli_imports_only_what_the_command_uses(xdg_dirs, argv):
    import os

    with Store(xdg_dirs["XDG_STATE_HOME"] / "afd" / "state.db") as store:
        fill(store)
        store.set_meta("agents", json.dumps(list(AGENTS)))
    loaded = _modules_after(argv, dict(os.environ))
    assert not loaded & HEAVY
    assert not {m for m in loaded if m.startswith("afd_builtin_")}  # no plugin was loaded


def test_every_command_is_registered_by_the_module_the_table_names():
    import argparse

    from afd.cli.main import COMMANDS, build_parser

    def commands(parser):
        return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices

    assert set(commands(build_parser())) == set(COMMANDS)
    for name in COMMANDS:
        assert name in commands(build_parser(name)), name


def test_json_is_indented_on_a_terminal_and_one_line_for_a_program(monkeypatch, capsys):
    from afd.cli.common import print_json

    value = {"sessions": [{"name": "fix-login", "mission": "fix the ünïcode login"}]}
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    print_json(value)
    shown = capsys.readouterr().out
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    print_json(value)
    piped = capsys.readouterr().out
    assert json.loads(shown) == json.loads(piped) == value
    assert shown.startswith('{\n  "sessions": [') and piped.count("\n") == 1 and "ünïcode" in piped


def test_every_stored_state_is_a_state_status_can_show():
    from afd.daemon.status import ShownState
    from afd.model import SessionState

    assert {s.value for s in SessionState} <= {s.value for s in ShownState}
