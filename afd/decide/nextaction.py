"""A session's next action, as status shows it: a machine form and words.

The machine form is what the store keeps and `status --json` prints:
``{"action", "at", "attempt", "of", "why"}`` with `at` in ISO 8601 UTC.
Words are made from it when shown, so a countdown is counted from the
moment it is read, in the reader's zone.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone, tzinfo
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from afd.decide import policy


def _iso(value: datetime | None) -> str | None:
    return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if value is not None else None


def plan_of(decision: policy.Decision, *, max_attempts: int, agent: str | None = None) -> dict | None:
    """The machine form of a decision; None when there is nothing to say."""
    # Imported here: `afd status` reads plans through this module and never makes one.
    from afd.decide import policy

    plan: dict
    if isinstance(decision, policy.ResumeAt | policy.ResumeNow):
        at = decision.at if isinstance(decision, policy.ResumeAt) else None
        action = "auto-continue" if decision.why == "auto-continue" else "resume"
        plan = {"action": action, "at": _iso(at), "attempt": decision.attempt, "of": max_attempts, "why": decision.why}
    elif isinstance(decision, policy.Nothing):
        if decision.next_action is None:
            return None
        action = "auto-continue" if decision.why == "auto-continue" else "report"
        plan = {"action": action, "at": _iso(decision.at), "attempt": None, "of": max_attempts, "why": decision.next_action}
        if action == "report" and decision.why:
            # Why afd only reports, as a code a script can test: "report" (limit_auto_resume is off),
            # "other-model", "records-only", "unplanned", "cancelled".
            plan["reason"] = decision.why
    elif isinstance(decision, policy.Held):
        # `at` is when the pause ends (null: when the person unpauses); `held` what afd would do then.
        held = plan_of(decision.held, max_attempts=max_attempts) if decision.held is not None else None
        plan = {"action": "paused", "at": _iso(decision.until), "attempt": None, "of": None, "why": decision.why,
                "held": held or {"action": "handoff", "at": None, "attempt": None, "of": None, "why": "automatic handoff"}}
    elif isinstance(decision, policy.NeedsHuman):
        plan = {"action": "needs-human", "at": None, "attempt": None, "of": max_attempts, "why": decision.why}
    elif isinstance(decision, policy.Handoff):
        plan = {"action": "handoff", "at": None, "attempt": None, "of": None, "why": decision.why or f"hand off to {decision.to}"}
    elif isinstance(decision, policy.Park):
        plan = {"action": "park", "at": _iso(decision.until), "attempt": None, "of": None, "why": decision.why}
    else:
        return None
    if agent:
        plan["agent"] = agent
    return plan


def in_progress(step: str, *, attempt: int | None, max_attempts: int, hold: str | None = None) -> dict:
    """The plan while a resume is under way; `hold` says why it waits for a person."""
    why = f"waiting: {hold}" if hold else f"resuming ({step.replace('_', ' ')})"
    return {"action": "resuming", "at": None, "attempt": attempt, "of": max_attempts, "why": why}


def brief_pending(why: str) -> dict:
    """The plan while a handoff's brief waits for the new agent to take it."""
    return {"action": "brief-pending", "at": None, "attempt": None, "of": None, "why": f"brief pending ({why})"}


def dumps(plan: dict | None) -> str | None:
    return None if plan is None else json.dumps(plan, sort_keys=True)


def loads(text: str | None) -> dict | None:
    """The plan a session record holds; plain text from elsewhere is kept as the words."""
    if not text:
        return None
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except ValueError:
            return {"action": "report", "at": None, "attempt": None, "of": None, "why": text}
        if isinstance(value, dict) and "action" in value:
            return value
    return {"action": "report", "at": None, "attempt": None, "of": None, "why": text}


def countdown(at: datetime, now: datetime) -> str:
    """`in 1h12m`, `in 3m`, `in 40s` — or `due now` once `at` has come."""
    seconds = int((at - now).total_seconds())
    if seconds <= 0:
        return "due now"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours >= 24:
        return f"in {hours // 24}d{hours % 24}h"
    if hours:
        return f"in {hours}h{minutes:02d}m"
    if minutes:
        return f"in {minutes}m"
    return f"in {secs}s"


def _when(iso: str | None, now: datetime | None, zone: tzinfo | None) -> str:
    if iso is None:
        return "the next poll"
    if zone is None or now is None:
        return iso
    at = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    local = at.astimezone(zone)
    shown = local.strftime("%H:%M") if (at - now).total_seconds() < 20 * 3600 else local.strftime("%b %d %H:%M")
    return f"{shown} ({countdown(at, now)})"


def words(plan: dict | None, *, now: datetime | None = None, zone: tzinfo | None = None) -> str | None:
    """The plan in words: local times with a countdown when `zone` and `now` are given, else ISO UTC."""
    if plan is None:
        return None
    action, why, at = plan.get("action"), plan.get("why") or "", plan.get("at")
    attempt, of = plan.get("attempt"), plan.get("of")
    if action == "resume":
        if why == "backoff":
            return f"backing off until {_when(at, now, zone)} (attempt {attempt} of {of})"
        verb = "retry" if why == "retry" else "resume"
        return f"{verb} now" if at is None else f"{verb} at {_when(at, now, zone)}"
    if action == "auto-continue":
        agent = (plan.get("agent") or "the agent").capitalize()
        whose = f"{agent}'s own" if plan.get("agent") else "the agent's own"
        return f"waiting for {whose} auto-continue" + (f" at {_when(at, now, zone)}" if at else "")
    if action == "needs-human":
        return f"needs you: {why}"
    if action == "paused":
        held = words(plan.get("held"), now=now, zone=zone) or "its next action"
        until = f" until {_when(at, now, zone)}" if at is not None else ""
        return f"paused by you{until}: {held} is held; {why.split('; ', 1)[-1]}"
    if action == "report" and at is not None:
        return f"{why} (limit resets {_when(at, now, zone)})"
    return why or None
