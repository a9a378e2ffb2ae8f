"""The poll loop's acting step: advance pending actions one move, and start the ones policy asks for.

Called once per poll after the limits are judged. It gathers what an
executor needs to decide (a fresh capture, tmux mode, client activity,
whether the old agent lives), asks `afd.recovery` for the move, records the
step in the journal and only then performs the move's one tmux call.
"""

from __future__ import annotations

import logging
import secrets
import time
from dataclasses import replace
from datetime import datetime

from afd.act import (
    Finish,
    Go,
    Key,
    Liveness,
    NoEffect,
    PaneView,
    Paste,
    Respawn,
    Result,
    Wait,
    auto_key,
    deliver,
    recovery,
)
from afd.decide import nextaction, policy
from afd.judge import screen
from afd.kit.resettime import local_zone
from afd.kit.text import capture_rows
from afd.model import Clock, SessionState
from afd.observe.identity import IdentityKind
from afd.record.types import JournalEntry, JournalState
from afd.world import tmux

log = logging.getLogger("afd.actions")



def run_token(sup) -> str:
    """Names this run of the supervisor in the steps it records, so a later run knows a step is not its own."""
    return sup.__dict__.setdefault("_action_run", secrets.token_hex(6))


def settings_of(sup) -> dict:
    config = sup.config
    return {"deliver_timeout": config.deliver_timeout, "typing_guard": config.typing_guard, "run": run_token(sup)}


def pending_actions(store) -> dict[str, JournalEntry]:
    """The pending entry of each session that an executor drives (one per session at most)."""
    found: dict[str, JournalEntry] = {}
    for entry in store.pending_journal():
        if recovery.has_executor(entry.action):
            found.setdefault(entry.session, entry)
    return found


def respawned_sessions(store) -> set[str]:
    """Sessions whose pending resume started their agent again: the next agent in their pane is theirs."""
    return {name for name, entry in pending_actions(store).items() if entry.intent.get("step") == "respawned"}


def advance(sup, live: dict, now: datetime) -> None:
    pending = pending_actions(sup.store)
    for name, entry in pending.items():
        _step(sup, entry, live.get(name), now)
    for name, (rec, _pane, _ident) in list(live.items()):
        if name not in pending and name not in sup.acting:  # a handoff owns the pane meanwhile
            _plan(sup, name, rec, now)


# --- what the pane shows ------------------------------------------------------------


def _liveness(ident) -> Liveness:
    if ident.kind is IdentityKind.KNOWN:
        return Liveness.ALIVE
    if ident.kind is IdentityKind.NONE:
        return Liveness.GONE
    return Liveness.UNKNOWN


def view_of(sup, rec, pane, ident, now: datetime) -> PaneView:
    if pane is None:
        return PaneView(presence=tmux.Presence.GONE, rows=(), agent=rec.agent if rec else None)
    result = tmux.capture_panes(sup.server, [pane.pane_id])[pane.pane_id]
    if result.presence is not tmux.Presence.PRESENT:
        return PaneView(presence=result.presence, rows=(), agent=rec.agent)
    answered, activity = tmux.client_activity(sup.server, pane.pane_id)
    # client_activity is wall-clock time; measure it against the wall clock, not the poll's instant.
    idle = None if activity is None else max(0.0, time.time() - activity)
    if answered is tmux.Presence.UNKNOWN:
        idle = 0.0  # cannot tell: assume someone is typing
    return PaneView(
        presence=tmux.Presence.PRESENT,
        rows=tuple(capture_rows(result.text or "")),
        agent=rec.agent,
        in_mode=pane.in_mode,
        dead=pane.dead,
        shell=not pane.dead and ident.kind is IdentityKind.NONE,
        agent_alive=_liveness(ident),
        client_idle=idle,
        session_state=rec.state,
        limited=rec.state in (SessionState.LIMITED, SessionState.ALL_LIMITED),
        clock=Clock(now=now, local_zone=local_zone()),
    )


# --- advancing a pending action ---------------------------------------------------------


def _step(sup, entry: JournalEntry, bound, now: datetime) -> None:
    rec, pane, ident = bound if bound is not None else (sup.store.get_session(entry.session), None, None)
    view = view_of(sup, rec, pane, ident, now)
    move = recovery.next_move(entry, view, now, settings_of(sup))
    attempt = entry.intent.get("attempt")
    if isinstance(move, Wait):
        if rec is not None:
            plan = nextaction.in_progress(entry.intent.get("step", "scheduled"), attempt=attempt,
                                          max_attempts=sup.config.resume_max_attempts, hold=move.hold)
            _save_plan(sup, rec, plan, now)
        return
    if isinstance(move, Go):
        first_enter = move.step == "submitted" and entry.intent.get("step") != "submitted"
        sup.store.journal_step(entry.id, move.step, at=now, **{**move.data, "run": run_token(sup)})
        result = _perform(sup, pane.pane_id, move)
        if first_enter and result.ok:
            sup.event("resume.sent", f"continuation sent to pane {pane.pane_id} (attempt {attempt})", entry.session,
                      attempt=attempt)
        if move.step == "respawned" and result.ok:
            sup._awaiting_agent.add(entry.session)  # the next agent in this pane is the session's own
            sup.event("resume.respawned", f"started {' '.join(move.effect.argv)} in pane {pane.pane_id}", entry.session)
        if result.outcome is tmux.Outcome.GONE:
            _finish(sup, entry, rec, Finish(Result.ABANDONED, "the pane is gone; nothing more was sent"), now)
        elif not result.ok:
            log.warning("[%s] %s: tmux said %s", entry.session, move.step, result.error)
        if rec is not None:
            plan = nextaction.in_progress(move.step, attempt=attempt, max_attempts=sup.config.resume_max_attempts)
            _save_plan(sup, sup.store.get_session(rec.name) or rec, plan, now)
        return
    _finish(sup, entry, rec, move, now)


def _perform(sup, pane_id: str, move: Go) -> tmux.ActionResult:
    effect = move.effect
    if isinstance(effect, Paste):
        return deliver.paste(sup.server, pane_id, effect.text)
    if isinstance(effect, Key):
        return deliver.press(sup.server, pane_id, effect.name)
    if isinstance(effect, Respawn):
        return tmux.respawn_pane(sup.server, pane_id, effect.cwd, list(effect.argv), kill=True)
    if isinstance(effect, NoEffect):
        return tmux.ActionResult(tmux.Outcome.DONE)
    raise TypeError(f"no way to perform {effect!r}")


def _finish(sup, entry: JournalEntry, rec, move: Finish, now: datetime) -> None:
    sent = move.result in (Result.CONFIRMED, Result.UNCONFIRMED)
    sup.store.journal_finish(entry.id, JournalState.DONE if sent else JournalState.ROLLED_BACK,
                             f"{move.result.value}: {move.outcome}", at=now)
    name = entry.session
    history = sup.store.resume_history(name)
    if sent:
        history = policy.sent(history, at=move.sent_at or now, confirmed=move.result is Result.CONFIRMED)
    elif move.result is Result.FAILED:
        history = policy.failed(history, at=now)
    elif move.result is Result.NEEDS_HUMAN:
        history = policy.stopped_for_human(history, move.outcome)
    sup.store.save_resume_history(name, history)
    kind = {
        Result.CONFIRMED: "resume.confirmed",
        Result.UNCONFIRMED: "resume.unconfirmed",
        Result.FAILED: "resume.failed",
        Result.ABANDONED: "resume.failed",
        Result.NEEDS_HUMAN: "session.needs_human",
    }[move.result]
    sup.event(kind, move.outcome, name, result=move.result.value, attempt=entry.intent.get("attempt"))
    if rec is not None:
        current = sup.store.get_session(name) or rec
        _save_plan(sup, current, None, now)


# --- planning ---------------------------------------------------------------------------


def limit_of(sup, name: str, rec, now: datetime) -> policy.Limit | None:
    """The limit the session stands at this poll, from the gates' verdict and the pane's last capture."""
    if rec.state == SessionState.EXITED:
        history = sup.store.resume_history(name)
        if history.episode is None or history.first_seen_at is None:
            return None
        # The agent exited at its limit: the wall is still the one it stood at.
        # What its banner said beside the reset is not kept, so it is waited
        # out like a plan window (the retry interval when no reset was read).
        return policy.Limit(
            kind="exited", episode=history.episode, first_seen_at=history.first_seen_at, reset_at=history.reset_at,
            reset_unstated=True,
        )
    if rec.state not in (SessionState.LIMITED, SessionState.ALL_LIMITED) or rec.banner_first_seen_at is None:
        return None
    watch = sup.watches.get(name)
    found = watch.detections[-1] if watch is not None and watch.detections else None
    if found is None:
        return None
    native, native_at = screen.native_continue(watch.captures[-1], Clock(now=now, local_zone=local_zone()))
    spec = sup.plugins.agents.get(rec.agent)
    if spec is not None and found.kind in spec.self_continuing_kinds:
        native, native_at = policy.Native.ARMED, rec.reset_at  # the agent retries at its reset by itself
    return policy.Limit(
        kind=found.kind,
        episode=f"{rec.last_banner}@{rec.banner_first_seen_at.isoformat()}",
        first_seen_at=rec.banner_first_seen_at,
        reset_at=rec.reset_at,
        native=native,
        native_at=(rec.reset_at or native_at) if native is policy.Native.ARMED else None,
        reset_unstated=found.reset_unstated,
        offers_other_model=found.offers_other_model,
    )


def _plan(sup, name: str, rec, now: datetime) -> None:
    cfg = sup.config
    limit = limit_of(sup, name, rec, now)
    before = sup.store.resume_history(name)
    history = policy.observe(before, limit, now=now)
    if history != before:
        sup.store.save_resume_history(name, history)
    if cfg.limit_action != "wait" and sup.auto_tried.get(auto_key(rec)) != "declined":
        return  # handoff decides for itself; when it declines (refused, all limited) the wait path applies
    decision = policy.decide_wait(
        name, limit, history,
        auto_resume=cfg.limit_auto_resume,
        resume_grace=cfg.resume_grace,
        retry_interval=cfg.limit_retry_interval,
        max_attempts=cfg.resume_max_attempts,
        now=now,
    )
    plan = nextaction.plan_of(decision, max_attempts=cfg.resume_max_attempts, agent=rec.agent)
    old = nextaction.loads(rec.next_action)
    if isinstance(decision, policy.NeedsHuman) and (old or {}).get("action") != "needs-human":
        sup.event("session.needs_human", f"needs you: {decision.why}", name, why=decision.why)
    if isinstance(decision, policy.ResumeAt) and (old or {}).get("at") != (plan or {}).get("at"):
        sup.event("resume.scheduled", f"{nextaction.words(plan)} (attempt {decision.attempt} of {cfg.resume_max_attempts})",
                  name, at=plan["at"], attempt=decision.attempt, why=decision.why)
    if isinstance(decision, policy.ResumeNow):
        begin(sup, rec, attempt=decision.attempt, why=decision.why, episode=limit.episode if limit else None, now=now)
        return
    _save_plan(sup, rec, plan, now)


def begin(sup, rec, *, attempt: int, why: str, episode: str | None, now: datetime, manual: bool = False) -> int:
    """Commit a resume's intent (step `scheduled`) before anything touches the pane."""
    cfg = sup.config
    spec = sup.plugins.agents.get(rec.agent) if rec.agent else None
    override = cfg.agents.get(rec.agent) if rec.agent else None
    command = (override.command if override and override.command else None) or (spec.command if spec else ())
    resume_args = (override.resume_args if override and override.resume_args is not None else None)
    if resume_args is None:
        resume_args = spec.resume_args if spec else ()
    message = override.resume_message if override else None
    intent = {
        "step": "scheduled",
        "step_at": now.isoformat(),
        "text": deliver.continuation_text(message, rec.mission),
        "agent": rec.agent,
        "pane_id": rec.pane_id,
        "cwd": rec.worktree,
        "respawn_argv": [*command, *resume_args] if command else None,
        "attempt": attempt,
        "episode": episode,
        "why": why,
        "manual": manual,
    }
    entry = sup.store.journal_begin(rec.name, "resume", intent, at=now)
    who = "by hand" if manual else why
    sup.event("resume.scheduled", f"resuming now ({who}; attempt {attempt} of {cfg.resume_max_attempts})", rec.name,
              attempt=attempt, why=why, manual=manual)
    _save_plan(sup, rec, nextaction.in_progress("scheduled", attempt=attempt, max_attempts=cfg.resume_max_attempts), now)
    return entry


def _save_plan(sup, rec, plan: dict | None, now: datetime) -> None:
    text = nextaction.dumps(plan)
    if rec.next_action != text:
        sup.store.upsert_session(replace(rec, next_action=text, updated_at=now))
