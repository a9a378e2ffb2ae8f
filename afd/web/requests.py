"""What the daemon does for the dashboard's requests (mixed into afd/daemon/requests.py's handler).

They run on the poll loop's thread like every request. `web.start` comes
from `afd web`; the others come from the dashboard's own server, a thread of
this very process, which is how `web.jobs-handoff` may act for the session
named in `source`: the kernel's word on the peer's pid (SO_PEERCRED) says the
request came from inside the daemon, which no other process can claim.
"""

from __future__ import annotations

import logging
import os

from afd.errors import EXIT_FAIL, UserError
from afd.world import caller, git

log = logging.getLogger("afd.web")


class WebRequests:
    def serve_web(self):
        """The dashboard's server, started now if it is not running; UserError naming the port when it cannot be."""
        from afd.web.server import WebError, WebServer

        web = getattr(self.daemon, "web", None)
        if web is not None and web.running:
            return web
        config = self.daemon.config
        web = WebServer(self.daemon.control.path, config.web_bind, config.web_port)
        try:
            web.start()
        except WebError as exc:
            raise UserError(str(exc), EXIT_FAIL) from None
        self.daemon.web = web
        self.sup.event("web.started", f"dashboard serving at {web.url}")
        return web

    def do_web_start(self) -> dict:
        """`afd web`: serve if not serving, and a login URL with a fresh one-time token."""
        peer = getattr(self.daemon.control, "peer_pid", None)
        try:
            inside = caller.session_around(self.daemon.server, self.store.list_sessions(), peer)
        except caller.CallerError as exc:
            raise UserError(f"refused: {exc}", EXIT_FAIL) from None
        if inside is not None:
            # An agent must not log itself in to the page that acts on every agent.
            raise UserError(f"refused: this runs inside session {inside.name}'s pane ({inside.pane_id}); "
                            "open the dashboard from a terminal of your own", EXIT_FAIL)
        web = self.serve_web()
        return {"url": web.url, "login_url": web.login_url(), "port": web.port, "bind": web.host}

    def _from_dashboard(self) -> None:
        if getattr(self.daemon.control, "peer_pid", None) != os.getpid():
            raise UserError("refused: only the dashboard may ask this", EXIT_FAIL)

    def do_web_targets(self, name: str) -> dict:
        from afd.act.targets import targets_of

        found = targets_of(self.sup.context(), self._session(name).name)
        assert found is not None  # the session was just found, on this same thread
        return found.as_json()

    def do_web_ledger(self, name: str) -> dict:
        from afd.record import ledger

        rec = self._session(name)
        return ledger.as_json(rec.name, self.store.ledger(rec.name), git.head_of(rec.worktree))

    def do_web_jobs_handoff(self, source: str, to: str, selected: list[str] | None = None, note: str | None = None) -> dict:
        """The person at the dashboard hands `source`'s jobs over, with every refusal `afd jobs handoff` has."""
        self._from_dashboard()
        me = self._session(source)
        source = me.name
        if me.state in ("gone", "unknown"):
            raise UserError(f"handoff refused: {source} is not a live session ({me.state})", EXIT_FAIL)
        return self.hand_jobs(me, to, selected, note)
