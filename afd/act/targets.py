"""Which agents a session could be handed to now, and for each other agent why not.

The dashboard's "hand off to…" picker asks this before the user chooses. It
gathers the same facts `handoff.begin` gathers and asks the same pure
`policy.handoff_refusal`, so the picker never offers a target the handoff
itself would refuse, nor hides one it would take. Nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from afd.act import handoff, preflight
from afd.decide import policy
from afd.judge import witness
from afd.model import SessionState
from afd.world import git, tmux


@dataclass(frozen=True, slots=True)
class Target:
    agent: str
    eligible: bool
    why: str | None  # the one-line refusal when not eligible
    # Eligible with --force (the target is at its usage limit and nothing else stands in the way).
    forceable: bool

    def as_json(self) -> dict:
        return {"agent": self.agent, "eligible": self.eligible, "why": self.why, "forceable": self.forceable}


@dataclass(frozen=True, slots=True)
class Targets:
    session: str
    agent: str | None  # the one running there now
    brief_required: bool  # the session has no mission: a handoff needs a brief
    targets: tuple[Target, ...]

    def as_json(self) -> dict:
        return {"session": self.session, "agent": self.agent, "brief_required": self.brief_required,
                "targets": [t.as_json() for t in self.targets]}


def targets_of(sup, name: str) -> Targets | None:
    """Every agent a plugin provides, eligible or not for a prompted handoff of `name`; None: no such session."""
    rec = sup.store.get_session(name)
    if rec is None:
        return None
    inv = tmux.list_panes(sup.server)
    pane = None
    if inv.answered and inv.server_running:
        pane = next((p for p in inv.panes if p.pane_id == rec.pane_id and inv.server_pid == rec.server_pid), None)
    worktree = rec.worktree or (pane.cwd if pane and pane.cwd else "")
    client_path = preflight.pane_path(pane.pane_pid) if pane else None
    is_tree = bool(worktree) and git.is_work_tree(Path(worktree))
    ledger = sup.store.ledger(name)
    ended, _ = handoff._turn_ended(rec)
    limits = sup.store.load_limits()
    brief_required = not (rec.mission or "").strip()
    # The picker asks for a brief when the mission is empty; judge the rest as if it were given.
    brief = "(the brief typed in the picker)" if brief_required else None
    found = []
    for agent in sorted(sup.plugins.agents):
        facts = policy.HandoffFacts(
            session_state=rec.state,
            outgoing=rec.agent,
            identity=rec.identity,
            identity_source=rec.identity_source,
            mission=rec.mission,
            pane_present=None if not inv.answered else pane is not None,
            action_in_progress=handoff._pending_action(sup, name) or (rec.state if rec.state == SessionState.HANDING_OFF else None),
            is_work_tree=is_tree,
            cwd_inside_worktree=bool(pane and pane.cwd and worktree and handoff._inside(pane.cwd, worktree)),
            handoffs_at=tuple(e.at for e in ledger),
            target_known=True,
            target_command=preflight.resolve(handoff.launch_argv(sup, agent, resume=False), client_path) if pane else None,
            target_fact=limits.get(agent),
            now=sup.clock(),
            max_per_session=sup.config.handoff_max_per_session,
            turn_ended=ended or rec.agent != "codex",
            witnessed=witness.handoff_witnessed(
                rec.witnesses, bool(rec.agent) and sup.plugins.has_witness(rec.agent), sup.config.handoff_requires_witness
            ),
        )
        why = policy.handoff_refusal(facts, agent, brief=brief, force=False, automatic=False)
        forced = why is not None and policy.handoff_refusal(facts, agent, brief=brief, force=True, automatic=False) is None
        found.append(Target(agent, why is None, why, forced))
    return Targets(name, rec.agent, brief_required, tuple(found))
