"""What the daemon does for the dashboard's requests: an extension of the daemon's command table, which `afd run`
starts the daemon with (the daemon itself knows nothing of the dashboard).

They run on the poll loop's thread like every request. `web.start` comes
from `afd web`; the others come from the dashboard's own server, a thread of
this very process, which is how `web.jobs-handoff` may act for the session
named in `source`: the kernel's word on the peer's pid (SO_PEERCRED) says the
request came from inside the daemon, which no other process can claim.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from afd.errors import EXIT_FAIL, UserError
from afd.record.store import Store
from afd.record.types import SessionRecord
from afd.world import caller, git

log = logging.getLogger("afd.web")


class WebRequests:
    """The `web.*` commands, and the dashboard's server, for the daemon whose request handler is `handler`."""

    def __init__(self, handler: Any):
        self.handler = handler
        self.daemon = handler.daemon

    @property
    def sup(self) -> Any:
        return self.daemon.supervisor

    @property
    def store(self) -> Store:
        return self.daemon.store

    def _session(self, name: str) -> SessionRecord:
        return self.handler._session(name)

    def commands(self) -> dict[str, Callable[..., object]]:
        return {
            "web.start": self.do_web_start,
            "web.targets": self.do_web_targets,
            "web.ledger": self.do_web_ledger,
            "web.jobs-handoff": self.do_web_jobs_handoff,
        }

    def started(self) -> None:
        """Serve the dashboard when the config asks for it; a running one keeps its port and logins until afd restarts."""
        if self.daemon.config.web_enabled and self.daemon.control is not None and not (self.daemon.web is not None and self.daemon.web.running):
            try:
                self.serve_web()
            except Exception as exc:  # the dashboard is an extra: afd supervises without it
                log.error("the dashboard is not served: %s", exc)

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

        found = targets_of(self.sup.context(), self._session(name).name)  # an unknown name is refused, naming those there are
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
        return self.handler.jobs.hand_jobs(me, to, selected, note)
