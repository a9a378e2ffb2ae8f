"""What `afd demo` says as it goes: afd's events told in plain words, and the tables of where things stand.

Pure: events and status reports in, sentences and tables out. Every instant a
person reads goes through `Clock` (the zone of the person at the terminal,
with a countdown where it helps); the stored words of events, with their ISO
UTC instants, are never shown as they are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone, tzinfo

from afd.cli.demo_world import GRACE_SECONDS, HANDOFF_TO, STABILITY_POLLS

# The kinds that are not the story: afd's bookkeeping, told by the lines around them.
QUIET = ("daemon.", "tmux.", "journal.", "agent.limited", "session.working", "session.idle", "session.exited",
         "config.reloaded", "brief.", "action.")


@dataclass(frozen=True, slots=True)
class Clock:
    """The person at the terminal: now, and their zone (`TZ`, else the system's).

    The one place the demo turns an instant into words; the same two answers
    as the output layer's reader (`at`: a time ahead with its countdown,
    `happened`: a time past), so it can stand in for it.
    """

    now: datetime
    zone: tzinfo

    @classmethod
    def here(cls) -> Clock:
        from afd.kit.resettime import local_zone

        return cls(datetime.now(timezone.utc), local_zone())

    def at(self, when: str | None) -> str | None:
        from afd.display.clock import countdown

        at = _parse(when)
        if at is None:
            return None
        local = at.astimezone(self.zone)
        shown = local.strftime("%H:%M:%S") if abs((at - self.now).total_seconds()) < 20 * 3600 else local.strftime("%a %b %d %H:%M")
        return f"{shown} ({countdown(at, self.now)})" if at > self.now else shown

    def happened(self, when: str | None) -> str:
        at = _parse(when)
        return at.astimezone(self.zone).strftime("%H:%M:%S") if at is not None else ""

    def zone_name(self) -> str:
        return getattr(self.zone, "key", None) or self.now.astimezone(self.zone).tzname() or str(self.zone)


def _parse(when: str | None) -> datetime | None:
    if not when:
        return None
    try:
        at = datetime.fromisoformat(when.replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo is not None else None


def _session(report: dict, name: str | None) -> dict:
    return next((s for s in report.get("sessions", ()) if s["name"] == name), {})


def _place(name: str | None) -> str:
    """`resume-demo`: the tmux session the demo made, which is what a person sees."""
    return (name or "afd").split(":")[0]


def narrate(event: dict, report: dict, clock: Clock) -> str | None:
    """One event in plain words, with why, or None when it is bookkeeping the lines around it tell."""
    kind, name = event["kind"], event.get("session")
    s = _session(report, name)
    where, agent = _place(name), s.get("agent") or "the agent"
    if kind in ("session.adopted", "session.started"):
        mission = f" Its mission: “{s['mission']}”." if s.get("mission") else ""
        return (f"{where}: afd finds {agent} in the pane's process tree and watches it as session {name}, on "
                f"account {s.get('account') or 'unknown'}.{mission}")
    if kind == "session.limited":
        reset = clock.at(s.get("reset_at"))
        when = f"says it resets at {reset}" if reset else "names no reset"
        both = (f" {agent}'s own records show the same wall, so two witnesses agree."
                if s.get("witnesses") == "pane+record" else "")
        return (f"{where}: {agent} hits its usage limit; the wall {when}. afd counts it as a stall, not text "
                f"in a file: the banner ends the pane and stayed unchanged for {STABILITY_POLLS} polls.{both}")
    if kind == "resume.scheduled":
        plan = s.get("next") or {}
        if "resuming now" in event.get("message", "") or not plan.get("at"):
            return f"{where}: the reset has passed; afd resumes {agent} now."
        return (f"{where}: afd will resume {agent} at {clock.at(plan['at'])}: the stated reset plus "
                f"resume_grace ({GRACE_SECONDS} s), so it does not knock too early.")
    if kind == "agent.unknown":
        return (f"{event_account(event)}'s reset time has passed. afd has not seen it work since, so it says "
                "unknown, not available.")
    if kind == "resume.sent":
        return (f"{where}: afd pastes the continuation into {agent}'s pane, and presses Enter only once the text "
                "shows in its input row.")
    if kind == "resume.confirmed":
        return f"{where}: {agent} took it and went back to work. One resume for one wall."
    if kind == "agent.available":
        return f"{event_account(event)} is seen working with no wall on screen: afd now knows it is available."
    if kind == "handoff.started":
        return (f"{where}: afd hands the work to {HANDOFF_TO}, the first account in handoff_order that is not "
                f"limited. It stops {agent}, waits until every one of its processes is gone, then starts "
                f"{HANDOFF_TO} in the same pane, worktree and branch, with a brief of the mission.")
    if kind == "session.handoff":
        entry = (s.get("ledger") or [{}])[-1]
        sha, gone = (entry.get("head_sha") or "")[:12], entry.get("from") or "the old agent"
        at = f" ({sha})" if sha else ""
        return (f"{where}: {s.get('agent') or HANDOFF_TO} now works where {gone} stopped. The ledger records "
                f"the branch's HEAD at the swap{at}: the commits before it are {gone}'s, those after it "
                f"{s.get('agent') or HANDOFF_TO}'s.")
    if kind.startswith(QUIET) or kind.startswith("agent."):
        return None
    # Anything else is not the story: say it, in the person's zone, rather than hide it.
    return f"{where}: afd says ({kind}): {_local_instants(event.get('message', ''), clock)}"


_ACCOUNT = re.compile(r"^(\S+) is ")


def event_account(event: dict) -> str:
    """The account an `agent.*` event is about: its message starts with the account's name."""
    found = _ACCOUNT.match(event.get("message", ""))
    return found.group(1) if found else "the agent"


_INSTANT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2})?(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})")


def _local_instants(text: str, clock: Clock) -> str:
    return _INSTANT.sub(lambda m: clock.at(m.group()) or m.group(), text)


def sessions_table(report: dict, clock: Clock):
    from rich.table import Table

    from afd.decide.nextaction import words

    table = Table(title="sessions (afd status)", title_justify="left")
    for col in ("session", "agent", "account", "state", "next action", "handoffs"):
        table.add_column(col, overflow="fold")
    for s in sorted(report.get("sessions", ()), key=lambda s: s["name"]):
        plan = words(s.get("next"), now=clock.now, zone=clock.zone) or "-"
        table.add_row(s["name"], s.get("agent") or "?", s.get("account") or "-", s["state"], plan,
                      str(s.get("handoffs", 0)))
    return table


# What each state means, said once under the table.
STATE_WORDS = {
    "limited": "at its wall",
    "available": "seen working with no wall",
    "unknown": "no evidence either way (never seen, or its reset has passed)",
}


def limits_table(report: dict, clock: Clock, agents: tuple[str, ...] = ("claude", "codex")):
    """Each account of the demo's agents as afd holds it: limited, available or unknown, never guessed."""
    from rich.table import Table

    table = Table(title="limits (afd status: accounts)", title_justify="left",
                  caption=" · ".join(f"{k}: {v}" for k, v in STATE_WORDS.items()), caption_justify="left")
    for col in ("account", "agent", "state", "resets", "seen in"):
        table.add_column(col, overflow="fold")
    for a in report.get("accounts", ()):
        if a.get("agent") in agents:
            table.add_row(a["name"], a["agent"], a["state"], clock.at(a.get("reset_at")) or "-",
                          _place(a.get("source_session")) if a.get("source_session") else "-")
    return table
