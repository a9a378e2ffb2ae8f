"""What the daemon does for each control-socket request.

Handlers run on the poll loop's thread, so the daemon stays the only writer
of the store. Bad input raises `UserError` with one clear line, before
anything is changed.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from afd.act import create
from afd.act.launch import Launch, account_env, launch_argv, on_account
from afd.daemon.control import Stream
from afd.daemon.queue_requests import QueueRequests
from afd.daemon.status import StatusSnapshot, event_json
from afd.daemon.supervisor import GONE, UNKNOWN, expected_socket_path
from afd.errors import EXIT_FAIL, EXIT_USAGE, UserError
from afd.jobs.requests import JobRequests
from afd.model import AgentSpec, IdentitySource, PromptDelivery
from afd.observe import identity
from afd.observe.account_env import with_account_env
from afd.observe.identity import IdentityKind
from afd.record.naming import is_valid_name
from afd.record.types import SessionRecord
from afd.web.requests import WebRequests
from afd.world import git, tmux


class RequestHandler(JobRequests, WebRequests, QueueRequests):
    def __init__(self, daemon):
        self.daemon = daemon
        self._status: StatusSnapshot | None = None

    @property
    def sup(self):
        return self.daemon.supervisor

    @property
    def store(self):
        return self.daemon.store

    def handle(self, cmd: str, args: dict) -> object:
        method = getattr(self, "do_" + cmd.replace("-", "_").replace(".", "_"), None)
        if method is None:
            raise UserError(f"unknown request {cmd!r}", EXIT_USAGE)
        return method(**(args or {}))

    # --- reading ---------------------------------------------------------

    def daemon_info(self) -> dict:
        return {
            "running": True,
            "pid": os.getpid(),
            "version": self.daemon_version(),
            "started_at": self.daemon.started_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "server": self.daemon.server.socket_name or self.daemon.server.socket_path or "default",
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
        rec = self.store.get_session(name)
        if rec is None:
            known = ", ".join(r.name for r in self.store.list_sessions()) or "none"
            raise UserError(f"no session named {name!r} (sessions: {known})", EXIT_USAGE)
        return rec

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

            account, why = route_most_headroom(candidates, self.store.load_limits(), self.sup.usage_figures())
        elif config.route_new_sessions == "least-limited":
            account, why = policy.route_account(candidates, self.store.load_limits())
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
        now = datetime.now(timezone.utc)
        self.store.upsert_session(replace(rec, mission=mission.strip() or None, updated_at=now))
        self.sup.event("session.mission", "mission set by the user" if mission.strip() else "mission cleared by the user", name)
        return {"name": name, "mission": mission.strip() or None}

    def do_sessions_forget(self, name: str) -> dict:
        rec = self._session(name)
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
            raise UserError("no tmux server is running, so there is no pane to adopt", EXIT_USAGE)
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
        elif ident.kind is IdentityKind.KNOWN:
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
        until the loop has carried the create through (afd/create.py).
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
            server_socket=inv.socket_path or expected_socket_path(self.daemon.server),
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

    # --- acting ------------------------------------------------------------

    def do_resume(self, name: str) -> dict:
        """`afd resume SESSION`: the user says now, whatever limit_auto_resume says."""
        from afd.act import resume
        from afd.decide import policy

        rec = self._session(name)
        pending = self.sup.engine.pending(self.store).get(name)
        presence = tmux.pane_exists(self.daemon.server, rec.pane_id, rec.server_pid) if rec.state != GONE else tmux.Presence.GONE
        decision = policy.decide_manual(
            state=rec.state,
            # An agent that exited while it stood at a limit still owes that limit its resume.
            limited=rec.state == "limited" or (rec.state == "exited" and self.store.resume_history(name).episode is not None),
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

        self._session(name)
        try:
            entry = handoff.begin(self.sup.context(), name, to, brief=brief, force=force)
        except handoff.HandoffRefused as exc:
            self.sup.event("handoff.refused", f"handoff to {to} refused: {exc}", name)
            raise UserError(f"handoff of {name} to {to} refused: {exc}", EXIT_FAIL) from None
        result = {"name": name, "to": to, "journal": entry, "state": "pending"}
        return Stream(f"action-{entry}", result) if wait else result
