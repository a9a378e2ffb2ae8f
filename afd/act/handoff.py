"""The swap: another agent into the same pane, worktree and branch (seed §4.5).

`begin` checks everything that could refuse the handoff, gathers the git
facts, builds the brief and commits the intent to the journal — all before
anything is touched. `advance` is then called by the poll loop, once a
turn, and does at most one short step: the step it is at lives in the
journal row and is written *before* its effect, so a restart finds every
swap at a known step and `afd.recovery` carries it on or rolls it back
through this same code.

Steps: stop → stopping (SIGTERM sent; SIGKILL after handoff_stop_timeout)
→ launch (tree confirmed gone) → starting (target respawned in the pane)
→ deliver (typed brief) → settled: the ledger entry, the session record and
the journal's outcome in one transaction. A teardown that cannot be
confirmed, or a launch that fails, rolls back: the old agent is restarted
with its resume args if it had stopped.
"""

from __future__ import annotations

import os
import shlex
import signal
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

from afd.act import deliver, preflight
from afd.decide import nextaction, policy
from afd.decide.brief import BriefInput, build_brief
from afd.errors import AfdError
from afd.jobs import rules as jobs
from afd.jobs.book import JobBook
from afd.judge import screen, witness
from afd.judge.gates import is_chrome
from afd.judge.limits import LimitState
from afd.kit.resettime import local_zone
from afd.kit.text import capture_rows
from afd.model import Clock, IdentitySource, PromptDelivery, SessionState
from afd.observe import identity
from afd.observe.identity import IdentityKind
from afd.record.types import JournalEntry, JournalState, LedgerEntry, SessionRecord
from afd.world import git, teardown, tmux

ACTION = "handoff"
KILL_GRACE = timedelta(seconds=5)  # after SIGKILL, how long the tree has to be reaped
READY_TIMEOUT = timedelta(seconds=60)  # the target's screen must show its chrome by then
CRASH_ENV = "AFD_TEST_CRASH_AT_STEP"


class HandoffRefused(AfdError):
    """The handoff may not start; the message is one line for the user, nothing was touched."""


# --- before anything is touched ------------------------------------------------


def _iso(at: datetime) -> str:
    return at.isoformat()


def _dt(text: str) -> datetime:
    return datetime.fromisoformat(text)


def launch_argv(sup, agent: str, *, resume: bool) -> list[str]:
    spec = sup.plugins.agents[agent]
    override = sup.config.agents.get(agent)
    argv = list(override.command) if override and override.command else list(spec.command)
    if resume:
        argv += list(override.resume_args) if override and override.resume_args else list(spec.resume_args)
    return argv


def _pending_action(sup, session: str) -> str | None:
    for entry in sup.store.pending_journal():
        if entry.session == session and entry.action != "create":
            return entry.action
    return None


def _inside(cwd: str, root: str) -> bool:
    try:
        return Path(cwd).resolve().is_relative_to(Path(root).resolve())
    except (OSError, ValueError):
        return False


def _turn_ended(rec: SessionRecord) -> tuple[bool, str]:
    """Whether the outgoing agent's turn is over, and how that was established (for the journal).

    Codex keeps running a turn in its detached daemon after the TUI is gone,
    so stopping its pane does not stop its work: only an idle pane will do.
    """
    if rec.state in (SessionState.LIMITED, SessionState.ALL_LIMITED):
        return True, "its usage-limit wall was on screen and the pane unchanged over the stability polls"
    if rec.state == "idle":
        return True, "its pane was unchanged between polls with no banner (idle at its prompt)"
    return False, f"its pane was {rec.state} at the last poll"


def begin(
    sup,
    name: str,
    target: str,
    *,
    brief: str | None = None,
    force: bool = False,
    automatic: bool = False,
) -> int:
    """Check, gather, build the brief and journal the intent; returns the journal entry id."""
    rec = sup.store.get_session(name)
    if rec is None:
        raise HandoffRefused(f"no session named {name!r}")
    inv = tmux.list_panes(sup.server)
    pane = None
    if inv.answered and inv.server_running:
        pane = next((p for p in inv.panes if p.pane_id == rec.pane_id and inv.server_pid == rec.server_pid), None)
    present = None if not inv.answered else pane is not None
    worktree = rec.worktree or (pane.cwd if pane else "")
    spec = sup.plugins.agents.get(target)
    argv_first = launch_argv(sup, target, resume=False) if spec else []
    client_path = preflight.pane_path(pane.pane_pid) if pane else None
    resolved = preflight.resolve(argv_first, client_path) if pane and spec else None
    is_tree = bool(worktree) and git.is_work_tree(Path(worktree))
    ledger = sup.store.ledger(name)
    ended, how = _turn_ended(rec)
    facts = policy.HandoffFacts(
        session_state=rec.state,
        outgoing=rec.agent,
        identity=rec.identity,
        identity_source=rec.identity_source,
        mission=rec.mission,
        pane_present=present,
        action_in_progress=_pending_action(sup, name) or (rec.state if rec.state == SessionState.HANDING_OFF else None),
        is_work_tree=is_tree,
        cwd_inside_worktree=bool(pane and worktree and _inside(pane.cwd, worktree)),
        handoffs_at=tuple(e.at for e in ledger),
        target_known=spec is not None,
        target_command=resolved,
        target_fact=sup.store.load_limits().get(target),
        now=sup.clock(),
        max_per_session=sup.config.handoff_max_per_session,
        turn_ended=ended or rec.agent != "codex",
        witnessed=witness.handoff_witnessed(
            rec.witnesses, bool(rec.agent) and sup.plugins.has_witness(rec.agent), sup.config.handoff_requires_witness
        ),
    )
    why = policy.handoff_refusal(facts, target, brief=brief, force=force, automatic=automatic)
    if why is not None:
        raise HandoffRefused(why)

    recorded_base = ledger[0].base_sha if ledger else None
    try:
        facts_git = git.handoff_facts(Path(worktree), recorded_base)
    except git.GitError as exc:
        raise HandoffRefused(str(exc)) from None
    reason = "usage limit" if automatic or rec.state in (SessionState.LIMITED, SessionState.ALL_LIMITED) else "manual"
    # Hand-back: this agent worked here before; it keeps its own conversation per directory.
    last_turn = next((e for e in reversed(ledger) if e.from_agent == target), None)
    since = None
    if last_turn is not None and git.is_ancestor(Path(worktree), last_turn.head_sha, facts_git.head_sha):
        since = last_turn.head_sha
    text = build_brief(
        BriefInput(
            previous_agent=rec.agent or "unknown",
            reason=reason,
            goal=(brief or "").strip() or rec.mission or "",
            git=facts_git,
            extra=sup.config.handoff_brief,
            since_sha=since,
            since_commits=git.count_commits(Path(worktree), f"{since}..{facts_git.head_sha}") if since else 0,
            jobs=tuple(jobs.brief_lines(JobBook(sup.store).supervised_by(name))),
        )
    )
    argv = launch_argv(sup, target, resume=last_turn is not None)
    argv[0] = resolved
    delivery = spec.prompt_delivery.value
    if spec.prompt_delivery is PromptDelivery.ARGUMENT:
        argv.append(text)
    old_spec = sup.plugins.agents.get(rec.agent)
    old_argv = launch_argv(sup, rec.agent, resume=True) if old_spec else []
    if old_argv:
        old_argv[0] = preflight.resolve(old_argv, client_path) or old_argv[0]
    intent = {
        "step": "stop",
        "pane": rec.pane_id,
        "cwd": pane.cwd,
        "from": rec.agent,
        "to": target,
        "automatic": automatic,
        "reason": reason,
        "forced": force,
        "unverified": (facts.target_fact is None or facts.target_fact.state is not LimitState.AVAILABLE),
        "hand_back": last_turn is not None,
        "turn_end": how,
        "git": {
            "branch": facts_git.branch,
            "head_sha": facts_git.head_sha,
            "base_sha": facts_git.base_sha,
            "commits": facts_git.commits,
            "dirty_files": facts_git.dirty_files,
        },
        "brief": text,
        "delivery": delivery,
        "argv": argv,
        "old_argv": old_argv,
        "client_path": client_path,
        "old": [rec.agent_pid, rec.agent_started_at],
        "prior_state": rec.state,
    }
    entry = sup.store.journal_begin(name, ACTION, intent, at=sup.clock())
    _crash_point("stop")
    sup.acting.add(name)
    plan = nextaction.plan_of(policy.Handoff(target, intent["unverified"], why=f"handing off to {target}"), max_attempts=0)
    sup.store.upsert_session(replace(rec, state=SessionState.HANDING_OFF, next_action=nextaction.dumps(plan), updated_at=sup.clock()))
    how_chosen = " (unverified: its limit state is unknown)" if intent["unverified"] else ""
    sup.event(
        "handoff.started",
        f"handing off from {rec.agent} to {target}{how_chosen} at {facts_git.head_sha[:12]}"
        f" ({'automatic' if automatic else 'asked by the user'}; {rec.agent}'s turn had ended: {how})",
        name,
        journal=entry,
    )
    return entry


# --- one step at a time ----------------------------------------------------------


def _save_step(sup, entry: JournalEntry, **changes) -> dict:
    intent = {**entry.intent, **changes}
    sup.store.journal_set_intent(entry.id, intent)
    if "step" in changes:
        _crash_point(changes["step"])
    return intent


def _crash_point(step: str) -> None:
    # Fault injection for the recovery tests: die as `kill -9` would, right
    # after this step is on disk and before its effect.
    if os.environ.get(CRASH_ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)


def advance(sup, entry: JournalEntry) -> str | None:
    """Do the next step of this swap; returns the outcome once it has settled, else None."""
    step = entry.intent["step"]
    return _STEPS[step](sup, entry)


def _stop(sup, entry: JournalEntry) -> str | None:
    i = entry.intent
    server = sup.server
    saved = i.get("remain_on_exit", "?")
    if saved == "?":
        outcome, value = tmux.pane_option(server, i["pane"], "remain-on-exit")
        if outcome is not tmux.Outcome.DONE:
            return _abort(sup, entry, f"could not read the pane's options ({outcome.value}); nothing was stopped")
        saved = value
        i = _save_step(sup, entry, remain_on_exit=saved)
        entry = replace(entry, intent=i)
    # The pane must outlive its agent, or the swap has no pane to start in.
    kept = tmux.set_pane_option(server, i["pane"], "remain-on-exit", "on")
    if not kept.ok:
        return _abort(sup, entry, f"could not keep the pane open across the stop: {kept.error or kept.outcome.value}")
    pid, started = i["old"]
    tree = teardown.look(teardown.Proc(pid, started)) if pid else teardown.Tree(None, ())
    now = sup.clock()
    _save_step(
        sup, entry, step="stopping", term_at=_iso(now), pgid=tree.pgid,
        tree=[p.as_list() for p in tree.procs], detached=[p.as_list() for p in tree.detached],
    )
    teardown.signal_group(tree.pgid, teardown.TERM)
    if tree.detached:
        pids = ", ".join(str(p.pid) for p in tree.detached)
        sup.event("handoff.left-alone", f"left running: pid {pids}, detached into a session of its own (a daemon, not the agent)", entry.session)
    return None


def _stopping(sup, entry: JournalEntry) -> str | None:
    i = entry.intent
    known = [teardown.Proc(p, t) for p, t in i["tree"]]
    pid, started = i["old"]
    tree = teardown.look(teardown.Proc(pid, started), known) if pid else teardown.Tree(i.get("pgid"), tuple(known))
    if len(tree.procs) != len(known):
        i = _save_step(sup, entry, tree=[p.as_list() for p in tree.procs])  # new children are waited for too
    state, left = teardown.confirm_gone(tree.procs)
    now = sup.clock()
    if state is teardown.Gone.GONE:
        _save_step(sup, entry, step="launch", stopped_at=_iso(now))
        return None
    if "kill_at" not in i:
        if now - _dt(i["term_at"]) >= timedelta(seconds=sup.config.handoff_stop_timeout):
            _save_step(sup, entry, kill_at=_iso(now))
            teardown.signal_group(i.get("pgid"), teardown.KILL)
            sup.event("handoff.escalated", f"{i['from']} ignored SIGTERM for {sup.config.handoff_stop_timeout:g}s; sent SIGKILL", entry.session)
        return None
    if now - _dt(i["kill_at"]) >= KILL_GRACE:
        pids = ", ".join(str(p.pid) for p in left)
        return _abort(sup, entry, f"could not confirm that {i['from']}'s processes are gone ({state.value}: pid {pids})")
    return None


def _pane(sup, pane_id: str) -> tmux.PaneInfo | None:
    inv = tmux.list_panes(sup.server)
    return next((p for p in inv.panes if p.pane_id == pane_id), None) if inv.answered else None


def _only_a_shell(pane: tmux.PaneInfo) -> bool:
    procs = identity.pane_processes(pane.pane_pid)
    ident = identity.identify(procs, {})
    return ident.kind is IdentityKind.NONE


def _launch(sup, entry: JournalEntry) -> str | None:
    i = entry.intent
    pane = _pane(sup, i["pane"])
    if pane is None:
        return _abort(sup, entry, "the pane vanished during the swap")
    if not pane.dead and not _only_a_shell(pane):
        return _abort(sup, entry, "something other than a shell runs in the pane after the stop; not starting a second program there")
    _save_step(sup, entry, step="starting", launched_at=_iso(sup.clock()))
    # -k only over a dead pane or a bare shell: the old agent is confirmed gone.
    started = tmux.respawn_pane_from(sup.server, i["pane"], i["cwd"], i["argv"], i.get("client_path"), kill=not pane.dead)
    if not started.ok:
        return _roll_back(sup, entry, f"tmux could not start {i['to']}: {started.error or started.outcome.value}")
    _save_step(sup, replace(entry, intent={**i, "step": "starting", "launched_at": _iso(sup.clock())}), respawned=True)
    return None


def _starting(sup, entry: JournalEntry) -> str | None:
    i = entry.intent
    pane = _pane(sup, i["pane"])
    if pane is None:
        return _abort(sup, entry, f"the pane vanished while {i['to']} was starting")
    spec = sup.plugins.agents[i["to"]]
    if pane.dead and not i.get("respawned"):
        # A restart found the step written but the pane never respawned: launch it now.
        _save_step(sup, entry, step="launch")
        return None
    if pane.dead:
        return _roll_back(sup, entry, f"{i['to']} exited as soon as it started")
    ident = identity.identify(identity.pane_processes(pane.pane_pid), sup.plugins.agents, _overrides(sup))
    rows = []
    if ident.kind is IdentityKind.KNOWN and ident.agent == i["to"]:
        capture = tmux.capture_panes(sup.server, [i["pane"]]).get(i["pane"])
        rows = capture_rows(capture.text or "") if capture and capture.text else []
    if not any(is_chrome(r, spec.chrome) for r in rows):
        if sup.clock() - _dt(i["launched_at"]) >= READY_TIMEOUT:
            if ident.pid:
                teardown.signal_group(teardown.look(teardown.Proc(ident.pid, ident.create_time)).pgid, teardown.KILL)
            return _roll_back(sup, entry, f"{i['to']} did not become ready within {READY_TIMEOUT.seconds}s")
        return None
    i = _save_step(sup, entry, new=[ident.pid, ident.create_time])
    entry = replace(entry, intent=i)
    # On a hand-back the resumed conversation redraws its old wall (`codex resume --last` does):
    # that banner is history, not a new limit; the poll's gates judge what comes after it.
    found = None if i["hand_back"] else sup.plugins.detect(i["to"], rows, Clock(now=sup.clock(), local_zone=local_zone()), None)
    if found is not None:
        # The incoming agent is itself walled: parked, the brief waits, and every session learns it.
        return _settle(sup, entry, limited=found)
    if i["delivery"] == PromptDelivery.TYPED.value:
        _save_step(sup, entry, step="deliver")
        return None
    return _settle(sup, entry)


def _deliver(sup, entry: JournalEntry) -> str | None:
    i = entry.intent
    if i.get("delivering"):
        # A restart after the paste may or may not have landed: look before typing it twice.
        capture = tmux.capture_panes(sup.server, [i["pane"]]).get(i["pane"])
        first = i["brief"].splitlines()[0]
        if capture and capture.text and first in capture.text:
            _save_step(sup, entry, step="submit", pasted_at=_iso(sup.clock()))
            return None
    i = _save_step(sup, entry, delivering=True)
    pasted = deliver.paste(sup.server, i["pane"], i["brief"])
    if not pasted.ok:
        return _settle(sup, replace(entry, intent=i), brief_pending=f"the brief could not be typed: {pasted.error or pasted.outcome.value}")
    _save_step(sup, replace(entry, intent=i), step="submit", pasted_at=_iso(sup.clock()))
    return None


# A TUI that reads keys arriving right after a paste as part of it (Gemini
# CLI) makes an Enter sent with the brief a newline in its input box: Enter
# goes on a later poll, once the brief shows, or after this long regardless.
SUBMIT_WAIT = timedelta(seconds=10)


def _submit(sup, entry: JournalEntry) -> str | None:
    i = entry.intent
    capture = tmux.capture_panes(sup.server, [i["pane"]]).get(i["pane"])
    rows = capture_rows(capture.text or "") if capture and capture.text else []
    if not _brief_shown(i["brief"], i["to"], rows) and sup.clock() - _dt(i["pasted_at"]) < SUBMIT_WAIT:
        return None
    sent = deliver.press(sup.server, i["pane"], "Enter")
    if not sent.ok:
        return _settle(sup, entry, brief_pending=f"the brief could not be submitted: {sent.error or sent.outcome.value}")
    return _settle(sup, entry)


def _brief_shown(brief: str, agent: str, rows: list[str]) -> bool:
    """The pasted brief is in the pane: its start in the input row, or (a long paste scrolled inside a
    small input box) its last line."""
    if screen.text_seen(brief, agent, rows):
        return True
    lines = [" ".join(line.split()) for line in brief.splitlines() if line.strip()]
    tail = lines[-1][:24] if lines else ""
    return bool(tail) and any(tail in " ".join(row.split()) for row in rows)


def _type(sup, pane_id: str, text: str) -> tmux.ActionResult:
    """The brief as one bracketed paste, then Enter as its own key (never Escape)."""
    pasted = deliver.paste(sup.server, pane_id, text)
    return deliver.press(sup.server, pane_id, "Enter") if pasted.ok else pasted


def _overrides(sup) -> dict:
    return {n: o.command for n, o in sup.config.agents.items() if o.command}


# --- endings ------------------------------------------------------------------------


def _restore(sup, i: dict) -> None:
    if i.get("remain_on_exit", "?") != "?":
        tmux.restore_pane_option(sup.server, i["pane"], "remain-on-exit", i["remain_on_exit"])


def _settle(sup, entry: JournalEntry, *, limited=None, brief_pending: str | None = None) -> str:
    i = entry.intent
    now = sup.clock()
    rec = sup.store.get_session(entry.session)
    pid, started = i.get("new") or (None, None)
    if limited is not None and i["delivery"] == PromptDelivery.TYPED.value:
        brief_pending = f"{i['to']} is at its usage limit; the brief waits until it can take it"
    state = SessionState.LIMITED if limited is not None else SessionState.IDLE
    outcome = f"{i['from']} → {i['to']} in pane {i['pane']} at {i['git']['head_sha'][:12]}"
    if limited is not None:
        outcome += f"; {i['to']} is itself at its usage limit"
    if brief_pending:
        outcome += f"; brief pending ({brief_pending})"
    with sup.store.transaction():
        if sup.store.ledger_for_journal(entry.id) is None:
            sup.store.add_ledger(
                LedgerEntry(
                    session=entry.session, at=now, from_agent=i["from"], to_agent=i["to"],
                    head_sha=i["git"]["head_sha"], reason=i["reason"], automatic=i["automatic"],
                    base_sha=i["git"]["base_sha"], journal_id=entry.id,
                )
            )
        if rec is not None:
            sup.store.upsert_session(
                replace(
                    rec, agent=i["to"], identity=IdentityKind.KNOWN, identity_source=IdentitySource.PROCESS,
                    agent_pid=pid, agent_started_at=started, state=state,
                    next_action="brief pending" if brief_pending else None,
                    last_banner=limited.banner if limited is not None else None,
                    reset_at=limited.reset_at if limited is not None else None,
                    banner_first_seen_at=None, updated_at=now,
                )
            )
        sup.store.journal_finish(entry.id, JournalState.DONE, outcome, at=now)
        if brief_pending:
            sup.store.journal_begin(
                entry.session, "brief", {"pane": i["pane"], "brief": i["brief"], "to": i["to"], "handoff": entry.id}, at=now
            )
    _restore(sup, i)
    sup.acting.discard(entry.session)
    sup.watches.pop(entry.session, None)
    sup.store.clear_banner(entry.session)
    sup.event("session.handoff", f"handed off: {outcome}", entry.session, journal=entry.id, to=i["to"])
    return outcome


def _abort(sup, entry: JournalEntry, why: str) -> str:
    """Stop short: the session stays as it was; the old agent restarted if it had already stopped."""
    i = entry.intent
    pid, started = i["old"]
    alive = bool(pid) and teardown.state_of(teardown.Proc(pid, started)) is not teardown.Gone.GONE
    note = ""
    if not alive and i["step"] not in ("stop",) and i.get("old_argv"):
        note = _restart_old(sup, i, why)
    return _rolled_back(sup, entry, why + note, restarted=bool(note))


def _roll_back(sup, entry: JournalEntry, why: str) -> str:
    """The target failed to start: the record still names the old agent, which is started again."""
    note = _restart_old(sup, entry.intent, why)
    return _rolled_back(sup, entry, why + note, restarted=True)


def _restart_old(sup, i: dict, why: str) -> str:
    pane = _pane(sup, i["pane"])
    if pane is None:
        return "; the pane is gone, so the old agent could not be restarted"
    # The pane shows why before the old agent draws over it.
    show = ["sh", "-c", 'printf "afd: %s\\n" "$1"; shift; exec "$@"', "afd", f"handoff rolled back: {why}", *i["old_argv"]]
    done = tmux.respawn_pane_from(sup.server, i["pane"], i["cwd"], show, i.get("client_path"), kill=True)
    if not done.ok:
        return f"; restarting {i['from']} failed too: {done.error or done.outcome.value}"
    return f"; restarted {i['from']} with {shlex.join(i['old_argv'][1:]) or 'its command'}"


def _rolled_back(sup, entry: JournalEntry, why: str, *, restarted: bool) -> str:
    i = entry.intent
    now = sup.clock()
    rec = sup.store.get_session(entry.session)
    with sup.store.transaction():
        if rec is not None:
            state = i.get("prior_state", "idle")
            sup.store.upsert_session(
                replace(rec, state=state, next_action=None, updated_at=now,
                        **({"agent_pid": None, "agent_started_at": None} if restarted else {}))
            )
        sup.store.journal_finish(entry.id, JournalState.ROLLED_BACK, why, at=now)
    _restore(sup, i)
    sup.acting.discard(entry.session)
    sup.watches.pop(entry.session, None)
    if restarted:
        sup._awaiting_agent.add(entry.session)  # the restarted agent is this session's again
    sup.event("handoff.rolled-back", f"handoff to {i['to']} rolled back: {why}", entry.session, journal=entry.id)
    return "rolled back: " + why


_STEPS = {
    "stop": _stop,
    "stopping": _stopping,
    "launch": _launch,
    "starting": _starting,
    "deliver": _deliver,
    "submit": _submit,
}


# --- a brief that waits --------------------------------------------------------------


def advance_brief(sup, entry: JournalEntry) -> str | None:
    """Deliver a pending brief once its session can take it (idle, not limited); settles once."""
    i = entry.intent
    rec = sup.store.get_session(entry.session)
    if rec is None or rec.state == "gone":
        sup.store.journal_finish(entry.id, JournalState.ROLLED_BACK, "the session is gone; the brief was not delivered")
        return "gone"
    if rec.state != "idle" or entry.session in sup.acting:
        return None
    capture = tmux.capture_panes(sup.server, [i["pane"]]).get(i["pane"])
    first = i["brief"].splitlines()[0]
    if i.get("delivering") and capture and capture.text and first in capture.text:
        outcome = "the brief was already in the pane"
    else:
        sup.store.journal_set_intent(entry.id, {**i, "delivering": True})
        sent = _type(sup, i["pane"], i["brief"])
        if not sent.ok:
            return None  # tried again next turn
        outcome = "the pending brief was delivered"
    with sup.store.transaction():
        sup.store.journal_finish(entry.id, JournalState.DONE, outcome)
        sup.store.upsert_session(replace(rec, next_action=None, updated_at=sup.clock()))
    sup.event("handoff.brief", f"{outcome} to {i['to']}", entry.session, journal=entry.id)
    return outcome
