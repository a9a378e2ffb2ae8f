"""Each loop turn: advance the journal's pending actions, and start the automatic handoffs.

Called by the daemon after every poll, on the loop's thread (the daemon is
the only writer of the store). A step never blocks: it does one short thing
and returns, and a waiting step (a stop not yet confirmed, a target not yet
ready) is simply looked at again next turn.
"""

from __future__ import annotations

import logging

from afd.decide import policy
from afd.act import auto_key, handoff
from afd.record.store import JournalState

log = logging.getLogger("afd.actions")

_ADVANCE = {"handoff": handoff.advance, "brief": handoff.advance_brief}
# Quick steps chain within one turn; a step that must wait stops the chain.
_MAX_STEPS_PER_TURN = 6


def busy(sup) -> bool:
    """Whether some action is in progress (the loop then turns faster)."""
    return bool(sup.acting) or any(e.action == "handoff" for e in sup.store.pending_journal())


def advance_all(sup, on_settled=None) -> None:
    for entry in sup.store.pending_journal():
        step = _ADVANCE.get(entry.action)
        if step is None:
            continue
        if entry.action == "handoff":
            sup.acting.add(entry.session)
        for _ in range(_MAX_STEPS_PER_TURN):
            try:
                outcome = step(sup, entry)
            except Exception as exc:  # a bug must not leave the pane with nobody in charge
                log.exception("%s of %s failed at step %s", entry.action, entry.session, entry.intent.get("step"))
                outcome = _fail(sup, entry, exc)
            if outcome is not None:
                if on_settled is not None:
                    on_settled(entry.id, sup.store.journal_entry(entry.id))
                break
            fresh = sup.store.journal_entry(entry.id)
            if fresh is None or fresh.state is not JournalState.PENDING or fresh.intent == entry.intent:
                break
            entry = fresh


def _fail(sup, entry, exc: Exception) -> str:
    if entry.action == "handoff":
        return handoff._abort(sup, entry, f"afd hit an internal error at step {entry.intent.get('step')}: {exc}")
    sup.store.journal_finish(entry.id, JournalState.ROLLED_BACK, f"internal error: {exc}")
    return "failed"


def start_auto_handoffs(sup) -> None:
    """Hand off each newly limited session, when the config says so; refusals leave the wait path in force."""
    config = sup.config
    if config.limit_action != "handoff" or not config.handoff_order:
        return
    busy_sessions = {e.session for e in sup.store.pending_journal() if e.action != "create"}
    for rec in sup.store.list_sessions():
        if rec.state != "limited" or rec.name in sup.acting or rec.name in busy_sessions:
            continue
        key = auto_key(rec)
        if key in sup.auto_tried:
            continue
        choice = policy.choose_target(config.handoff_order, rec.agent, sup.store.load_limits())
        if isinstance(choice, policy.Park):
            sup.auto_tried[key] = "declined"
            _all_limited(sup, rec, choice)
            continue
        try:
            handoff.begin(sup, rec.name, choice.to, automatic=True)
        except handoff.HandoffRefused as exc:
            sup.auto_tried[key] = "declined"
            sup.event("handoff.refused", f"no automatic handoff to {choice.to}: {exc}; the wait path applies", rec.name)
        else:
            sup.auto_tried[key] = "started"


def _all_limited(sup, rec, park: policy.Park) -> None:
    from dataclasses import replace

    from afd.decide import nextaction

    when = park.until.strftime("%Y-%m-%dT%H:%M:%SZ") if park.until else "no reset time stated"
    plan = nextaction.plan_of(park, max_attempts=sup.config.resume_max_attempts, agent=rec.agent)
    sup.store.upsert_session(
        replace(rec, state=handoff.ALL_LIMITED, next_action=nextaction.dumps(plan), updated_at=sup.clock())
    )
    sup.event(
        "session.all_limited",
        f"all agents limited (handoff_order: {', '.join(sup.config.handoff_order)}); earliest reset {when}; "
        f"{rec.agent} waits for its reset, no round-robin",
        rec.name,
        earliest_reset=when,
    )
