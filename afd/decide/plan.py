"""A session's next action as a typed value, made from what policy decided or what an action is doing.

Pure. The store keeps the value (`afd.record.types.NextAction`); status
shows it in words (`afd.decide.nextaction`).
"""

from __future__ import annotations

from afd.decide import policy
from afd.record.types import NextAction, PlanKind


def of(decision: policy.Decision, *, max_attempts: int, agent: str | None = None) -> NextAction | None:
    """The next action a decision shows; None when there is nothing to say."""
    plan: NextAction
    if isinstance(decision, policy.ResumeAt | policy.ResumeNow):
        at = decision.at if isinstance(decision, policy.ResumeAt) else None
        kind = PlanKind.AUTO_CONTINUE if decision.why == "auto-continue" else PlanKind.RESUME
        plan = NextAction(kind, decision.why, at, decision.attempt, max_attempts)
    elif isinstance(decision, policy.Nothing):
        if decision.next_action is None:
            return None
        kind = PlanKind.AUTO_CONTINUE if decision.why == "auto-continue" else PlanKind.REPORT
        # Why afd only reports, as a code a script can test (see NextAction.reason).
        reason = decision.why if kind is PlanKind.REPORT and decision.why else None
        plan = NextAction(kind, decision.next_action, decision.at, None, max_attempts, reason=reason)
    elif isinstance(decision, policy.Held):
        # `at` is when the pause ends (None: when the person unpauses); `held` what afd would do then.
        held = of(decision.held, max_attempts=max_attempts) if decision.held is not None else None
        plan = NextAction(PlanKind.PAUSED, decision.why, decision.until,
                          held=held or NextAction(PlanKind.HANDOFF, "automatic handoff"))
    elif isinstance(decision, policy.NeedsHuman):
        plan = NextAction(PlanKind.NEEDS_HUMAN, decision.why, None, None, max_attempts)
    elif isinstance(decision, policy.Handoff):
        plan = NextAction(PlanKind.HANDOFF, decision.why or f"hand off to {decision.to}")
    elif isinstance(decision, policy.Park):
        plan = NextAction(PlanKind.PARK, decision.why, decision.until)
    else:
        return None
    # Kept to the second, as it is stored: a plan made again each poll compares equal to the one stored.
    at = plan.at.replace(microsecond=0) if plan.at is not None else None
    return NextAction(plan.action, plan.why, at, plan.attempt, plan.of, agent or None, plan.reason, plan.held)


def resuming(step: str, *, attempt: int | None, max_attempts: int, hold: str | None = None) -> NextAction:
    """The next action while a resume is under way; `hold` says why it waits for a person."""
    why = f"waiting: {hold}" if hold else f"resuming ({step.replace('_', ' ')})"
    return NextAction(PlanKind.RESUMING, why, None, attempt, max_attempts)


def brief_pending(why: str) -> NextAction:
    """The next action while a handoff's brief waits for the new agent to take it."""
    return NextAction(PlanKind.BRIEF_PENDING, f"brief pending ({why})")
