"""What `afd remote` answers a peer, and reading such an answer back: checked whole before anything of it is used (pure).

An answer is one JSON object of schema `SCHEMA`. It always says the
answering afd's version, its host name and the instant it answered (the
asker measures the clocks' skew from it); then what was asked, among
`REQUESTS`:

* ``status``: its sessions, as a person sees them listed (no missions, no
  worktrees, no events);
* ``limits``: its own limit facts of the accounts it shares (never facts it
  heard from another host: facts are not passed on, so a wall no host sees
  any more cannot circle the fleet);
* ``usage``: the usage figures of those accounts (afd.judge.usage);
* ``version``: nothing more than the three fields every answer has.

Reading refuses the whole answer, with the place and the reason, when it is
over `MAX_ANSWER_BYTES`, not JSON, of another schema, or when a value has
the wrong type, is too long or too many, or carries a control character:
an honest afd sends none (it neutralises its text before sending), so one
that does is broken or hostile, and nothing it said is used.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone

from afd.display.text import neutral
from afd.errors import AfdError
from afd.judge.usage import Provenance, UsageFigures
from afd.record.types import LimitFact, LimitState

SCHEMA = 1
REQUESTS = ("status", "limits", "usage", "version")
MAX_ANSWER_BYTES = 1 << 20
MAX_SESSIONS = 1000
MAX_FACTS = 200
MAX_WINDOWS = 20
MAX_NAME = 200  # names, states, versions, instants
MAX_WORDS = 2000  # a banner, a next action in words

_WORD = re.compile(r"[a-z][a-z_-]{0,31}")


class AnswerError(AfdError, ValueError):
    """Why an answer is not read, in one line that names where in it the problem is."""


@dataclass(frozen=True, slots=True)
class PeerSession:
    """One session of another host, as its afd lists it."""

    name: str
    agent: str | None
    account: str | None
    state: str
    reset_at: datetime | None
    location: str | None
    branch: str | None
    next_action: str | None  # in words, its instants ISO 8601 UTC

    def to_json(self) -> dict:
        return {"name": self.name, "agent": self.agent, "account": self.account, "state": self.state,
                "reset_at": _iso(self.reset_at), "location": self.location, "branch": self.branch,
                "next_action": self.next_action}


@dataclass(frozen=True, slots=True)
class PeerAnswer:
    """An answer read: what another host's afd said, checked."""

    version: str  # its afd's
    hostname: str  # as its system names itself (the fleet knows it by the name `afd hosts add` gave it)
    time: datetime  # its clock when it answered
    running: bool  # whether its daemon runs (a host whose daemon is down answers from its store)
    sessions: tuple[PeerSession, ...] | None = None  # None: not asked
    facts: tuple[LimitFact, ...] | None = None
    usage: UsageFigures | None = None
    schema: int = SCHEMA

    def to_json(self) -> dict:
        out: dict = {"schema": self.schema, "afd": self.version, "host": self.hostname, "time": _iso(self.time, exact=True),
                     "daemon": {"running": self.running}}
        if self.sessions is not None:
            out["status"] = {"sessions": [s.to_json() for s in self.sessions]}
        if self.facts is not None:
            out["limits"] = [fact_json(f) for f in self.facts]
        if self.usage is not None:
            out["usage"] = self.usage.to_json()
        return out


def _iso(value: datetime | None, exact: bool = False) -> str | None:
    if value is None:
        return None
    value = value.astimezone(timezone.utc)
    return value.isoformat(timespec="microseconds").replace("+00:00", "Z") if exact else value.strftime("%Y-%m-%dT%H:%M:%SZ")


def fact_json(fact: LimitFact) -> dict:
    return {"account": fact.account_name, "agent": fact.agent, "state": fact.state.value, "reset_at": _iso(fact.reset_at),
            "observed_at": _iso(fact.observed_at), "session": fact.source_session, "banner": fact.banner}


# --- what a host answers ------------------------------------------------------


def parse_requests(words: Iterable[str]) -> tuple[str, ...]:
    """The requests a command line asks, each once; ValueError naming what is not one."""
    asked: list[str] = []
    for word in words:
        if word not in REQUESTS:
            shown = neutral(word)[:40]
            raise ValueError(f"{shown!r} is not a request afd remote answers (it answers: {', '.join(REQUESTS)})")
        if word not in asked:
            asked.append(word)
    if not asked:
        raise ValueError(f"no request: afd remote answers {', '.join(REQUESTS)}, and gives no shell")
    return tuple(asked)


def answer(*, asked: Iterable[str], version: str, hostname: str, now: datetime, running: bool, sessions: Iterable[Mapping],
           facts: Iterable[LimitFact], usage: UsageFigures | None, shared: Mapping[str, str]) -> PeerAnswer:
    """This host's answer to `asked`: `sessions` as status lists them, `facts` the local map, `shared` what may go out.

    Every text is neutral, so the asker (which refuses control characters) reads an honest answer whole.
    """
    asked = set(asked)
    told = None
    if "status" in asked:
        told = tuple(PeerSession(
            name=neutral(s["name"])[:MAX_NAME], agent=_neutral(s.get("agent")), account=_neutral(s.get("account")),
            state=neutral(s["state"])[:MAX_NAME], reset_at=_instant(s.get("reset_at")), location=_neutral(s.get("location")),
            branch=_neutral(s.get("branch")), next_action=_neutral(s.get("next_action"), MAX_WORDS),
        ) for s in list(sessions)[:MAX_SESSIONS])
    out_facts = None
    if "limits" in asked:
        out_facts = tuple(f for f in facts if shared.get(f.account_name) == f.agent and f.source_host is None)[:MAX_FACTS]
        out_facts = tuple(_neutral_fact(f) for f in out_facts)
    out_usage = None
    if "usage" in asked and usage is not None:
        out_usage = UsageFigures(at=usage.at, accounts=tuple(
            a for a in usage.accounts if shared.get(a.account) == a.agent)[:MAX_FACTS])
    return PeerAnswer(version=neutral(version)[:MAX_NAME], hostname=neutral(hostname)[:MAX_NAME], time=now,
                      running=running, sessions=told, facts=out_facts, usage=out_usage)


def _neutral(value: object, limit: int = MAX_NAME) -> str | None:
    return None if value is None else neutral(value)[:limit]


def _neutral_fact(fact: LimitFact) -> LimitFact:
    from dataclasses import replace

    return replace(fact, source_session=_neutral(fact.source_session), banner=_neutral(fact.banner, MAX_WORDS))


# --- reading an answer ------------------------------------------------------------


def read_answer(raw: bytes, asked: Iterable[str]) -> PeerAnswer:
    """The answer in `raw`, checked whole; AnswerError saying where and why when any of it is not as it must be."""
    if len(raw) > MAX_ANSWER_BYTES:
        raise AnswerError(f"the answer is over {MAX_ANSWER_BYTES // 1024} KiB")
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise AnswerError("the answer is not UTF-8 text") from None
    except RecursionError:
        raise AnswerError("the answer is nested too deeply") from None
    except ValueError as exc:
        raise AnswerError(f"the answer is not JSON ({exc.args[0] if exc.args else exc})") from None
    return _Reader().answer(data, set(asked))


class _Reader:
    """One answer's checks; each raises AnswerError with the path of the value (`status.sessions[3].name`)."""

    def obj(self, value: object, where: str) -> dict:
        if not isinstance(value, dict):
            raise AnswerError(f"{where}: expected an object, got {_kind(value)}")
        return value

    def items(self, value: object, where: str, most: int) -> list:
        if not isinstance(value, list):
            raise AnswerError(f"{where}: expected a list, got {_kind(value)}")
        if len(value) > most:
            raise AnswerError(f"{where}: {len(value)} items, over the {most} afd reads")
        return value

    def text(self, value: object, where: str, *, optional: bool = False, limit: int = MAX_NAME) -> str | None:
        if value is None and optional:
            return None
        if not isinstance(value, str):
            raise AnswerError(f"{where}: expected text, got {_kind(value)}")
        if len(value) > limit:
            raise AnswerError(f"{where}: {len(value)} characters, over the {limit} afd reads")
        if neutral(value) != value:
            raise AnswerError(f"{where}: carries control characters (an escape sequence, a line break or a bidi mark)")
        return value

    def word(self, value: object, where: str) -> str:
        text = self.text(value, where)
        assert text is not None
        if not _WORD.fullmatch(text):
            raise AnswerError(f"{where}: {text[:40]!r} is not a state")
        return text

    def instant(self, value: object, where: str, *, optional: bool = True) -> datetime | None:
        text = self.text(value, where, optional=optional)
        if text is None:
            return None
        try:
            at = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise AnswerError(f"{where}: {text[:40]!r} is not an ISO 8601 instant") from None
        if at.tzinfo is None:
            raise AnswerError(f"{where}: {text[:40]!r} has no zone")
        return at

    def number(self, value: object, where: str, *, optional: bool = True) -> float | None:
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or value != value or value in (float("inf"), float("-inf")):
            raise AnswerError(f"{where}: expected a number, got {_kind(value)}")
        return float(value)

    def whole(self, value: object, where: str, *, optional: bool = True) -> int | None:
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise AnswerError(f"{where}: expected a whole number, got {_kind(value)}")
        return value

    def flag(self, value: object, where: str) -> bool:
        if not isinstance(value, bool):
            raise AnswerError(f"{where}: expected true or false, got {_kind(value)}")
        return value

    # -- the parts

    def answer(self, data: object, asked: set[str]) -> PeerAnswer:
        top = self.obj(data, "the answer")
        schema = top.get("schema")
        if isinstance(schema, bool) or not isinstance(schema, int):
            raise AnswerError(f"schema: expected a whole number, got {_kind(schema)}")
        if schema != SCHEMA:
            newer = "newer than" if schema > SCHEMA else "other than"
            raise AnswerError(f"schema: the answer is of schema {schema}, {newer} the one this afd reads ({SCHEMA})")
        version = self.text(top.get("afd"), "afd")
        host = self.text(top.get("host"), "host")
        time = self.instant(top.get("time"), "time", optional=False)
        running = self.flag(self.obj(top.get("daemon"), "daemon").get("running"), "daemon.running")
        assert version is not None and host is not None and time is not None
        sessions = facts = usage = None
        if "status" in asked:
            status = self.obj(top.get("status"), "status")
            sessions = tuple(self.session(s, f"status.sessions[{i}]")
                             for i, s in enumerate(self.items(status.get("sessions"), "status.sessions", MAX_SESSIONS)))
        if "limits" in asked:
            facts = tuple(self.fact(f, f"limits[{i}]") for i, f in enumerate(self.items(top.get("limits"), "limits", MAX_FACTS)))
        if "usage" in asked and top.get("usage") is not None:
            usage = self.usage(top.get("usage"), "usage")
        return PeerAnswer(version=version, hostname=host, time=time, running=running, sessions=sessions, facts=facts,
                          usage=usage)

    def session(self, value: object, where: str) -> PeerSession:
        s = self.obj(value, where)
        name = self.text(s.get("name"), f"{where}.name")
        assert name is not None
        return PeerSession(
            name=name, agent=self.text(s.get("agent"), f"{where}.agent", optional=True),
            account=self.text(s.get("account"), f"{where}.account", optional=True),
            state=self.word(s.get("state"), f"{where}.state"), reset_at=self.instant(s.get("reset_at"), f"{where}.reset_at"),
            location=self.text(s.get("location"), f"{where}.location", optional=True),
            branch=self.text(s.get("branch"), f"{where}.branch", optional=True),
            next_action=self.text(s.get("next_action"), f"{where}.next_action", optional=True, limit=MAX_WORDS),
        )

    def fact(self, value: object, where: str) -> LimitFact:
        f = self.obj(value, where)
        account = self.text(f.get("account"), f"{where}.account")
        agent = self.text(f.get("agent"), f"{where}.agent")
        state = self.text(f.get("state"), f"{where}.state")
        assert account is not None and agent is not None and state is not None
        if state not in LimitState._value2member_map_:
            raise AnswerError(f"{where}.state: {state[:40]!r} is none of limited, available, unknown")
        return LimitFact(agent=agent, state=LimitState(state), reset_at=self.instant(f.get("reset_at"), f"{where}.reset_at"),
                         observed_at=self.instant(f.get("observed_at"), f"{where}.observed_at"),
                         source_session=self.text(f.get("session"), f"{where}.session", optional=True),
                         banner=self.text(f.get("banner"), f"{where}.banner", optional=True, limit=MAX_WORDS),
                         account=account if account != agent else None)

    def usage(self, value: object, where: str) -> UsageFigures:
        u = self.obj(value, where)
        self.whole(u.get("schema"), f"{where}.schema", optional=False)
        self.instant(u.get("at"), f"{where}.at", optional=False)
        for i, a in enumerate(self.items(u.get("accounts"), f"{where}.accounts", MAX_FACTS)):
            at = f"{where}.accounts[{i}]"
            a = self.obj(a, at)
            self.text(a.get("account"), f"{at}.account")
            self.text(a.get("agent"), f"{at}.agent")
            self.text(a.get("note"), f"{at}.note", optional=True, limit=MAX_WORDS)
            for j, w in enumerate(self.items(a.get("windows", []), f"{at}.windows", MAX_WINDOWS)):
                self.window(w, f"{at}.windows[{j}]")
        try:
            return UsageFigures.from_json(u)
        except ValueError as exc:
            raise AnswerError(f"{where}: {exc}") from None

    def window(self, value: object, where: str) -> None:
        w = self.obj(value, where)
        self.text(w.get("window"), f"{where}.window")
        provenance = self.text(w.get("provenance"), f"{where}.provenance")
        if provenance not in Provenance._value2member_map_:
            raise AnswerError(f"{where}.provenance: {str(provenance)[:40]!r} is not a provenance afd knows")
        self.text(w.get("limit_id"), f"{where}.limit_id", optional=True)
        self.whole(w.get("window_minutes"), f"{where}.window_minutes")
        self.number(w.get("used_percent"), f"{where}.used_percent")
        self.instant(w.get("resets_at"), f"{where}.resets_at")
        self.instant(w.get("observed_at"), f"{where}.observed_at")
        self.number(w.get("age_seconds"), f"{where}.age_seconds")
        self.flag(w.get("stale", False), f"{where}.stale")
        self.whole(w.get("stops", 0), f"{where}.stops", optional=False)
        self.text(w.get("source", ""), f"{where}.source")
        self.text(w.get("plan_type"), f"{where}.plan_type", optional=True)
        forecast = w.get("forecast")
        if forecast is not None:
            f = self.obj(forecast, f"{where}.forecast")
            self.instant(f.get("earliest"), f"{where}.forecast.earliest")
            self.instant(f.get("latest"), f"{where}.forecast.latest")
            rates = self.items(f.get("percent_per_hour", [0, 0]), f"{where}.forecast.percent_per_hour", 2)
            for k, r in enumerate(rates):
                self.number(r, f"{where}.forecast.percent_per_hour[{k}]", optional=False)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return {str: "text", int: "a number", float: "a number", list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def _instant(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        at = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo is not None else None
