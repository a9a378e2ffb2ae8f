"""What the daemon does for each control-socket request: a table of commands, by name.

The session commands are here; `afd jobs` commands are jobs/' own
(`JobRequests`), and what else the daemon was started with adds its own
(the dashboard's, `afd.web.requests`, wired in by `afd run`). Each group
says which commands it answers (`commands()`); the handler dispatches from
the table they make, and refuses a name two groups claim.

Handlers run on the poll loop's thread, so the daemon stays the only writer
of the store. Bad input raises `UserError` with one clear line, before
anything is changed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Protocol

from afd.act import create
from afd.act.launch import Launch, account_env, launch_argv, on_account
from afd.daemon.control import Stream
from afd.daemon.fleet_requests import FleetRequests
from afd.daemon.queue_requests import QueueRequests
from afd.daemon.status import StatusSnapshot, event_json
from afd.daemon.supervisor import GONE, UNKNOWN, expected_socket_path
from afd.errors import EXIT_FAIL, EXIT_USAGE, UserError
from afd.jobs.book import supervised_lines
from afd.jobs.requests import JobRequests
from afd.model import AgentSpec, IdentityKind, IdentitySource, PromptDelivery
from afd.observe import identity
from afd.observe.account_env import with_account_env
from afd.record.naming import is_valid_name, resolve
from afd.record.types import SessionRecord
from afd.world import git, tmux

Command = Callable[..., object]

# The longest `sessions pause --for`: a pause meant for longer is one without an end.
MAX_PAUSE = timedelta(days=365)


def _iso(value: datetime | None) -> str | None:
    return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if value is not None else None



class Extension(Protocol):
    """A group of commands the daemon was started with beyond its own (the dashboard's)."""

    def commands(self) -> Mapping[str, Command]: ...

    def started(self) -> None:
        """The control socket is up, or the config was reloaded: start what the config asks for."""
        ...


class RequestHandler:
    def __init__(self, daemon, extensions: Sequence[Callable[[RequestHandler], Extension]] = ()):
        self.daemon = daemon
        self._status: StatusSnapshot | None = None
        self.jobs = JobRequests(daemon, self._session, self.do_sessions_create)
        self.queue = QueueRequests(daemon, self._session)
        self.hosts = FleetRequests(daemon)
        self.extensions = [make(self) for make in extensions]
        self.table: dict[str, Command] = {}
        for group in (self.commands(), self.jobs.commands(), self.queue.commands(), self.hosts.commands(), *(e.commands() for e in self.extensions)):
            for name, command in group.items():
                if name in self.table:
                    raise ValueError(f"two command groups answer {name!r}")
                self.table[name] = command

    def commands(self) -> dict[str, Command]:
        return {
            "status": self.do_status,
            "sessions.list": self.do_sessions_list,
            "usage": self.do_usage,
            "events": self.do_events,
            "sessions.set-mission": self.do_sessions_set_mission,
            "sessions.forget": self.do_sessions_forget,
            "sessions.adopt": self.do_sessions_adopt,
            "sessions.create": self.do_sessions_create,
            "sessions.create-result": self.do_sessions_create_result,
            "resume": self.do_resume,
            "handoff": self.do_handoff,
            "sessions.pause": self.do_sessions_pause,
            "sessions.unpause": self.do_sessions_unpause,
            "sessions.cancel": self.do_sessions_cancel,
        }

    @property
    def sup(self):
        return self.daemon.supervisor

    @property
    def store(self):
        return self.daemon.store

    def handle(self, cmd: str, args: dict) -> object:
        command = self.table.get(cmd)
        if command is None:
            raise UserError(f"unknown request {cmd!r}", EXIT_USAGE)
        return command(**(args or {}))

    def started(self) -> None:
        for extension in self.extensions:
            extension.started()

    # --- reading ---------------------------------------------------------

    def daemon_info(self) -> dict:
        return {
            "running": True,
            "pid": os.getpid(),
            "version": self.daemon_version(),
            "started_at": self.daemon.started_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
            # The socket's path: a name alone ("default") does not say which server, inside tmux or out.
            "server": self.daemon.supervisor.socket,
            "server_ref": [self.daemon.server.socket_name, self.daemon.server.socket_path],
        }

    @staticmethod
    def daemon_version() -> str:
        from afd import __version__

        return __version__

    def do_status(self, events: int = 20) -> dict:
        return self.status.report(self.daemon_info(), events)

    def do_usage(self) -> dict:
        """Every account's usage figures (`afd usage --json`), calibration's working time as it stands now."""
        owners = [(a["name"], a["agent"]) for a in self.status.report(self.daemon_info(), 0)["accounts"]]
        return self.sup.usage_figures(owners=owners).to_json()

    def do_sessions_list(self) -> list[dict]:
        return self.status.report(self.daemon_info(), 0)["sessions"]

    @property
    def status(self) -> StatusSnapshot:
        # Made on first use, for the store the daemon has then.
        if self._status is None or self._status.store is not self.store:
            self._status = StatusSnapshot(self.store, lambda: self.daemon.plugins.agents)
        return self._status

    def do_events(self, follow: bool = False, limit: int = 50) -> object:
        recent = [event_json(s.event, s.id) for s in self.store.recent_events(limit)]
        return Stream("events", recent) if follow else recent

    # --- changing ----------------------------------------------------------

    def _session(self, name: str) -> SessionRecord:
        """The session a person means by `name`: its afd name, its tmux session, `session:window.pane` or `%3`."""
        return resolve(name, self.store.list_sessions())

    def _account_to_start(self, name: str) -> tuple[AgentSpec, str, str | None]:
        """The agent and account `sessions create --agent NAME` starts, and why that account when it was routed."""
        from afd.decide import policy
        from afd.judge.accounts import accounts_of

        config = self.daemon.config
        configured = config.accounts.get(name)
        if configured is not None:
            return self._agent_spec(configured.agent), name, None
        spec = self._agent_spec(name)
        candidates = accounts_of(name, config.accounts.values())
        if config.route_new_sessions == "most-headroom":
            from afd.decide.headroom import route_most_headroom

            account, why = route_most_headroom(candidates, self.store.limit_map(), self.sup.usage_figures())
        elif config.route_new_sessions == "least-limited":
            account, why = policy.route_account(candidates, self.store.limit_map())
        else:
            return spec, name, None
        return spec, account, f"route_new_sessions = \"{config.route_new_sessions}\": {account}, {why}"

    def _agent_spec(self, agent: str):
        spec = self.daemon.plugins.agents.get(agent)
        if spec is None:
            known = ", ".join(sorted(self.daemon.plugins.agents))
            accounts = ", ".join(self.daemon.config.accounts) or "none configured"
            raise UserError(f"{agent!r} is not an agent any plugin provides (known: {known}) nor an account "
                            f"(accounts: {accounts})", EXIT_USAGE)
        return spec

    def do_sessions_set_mission(self, name: str, mission: str) -> dict:
        rec = self._session(name)
        name = rec.name
        now = datetime.now(timezone.utc)
        self.store.upsert_session(replace(rec, mission=mission.strip() or None, updated_at=now))
        self.sup.event("session.mission", "mission set by the user" if mission.strip() else "mission cleared by the user", name)
        return {"name": name, "mission": mission.strip() or None}

    def do_sessions_forget(self, name: str) -> dict:
        rec = self._session(name)
        name = rec.name
        if rec.state == UNKNOWN:
            raise UserError(
                f"session {name!r} is unknown: tmux did not answer, so it may still be running in pane "
                f"{rec.pane_id}; try again once tmux answers",
                EXIT_USAGE,
            )
        handoffs = self.store.ledger(rec.name)
        if handoffs:
            # The ledger is append-only history the handoff loop guard counts on; forgetting would erase it.
            raise UserError(
                f"session {name!r} has {len(handoffs)} handoff{'s' if len(handoffs) != 1 else ''} in its ledger, "
                "which afd keeps; it cannot be forgotten (`afd ledger` still shows them by this name)",
                EXIT_USAGE,
            )
        if rec.state in ("working", "idle", "limited"):
            # It would be adopted again on the next poll, its reset re-read and its mission lost.
            raise UserError(
                f"session {name!r} is still running ({rec.state}) in pane {rec.pane_id}; "
                "close the pane first, or add its location to watch_ignore",
                EXIT_USAGE,
            )
        self.store.delete_session(rec.name)
        self.sup.watches.pop(rec.name, None)
        self.sup.event("session.forgotten", f"session forgotten (it was {rec.state}); its pane was not touched", name)
        return {"name": name, "forgotten": True}

    def _find_pane(self, target: str) -> tuple[tmux.Inventory, tmux.PaneInfo]:
        inv = tmux.list_panes(self.daemon.server)
        if not inv.answered:
            raise UserError(f"tmux did not answer: {inv.error}", EXIT_FAIL)
        if not inv.server_running:
            raise UserError(f"no tmux server is running at {self.daemon.supervisor.socket}, so there is no pane to adopt",
                            EXIT_USAGE)
        for pane in inv.panes:
            if target in (pane.pane_id, pane.location) or (
                target.count(":") == 1 and "." not in target and pane.location.startswith(target + ".") and pane.pane_index == 0
            ):
                return inv, pane
        raise UserError(f"pane {target!r} not found on tmux server {inv.socket_path}", EXIT_USAGE)

    def do_sessions_adopt(self, pane: str, name: str | None = None, mission: str | None = None, agent: str | None = None) -> dict:
        inv, info = self._find_pane(pane)
        for rec in self.store.list_sessions():
            if rec.state != GONE and rec.server_socket == inv.socket_path and rec.pane_id == info.pane_id:
                raise UserError(f"pane {info.pane_id} is already session {rec.name!r}", EXIT_USAGE)
        taken = {r.name for r in self.store.list_sessions()}
        if name is not None:
            if not is_valid_name(name):
                raise UserError(f"{name!r} is not a valid session name (letters, digits, . _ - : @ +)", EXIT_USAGE)
            if name in taken:
                raise UserError(f"a session named {name!r} already exists", EXIT_USAGE)
        overrides = {n: o.command for n, o in self.daemon.config.agents.items() if o.command}
        procs = [] if info.dead else identity.pane_processes(info.pane_pid)
        # With its account variables, as the poll reads them when it names an agent.
        ident = with_account_env(identity.identify(procs, self.daemon.plugins.agents, overrides), self.daemon.plugins.agents)
        if agent is not None:
            self._agent_spec(agent)
            if ident.kind is IdentityKind.KNOWN and ident.agent != agent:
                raise UserError(f"pane {info.pane_id} runs {ident.agent}, not {agent}", EXIT_USAGE)
            source = IdentitySource.PROCESS if ident.kind is IdentityKind.KNOWN else IdentitySource.USER
        elif ident.kind is IdentityKind.KNOWN and ident.agent is not None:
            agent, source = ident.agent, IdentitySource.PROCESS
            self._agent_spec(agent)
        else:
            raise UserError(
                f"cannot tell which agent runs in pane {info.pane_id}: {ident.reason}; "
                "pass --agent NAME to vouch for it",
                EXIT_USAGE,
            )
        rec = self.sup.adopt(info, ident, inv, taken, datetime.now(timezone.utc), name=name, mission=mission,
                             vouched_agent=agent if source is IdentitySource.USER else None)
        return {"name": rec.name, "pane": rec.pane_id, "agent": agent, "identity_source": source, "mission": rec.mission}

    def do_sessions_create(self, name: str, agent: str, repo: str, prompt: str, base: str | None = None) -> dict:
        """Check everything, journal the intent and start the slow git step on a worker.

        Answers at once with the journal id; the client asks `sessions.create-result`
        until the loop has carried the create through (afd/act/create.py).
        """
        if not is_valid_name(name):
            raise UserError(f"{name!r} is not a valid session name (letters, digits, . _ - : @ +)", EXIT_USAGE)
        if self.store.get_session(name) is not None or any(
            e.session == name and e.action == create.ACTION for e in self.store.pending_journal()
        ):
            raise UserError(f"a session named {name!r} already exists", EXIT_USAGE)
        spec, account, routed = self._account_to_start(agent)
        if not prompt.strip():
            raise UserError("--prompt is empty: a session needs a mission", EXIT_USAGE)
        branch = f"afd/{name}"
        path = Path(self.daemon.config.worktree_root) / name.replace(":", "-")
        try:
            git.check_new_worktree(Path(repo), branch, path, base)
        except git.GitError as exc:
            raise UserError(str(exc), EXIT_USAGE) from None
        session_name = "afd-" + re.sub(r"[.:]", "_", name)  # tmux would rename them itself
        inv = tmux.list_panes(self.daemon.server)
        if not inv.answered:
            # Without an answer afd cannot tell where the session would run, nor record its server.
            raise UserError(f"tmux did not answer ({inv.error}); nothing was created, try again", EXIT_FAIL)
        if any(p.session_name == session_name for p in inv.panes):
            raise UserError(f"tmux already has a session named {session_name!r}", EXIT_USAGE)

        argv = launch_argv(spec, self.daemon.config.agents.get(spec.name), Launch.FIRST, prompt=prompt)
        argv = on_account(argv, spec, account_env(self.daemon.config, spec, account))
        plan = create.CreatePlan(
            name=name,
            agent=spec.name,
            account=account,
            routed=routed,
            repo=repo,
            base=base,
            branch=branch,
            worktree=str(path),
            tmux_session=session_name,
            argv=tuple(argv),
            prompt=prompt.strip(),
            typed_prompt=prompt if spec.prompt_delivery is PromptDelivery.TYPED else None,
            # An answered listing names its socket; else where tmux puts it, which it always can say.
            server_socket=inv.socket_path or expected_socket_path(self.daemon.server) or "",
        )
        return {"name": name, "journal": self.sup.begin_create(plan)}

    def do_sessions_create_result(self, journal: int) -> dict:
        """How a create started by `sessions.create` stands: `{"done": false}` while it runs."""
        try:
            answer = self.sup.create_result(int(journal))
        except ValueError as exc:
            raise UserError(str(exc), EXIT_FAIL) from None
        if answer is None:
            return {"done": False}
        return {"done": True, **answer}

    # --- the person's holds: pause, unpause, cancel -------------------------------

    def do_sessions_pause(self, name: str, for_seconds: float | None = None) -> dict:
        """Hold every automatic action that types into the session's pane, for a while or until unpaused."""
        from afd.record.types import Pause

        rec = self._session(name)
        if for_seconds is not None and not (isinstance(for_seconds, int | float) and 0 < for_seconds <= MAX_PAUSE.total_seconds()):
            raise UserError(f"--for must be more than 0 and at most {MAX_PAUSE.days} days", EXIT_USAGE)
        now = datetime.now(timezone.utc)
        until = now + timedelta(seconds=for_seconds) if for_seconds is not None else None
        self.store.save_pause(Pause(rec.name, now, until))
        when = f"until {_iso(until)}" if until else "until you unpause it"
        self.sup.event("session.paused", f"paused by the user {when}: afd types nothing into its pane by itself "
                                         "(it is still watched and reported)", rec.name, until=_iso(until))
        return {"name": rec.name, "paused": True, "since": _iso(now), "until": _iso(until)}

    def do_sessions_unpause(self, name: str) -> dict:
        rec = self._session(name)
        was = self.store.delete_pause(rec.name)
        if was:
            self.sup.event("session.unpaused", "unpaused by the user; afd acts on this session again as configured", rec.name)
        return {"name": rec.name, "paused": False, "was_paused": was}

    def do_sessions_cancel(self, name: str) -> dict:
        """Cancel what afd planned for the session's present wall; stored with the wall, so it is not planned again."""
        from afd.act import Observe, SaveHistory, runner
        from afd.decide import nextaction, plan, policy
        from afd.judge import sessions

        rec = self._session(name)
        name = rec.name
        history = self.store.resume_history(name)
        at_wall = rec.state in ("limited", "all_limited") or (rec.state == "exited" and history.episode is not None)
        if not at_wall:
            raise UserError(f"{name} is not at a usage limit (it is {rec.state}); afd plans nothing to cancel", EXIT_FAIL)
        pending = self.sup.engine.pending(self.store).get(name)
        if pending is not None:
            raise UserError(f"afd is acting on {name} now ({pending.action} at step {pending.intent.get('step')}); "
                            "an action under way is not cancelled midway", EXIT_FAIL)
        if history.episode is None:
            raise UserError(f"afd has not planned anything for {name}'s wall yet; try again after the next poll", EXIT_FAIL)
        before = nextaction.words(rec.next_action.as_json()) if rec.next_action is not None else None
        shown = plan.of(policy.cancelled(name, rec.reset_at), max_attempts=self.daemon.config.resume_max_attempts,
                        agent=rec.agent)
        ctx = self.sup.context()
        # The cancel and the plan it leaves, in one commit: the rulebook writes the session.
        with self.store.transaction():
            told = runner.commit(ctx, name, (SaveHistory(policy.cancel(history)), Observe(sessions.Planned(shown))))
        runner.tell(ctx, name, told)
        self.sup.event("resume.cancelled", f"cancelled by the user for this wall (afd's plan was: {before or 'none'}); "
                                           f"resume with: afd resume {name}", name, was=before)
        return {"name": name, "cancelled": True, "was": before, "next": shown.as_json() if shown is not None else None}

    # --- acting ------------------------------------------------------------

    def do_resume(self, name: str) -> dict:
        """`afd resume SESSION`: the user says now, whatever limit_auto_resume says."""
        from afd.act import resume
        from afd.decide import policy

        rec = self._session(name)
        name = rec.name
        pending = self.sup.engine.pending(self.store).get(name)
        presence = tmux.pane_exists(self.daemon.server, rec.pane_id, rec.server_pid) if rec.state != GONE else tmux.Presence.GONE
        decision = policy.decide_manual(
            state=rec.state,
            # An agent that exited while it stood at a limit still owes that limit its resume.
            limited=rec.state in ("limited", "all_limited")
            or (rec.state == "exited" and self.store.resume_history(name).episode is not None),
            pane_known=presence is not tmux.Presence.UNKNOWN,
            pane_present=presence is tmux.Presence.PRESENT,
            in_progress=f"{pending.action} at step {pending.intent.get('step')}" if pending else None,
        )
        if isinstance(decision, policy.Refuse):
            self.sup.event("resume.refused", decision.why, name)
            raise UserError(f"cannot resume {name}: {decision.why}", EXIT_FAIL)
        history = self.store.resume_history(name)
        attempt = history.attempts + 1
        entry = resume.begin(self.sup.context(), rec, attempt=attempt, why="manual", episode=history.episode, manual=True)
        return {"name": name, "pane": rec.pane_id, "journal": entry, "attempt": attempt}

    # --- handoff -------------------------------------------------------------

    def do_handoff(self, name: str, to: str, brief: str | None = None, force: bool = False, wait: bool = True) -> object:
        """Start a swap; with `wait`, the answer streams once more when it has settled."""
        from afd.act import handoff
        from afd.daemon.control import Stream

        name = self._session(name).name
        try:
            entry = handoff.begin(self.sup.context(), name, to, brief=brief, force=force, jobs=supervised_lines(self.store, name))
        except handoff.HandoffRefused as exc:
            self.sup.event("handoff.refused", f"handoff to {to} refused: {exc}", name, to=to, why=str(exc),
                           next="nothing was changed; the session stays as it was")
            raise UserError(f"handoff of {name} to {to} refused: {exc}", EXIT_FAIL) from None
        result = {"name": name, "to": to, "journal": entry, "state": "pending"}
        return Stream(f"action-{entry}", result) if wait else result
