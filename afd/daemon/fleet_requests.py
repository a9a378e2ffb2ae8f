"""What the daemon does for `afd hosts …` requests: a group of commands afd/daemon/requests.py's table holds.

A host is added and removed here, on the poll loop's thread, so the daemon
stays the only writer of the store. `hosts add` and `hosts authorize` are
refused from an agent's process tree, as `afd web` is: an agent must not
take this host's afd to another machine, nor hand out the key that would.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from afd.daemon.fleet import host_json, key_path, remote_command
from afd.errors import EXIT_FAIL, EXIT_USAGE, UserError
from afd.world import caller, ssh

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}")


class FleetRequests:
    def __init__(self, daemon: Any):
        self.daemon = daemon

    @property
    def fleet(self) -> Any:
        return self.daemon.fleet

    def commands(self) -> dict[str, Callable[..., object]]:
        return {"hosts.add": self.do_hosts_add, "hosts.remove": self.do_hosts_remove,
                "hosts.authorize": self.do_hosts_authorize, "hosts.list": self.do_hosts_list}

    def _not_from_an_agent(self, what: str) -> None:
        peer = getattr(self.daemon.control, "peer_pid", None)
        try:
            inside = caller.session_around(self.daemon.server, self.daemon.store.list_sessions(), peer)
        except caller.CallerError as exc:
            raise UserError(f"refused: {exc}", EXIT_FAIL) from None
        if inside is not None:
            raise UserError(f"refused: this runs inside session {inside.name}'s pane ({inside.pane_id}); {what} from a "
                            "terminal of your own", EXIT_FAIL)

    def do_hosts_add(self, name: str, dest: str, port: int | None = None) -> dict:
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise UserError(f"{str(name)[:40]!r} is not a host name: letters, digits, '.', '_' and '-', up to 40",
                            EXIT_USAGE)
        if port is not None and (isinstance(port, bool) or not isinstance(port, int)):
            raise UserError("the port must be a whole number", EXIT_USAGE)
        ssh.check_dest(str(dest), port)
        self._not_from_an_agent("add hosts")
        if self.fleet.book.host(name) is not None:
            raise UserError(f"a host named {name} exists already (`afd hosts remove {name}` first)", EXIT_FAIL)
        ssh.ensure_key(key_path())
        now = self.daemon.supervisor.clock()
        host = self.fleet.add(name, dest, port, now)
        self.daemon.supervisor.event("fleet.host-added", f"host {name} added ({dest}{f' port {port}' if port else ''})",
                                     host=name)
        return host_json(host, {}, self.daemon.config.fleet_pull_interval, now)

    def do_hosts_remove(self, name: str) -> dict:
        host = self.fleet.remove(name)
        if host is None:
            raise UserError(f"no host named {str(name)[:40]!r} (`afd hosts list` shows them)", EXIT_USAGE)
        now = self.daemon.supervisor.clock()
        self.daemon.supervisor.event("fleet.host-removed", f"host {name} removed, and the facts it told", host=name)
        return host_json(host, {}, self.daemon.config.fleet_pull_interval, now)

    def do_hosts_list(self, answers: bool = False) -> list[dict]:
        now = self.daemon.supervisor.clock()
        facts = self.fleet.book.facts()
        return [host_json(h, facts.get(h.name, {}), self.daemon.config.fleet_pull_interval, now, answer=bool(answers))
                for h in self.fleet.book.hosts()]

    def do_hosts_authorize(self) -> dict:
        self._not_from_an_agent("authorize afd's key")
        public = ssh.ensure_key(key_path())
        return {"line": ssh.authorized_line(public, remote_command()), "key": str(key_path())}
