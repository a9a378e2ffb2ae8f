"""`afd status --tmux`: one short line for tmux's `status-right`, cheap enough for every `status-interval`.

`afd 🟢2 ⏳1 1h30m ❗1`: two sessions working, one limited with the next
reset an hour and a half away, one needing you (a limited session afd
leaves to you counts as both); `🟢afd` when none is working, limited or
waiting for you. With the daemon down it prints
`afd down` and exits 0: a status bar shows a mark, never an error. It asks
the daemon only (the store is not opened, the config not read, rich not
imported), so it costs little more than starting Python.
"""

from __future__ import annotations

from datetime import datetime, timezone

from afd.errors import EXIT_OK

DOWN = "afd down"
BUSY = "afd busy"  # the daemon is there but did not answer in time (a poll stuck on a hung tmux)
WORKING = frozenset({"working", "resuming", "handing_off"})
LIMITED = frozenset({"limited", "all_limited"})
# Next actions that leave the step to a person: afd will not act on the wall by itself.
FOR_YOU = frozenset({"needs-human", "report"})
# Long enough for a daemon between polls; short, since tmux runs this every status-interval.
TIMEOUT = 2.0


def _needs_you(session: dict) -> bool:
    plan = session.get("next") or {}
    return session["state"] == "needs_human" or (session["state"] in LIMITED and plan.get("action") in FOR_YOU)


def segment(report: dict, now: datetime) -> str:
    """The line for this report at `now`."""
    from afd.display.clock import parse_iso, short_countdown

    sessions = [s for s in report.get("sessions", ()) if s.get("state") not in ("gone", "exited")]
    working = [s for s in sessions if s["state"] in WORKING]
    limited = [s for s in sessions if s["state"] in LIMITED]
    # A limited session afd will not act on counts twice: it is limited, and it waits for you.
    needs = [s for s in sessions if _needs_you(s)]
    resets = [at for s in limited if (at := parse_iso(s.get("reset_at"))) is not None]
    parts = []
    if working:
        parts.append(f"🟢{len(working)}")
    if limited:
        parts.append(f"⏳{len(limited)} {short_countdown(min(resets), now)}" if resets else f"⏳{len(limited)}")
    if needs:
        parts.append(f"❗{len(needs)}")
    return "afd " + " ".join(parts) if parts else "🟢afd"


def run_segment() -> int:
    from afd.kit import paths

    path = paths.control_socket()
    if not path.exists():
        print(DOWN)
        return EXIT_OK
    from afd.daemon import control

    try:
        report = control.request(path, "status", {"events": 0}, timeout=TIMEOUT)
    except control.DaemonUnavailable:
        print(DOWN)
        return EXIT_OK
    except control.DaemonTimeout:
        print(BUSY)
        return EXIT_OK
    print(segment(report, datetime.now(timezone.utc)))
    return EXIT_OK
