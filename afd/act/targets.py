"""Which agents and accounts a session could be handed to now, and for each other one why not.

The dashboard's "hand off to…" picker asks this before the user chooses. It
gathers the same facts `handoff.begin` gathers and asks the same pure
`policy.handoff_refusal`, so the picker never offers a target the handoff
itself would refuse, nor hides one it would take. Nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass

from afd.act import handoff
from afd.act.context import ActionContext
from afd.decide import policy


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


def targets_of(ctx: ActionContext, name: str) -> Targets | None:
    """Every agent a plugin provides and every configured account, eligible or not for a prompted handoff of `name`.

    None: no such session. An agent's name stands for its default account.
    """
    rec = ctx.store.get_session(name)
    if rec is None:
        return None
    brief_required = not (rec.mission or "").strip()
    # The picker asks for a brief when the mission is empty; judge the rest as if it were given.
    brief = "(the brief typed in the picker)" if brief_required else None
    found = []
    for agent in [*sorted(ctx.plugins.agents), *ctx.config.accounts]:
        facts = handoff.gather(ctx, rec, agent).facts
        why = policy.handoff_refusal(facts, agent, brief=brief, force=False, automatic=False)
        forced = why is not None and policy.handoff_refusal(facts, agent, brief=brief, force=True, automatic=False) is None
        found.append(Target(agent, why is None, why, forced))
    return Targets(name, rec.agent, brief_required, tuple(found))
