"""The fleet in the daemon: a worker that asks each host over ssh, and the loop's side that stores what came back.

The worker never touches the store and never runs in the poll: it keeps
one thread per host in flight (a hung host costs its own thread a timeout,
never another host's pull nor the loop's tempo), and hands each pull back
through a queue, waking the loop. The loop (`Fleet.store_pulls`, called
where the notifiers' reports are stored) reads the answer whole, records
the host's contact and, from an answer read, its facts (afd.record.
fleet_book). What the hosts told reaches the limit map only through
`Fleet.merge`, the store's `peer_limits` seam, by afd.judge.fleet's table:
a peer can only add caution.
"""

from __future__ import annotations

import logging
import os
import queue
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from afd.judge import fleet as rules
from afd.judge.peer_answer import AnswerError, PeerAnswer, read_answer
from afd.kit import paths
from afd.record.fleet_book import FleetBook
from afd.record.types import Contact, Host, LimitFact
from afd.world import ssh

log = logging.getLogger("afd.fleet")

# What a pull asks: everything `afd fleet` shows and the facts the limit map takes.
PULL = ("version", "status", "limits", "usage")


def key_path() -> Path:
    """afd's own ssh key, in its state dir (never the user's everyday key)."""
    return paths.state_dir() / "ssh" / "id_ed25519"


def transport(timeout: float) -> ssh.Transport:
    """How this afd runs ssh: its key and known_hosts in the state dir, the connections' sockets in the runtime dir."""
    return ssh.Transport(key=key_path(), known_hosts=paths.state_dir() / "ssh" / "known_hosts",
                         control_dir=paths.runtime_dir() / "ssh", timeout=timeout)


def remote_command() -> list[str]:
    """`afd remote` by this afd's absolute path, for the other side's forced command."""
    beside = Path(sys.executable).parent / "afd"
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside.absolute()), "remote"]
    found = shutil.which("afd")
    if found:
        return [str(Path(found).absolute()), "remote"]
    return [str(Path(sys.executable).absolute()), "-m", "afd", "remote"]


@dataclass(frozen=True, slots=True)
class Pull:
    """One ask of one host as it came back: the reply, and the answer read from it (or why it was not)."""

    host: str
    reply: ssh.Reply
    answer: PeerAnswer | None
    problem: str | None  # why nothing of the answer is used, in one line


def ask(transport: ssh.Transport, host: str, dest: str, port: int | None, words: tuple[str, ...] = PULL) -> Pull:
    """Ask a host once and read its answer whole (what the worker runs, and `afd hosts check`)."""
    reply = transport.ask(dest, port, words)
    if reply.outcome is not ssh.Outcome.ANSWERED:
        return Pull(host, reply, None, reply.error)
    try:
        return Pull(host, reply, read_answer(reply.stdout, words), None)
    except AnswerError as exc:
        return Pull(host, reply, None, f"its answer was not read: {exc}")


_CONTACT = {ssh.Outcome.UNREACHABLE: Contact.UNREACHABLE, ssh.Outcome.REFUSED: Contact.REFUSED,
            ssh.Outcome.TOO_BIG: Contact.INVALID, ssh.Outcome.HOST_KEY_CHANGED: Contact.HOST_KEY_CHANGED}


def after_pull(host: Host, pull: Pull) -> Host:
    """The host's record after a pull (pure): its contact, and on an answer read, its skew, version and answer."""
    reply = pull.reply
    host = replace(host, asked_at=reply.sent_at, host_key=reply.new_host_key or host.host_key)
    if pull.answer is None:
        contact = _CONTACT.get(reply.outcome, Contact.INVALID)
        return replace(host, contact=contact, error=pull.problem, failing_since=host.failing_since or reply.sent_at)
    import json

    skew = rules.skew_of(pull.answer.time, reply.sent_at, reply.received_at)
    return replace(host, contact=Contact.ANSWERED, answered_at=reply.received_at, failing_since=None, error=None,
                   skew=round(skew, 3), version=pull.answer.version,
                   answer=json.dumps(pull.answer.to_json(), ensure_ascii=False, separators=(",", ":")))


def round_trip(reply: ssh.Reply) -> float:
    return (reply.received_at - reply.sent_at).total_seconds()


class PullWorker:
    """Asks each host every `interval` seconds, on threads of its own; the loop collects the pulls (`pulls`)."""

    def __init__(self, wake: Callable[[], None]):
        self._wake = wake
        self._lock = threading.Condition()
        self._hosts: dict[str, tuple[str, int | None]] = {}
        self._due: dict[str, float] = {}
        self._busy: set[str] = set()
        self._interval = 60.0
        self._transport: ssh.Transport | None = None
        self._done: queue.SimpleQueue[Pull] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._stop = False

    def use(self, hosts: Iterable[Host], interval: float, transport: ssh.Transport) -> None:
        """The hosts to ask, how often, and how: a new host is asked at once; with none, no thread runs."""
        with self._lock:
            wanted = {h.name: (h.dest, h.port) for h in hosts}
            now = time.monotonic()
            for name, where in wanted.items():
                if self._hosts.get(name) != where:
                    self._due[name] = now
            for name in set(self._due) - set(wanted):
                del self._due[name]
            self._hosts, self._interval, self._transport = wanted, interval, transport
            if wanted and self._thread is None and not self._stop:
                self._thread = threading.Thread(target=self._run, name="afd-fleet", daemon=True)
                self._thread.start()
            self._lock.notify_all()

    def pulls(self) -> list[Pull]:
        out = []
        while True:
            try:
                out.append(self._done.get_nowait())
            except queue.Empty:
                return out

    def close(self) -> None:
        with self._lock:
            self._stop = True
            hosts, t = dict(self._hosts), self._transport
            self._lock.notify_all()
        if t is not None:
            for dest, port in hosts.values():
                t.stop(dest, port)  # the connections end with afd, not ControlPersist later

    def _run(self) -> None:
        while True:
            with self._lock:
                if self._stop:
                    return
                now = time.monotonic()
                due = [n for n, at in self._due.items() if at <= now and n not in self._busy]
                for name in due:
                    self._busy.add(name)
                    self._due[name] = now + self._interval
                    dest, port = self._hosts[name]
                    threading.Thread(target=self._ask, args=(name, dest, port, self._transport), name=f"afd-fleet-{name}",
                                     daemon=True).start()
                waits = [at - now for n, at in self._due.items() if n not in self._busy]
                self._lock.wait(min([*waits, 60.0]) if waits else 60.0)

    def _ask(self, name: str, dest: str, port: int | None, transport: ssh.Transport | None) -> None:
        try:
            assert transport is not None
            pull = ask(transport, name, dest, port)
        except Exception as exc:  # a bug in one ask must not end the worker
            log.exception("asking host %s failed", name)
            now = _now()
            pull = Pull(name, ssh.Reply(ssh.Outcome.UNREACHABLE, b"", str(exc), now, now), None, f"{type(exc).__name__}: {exc}")
        with self._lock:
            self._busy.discard(name)
            if name not in self._hosts:
                return  # removed meanwhile
            self._done.put(pull)
            self._lock.notify_all()
        self._wake()


def _now() -> datetime:
    from datetime import timezone

    return datetime.now(timezone.utc)


class Fleet:
    """The daemon's fleet: its hosts' book, the worker that asks them, and the merge the limit map goes through."""

    def __init__(self, daemon: Any):
        self.daemon = daemon
        self.book = FleetBook(daemon.store)
        self.worker = PullWorker(daemon.wake)
        self._peers: list[rules.PeerFacts] = []

    @property
    def config(self):
        return self.daemon.config

    def start(self) -> None:
        """Read the hosts, hand them to the worker, and route the limit map through `merge`."""
        self.daemon.store.peer_limits = self.merge
        self.configure()

    def configure(self) -> None:
        """After a start, a reload or a host added or removed: the worker's hosts and tempo, the peers' facts."""
        hosts = self.book.hosts()
        self.worker.use(hosts, self.config.fleet_pull_interval, transport(self.config.fleet_timeout))
        self._read_peers(hosts)

    def close(self) -> None:
        self.worker.close()

    def shared(self) -> dict[str, str]:
        return rules.shared_accounts(self.daemon.plugins.agents, self.config.accounts.values(),
                                     share_defaults=self.config.fleet_share)

    def _read_peers(self, hosts: list[Host] | None = None) -> None:
        hosts = self.book.hosts() if hosts is None else hosts
        facts = self.book.facts()
        self._peers = [rules.PeerFacts(h.name, facts.get(h.name, {}), h.answered_at, rules.is_skewed(h.skew))
                       for h in hosts]

    def merge(self, here: dict[str, LimitFact]) -> dict[str, LimitFact]:
        """The store's `peer_limits`: this host's map with the hosts' facts merged in (afd.judge.fleet)."""
        if not self._peers:
            return here
        return rules.merged(here, self._peers, self.shared(), self.daemon.supervisor.clock())

    def peers(self) -> list[rules.PeerFacts]:
        return list(self._peers)

    def store_pulls(self) -> None:
        """What the worker brought since last called, written here on the loop's thread."""
        pulls = self.worker.pulls()
        if not pulls:
            return
        for pull in pulls:
            host = self.book.host(pull.host)
            if host is None:
                continue  # removed while it was asked
            self._store(host, pull)
        self._read_peers()

    def _store(self, host: Host, pull: Pull) -> None:
        new = after_pull(host, pull)
        if pull.reply.new_host_key and pull.reply.new_host_key != host.host_key:
            self.daemon.supervisor.event("fleet.host-key", f"host {host.name}: its host key {pull.reply.new_host_key} "
                                         "was accepted at first contact", host=host.name, fingerprint=pull.reply.new_host_key)
        if pull.answer is None:
            if host.contact != new.contact or host.error != new.error:
                log.error("host %s: %s: %s", host.name, new.contact.value if new.contact else "?", new.error)
            self.book.record(new, None)
            return
        if host.contact is not Contact.ANSWERED:
            log.info("host %s answered (afd %s)", host.name, pull.answer.version)
        if rules.is_skewed(new.skew, round_trip(pull.reply)) and not rules.is_skewed(host.skew):
            log.warning("host %s: its clock differs from ours by %.0f s; its facts are shown, not used", host.name, new.skew)
        facts = pull.answer.facts if pull.answer.facts is not None else ()
        self.book.record(new, facts)

    # --- requests -------------------------------------------------------------

    def add(self, name: str, dest: str, port: int | None, now: datetime) -> Host:
        host = self.book.add(name, dest, port, now)
        self.configure()
        return host

    def remove(self, name: str) -> Host | None:
        host = self.book.host(name)
        if host is None or not self.book.remove(name):
            return None
        self.configure()
        transport(self.config.fleet_timeout).stop(host.dest, host.port)
        return host


def stale_since(host: Host, interval: float, now: datetime) -> datetime | None:
    """Since when the host's facts are stale: it fails to answer, or has not answered for three pulls."""
    if host.failing_since is not None:
        return host.answered_at or host.failing_since
    if host.answered_at is not None and now - host.answered_at > timedelta(seconds=3 * interval + 30):
        return host.answered_at
    return None


def host_json(host: Host, facts: Mapping[str, LimitFact], interval: float, now: datetime, *,
              answer: bool = False) -> dict:
    """A host as `afd hosts list --json` gives it; with `answer`, what it last said too (`afd fleet --json`)."""
    from afd.judge.peer_answer import fact_json

    stale = stale_since(host, interval, now)
    said = {}
    if answer:
        import json

        told = json.loads(host.answer) if host.answer else {}
        said = {"daemon_running": told.get("daemon", {}).get("running"), "hostname": told.get("host"),
                "sessions": told.get("status", {}).get("sessions", []), "usage": told.get("usage")}
    return said | {
        "name": host.name, "dest": host.dest, "port": host.port, "added_at": _iso(host.added_at),
        "contact": host.contact.value if host.contact else None, "asked_at": _iso(host.asked_at),
        "answered_at": _iso(host.answered_at), "stale": stale is not None or host.contact is None,
        "stale_since": _iso(stale), "error": host.error, "skew_seconds": host.skew,
        "skewed": rules.is_skewed(host.skew), "version": host.version, "host_key": host.host_key,
        "limits": [fact_json(f) | {"source_host": host.name} for _, f in sorted(facts.items())],
    }


def _iso(value: datetime | None) -> str | None:
    from datetime import timezone

    return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if value is not None else None


def fleet_view(local: Mapping, hosts: Iterable[Mapping], hostname: str) -> dict:
    """`afd fleet --json`: this host (from its status report) and every host added (`host_json` with its answer),
    side by side. Actions stay local: each host's commands are run on that host."""
    here = {
        "name": hostname, "here": True, "dest": None, "version": (local.get("daemon") or {}).get("version"),
        "daemon_running": (local.get("daemon") or {}).get("running"), "contact": "here", "last_contact": None,
        "stale": False, "stale_since": None, "error": None, "skewed": False,
        "sessions": [{k: s.get(k) for k in ("name", "agent", "account", "state", "reset_at", "location", "branch",
                                             "next_action")} for s in local.get("sessions", []) if s.get("state") != "gone"],
        "limits": [{"account": a["name"], "agent": a["agent"], "state": a["state"], "reset_at": a.get("reset_at"),
                    "observed_at": a.get("observed_at"), "source_host": a.get("source_host")}
                   for a in local.get("accounts", [])],
        "usage": local.get("usage"),
    }
    peers = [{"name": h["name"], "here": False, "dest": h["dest"], "version": h.get("version"),
              "daemon_running": h.get("daemon_running"), "contact": h["contact"], "last_contact": h["answered_at"],
              "stale": h["stale"], "stale_since": h["stale_since"], "error": h["error"], "skewed": h["skewed"],
              "sessions": h.get("sessions") or [], "limits": h["limits"], "usage": h.get("usage")} for h in hosts]
    return {"hosts": [here, *peers]}
