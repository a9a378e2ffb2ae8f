"""The status report: one dict, from the store alone, whether or not the daemon runs.

Its JSON form is a contract (versioned by `schema`); the CLI renders the
same dict for people. It is built from the rows `afd.record.statusread`
reads in a fixed number of queries; the daemon keeps the result
(`StatusSnapshot`) until the store changes, so a burst of `afd status`
calls or a dashboard refreshing costs one build, not one each.
"""

from __future__ import annotations

import enum
import os.path
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from afd.decide import nextaction
from afd.judge.accountlabel import label
from afd.record.statusread import StatusRows
from afd.record.types import LimitFact

if TYPE_CHECKING:
    from afd.record.store import Store

SCHEMA = 1


def _iso(value) -> str | None:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ") if value is not None else None


def _stored_iso(text: str | None) -> str | None:
    """A stored instant as status prints it (`2026-07-13T09:00:00Z`)."""
    if text is None:
        return None
    # The store writes one fixed-width form, 2026-07-13T09:00:00.000000+00:00;
    # anything else is parsed. (Status shows hundreds of these.)
    if len(text) == 32 and text.endswith("+00:00") and text[10] == "T" and text[0] != "0":
        return text[:19] + "Z"
    return datetime.fromisoformat(text).strftime("%Y-%m-%dT%H:%M:%SZ")


def event_json(event, event_id: int | None = None) -> dict:
    """An event as `status`, `events` and `events --follow` print it.

    `message` is as stored, its instants ISO UTC; `data` holds the event's
    structured fields. What a person reads is made from them when read, in
    their zone (afd.display).
    """
    import json

    # As the store keeps it (a value JSON has no form for becomes its text), so a live event and a stored one agree.
    data = json.loads(json.dumps(event.data or {}, default=str))
    out = {"at": _iso(event.at), "session": event.session, "kind": event.kind, "message": event.message, "data": data}
    return out if event_id is None else {"id": event_id, **out}


def _stored_data(text: str | None) -> dict:
    import json

    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class ShownState(enum.StrEnum):
    """A session's state as status shows it: the stored one (afd.model.SessionState), or what says more."""

    WORKING = "working"
    IDLE = "idle"
    LIMITED = "limited"
    EXITED = "exited"
    GONE = "gone"
    UNKNOWN = "unknown"
    HANDING_OFF = "handing_off"
    ALL_LIMITED = "all_limited"
    RESUMING = "resuming"  # a resume is under way
    NEEDS_HUMAN = "needs_human"  # the plan is a person's: only they get it past its wall


def _shown_state(state: str, resuming: bool, plan: dict | None) -> ShownState:
    """The stored state, or the action under way / the wait for a person, which say more."""
    if state in ("gone", "exited") and not resuming:
        return ShownState(state)
    if resuming:
        return ShownState.RESUMING
    if plan is not None and plan.get("action") == "needs-human":
        return ShownState.NEEDS_HUMAN
    return ShownState(state)


def build_status(store: Store, agents: Iterable[str], daemon: dict, events: int = 20) -> dict:
    return report(store.status_rows(events), agents, daemon)


def report(rows: StatusRows, agents: Iterable[str], daemon: dict) -> dict:
    """The status report from what the store holds and the agents the plugins provide."""
    home = os.path.expanduser("~")
    sessions = []
    for rec in rows.sessions:
        plan = nextaction.loads(rec["next_action"])
        ledger = rows.ledger.get(rec["name"], ())
        sessions.append(
            {
                "name": rec["name"],
                "pane": rec["pane_id"],
                "server": rec["server_socket"],
                "agent": rec["agent"],
                # `claude`, `claude-work`, `claude@/home/u/.claude-x`, `unknown`; null without an agent.
                "account": rec["account"],
                # The account as a person reads it: `claude · ~/.claude-x` for one no one named.
                "account_label": label(rec["account"], home),
                "identity": rec["identity"],
                "identity_source": rec["identity_source"],
                "state": _shown_state(rec["state"], rec["name"] in rows.resuming, plan),
                "reset_at": _stored_iso(rec["reset_at"]),
                "banner": rec["last_banner"],
                "mission": rec["mission"] or None,
                "worktree": rec["worktree"],
                "branch": rec["branch"],
                "next_action": nextaction.words(plan),
                "next": plan,
                "location": rec["location"],
                # "pane", "record", "pane+record", "disputed", or null.
                "witnesses": rec["witnesses"],
                "updated_at": _stored_iso(rec["updated_at"]),
                # The person's hold (`afd sessions pause`): {"since", "until"} (until null: until unpaused), or null.
                "paused": _pause_json(rows.pauses.get(rec["name"])),
                "handoffs": len(ledger),
                "ledger": [
                    {"from": e["from_agent"], "to": e["to_agent"], "from_account": e["from_account"],
                     "to_account": e["to_account"], "at": _stored_iso(e["at"]), "head_sha": e["head_sha"],
                     "reason": e["reason"], "automatic": bool(e["automatic"])}
                    for e in ledger
                ],
            }
        )
    agents = set(agents)
    facts = {r["account"]: r for r in rows.limits}
    # One row per agent, as readers from before accounts expect: its default account's facts.
    agent_rows = [{"name": name, **_fact_json(facts.get(name))}
                  for name in sorted(agents | {r["agent"] for r in rows.limits if r["account"] == r["agent"]})]
    accounts = account_rows(rows, agents, facts, home)
    return {
        "schema": SCHEMA,
        "daemon": daemon,
        "sessions": sessions,
        "agents": agent_rows,
        "accounts": accounts,
        "usage": usage_json(rows, [(a["name"], a["agent"]) for a in accounts]),
        "events": [
            {"at": _stored_iso(e["at"]), "session": e["session"], "kind": e["kind"], "message": e["message"],
             "data": _stored_data(e["data"])}
            for e in rows.events
        ],
    }


def _pause_json(pause: tuple[str, str | None] | None) -> dict | None:
    if pause is None:
        return None
    since, until = pause
    return {"since": _stored_iso(since), "until": _stored_iso(until)}


def usage_json(rows: StatusRows, owners: list[tuple[str, str]], now: datetime | None = None) -> dict | None:
    """Every account's usage figures now (`afd usage --json`'s object), from the rows read with the report."""
    from datetime import timezone

    from afd.judge import usage

    if rows.usage is None:
        return None
    stale_after = rows.usage_stale_after if rows.usage_stale_after is not None else 900.0
    return usage.figures(rows.usage, owners, now or datetime.now(timezone.utc), stale_after=stale_after).to_json()  # type: ignore[arg-type]


def _fact_json(fact) -> dict:
    """An account's limit fact as status shows it; never observed is unknown."""
    if fact is None:
        return {"state": "unknown", "reset_at": None, "observed_at": None, "source_session": None, "source_host": None}
    return {
        # Three values; unknown is never shown as available.
        "state": fact["state"],
        "reset_at": _stored_iso(fact["reset_at"]) if fact["state"] == "limited" else None,
        "observed_at": _stored_iso(fact["observed_at"]),
        "source_session": fact["source_session"],
        # The host of the fleet that saw it (afd hosts; docs/fleet.md), null when seen here.
        "source_host": None,
    }


def account_rows(rows: StatusRows, agents: set[str], facts: dict, home: str | None = None) -> list[dict]:
    """One row per account: every agent's default, the configured ones, and any other one seen.

    An account no one named (`claude@/home/u/.claude-x`) is listed once a
    live session runs on it or the map holds a fact about it; `unknown` is
    not an account, so it has no row.
    """
    owner: dict[str, str] = {name: name for name in agents}
    for name, agent in rows.accounts or ():
        owner.setdefault(name, agent)
    for r in rows.limits:
        owner.setdefault(r["account"], r["agent"])
    for rec in rows.sessions:
        account = rec["account"]
        if account and account != "unknown" and rec["agent"] and rec["state"] != "gone":
            owner.setdefault(account, rec["agent"])
    # Each agent's accounts together, its default first.
    order = sorted(owner, key=lambda name: (owner[name], name != owner[name], name))
    return [{"name": name, "label": label(name, home), "agent": owner[name], **_fact_json(facts.get(name))}
            for name in order]


class StatusSnapshot:
    """The daemon's status report, built again only after the store changed.

    The store's change marker moves with every commit, the daemon's own and
    any other process's; while it stands still the report kept is the
    answer. Callers get a shallow copy with their own `daemon` entry and
    must not change the lists inside it.
    """

    def __init__(self, store: Store, agents: Callable[[], Iterable[str]]):
        self.store = store
        self._agents = agents
        self._kept: dict[int, tuple[object, dict, StatusRows]] = {}  # events asked -> (marker and agents, report, rows)

    def report(self, daemon: dict, events: int = 20) -> dict:
        key = (self.store.change_marker(), tuple(sorted(self._agents())))
        kept = self._kept.get(events)
        if kept is None or kept[0] != key:
            # Only the counts asked for lately: a client asking for every count
            # from 0 to 10,000 must not grow the daemon.
            if len(self._kept) >= 4:
                self._kept.clear()
            rows = self.store.status_rows(events)
            kept = self._kept[events] = (key, report(rows, key[1], {}), rows)
        built, rows = kept[1], kept[2]
        # The usage figures carry their age: made again for each answer, from the rows kept.
        owners = [(a["name"], a["agent"]) for a in built["accounts"]]
        out = {**built, "daemon": daemon, "usage": usage_json(rows, owners)}
        if self.store.peer_limits is not None:
            out = with_peer_facts(out, self.store.limit_map())
        return out


def with_peer_facts(built: dict, merged: Mapping[str, LimitFact]) -> dict:
    """The report with each account's fact as the limit map afd acts on has it: one a host of the fleet told, where
    it adds caution to this host's (afd.judge.fleet), with its `source_host`."""
    told = {name: f for name, f in merged.items() if f.source_host is not None}
    if not told:
        return built

    def row(r: dict) -> dict:
        f = told.get(r["name"])
        if f is None:
            return r
        return {**r, "state": f.state.value, "reset_at": _iso(f.reset_at) if f.state.value == "limited" else None,
                "observed_at": _iso(f.observed_at), "source_session": f.source_session, "source_host": f.source_host}

    return {**built, "agents": [row(r) for r in built["agents"]], "accounts": [row(r) for r in built["accounts"]]}
