"""How `afd fleet` and `afd status --watch --fleet` word each host's block."""

from __future__ import annotations


def fleet_lines(view: dict, running: bool = True) -> list[str]:
    """The fleet in words, one block per host (what `afd fleet` and `afd status --watch --fleet` show)."""
    out: list[str] = [] if running else ["afd is not running here; the fleet as it last stored it", ""]
    for h in view["hosts"]:
        if h["here"]:
            head = f"{h['name']} (here) · afd {h['version'] or '?'}"
        else:
            if h["contact"] is None:
                how = "not asked yet"
            elif h["stale"]:
                how = f"{h['contact']}, stale since {h['stale_since'] or '?'}" + (f": {h['error']}" if h["error"] else "")
            else:
                how = f"answered {h['last_contact']}"
            head = f"{h['name']} ({h['dest']}) · afd {h['version'] or '?'} · {how}"
            if h["skewed"]:
                head += " · its clock is over 60 s off: its facts are shown, not used"
        out.append(head)
        for s in h["sessions"]:
            until = f" until {s['reset_at']}" if s.get("reset_at") and s["state"] == "limited" else ""
            out.append(f"  {s['name']} · {s.get('agent') or '?'} · {s.get('account') or '-'} · {s['state']}{until}"
                       + (f" · {s['next_action']}" if s.get("next_action") else ""))
        if not h["sessions"]:
            out.append("  no sessions")
        for f in h["limits"]:
            if f["state"] == "limited":
                seen = f" · seen on {f['source_host']}" if h["here"] and f.get("source_host") else ""
                until = f" until {f['reset_at']}" if f.get("reset_at") else ""
                out.append(f"  {f['account']} · limited{until}{seen}")
        out.append("")
    if len(view["hosts"]) > 1:
        out.append("actions stay local: run a command for a host's session on that host")
    return out
