"""The fleet's record book: the hosts afd asks over ssh, how the last ask of each went, and what each told.

Written by the daemon only: a host is added and removed through it (`afd
hosts add`, `afd hosts remove`), and what a pull brought is written on its
loop (afd/daemon/fleet.py), never on the worker that asked. Read by the
daemon and, with the daemon down, by `afd hosts list` and `afd status`
(`read_fleet`, which takes any sqlite3 connection).

A host's facts are kept apart from the local limit map (the `limits` table,
which only what this host sees writes): they are the host's own, replaced
whole by each answer it gives, and merged with the local map only when read
(afd.judge.fleet), so a peer can never write into what this host saw.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from afd.record.types import Contact, Host, LimitFact, LimitState

if TYPE_CHECKING:
    from afd.record.store import Store


def _iso(value: datetime | None) -> str | None:
    return value.astimezone(timezone.utc).isoformat(timespec="microseconds") if value is not None else None


def _dt(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


_HOST_COLUMNS = ("name", "dest", "port", "added_at", "contact", "asked_at", "answered_at", "failing_since", "error",
                 "skew", "version", "host_key", "answer")


def _host_from_row(row: Sequence) -> Host:
    values = dict(zip(_HOST_COLUMNS, row, strict=True))
    return Host(
        name=values["name"], dest=values["dest"], port=values["port"], added_at=_dt(values["added_at"]) or datetime.min,
        contact=Contact(values["contact"]) if values["contact"] in Contact._value2member_map_ else None,
        asked_at=_dt(values["asked_at"]), answered_at=_dt(values["answered_at"]),
        failing_since=_dt(values["failing_since"]), error=values["error"], skew=values["skew"],
        version=values["version"], host_key=values["host_key"], answer=values["answer"],
    )


def _fact_from_row(row: Sequence) -> LimitFact:
    host, account, agent, state, reset_at, observed_at, session, banner = row
    return LimitFact(agent=agent, state=LimitState(state), reset_at=_dt(reset_at), observed_at=_dt(observed_at),
                     source_session=session, banner=banner, account=account if account != agent else None,
                     source_host=host)


Query = Callable[[str], Sequence[Sequence]]


def read_hosts(query: Query) -> list[Host]:
    """Every host, by name: `query` runs one SELECT on the store (the daemon's, or a read-only one)."""
    return [_host_from_row(r) for r in query(f"SELECT {', '.join(_HOST_COLUMNS)} FROM hosts ORDER BY name")]


def read_facts(query: Query) -> dict[str, dict[str, LimitFact]]:
    """What each host last told of its accounts: host → account → fact (its `source_host` the host)."""
    out: dict[str, dict[str, LimitFact]] = {}
    for row in query("SELECT host, account, agent, state, reset_at, observed_at, source_session, banner"
                     " FROM fleet_limits ORDER BY host, account"):
        fact = _fact_from_row(row)
        out.setdefault(row[0], {})[fact.account_name] = fact
    return out


class FleetBook:
    """The fleet's tables on the daemon's store."""

    def __init__(self, store: Store):
        self.store = store

    def _query(self, sql: str) -> Sequence[Sequence]:
        return self.store.query(sql)

    def hosts(self) -> list[Host]:
        return read_hosts(self._query)

    def host(self, name: str) -> Host | None:
        return next((h for h in self.hosts() if h.name == name), None)

    def facts(self) -> dict[str, dict[str, LimitFact]]:
        return read_facts(self._query)

    def any_hosts(self) -> bool:
        return bool(self.store.query("SELECT 1 FROM hosts LIMIT 1"))

    def add(self, name: str, dest: str, port: int | None, at: datetime) -> Host:
        """A new host; a name already taken is the caller's to refuse (ValueError here)."""
        with self.store.transaction():
            if self.store.query("SELECT 1 FROM hosts WHERE name = ?", (name,)):
                raise ValueError(f"a host named {name!r} exists already")
            self.store.execute("INSERT INTO hosts (name, dest, port, added_at) VALUES (?, ?, ?, ?)",
                               (name, dest, port, _iso(at)))
        host = self.host(name)
        assert host is not None
        return host

    def remove(self, name: str) -> bool:
        """Forget a host and everything it told; False when there was none of that name."""
        with self.store.transaction():
            gone = self.store.execute("DELETE FROM hosts WHERE name = ?", (name,)).rowcount > 0
            self.store.execute("DELETE FROM fleet_limits WHERE host = ?", (name,))
        return gone

    def record(self, host: Host, facts: Iterable[LimitFact] | None) -> None:
        """The host's contact as it stands after an ask; with `facts` (an answer read), its facts replaced by them.

        Written in one transaction: a reader sees the contact and the facts of the same ask.
        """
        with self.store.transaction():
            self.store.execute(
                "UPDATE hosts SET contact = ?, asked_at = ?, answered_at = ?, failing_since = ?, error = ?, skew = ?,"
                " version = ?, host_key = ?, answer = ? WHERE name = ?",
                (host.contact.value if host.contact else None, _iso(host.asked_at), _iso(host.answered_at),
                 _iso(host.failing_since), host.error, host.skew, host.version, host.host_key, host.answer, host.name),
            )
            if facts is None:
                return
            self.store.execute("DELETE FROM fleet_limits WHERE host = ?", (host.name,))
            for fact in facts:
                self.store.execute(
                    "INSERT INTO fleet_limits (host, account, agent, state, reset_at, observed_at, source_session, banner)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (host.name, fact.account_name, fact.agent, fact.state.value, _iso(fact.reset_at),
                     _iso(fact.observed_at), fact.source_session, fact.banner),
                )


def facts_by_host(facts: Mapping[str, Mapping[str, LimitFact]], hosts: Iterable[Host]) -> dict[str, dict[str, LimitFact]]:
    """The facts of the hosts there are (a row left by a host removed meanwhile is not one)."""
    names = {h.name for h in hosts}
    return {name: dict(found) for name, found in facts.items() if name in names}


def local_fact(row) -> LimitFact:
    """A row of this host's own map (the `limits` table, as `afd.record.statusread` reads it) as a fact."""
    return LimitFact(agent=row["agent"], state=LimitState(row["state"]), reset_at=_dt(row["reset_at"]),
                     observed_at=_dt(row["observed_at"]), source_session=row["source_session"], banner=row["banner"],
                     account=row["account"] if row["account"] != row["agent"] else None)
