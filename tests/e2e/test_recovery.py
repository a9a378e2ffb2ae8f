"""Recovery of a `sessions create` a crash interrupted: decided from what exists, then carried out."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from afd.act import Cleanup, Finish, Go, KillPane, Result, Wait, create
from afd.act.create import CreateFacts
from afd.config.settings import Config
from afd.daemon.supervisor import Supervisor
from afd.model import IdentityKind, SessionState
from afd.pluginset import load_plugins
from afd.record.store import Store
from afd.record.types import JournalState
from afd.world.tmux import ServerRef
from harness import git, start_fake

T0 = datetime(2026, 7, 13, 9, 0, tzinfo=timezone.utc)
INTENT = {"repo": "/r", "branch": "afd/x", "worktree": "/w/x", "tmux_session": "afd-x"}


def facts(**changes) -> CreateFacts:
    base = dict(tmux_answered=True, pane=None, pane_dead=False, identity=None, record_exists=False,
                worktree_exists=False, branch_exists=False, untouched=False, worker=None)
    return CreateFacts(**{**base, **changes})


# A create row an earlier run left (no worker of this run), driven by the same step as any other: what it does.
SETTLE, ROLL_BACK, AWAIT, LEAVE = "settle", "roll back", "await", "leave"

DECISIONS = [
    ("tmux silent: left pending, not guessed", facts(tmux_answered=False), LEAVE, ()),
    ("agent running and recorded: settled", facts(pane="%4", identity=IdentityKind.KNOWN, record_exists=True), SETTLE, ()),
    ("agent running, crash before the record: settled and recorded",
     facts(pane="%4", identity=IdentityKind.KNOWN), SETTLE, ("write_record",)),
    ("a launcher still in the pane: waits for the agent", facts(pane="%4", identity=IdentityKind.UNKNOWN), AWAIT, ()),
    ("nothing made: rolled back, nothing to undo", facts(), ROLL_BACK, ()),
    ("untouched worktree and branch: removed", facts(worktree_exists=True, branch_exists=True, untouched=True),
     ROLL_BACK, ("remove_worktree", "delete_branch")),
    ("a worktree with changes: kept", facts(worktree_exists=True, branch_exists=True, untouched=False), ROLL_BACK, ()),
    ("a dead pane (remain-on-exit): killed, untouched branch removed",
     facts(pane="%4", pane_dead=True, branch_exists=True, untouched=True), ROLL_BACK, ("kill_pane", "delete_branch")),
    ("recorded session whose pane closed since: settled, its worktree kept",
     facts(record_exists=True, worktree_exists=True, branch_exists=True, untouched=True), SETTLE, ()),
]


def what(move) -> tuple[str, set[str]]:
    if isinstance(move, Wait):
        return LEAVE, set()
    if isinstance(move, Go):
        return AWAIT, set()
    assert isinstance(move, Finish)
    done = set()
    for effect in move.effects:
        if isinstance(effect, KillPane):
            done.add("kill_pane")
        if isinstance(effect, Cleanup):
            done |= {"remove_worktree"} if effect.worktree else set()
            done |= {"delete_branch"} if effect.branch else set()
    if isinstance(move.detail, str):
        done.add("write_record")
    return (SETTLE if move.result is Result.DONE else ROLL_BACK), done


@pytest.mark.parametrize("step", [create.STEP_WORKTREE, create.STEP_SESSION])
@pytest.mark.parametrize("found, expected, effects", [d[1:] for d in DECISIONS], ids=[d[0] for d in DECISIONS])
def test_create_recovery_decisions(found, expected, effects, step):
    move = create.step({**INTENT, "step": step, "run": "an-earlier-run"}, found)
    assert what(move) == (expected, set(effects))
    if isinstance(move, Finish):
        assert move.outcome and "nothing more was done" not in move.outcome


AWAITING = [
    ("the poll recorded its agent running: settled", facts(pane="%4", identity=IdentityKind.KNOWN, record_exists=True, agent_pid=42),
     Finish(Result.DONE, "claude seen running in pane %4 (pid 42)")),
    ("a launcher still in front of it: waits", facts(pane="%4", identity=IdentityKind.UNKNOWN, record_exists=True,
                                                      session_state=SessionState.IDLE), Wait("waiting to see the agent run")),
    ("its pane closed first: settled", facts(record_exists=True, session_state=SessionState.GONE),
     Finish(Result.DONE, "pane %4 closed before its agent was seen running")),
    ("no agent appeared: settled", facts(pane="%4", record_exists=True, session_state=SessionState.EXITED),
     Finish(Result.DONE, "no agent was seen running in pane %4; the session is exited (its events say why)")),
]


@pytest.mark.parametrize("run", ["this-run", "an-earlier-run"])
@pytest.mark.parametrize("found, expected", [a[1:] for a in AWAITING], ids=[a[0] for a in AWAITING])
def test_a_create_awaiting_its_agent_settles_from_what_the_poll_recorded(found, expected, run):
    # The create's last step: the row is closed by its own executor, from the session the poll keeps.
    row = {**INTENT, "agent": "claude", "pane": "%4", "step": create.STEP_AWAITING, "run": run}
    assert create.step(row, found) == expected


# --- carried out on a real tmux server and git repository ---------------------


@pytest.fixture
def supervisor(tmux_server, xdg_dirs):
    store = Store(xdg_dirs["XDG_STATE_HOME"] / "afd" / "state.db")
    sup = Supervisor(Config(poll_interval=0.05), load_plugins(None, entry_points=False), store,
                     ServerRef(socket_name=tmux_server.name))
    yield sup
    store.close()


def pending_create(sup: Supervisor, repo, *, step: str, **intent) -> int:
    base = {"repo": str(repo), "branch": "afd/fix", "worktree": str(repo.parent / "wt-fix"), "agent": "claude",
            "argv": ["claude", "fix it"], "tmux_session": "afd-fix", "mission": "fix it", "server_socket": "/s"}
    entry_id = sup.store.journal_begin("fix", create.ACTION, {**base, **intent})
    sup.store.journal_step(entry_id, step)
    return entry_id


def recover_all(sup: Supervisor) -> None:
    """What a restarted daemon does with the rows it finds: the engine's first turn."""
    sup.advance_actions()


def events(sup: Supervisor, kind: str) -> list[str]:
    return [e.event.message for e in sup.store.recent_events() if e.event.kind == kind]


def test_worktree_and_branch_left_by_a_crash_are_removed_and_said(supervisor, git_repo):
    wt = git_repo.parent / "wt-fix"
    git(git_repo, "worktree", "add", "-q", "-b", "afd/fix", str(wt), "HEAD")
    entry_id = pending_create(supervisor, git_repo, step=create.STEP_WORKTREE, base_sha=git(git_repo, "rev-parse", "HEAD"))
    recover_all(supervisor)
    done = supervisor.store.journal_entry(entry_id)
    assert done.state is JournalState.ROLLED_BACK
    assert not wt.exists() and "afd/fix" not in git(git_repo, "branch", "--list", "afd/fix")
    [message] = events(supervisor, "journal.rolled-back")
    assert f"removed worktree {wt}" in message and "branch afd/fix" in message


def test_a_worktree_with_work_in_it_is_kept(supervisor, git_repo):
    wt = git_repo.parent / "wt-fix"
    git(git_repo, "worktree", "add", "-q", "-b", "afd/fix", str(wt), "HEAD")
    base = git(git_repo, "rev-parse", "HEAD")
    (wt / "new.txt").write_text("work\n")
    entry_id = pending_create(supervisor, git_repo, step=create.STEP_SESSION, base_sha=base)
    recover_all(supervisor)
    assert supervisor.store.journal_entry(entry_id).state is JournalState.ROLLED_BACK
    assert (wt / "new.txt").exists() and "afd/fix" in git(git_repo, "branch", "--list", "afd/fix")
    assert "kept" in events(supervisor, "journal.rolled-back")[0]


def test_nothing_made_is_said_as_such(supervisor, git_repo):
    pending_create(supervisor, git_repo, step=create.STEP_WORKTREE)
    recover_all(supervisor)
    assert "nothing had been made" in events(supervisor, "journal.rolled-back")[0]


def test_an_agent_running_in_the_created_pane_is_settled_and_recorded_under_its_name(supervisor, tmux_server, git_repo):
    fake = start_fake(tmux_server, "claude", cwd=git_repo, prompt="fix it")
    fake.wait_ready()
    session = tmux_server.pane_field(fake.pane, "#{session_name}")
    entry_id = pending_create(supervisor, git_repo, step=create.STEP_SESSION, tmux_session=session)
    recover_all(supervisor)
    assert supervisor.store.journal_entry(entry_id).state is JournalState.DONE
    assert "recorded now" in events(supervisor, "journal.settled")[0]
    for _ in range(3):
        supervisor.poll()
    [rec] = supervisor.store.list_sessions()
    assert rec.name == "fix" and rec.pane_id == fake.pane and rec.agent_pid == fake.pid


def test_a_created_pane_still_behind_its_launcher_is_waited_for_not_let_go(supervisor, tmux_server, git_repo):
    pane = tmux_server.new_pane("sleep 600", cwd=git_repo)  # stands in for `env`/a shim before the agent
    entry_id = pending_create(supervisor, git_repo, step=create.STEP_AWAITING, pane=pane)
    recover_all(supervisor)
    assert supervisor.store.journal_entry(entry_id).state is JournalState.PENDING
    assert events(supervisor, "journal.recovered")
    for _ in range(3):
        supervisor.poll()
    [rec] = supervisor.store.list_sessions()
    assert rec.name == "fix" and rec.state not in ("gone", "exited")
    assert not events(supervisor, "session.gone")
