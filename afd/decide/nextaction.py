"""A session's next action in words, from the machine form status reads.

The machine form is what the store keeps (`afd.record.types.NextAction`,
made by `afd.decide.plan`) and `status --json` prints:
``{"action", "at", "attempt", "of", "why"}`` with `at` in ISO 8601 UTC.
Words are made from it when shown, so a countdown is counted from the
moment it is read, in the reader's zone. Only the standard library: `afd
status` reads plans through this module and never makes one.
"""

from __future__ import annotations

import json
from datetime import datetime, tzinfo

from afd.display.clock import clock_time, parse_iso


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


def _when(iso: str | None, now: datetime | None, zone: tzinfo | None) -> str:
    if iso is None:
        return "the next poll"
    if zone is None or now is None:
        return iso
    at = parse_iso(iso)
    return clock_time(at, now, zone) if at is not None else iso


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
