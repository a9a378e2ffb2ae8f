"""The swap's executor: the steps of a handoff, one short one at a time (afd.act.handoff begins it).

`step` is pure: the typed row and what the pane and the processes show now
(`SwapFacts`) give the next move. Each step is written before its effect,
and each looks at the world for whether the effect of the step before it
happened, so a row an earlier run of afd left is carried on by the same
steps: a stop re-checks the tree before the launch, a launch looks at the
pane before respawning, a start waits for the target's screen, and a typed
brief is looked for on screen before it is typed (so never twice).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from afd.act import (
    AddLedger,
    Finish,
    Go,
    Key,
    Move,
    NoEffect,
    Observe,
    PaneOption,
    Paste,
    Record,
    Respawn,
    Result,
    Signal,
    Tell,
    Wait,
)
from afd.act.context import ActionContext
from afd.act.handoff import ACTION, HandoffIntent, SwapStep
from afd.act.intent import from_row, stored
from afd.act.launch import bare
from afd.decide import plan, policy
from afd.judge import screen, sessions
from afd.judge.gates import chrome_of, is_chrome
from afd.kit.resettime import local_zone
from afd.kit.text import capture_rows
from afd.model import AgentSpec, Clock, Detection, IdentityKind, PromptDelivery, SessionState
from afd.observe import identity
from afd.record.ledger import who
from afd.record.types import JournalEntry, LedgerEntry
from afd.world import teardown, tmux

KILL_GRACE = timedelta(seconds=5)  # after SIGKILL, how long the tree has to be reaped
READY_TIMEOUT = timedelta(seconds=60)  # the target's screen must show its chrome by then
KEEP_PANE = "remain-on-exit"
# A TUI that reads keys arriving right after a paste as part of it (Gemini
# CLI) makes an Enter sent with the brief a newline in its input box: Enter
# goes on a later turn, once the brief shows, or after this long regardless.
SUBMIT_WAIT = timedelta(seconds=10)


@dataclass(frozen=True, slots=True)
class SwapFacts:
    """What the world shows for one swap at one instant; only what its step needs is looked at."""

    now: datetime
    earlier: bool  # the row's step was written by an earlier run of afd
    session_known: bool
    stop_timeout: float
    tmux_answered: bool = True
    pane: tmux.PaneInfo | None = None
    only_a_shell: bool = False  # the pane's own process runs nothing but a shell
    remain_read: tuple[bool, str | None] | None = None  # (read, value) of the pane's remain-on-exit
    tree: teardown.Tree | None = None  # the old agent's processes
    gone: teardown.Gone | None = None
    left: tuple[teardown.Proc, ...] = ()
    old_gone: bool = False  # the old agent's own process is gone
    new_agent: tuple[int | None, float | None] | None = None  # the target's process, once it is identified
    ready: bool = False  # the target's chrome is on screen
    walled: Detection | None = None  # the target's screen shows its own usage-limit wall
    on_screen: str = ""  # the pane's text (for a brief typed before a restart)
    brief_shown: bool = False  # the pasted brief is in the target's input box


@dataclass(frozen=True, slots=True)
class SwapEnd:
    """What a settled or rolled-back swap records beyond its result."""

    limited: Detection | None = None
    brief_pending: str | None = None
    restarted: bool = False


# --- deciding ---------------------------------------------------------------------


def step(row: Mapping | HandoffIntent, f: SwapFacts) -> Move:
    i = row if isinstance(row, HandoffIntent) else from_row(HandoffIntent, row)
    if not f.session_known:
        return Finish(Result.ROLLED_BACK, "its session is no longer known", effects=_restore(i))
    if not f.tmux_answered:
        return Wait("tmux did not answer about the pane")
    return {
        SwapStep.STOP: _stop,
        SwapStep.STOPPING: _stopping,
        SwapStep.LAUNCH: _launch,
        SwapStep.STARTING: _starting,
        SwapStep.DELIVER: _deliver,
        SwapStep.SUBMIT: _submit,
    }[i.step](i, f)


def _stop(i: HandoffIntent, f: SwapFacts) -> Move:
    if f.pane is None:
        return _abort(i, f, "the pane is gone; nothing was stopped")
    if not i.remain_saved:
        read, value = f.remain_read or (False, None)
        if not read:
            return _abort(i, f, "could not read the pane's options; nothing was stopped")
        return Go(SwapStep.STOP, NoEffect(), stored(remain_saved=True, remain_on_exit=value))
    tree = f.tree or teardown.Tree(None, ())
    # The pane must outlive its agent, or the swap has no pane to start in.
    return Go(SwapStep.STOPPING, (PaneOption(KEEP_PANE, "on"), Signal(tree.pgid, teardown.TERM)),
              stored(term_at=f.now, pgid=tree.pgid, tree=[p.as_list() for p in tree.procs],
                     detached=[p.as_list() for p in tree.detached]))


def _stopping(i: HandoffIntent, f: SwapFacts) -> Move:
    if i.effect_error:
        return _abort(i, f, f"could not keep the pane open across the stop: {i.effect_error}")
    if f.earlier and i.kill_at is None:
        # The run that wrote this step may have died before its effect: keep the pane and ask again.
        return Go(SwapStep.STOPPING, (PaneOption(KEEP_PANE, "on"), Signal(i.pgid, teardown.TERM)), stored(term_at=f.now))
    tree = f.tree or teardown.Tree(i.pgid, ())
    grown = stored(tree=[p.as_list() for p in tree.procs]) if len(tree.procs) != len(i.tree) else {}
    if f.gone is teardown.Gone.GONE:
        return Go(SwapStep.LAUNCH, NoEffect(), {**grown, **stored(stopped_at=f.now)})
    if i.kill_at is None:
        if i.term_at is None or f.now - i.term_at >= timedelta(seconds=f.stop_timeout):
            return Go(SwapStep.STOPPING, Signal(i.pgid, teardown.KILL), {**grown, **stored(kill_at=f.now)})
        return Go(SwapStep.STOPPING, NoEffect(), grown) if grown else Wait("waiting for the old agent to exit")
    if f.now - i.kill_at >= KILL_GRACE:
        pids = ", ".join(str(p.pid) for p in f.left)
        state = f.gone.value if f.gone else "unknown"
        return _abort(i, f, f"could not confirm that {i.outgoing}'s processes are gone ({state}: pid {pids})")
    return Go(SwapStep.STOPPING, NoEffect(), grown) if grown else Wait("waiting for the old agent's processes to be reaped")


def _launch(i: HandoffIntent, f: SwapFacts) -> Move:
    if f.pane is None:
        return _abort(i, f, "the pane vanished during the swap")
    if not f.pane.dead and not f.only_a_shell:
        return _abort(i, f, "something other than a shell runs in the pane after the stop; not starting a second program there")
    # -k only over a dead pane or a bare shell: the old agent is confirmed gone.
    return Go(SwapStep.STARTING, Respawn(i.cwd, i.argv, i.client_path, kill=not f.pane.dead), stored(launched_at=f.now))


def _starting(i: HandoffIntent, f: SwapFacts) -> Move:
    if f.pane is None:
        return _abort(i, f, f"the pane vanished while {i.target} was starting")
    if i.effect_error:
        return _roll_back(i, f, f"tmux could not start {i.target}: {i.effect_error}")
    if f.earlier and (f.pane.dead or f.only_a_shell):
        # The run that wrote this step died before it respawned the pane: launch it now.
        return Go(SwapStep.LAUNCH, NoEffect())
    if f.pane.dead:
        return _roll_back(i, f, f"{i.target} exited as soon as it started")
    if not f.ready:
        if i.launched_at is not None and f.now - i.launched_at >= READY_TIMEOUT:
            pid, started = f.new_agent or (None, None)
            kill = (Signal(teardown.look(teardown.Proc(pid, started)).pgid, teardown.KILL),) if pid else ()
            return _roll_back(i, f, f"{i.target} did not become ready within {READY_TIMEOUT.seconds}s", first=kill)
        return Wait(f"waiting for {i.target} to be ready")
    pid, started = f.new_agent or (None, None)
    if f.walled is not None:
        # The incoming agent is itself walled: parked, the brief waits, and every session learns it.
        return _settle(i, f, SwapEnd(limited=f.walled), pid, started)
    if i.delivery is PromptDelivery.TYPED:
        return Go(SwapStep.DELIVER, NoEffect(), stored(new_pid=pid, new_started=started))
    return _settle(i, f, SwapEnd(), pid, started)


def _deliver(i: HandoffIntent, f: SwapFacts) -> Move:
    first = i.brief.splitlines()[0] if i.brief else ""
    typed_here = i.delivering and not f.earlier
    if i.delivering and (typed_here or (first and first in f.on_screen)):
        if i.effect_error:
            return _settle(i, f, SwapEnd(brief_pending=f"the brief could not be typed: {i.effect_error}"), i.new_pid, i.new_started)
        return Go(SwapStep.SUBMIT, NoEffect(), stored(pasted_at=f.now))
    # A restart after the paste may or may not have landed: it was looked for above before typing it again.
    return Go(SwapStep.DELIVER, Paste(i.brief), stored(delivering=True))


def _submit(i: HandoffIntent, f: SwapFacts) -> Move:
    if i.submitted:
        if i.effect_error:
            return _settle(i, f, SwapEnd(brief_pending=f"the brief could not be submitted: {i.effect_error}"), i.new_pid, i.new_started)
        return _settle(i, f, SwapEnd(), i.new_pid, i.new_started)
    waited = i.pasted_at is not None and f.now - i.pasted_at >= SUBMIT_WAIT
    if not (f.brief_shown or waited or f.earlier):
        return Wait(f"waiting for the brief to show in {i.target}'s input box")
    return Go(SwapStep.SUBMIT, Key("Enter"), stored(submitted=True))


def brief_shown(brief: str, spec: AgentSpec | None, rows: list[str]) -> bool:
    """The pasted brief is in the pane: its start in the input row, or (a long paste scrolled inside a
    small input box) its last line."""
    if screen.text_seen(brief, spec, rows):
        return True
    lines = [" ".join(line.split()) for line in brief.splitlines() if line.strip()]
    tail = lines[-1][:24] if lines else ""
    return bool(tail) and any(tail in " ".join(row.split()) for row in rows)


# --- endings ---------------------------------------------------------------------------


def _restore(i: HandoffIntent) -> tuple:
    return (PaneOption(KEEP_PANE, i.remain_on_exit, restore=True),) if i.remain_saved else ()


def _settle(i: HandoffIntent, f: SwapFacts, end: SwapEnd, pid, started) -> Finish:
    if end.limited is not None and i.delivery is PromptDelivery.TYPED:
        end = replace(end, brief_pending=f"{i.target} is at its usage limit; the brief waits until it can take it")
    outcome = f"{who(i.outgoing, i.outgoing_account)} → {who(i.target, i.target_account)} in pane {i.pane} at {i.git.head_sha[:12]}"
    if end.limited is not None:
        outcome += f"; {i.target} is itself at its usage limit"
    if end.brief_pending:
        outcome += f"; brief pending ({end.brief_pending})"
    return Finish(Result.DONE, outcome, effects=_restore(i), detail=(end, pid, started))


def _abort(i: HandoffIntent, f: SwapFacts, why: str) -> Finish:
    """Stop short: the session stays as it was; the old agent restarted if it had already stopped."""
    if i.step is not SwapStep.STOP and f.old_gone and i.old_argv:
        return _roll_back(i, f, why)
    return Finish(Result.ROLLED_BACK, why, effects=_restore(i), detail=(SwapEnd(), None, None))


def _roll_back(i: HandoffIntent, f: SwapFacts, why: str, *, first: tuple = ()) -> Finish:
    """The target failed to start: the record still names the old agent, which is started again."""
    if f.pane is None:
        return Finish(Result.ROLLED_BACK, why + "; the pane is gone, so the old agent could not be restarted",
                      effects=first + _restore(i), detail=(SwapEnd(), None, None))
    # The pane shows why before the old agent draws over it.
    show = ("sh", "-c", 'printf "afd: %s\\n" "$1"; shift; exec "$@"', "afd", f"handoff rolled back: {why}", *i.old_argv)
    note = f"; restarted {i.outgoing} with {shlex.join(bare(i.old_argv)[1:]) or 'its command'}"
    return Finish(Result.ROLLED_BACK, why + note, effects=first + (Respawn(i.cwd, show, i.client_path, kill=True),) + _restore(i),
                  detail=(SwapEnd(restarted=True), None, None))


# --- the executor: gathering the facts, recording the endings ------------------------------


class SwapExecutor:
    action = ACTION
    chain = 6  # quick steps (stop → stopping, launch → starting) chain within one turn
    owns_pane = True

    def facts(self, ctx: ActionContext, entry: JournalEntry, bound) -> SwapFacts:
        i = from_row(HandoffIntent, entry.intent)
        now = ctx.clock()
        base = SwapFacts(now=now, earlier=i.run != ctx.run, session_known=ctx.store.get_session(entry.session) is not None,
                         stop_timeout=ctx.config.handoff_stop_timeout)
        inv = tmux.list_panes(ctx.server)
        if not inv.answered:
            return replace(base, tmux_answered=False)
        pane = inv.pane(i.pane)
        old = teardown.Proc(i.old_pid, i.old_started) if i.old_pid else None
        f = replace(base, pane=pane, old_gone=old is None or teardown.state_of(old) is teardown.Gone.GONE)
        if pane is None:
            return f
        if i.step is SwapStep.STOP:
            if not i.remain_saved:
                outcome, value = tmux.pane_option(ctx.server, i.pane, KEEP_PANE)
                return replace(f, remain_read=(outcome is tmux.Outcome.DONE, value))
            return replace(f, tree=teardown.look(old) if old else teardown.Tree(None, ()))
        if i.step is SwapStep.STOPPING:
            known = [teardown.Proc(p, t) for p, t in i.tree]
            tree = teardown.look(old, known) if old else teardown.Tree(i.pgid, tuple(known))
            gone, left = teardown.confirm_gone(tree.procs)
            return replace(f, tree=tree, gone=gone, left=left)
        shell = not pane.dead and identity.identify(identity.pane_processes(pane.pane_pid), {}).kind is IdentityKind.NONE
        f = replace(f, only_a_shell=shell)
        if i.step is SwapStep.STARTING and not pane.dead:
            return self._target(ctx, i, f, pane, now)
        if i.step is SwapStep.DELIVER and i.delivering and f.earlier:
            capture = tmux.capture_panes(ctx.server, [i.pane]).get(i.pane)
            return replace(f, on_screen=capture.text or "" if capture else "")
        if i.step is SwapStep.SUBMIT and not i.submitted:
            capture = tmux.capture_panes(ctx.server, [i.pane]).get(i.pane)
            rows = capture_rows(capture.text or "") if capture and capture.text else []
            return replace(f, brief_shown=brief_shown(i.brief, ctx.plugins.agents.get(i.target), rows))
        return f

    def _target(self, ctx: ActionContext, i: HandoffIntent, f: SwapFacts, pane, now: datetime) -> SwapFacts:
        spec = ctx.plugins.agents[i.target]
        ident = identity.identify(identity.pane_processes(pane.pane_pid), ctx.plugins.agents, ctx.overrides())
        rows: list[str] = []
        if ident.kind is IdentityKind.KNOWN and ident.agent == i.target:
            capture = tmux.capture_panes(ctx.server, [i.pane]).get(i.pane)
            rows = capture_rows(capture.text or "") if capture and capture.text else []
        chrome = chrome_of(spec, rows)
        ready = any(is_chrome(r, chrome) for r in rows)
        # On a hand-back the resumed conversation redraws its old wall (`codex resume --last` does):
        # that banner is history, not a new limit; the poll's gates judge what comes after it.
        walled = None
        if ready and not i.hand_back:
            walled = ctx.plugins.detect(i.target, rows, Clock(now=now, local_zone=local_zone()), None)
        return replace(f, new_agent=(ident.pid, ident.create_time), ready=ready, walled=walled)

    def step(self, intent: Mapping, facts: SwapFacts) -> Move:
        return step(intent, facts)

    def progress(self, ctx: ActionContext, entry: JournalEntry, move: Move) -> tuple[Record, ...]:
        if not isinstance(move, Go) or entry.intent.get("effect_error"):
            return ()
        i = from_row(HandoffIntent, entry.intent)
        told: list[Record] = []
        if move.step == SwapStep.STOPPING and move.data.get("detached"):
            pids = ", ".join(str(p) for p, _ in move.data["detached"])
            told.append(Tell("handoff.left-alone", f"left running: pid {pids}, detached into a session of its own (a daemon, not the agent)"))
        if move.step == SwapStep.STOPPING and "kill_at" in move.data:
            told.append(Tell("handoff.escalated", f"{i.outgoing} ignored SIGTERM for {ctx.config.handoff_stop_timeout:g}s; sent SIGKILL"))
        return tuple(told)

    def finished(self, ctx: ActionContext, entry: JournalEntry, end: Finish) -> tuple[Record, ...]:
        i = from_row(HandoffIntent, entry.intent)
        swap_end, pid, started = end.detail if isinstance(end.detail, tuple) else (SwapEnd(), None, None)
        if end.result is Result.DONE:
            return _settled(ctx.clock(), entry, i, end, swap_end, pid, started)
        return (Observe(sessions.HandoffRolledBack(SessionState(i.prior_state), swap_end.restarted)),
                Tell("handoff.rolled-back", f"handoff to {i.target} rolled back: {end.outcome}",
                     data={"journal": entry.id, "to": i.target, "next": policy.after_rollback(entry.session)}))


def _settled(now: datetime, entry: JournalEntry, i: HandoffIntent, end: Finish, swap_end: SwapEnd, pid, started) -> tuple[Record, ...]:
    """What a settled swap changes: the ledger, the session (the target runs there now), a brief that waits."""
    from afd.act import briefing

    pending = plan.brief_pending(swap_end.brief_pending) if swap_end.brief_pending else None
    records: list[Record] = [
        AddLedger(LedgerEntry(
            session=entry.session, at=now, from_agent=i.outgoing or "unknown", to_agent=i.target,
            head_sha=i.git.head_sha, reason=i.reason, automatic=i.automatic, base_sha=i.git.base_sha,
            journal_id=entry.id, from_account=i.outgoing_account, to_account=i.target_account,
        )),
        Observe(sessions.HandoffSettled(i.target, i.target_account or i.target, pid, started, swap_end.limited, pending)),
    ]
    if swap_end.brief_pending:
        records.append(briefing.follow(pane=i.pane, brief=i.brief, target=i.target, handoff=entry.id))
    records.append(Tell("session.handoff", f"handed off: {end.outcome}", data={"journal": entry.id, "to": i.target}))
    return tuple(records)
