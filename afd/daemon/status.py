"""The status report: one dict, from the store alone, whether or not the daemon runs.

Its JSON form is a contract (versioned by `schema`); the CLI renders the
same dict for people.
"""

from __future__ import annotations

from collections.abc import Iterable

from afd.decide import nextaction
from afd.judge.limits import LimitState, unknown_fact
from afd.record.store import Store

SCHEMA = 1


def _iso(value) -> str | None:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ") if value is not None else None


def event_json(event, event_id: int | None = None) -> dict:
    """An event as `status`, `events` and `events --follow` print it."""
    out = {"at": _iso(event.at), "session": event.session, "kind": event.kind, "message": event.message}
    return out if event_id is None else {"id": event_id, **out}


def _shown_state(state: str, resuming: bool, plan: dict | None) -> str:
    """The stored state, or the action under way / the wait for a person, which say more."""
    if state in ("gone", "exited") and not resuming:
        return state
    if resuming:
        return "resuming"
    if plan is not None and plan.get("action") == "needs-human":
        return "needs_human"
    return state


def build_status(store: Store, agents: Iterable[str], daemon: dict, events: int = 20) -> dict:
    facts = store.load_limits()
    names = sorted(set(agents) | set(facts))
    acting = {e.session for e in store.pending_journal() if e.action == "resume"}
    sessions = []
    for rec in store.list_sessions():
        plan = nextaction.loads(rec.next_action)
        ledger = store.ledger(rec.name)
        sessions.append(
            {
                "name": rec.name,
                "pane": rec.pane_id,
                "server": rec.server_socket,
                "agent": rec.agent,
                "identity": rec.identity,
                "identity_source": rec.identity_source,
                "state": _shown_state(rec.state, rec.name in acting, plan),
                "reset_at": _iso(rec.reset_at),
                "banner": rec.last_banner,
                "mission": rec.mission or None,
                "worktree": rec.worktree,
                "branch": rec.branch,
                "next_action": nextaction.words(plan),
                "next": plan,
                "location": rec.location,
                # "pane", "record", "pane+record", "disputed", or null.
                "witnesses": rec.witnesses,
                "updated_at": _iso(rec.updated_at),
                "handoffs": len(ledger),
                "ledger": [
                    {"from": e.from_agent, "to": e.to_agent, "at": _iso(e.at), "head_sha": e.head_sha,
                     "reason": e.reason, "automatic": e.automatic}
                    for e in ledger
                ],
            }
        )
    agent_rows = []
    for name in names:
        fact = facts.get(name) or unknown_fact(name)
        agent_rows.append(
            {
                "name": name,
                # Three values; unknown is never shown as available.
                "state": fact.state.value,
                "reset_at": _iso(fact.reset_at) if fact.state is LimitState.LIMITED else None,
                "observed_at": _iso(fact.observed_at),
                "source_session": fact.source_session,
            }
        )
    return {
        "schema": SCHEMA,
        "daemon": daemon,
        "sessions": sessions,
        "agents": agent_rows,
        "events": [event_json(s.event) for s in store.recent_events(events)],
    }
