"""At start-up: each pending action of the journal, carried on or rolled back (decided by afd.recovery)."""

from __future__ import annotations

from afd.act import recovery

from afd.world import tmux
from afd.act import handoff
from afd.record.store import JournalState


def recover(sup, entry) -> bool:
    """Handle an entry of an action afd can recover; False leaves it to the caller's default."""
    rec = sup.store.get_session(entry.session)
    pane = entry.intent.get("pane")
    present = None
    if rec is not None and pane:
        found = tmux.pane_exists(sup.server, pane, rec.server_pid)
        present = {tmux.Presence.PRESENT: True, tmux.Presence.GONE: False}.get(found)
    decision = recovery.recover_self_driven(entry, recovery.Seen(pane_present=present, session_known=rec is not None))
    if decision is None:
        return False
    if decision.next is recovery.Next.CARRY_ON:
        if entry.action == "handoff":
            sup.acting.add(entry.session)
        sup.event("journal.recovered", f"{entry.action} of {entry.session}: {decision.why}", entry.session, journal=entry.id)
        return True
    if entry.action == "handoff":
        handoff._rolled_back(sup, entry, f"afd restarted and {decision.why}", restarted=False)
    else:
        sup.store.journal_finish(entry.id, JournalState.ROLLED_BACK, decision.why)
        sup.event("journal.rolled-back", f"{entry.action} of {entry.session}: {decision.why}", entry.session)
    return True
