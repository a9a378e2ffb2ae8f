"""The engine (afd/act/runner.py): one short step per row per turn, the step on record before its effect,
what a step or an ending changes committed with its row, and a row an earlier run left driven the same way.

A toy executor drives it here, with a real store and effects that need no tmux (`NoEffect`, `Work`), so each
contract is seen on its own. The executors' own steps have table tests of their own (tests/act/test_*_steps.py).
"""

from __future__ import annotations

import ast
import threading
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from afd.act import AddLedger, Finish, Follow, Go, NoEffect, Observe, Result, SaveHistory, Tell, Wait, Work, runner
from afd.act.context import ActionContext, Workers
from afd.config.settings import Config
from afd.judge import sessions
from afd.model import IdentityKind, IdentitySource, SessionState
from afd.record.store import Store
from afd.record.types import JournalState, LedgerEntry, NextAction, PlanKind, ResumeHistory, SessionRecord
from afd.world.tmux import ServerRef

T0 = datetime(2026, 7, 13, 9, 0, tzinfo=timezone.utc)
REC = SessionRecord(
    name="s", pane_id="%1", server_socket="/s", server_pid=1, agent="tool", identity=IdentityKind.KNOWN,
    identity_source=IdentitySource.PROCESS, state=SessionState.LIMITED, created_at=T0, updated_at=T0,
)


@dataclass
class Toy:
    """An action that goes `one → two → done`; what it does at each step is set by the test."""

    action: str = "toy"
    chain: int = 1
    owns_pane: bool = False
    moves: dict = field(default_factory=dict)  # step → Move
    on_progress: tuple = ()
    on_finish: tuple = ()
    seen_steps: list = field(default_factory=list)  # the step each `facts` call saw on record
    store: Store | None = None

    def facts(self, ctx, entry, bound):
        self.seen_steps.append(ctx.store.journal_entry(entry.id).intent.get("step"))
        return entry.intent.get("step")

    def step(self, intent, facts):
        move = self.moves[facts]
        if isinstance(move, Exception):
            raise move
        return move

    def progress(self, ctx, entry, move):
        return self.on_progress

    def finished(self, ctx, entry, end):
        return self.on_finish


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "state.db")
    yield s
    s.close()


def context(store, events, run="this-run", clock=lambda: T0) -> ActionContext:
    def event(kind, message, session=None, **data):
        events.append((kind, session, data))

    return ActionContext(store, ServerRef(socket_name="absent"), Config(), None, clock, run, event, Workers())  # type: ignore[arg-type]


def engine(toy) -> runner.Engine:
    return runner.Engine([toy], Workers())


def test_a_step_is_on_record_before_its_effect_and_one_step_is_taken_a_turn(store):
    events: list = []
    ctx = context(store, events)
    performed = []
    toy = Toy(moves={"one": Go("two", Work("probe", lambda: performed.append(store.pending_journal()[0].intent["step"]))),
                     "two": Wait("not yet")})
    e = engine(toy)
    entry = runner.begin(ctx, "s", "toy", {"step": "one"})
    e.workers = ctx.workers
    e.advance(ctx, {})
    ctx.workers.get(entry, "probe").done.wait(5)
    assert performed == ["two"]  # the worker ran after `two` was written
    assert store.journal_entry(entry).intent["step"] == "two" and toy.seen_steps == ["one"]
    e.advance(ctx, {})
    assert toy.seen_steps == ["one", "two"] and store.journal_entry(entry).state is JournalState.PENDING


def test_what_a_step_and_an_ending_change_is_committed_with_the_row(store):
    events: list = []
    ctx = context(store, events)
    store.upsert_session(REC)
    shown = NextAction(PlanKind.RESUMING, "resuming (one)")
    history = ResumeHistory(attempts=1, last_sent_at=T0)
    ledger = LedgerEntry("s", T0, "tool", "other", "a" * 40, "usage limit", True)
    toy = Toy(moves={"one": Go("two", NoEffect()), "two": Finish(Result.DONE, "done")},
              on_progress=(Observe(sessions.Planned(shown)), Tell("toy.stepped", "stepped")),
              on_finish=(SaveHistory(history), Observe(sessions.Planned(None)), Tell("toy.done", "done", data={"n": 1})))
    e = engine(toy)
    entry = runner.begin(ctx, "s", "toy", {"step": "one"})
    e.advance(ctx, {})
    assert store.get_session("s").next_action == shown  # through the rulebook
    assert ("toy.stepped", "s", {}) in events
    toy.on_finish = (*toy.on_finish, AddLedger(replace(ledger, journal_id=entry)))
    report = e.advance(ctx, {})
    row = store.journal_entry(entry)
    assert row.state is JournalState.DONE and row.outcome == "done" and entry in report.settled
    assert store.resume_history("s") == history and store.get_session("s").next_action is None
    assert len(store.ledger("s")) == 1 and events[-1] == ("toy.done", "s", {"n": 1})


def test_a_ledger_entry_is_written_once_for_its_row_however_often_the_ending_is_committed(store):
    ctx = context(store, [])
    entry = LedgerEntry("s", T0, "tool", "other", "a" * 40, "usage limit", True, journal_id=7)
    for _ in range(2):
        with store.transaction():
            runner.commit(ctx, "s", (AddLedger(entry),))
    assert len(store.ledger("s")) == 1


def test_an_action_that_follows_is_begun_in_the_commit_that_ends_the_first(store):
    ctx = context(store, [])
    toy = Toy(moves={"one": Finish(Result.DONE, "done")}, on_finish=(Follow("brief", {"step": "waiting", "pane": "%1"}),))
    e = engine(toy)
    first = runner.begin(ctx, "s", "toy", {"step": "one"})
    e.advance(ctx, {})
    [follower] = store.pending_journal()
    assert follower.action == "brief" and follower.intent["run"] == "this-run" and follower.id != first
    assert store.journal_entry(first).state is JournalState.DONE


def test_an_ending_that_cannot_be_written_leaves_the_row_pending_for_the_next_turn(store, monkeypatch):
    ctx = context(store, [])
    toy = Toy(moves={"one": Finish(Result.DONE, "done")}, on_finish=(SaveHistory(ResumeHistory(attempts=1)),))
    e = engine(toy)
    entry = runner.begin(ctx, "s", "toy", {"step": "one"})

    def broken(session, history):
        raise OSError("disk full")

    monkeypatch.setattr(store, "save_resume_history", broken)
    e.advance(ctx, {})
    # The engine rolls a crashed turn back; what it could not write it did not half write.
    row = store.journal_entry(entry)
    assert row.state is JournalState.ROLLED_BACK and "internal error" in row.outcome
    assert store.resume_history("s") == ResumeHistory()


def test_a_row_an_earlier_run_left_is_driven_by_the_same_steps_and_said_once(store):
    events: list = []
    earlier = context(store, [], run="a-run-that-was-killed")
    waiting = runner.begin(earlier, "s", "toy", {"step": "one"})
    ending = runner.begin(earlier, "t", "toy", {"step": "two"})
    toy = Toy(moves={"one": Wait("not yet"), "two": Finish(Result.ROLLED_BACK, "undone")})
    e = engine(toy)
    ctx = context(store, events)
    e.advance(ctx, {})
    e.advance(ctx, {})
    # Met once each: the one that goes on is said carried on; the one that ends is said ended by the stop.
    assert [(k, s) for k, s, _ in events] == [("journal.recovered", "s"), ("journal.rolled-back", "t")]
    toy.moves["one"] = Finish(Result.DONE, "done")
    e.advance(ctx, {})
    assert len(events) == 2 and store.journal_entry(waiting).state is JournalState.DONE
    assert store.journal_entry(ending).state is JournalState.ROLLED_BACK


def test_an_executor_that_raises_rolls_its_row_back_and_the_pane_is_not_left_owned(store):
    events: list = []
    ctx = context(store, events)
    toy = Toy(moves={"one": RuntimeError("a bug")}, owns_pane=True)
    e = engine(toy)
    entry = runner.begin(ctx, "s", "toy", {"step": "one"})
    assert e.owning(store) == {"s"}
    e.advance(ctx, {})
    assert store.journal_entry(entry).state is JournalState.ROLLED_BACK and e.owning(store) == set()


def test_a_row_no_executor_knows_is_rolled_back_and_said(store):
    events: list = []
    ctx = context(store, events)
    entry = runner.begin(ctx, "s", "gone-action", {"step": "x"})
    engine(Toy()).advance(ctx, {})
    assert store.journal_entry(entry).state is JournalState.ROLLED_BACK and events[-1][0] == "journal.rolled-back"


def test_a_failed_effect_is_on_the_row_for_the_next_step_to_judge(store):
    ctx = context(store, [])
    store.upsert_session(REC)
    # A pane effect with no pane on the row cannot be performed: the engine records why.
    from afd.act import Key

    toy = Toy(moves={"one": Go("two", Key("Enter")), "two": Wait()})
    e = engine(toy)
    entry = runner.begin(ctx, "s", "toy", {"step": "one"})
    e.advance(ctx, {})
    row = store.journal_entry(entry).intent
    assert row["step"] == "two" and "names no pane" in row["effect_error"]


def test_a_finished_worker_makes_the_engine_busy_until_its_row_ends(store):
    ctx = context(store, [])
    gate = threading.Event()
    toy = Toy(moves={"one": Go("two", Work("slow", gate.wait)), "two": Wait("working")})
    e = runner.Engine([toy], ctx.workers)
    entry = runner.begin(ctx, "s", "toy", {"step": "one"})
    e.advance(ctx, {})
    gate.set()
    ctx.workers.get(entry, "slow").done.wait(5)
    assert e.busy(store)
    toy.moves["two"] = Finish(Result.DONE, "done")
    e.advance(ctx, {})
    assert ctx.workers.get(entry, "slow") is None


def test_begin_commits_the_row_and_what_the_start_changes_together(store):
    events: list = []
    ctx = context(store, events, clock=lambda: T0 + timedelta(seconds=1))
    store.upsert_session(REC)
    shown = NextAction(PlanKind.HANDOFF, "handing off to other")
    entry = runner.begin(ctx, "s", "toy", {"step": "one"}, records=(Observe(sessions.HandoffBegun(shown)), Tell("toy.begun", "begun")))
    assert store.get_session("s").state is SessionState.HANDING_OFF and store.journal_entry(entry).intent["run"] == "this-run"
    assert events == [("toy.begun", "s", {})]


# --- no executor writes the store itself ----------------------------------------------------------

AFD = Path(__file__).resolve().parents[2] / "afd"
# The store's writing methods, and those of the jobs' book on top of it.
WRITES = {"upsert_session", "delete_session", "save_limit", "record_banner", "clear_banner", "add_event", "journal_begin",
          "journal_finish", "journal_step", "journal_set_intent", "add_ledger", "save_resume_history", "set_meta",
          "execute", "move", "release", "enqueue", "set_status", "transfer", "add_job"}


def _executor_methods():
    """Each executor's facts, step, progress and finished, with the functions of its module (and its own methods) they
    call, as far as those call on: a write moved into a helper is still the executor's."""
    for path in [*sorted((AFD / "act").glob("*.py")), AFD / "jobs" / "delivery.py"]:
        tree = ast.parse(path.read_text())
        helpers = {fn.name: fn for fn in tree.body if isinstance(fn, ast.FunctionDef)}
        for node in tree.body:
            if not (isinstance(node, ast.ClassDef) and node.name.endswith("Executor") and node.name != "Executor"):
                continue
            methods = {fn.name: fn for fn in node.body if isinstance(fn, ast.FunctionDef)}
            for name in ("facts", "step", "progress", "finished"):
                if name in methods:
                    yield f"{path.relative_to(AFD)}:{node.name}.{name}", _reached(methods[name], {**helpers, **methods})


def _reached(fn: ast.FunctionDef, callable_here: dict) -> list[ast.AST]:
    seen, todo, bodies = {fn.name}, [fn], []
    while todo:
        body = todo.pop()
        bodies.append(body)
        for call in ast.walk(body):
            if isinstance(call, ast.Call):
                called = call.func.id if isinstance(call.func, ast.Name) else (
                    call.func.attr if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)
                    and call.func.value.id == "self" else None)
                if called in callable_here and called not in seen:
                    seen.add(called)
                    todo.append(callable_here[called])
    return bodies


def test_the_executors_are_found():
    names = {name.split(":")[1].split(".")[0] for name, _ in _executor_methods()}
    assert names == {"ResumeExecutor", "SwapExecutor", "BriefExecutor", "CreateExecutor", "EnvelopeExecutor"}


def test_no_executor_writes_the_store_itself():
    found = [
        f"{name}: .{call.func.attr}()"
        for name, bodies in _executor_methods()
        for body in bodies
        for call in ast.walk(body)
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr in WRITES
    ]
    assert not found, "\n".join(found)
