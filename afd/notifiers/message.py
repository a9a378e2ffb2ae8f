"""An event told for a person: the title, one sentence and where, in the user's zone.

Pure: the event, what the store says about its session, the instant and the
zone in; a `Notice` out. Messages name the session and its agent first, say
what the person can do, and give times as clock times with a countdown
(`15:02 (in 1h12m)`), never ISO UTC; the JSON payload keeps ISO UTC.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import datetime, timezone, tzinfo

from afd.display.clock import clock_time, local_instants, parse_iso
from afd.display.text import neutral
from afd.model import Event, Notice


@dataclass(frozen=True, slots=True)
class About:
    """The facts of the event's session, as the store holds them."""

    agent: str | None = None
    location: str | None = None  # tmux "session:window.pane"
    pane: str | None = None
    worktree: str | None = None
    branch: str | None = None
    reset_at: datetime | None = None
    account: str | None = None  # `claude-work`, `unknown`; the default account is named after the agent


def _iso(value: datetime) -> str:
    return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _home(path: str) -> str:
    home = os.path.expanduser("~")
    if home not in ("", "/") and (path == home or path.startswith(home + "/")):
        return "~" + path[len(home):]
    return path


def where(about: About | None) -> str | None:
    """`shop:1.0 (%3) · ~/src/shop-fix · afd/shop-fix`, or None when nothing is known."""
    if about is None:
        return None
    parts = []
    if about.location or about.pane:
        parts.append(" ".join(p for p in (about.location, f"({about.pane})" if about.pane and about.location else about.pane) if p))
    if about.worktree:
        parts.append(_home(about.worktree))
    if about.branch:
        parts.append(about.branch)
    return " · ".join(parts) or None


# "add credits (spend cap)" → "spend cap — add credits": the wall first, then what to do.
_WHAT_THEN_WALL = re.compile(r"^(?P<todo>.+?) \((?P<wall>spend cap|billing wall)\)$")


def _needs_you(why: str) -> str:
    found = _WHAT_THEN_WALL.match(why)
    return f"{found['wall']} — {found['todo']}" if found else why


def _words(event: Event, who: str, name: str, about: About | None, now: datetime, zone: tzinfo) -> tuple[str, str, int, tuple[str, ...]]:
    """(title, text, priority, tags) for the kinds people are told about; a plain sentence for the rest."""
    kind, data = event.kind, event.data or {}
    # What afd does next, or what to run: every message that leaves a step to a person says it.
    then = f"; {data['next']}" if data.get("next") else ""
    if kind == "session.waiting":
        reset = parse_iso(data.get("reset_at")) or (about.reset_at if about else None)
        when = f"resets {clock_time(reset, now, zone)}" if reset else "no reset time stated"
        nxt = str(data.get("next") or event.message.partition("it waits for you: ")[2] or f"resume with: afd resume {name}")
        return (f"{name} waits for you", f"{who} is at its usage limit ({when}). afd will not act on this wall; "
                f"it waits for you: {nxt}", 4, ("hourglass",))
    if kind == "session.needs_human":
        why = data.get("why") or event.message.removeprefix("needs you: ")
        then = f"; then: afd resume {name}" if event.session else ""
        return f"{name} needs you", f"{who} needs you: {_needs_you(str(why))}{then}", 4, ("warning",)
    if kind == "session.all_limited":
        reset = parse_iso(data.get("earliest_reset"))
        when = f"earliest reset {clock_time(reset, now, zone)}" if reset else "no reset time stated"
        waits = f"; {who} waits" if event.session else ""
        return "all agents limited", f"all agents limited; {when}{waits}{then}", 4, ("no_entry",)
    if kind == "handoff.refused":
        to = data.get("to") or "another agent"
        why = data.get("why") or event.message
        return f"{name}: handoff refused", f"{who}: the handoff to {to} was refused — {why}{then}", 4, ("no_entry_sign",)
    if kind == "handoff.rolled-back":
        to = data.get("to") or "another agent"
        what = event.message.partition("rolled back: ")[2] or event.message
        return f"{name}: handoff rolled back", f"{who}: the handoff to {to} was rolled back — {what}{then}", 4, ("leftwards_arrow_with_hook",)
    if kind == "session.limited":
        reset = about.reset_at if about else None
        when = f"resets {clock_time(reset, now, zone)}" if reset else "no reset time stated"
        return f"{name} is limited", f"{who} is at its usage limit; {when}", 3, ("hourglass",)
    if kind == "resume.failed":
        return f"{name}: resume failed", f"{who}: a resume failed — {event.message}{then}", 4, ("x",)
    if kind == "session.handoff":
        to = data.get("to") or (about.agent if about else None) or "another agent"
        return f"{name} handed off", f"{name} handed off to {to}: {event.message.removeprefix('handed off: ')}", 3, ("arrows_counterclockwise",)
    if kind == "notify.test":
        return "afd test", event.message, 3, ("test_tube",)
    title = f"{name}: {kind}" if event.session else kind
    return title, (f"{who}: {event.message}" if event.session else event.message) + then, 3, ()


def compose(
    event: Event,
    about: About | None,
    *,
    now: datetime,
    zone: tzinfo,
    host: str,
    event_id: int | None = None,
) -> Notice:
    """The notice for `event`: words in the user's zone, and the JSON payload the webhook sends."""
    name = event.session or "afd"
    agent = about.agent if about else None
    # An event about an account's limit names it; any other takes the session's.
    account = event.data.get("account") or (about.account if about else None)
    shown = f"{agent} on {account}" if agent and account and account != agent else agent
    who = f"{name} ({shown})" if event.session and agent else name
    title, text, priority, tags = _words(event, who, name, about, now, zone)
    # Names, missions and replies came from outside; the stored words carry ISO UTC instants.
    title, text = local_instants(neutral(title), now, zone), local_instants(neutral(text), now, zone)
    place = where(about)
    place = neutral(place) if place is not None else None
    payload = {
        **({"id": event_id} if event_id is not None else {}),
        "at": _iso(event.at),
        "session": event.session,
        "kind": event.kind,
        "message": event.message,
        "agent": agent,
        "account": account,
        "host": host,
        "where": place,
        "text": text,
    }
    return Notice(title=title, text=text, where=place, agent=agent, account=account, host=host,
                  priority=priority, tags=tags, payload=payload)


def repeated(notice: Notice, count: int, since: datetime, zone: tzinfo) -> Notice:
    """`notice` standing for `count` events of its kind since `since`: one message that says how many."""
    from dataclasses import replace

    text = f"{notice.text} ({count} times since {since.astimezone(zone).strftime('%H:%M')})"
    return replace(notice, text=text, payload={**notice.payload, "text": text, "repeats": count})
