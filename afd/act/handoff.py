"""The swap: another agent into the same pane, worktree and branch (seed §4.5) — its intent and how it begins.

`begin` gathers what could refuse the handoff, asks policy
(`afd.decide.policy.handoff_refusal`), gathers the git facts, builds the
brief and commits the intent to the journal — all before anything is
touched. The engine then drives the row through `afd.act.swap`, one short
step a turn, the same way after a restart.

Steps: stop (the pane's remain-on-exit read) → stopping (SIGTERM sent;
SIGKILL after handoff_stop_timeout) → launch (tree confirmed gone) →
starting (target respawned in the pane) → deliver (typed brief) → settled:
the ledger entry, the session record and the journal's outcome in one
transaction. A teardown that cannot be confirmed, or a launch that fails,
rolls back: the old agent is restarted with its resume args if it had stopped.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from afd.act import Observe, Tell, preflight, runner
from afd.act.context import ActionContext
from afd.act.intent import to_row
from afd.act.launch import Launch, account_env, launch_argv, on_account
from afd.decide import plan, policy
from afd.decide.brief import BriefInput, build_brief
from afd.errors import AfdError
from afd.judge import sessions, witness
from afd.model import LIMITED_STATES, AgentSpec, PromptDelivery, SessionState
from afd.record.ledger import who
from afd.record.types import LedgerEntry, LimitState, SessionRecord
from afd.world import git, tmux

ACTION = "handoff"


class HandoffRefused(AfdError):
    """The handoff may not start; the message is one line for the user, nothing was touched."""


class SwapStep(enum.StrEnum):
    STOP = "stop"  # committed; the pane's remain-on-exit is read and kept
    STOPPING = "stopping"  # SIGTERM sent to the old agent's group (SIGKILL after handoff_stop_timeout)
    LAUNCH = "launch"  # the old tree is confirmed gone
    STARTING = "starting"  # the target was respawned in the pane; waiting for its screen
    DELIVER = "deliver"  # the target is ready; the brief is pasted into it
    SUBMIT = "submit"  # the brief is pasted; Enter once it shows


@dataclass(frozen=True, slots=True)
class GitAt:
    """Where the branch stood when the swap was decided: the ledger's anchor."""

    branch: str | None = None
    head_sha: str = ""
    base_sha: str = ""
    commits: int = 0
    dirty_files: int = 0


@dataclass(frozen=True, slots=True)
class HandoffIntent:
    """A swap's journal row, typed."""

    pane: str = ""
    cwd: str = ""
    outgoing: str | None = None
    target: str = ""  # the agent started in the pane
    # The accounts on each side: the one the outgoing agent ran on, the one the target starts on.
    outgoing_account: str | None = None
    target_account: str | None = None
    automatic: bool = False
    reason: str = "manual"
    forced: bool = False
    unverified: bool = False  # the target's limit state was unknown, not known available
    hand_back: bool = False  # the target worked here before: started with its resume args
    turn_end: str = ""  # how the outgoing agent's turn was established to be over
    git: GitAt = GitAt()
    brief: str = ""
    delivery: PromptDelivery = PromptDelivery.ARGUMENT
    argv: tuple[str, ...] = ()
    old_argv: tuple[str, ...] = ()
    client_path: str | None = None
    old_pid: int | None = None
    old_started: float | None = None
    prior_state: str = SessionState.IDLE
    # Progress, written step by step.
    step: SwapStep = SwapStep.STOP
    step_at: datetime | None = None
    run: str | None = None
    effect_error: str | None = None  # the last step's effect failed, and why
    remain_saved: bool = False  # remain-on-exit was read (and is put back when the swap ends)
    remain_on_exit: str | None = None
    term_at: datetime | None = None
    kill_at: datetime | None = None
    pgid: int | None = None
    tree: tuple[tuple[int, float], ...] = ()
    detached: tuple[tuple[int, float], ...] = ()
    stopped_at: datetime | None = None
    launched_at: datetime | None = None
    new_pid: int | None = None
    new_started: float | None = None
    delivering: bool = False
    pasted_at: datetime | None = None
    submitted: bool = False


def _inside(cwd: str, root: str) -> bool:
    try:
        return Path(cwd).resolve().is_relative_to(Path(root).resolve())
    except (OSError, ValueError):
        return False


def _turn_ended(rec: SessionRecord) -> tuple[bool, str]:
    """Whether the outgoing agent's turn is over, and how that was established (for the journal)."""
    if rec.state in LIMITED_STATES:
        return True, "its usage-limit wall was on screen and the pane unchanged over the stability polls"
    if rec.state == SessionState.IDLE:
        return True, "its pane was unchanged between polls with no banner (idle at its prompt)"
    return False, f"its pane was {rec.state} at the last poll"


def _pending_action(ctx: ActionContext, session: str) -> str | None:
    for entry in ctx.store.pending_journal():
        if entry.session == session and entry.action != "create":
            return entry.action
    return None


@dataclass(frozen=True, slots=True)
class Gathered:
    """What a handoff of one session to one target is judged on, and what the swap then uses."""

    facts: policy.HandoffFacts
    pane: tmux.PaneInfo | None
    worktree: str
    spec: AgentSpec | None
    client_path: str | None
    resolved: str | None  # the target's command on the pane's PATH
    ledger: list[LedgerEntry]
    outgoing: AgentSpec | None
    turn_end: str  # how the outgoing agent's turn was established to be over (for the journal)


def target_agent(ctx: ActionContext, target: str) -> str | None:
    """The agent a handoff target names: an agent (its default account) or a configured account's agent."""
    account = ctx.config.accounts.get(target)
    if account is not None:
        return account.agent
    return target if target in ctx.plugins.agents else None


def same_account(entry: LedgerEntry, agent: str, account: str) -> bool:
    """Whether the ledger entry's outgoing side ran `agent` on `account` (an entry from before accounts: its default)."""
    return entry.from_agent == agent and (entry.from_account or entry.from_agent) == account


def gather(ctx: ActionContext, rec: SessionRecord, target: str) -> Gathered:
    """The facts `policy.handoff_refusal` judges a handoff of `rec` to `target` on; nothing is written.

    `target` names an account (an agent's name is its default account).
    `begin` and the dashboard's target picker both ask this, so the picker
    never offers a target the handoff itself would refuse.
    """
    store, config, agents = ctx.store, ctx.config, ctx.plugins.agents
    agent = target_agent(ctx, target)
    name = rec.name
    inv = tmux.list_panes(ctx.server)
    # A record that never saw its server cannot prove the pane id is still its pane.
    pane = inv.pane(rec.pane_id, rec.server_pid) if inv.server_running and rec.server_pid is not None else None
    present = None if not inv.answered else pane is not None
    worktree = rec.worktree or (pane.cwd if pane and pane.cwd else "")
    spec = agents.get(agent) if agent else None
    client_path = preflight.pane_path(pane.pane_pid) if pane else None
    first = launch_argv(spec, config.agents.get(spec.name), Launch.FIRST) if spec else ()
    resolved = preflight.resolve(first, client_path) if pane and spec else None
    is_tree = bool(worktree) and git.is_work_tree(Path(worktree))
    ledger = store.ledger(name)
    outgoing = agents.get(rec.agent) if rec.agent else None
    ended, how = _turn_ended(rec)
    facts = policy.HandoffFacts(
        session_state=rec.state,
        outgoing=rec.agent,
        identity=rec.identity,
        identity_source=rec.identity_source,
        mission=rec.mission,
        pane_present=present,
        action_in_progress=_pending_action(ctx, name) or (rec.state if rec.state == SessionState.HANDING_OFF else None),
        is_work_tree=is_tree,
        cwd_inside_worktree=bool(pane and pane.cwd and worktree and _inside(pane.cwd, worktree)),
        handoffs_at=tuple(e.at for e in ledger),
        target_known=spec is not None,
        target_command=resolved,
        target_fact=store.limit_map().get(target),
        now=ctx.clock(),
        max_per_session=config.handoff_max_per_session,
        # Only an agent whose turn outlives its pane (its work goes on in a daemon) must be between turns.
        turn_ended=ended or not (outgoing is not None and outgoing.turn_outlives_pane),
        account=rec.account,
        target_agent=agent,
        witnessed=witness.handoff_witnessed(
            rec.witnesses, rec.agent is not None and ctx.plugins.has_witness(rec.agent), config.handoff_requires_witness
        ),
    )
    return Gathered(facts, pane, worktree, spec, client_path, resolved, ledger, outgoing, how)


def begin(
    ctx: ActionContext,
    name: str,
    target: str,
    *,
    brief: str | None = None,
    force: bool = False,
    automatic: bool = False,
    jobs: Sequence[str] = (),
    reason: str | None = None,
    before_wall: bool = False,
) -> int:
    """Check, gather, build the brief and journal the intent; returns the journal entry id.

    `jobs` is what the brief says of the jobs the session supervises (they stay with it), one line each.
    `before_wall`: an automatic handoff at the turn boundary before the wall (`handoff_before`), whose
    evidence is the account's exact, fresh usage figure: the record witness, which speaks of walls, does
    not apply. `reason` then says why ("approaching limit (96 % of the 5-hour window, resets 15:02)").
    """
    store, config = ctx.store, ctx.config
    rec = store.get_session(name)
    if rec is None:
        raise HandoffRefused(f"no session named {name!r}")
    seen = gather(ctx, rec, target)
    facts, pane, worktree, spec, client_path, resolved, ledger, outgoing, how = (
        seen.facts, seen.pane, seen.worktree, seen.spec, seen.client_path, seen.resolved, seen.ledger, seen.outgoing,
        seen.turn_end,
    )
    if before_wall:
        facts = replace(facts, witnessed=True)
    why = policy.handoff_refusal(facts, target, brief=brief, force=force, automatic=automatic)
    if why is not None:
        raise HandoffRefused(why)
    assert pane is not None and pane.cwd is not None and spec is not None and resolved is not None  # refused otherwise

    recorded_base = ledger[0].base_sha if ledger else None
    try:
        facts_git = git.handoff_facts(Path(worktree), recorded_base)
    except git.GitError as exc:
        raise HandoffRefused(str(exc)) from None
    reason = reason or ("usage limit" if automatic or rec.state in LIMITED_STATES else "manual")
    agent = spec.name
    account = target  # the name given is the account's (an agent's name: its default account)
    # Hand-back: this agent, on this account, worked here before; it keeps its own conversation per directory.
    last_turn = next((e for e in reversed(ledger) if same_account(e, agent, account)), None)
    since = None
    if last_turn is not None and git.is_ancestor(Path(worktree), last_turn.head_sha, facts_git.head_sha):
        since = last_turn.head_sha
    previous = rec.agent or "unknown"
    if rec.agent and rec.account not in (None, rec.agent):
        previous += f", on account {rec.account}"
    text = build_brief(
        BriefInput(
            previous_agent=previous,
            reason=reason,
            goal=(brief or "").strip() or rec.mission or "",
            git=facts_git,
            extra=config.handoff_brief,
            since_sha=since,
            since_commits=git.count_commits(Path(worktree), f"{since}..{facts_git.head_sha}") if since else 0,
            jobs=tuple(jobs),
        )
    )
    how_launched = Launch.RESUME if last_turn is not None else Launch.FIRST
    argv = (resolved, *launch_argv(spec, config.agents.get(agent), how_launched, prompt=text)[1:])
    argv = on_account(argv, spec, account_env(config, spec, account))
    old_argv: tuple[str, ...] = ()
    if outgoing is not None:
        old_argv = launch_argv(outgoing, config.agents.get(outgoing.name), Launch.RESUME)
        old_argv = (preflight.resolve(old_argv, client_path) or old_argv[0], *old_argv[1:])
        # A rollback restarts it on the account it ran on, whatever the pane's environment says.
        old_argv = on_account(old_argv, outgoing, account_env(config, outgoing, rec.account))
    unverified = facts.target_fact is None or facts.target_fact.state is not LimitState.AVAILABLE
    intent = HandoffIntent(
        pane=rec.pane_id,
        cwd=pane.cwd,
        outgoing=rec.agent,
        target=agent,
        outgoing_account=rec.account,
        target_account=account,
        automatic=automatic,
        reason=reason,
        forced=force,
        unverified=unverified,
        hand_back=last_turn is not None,
        turn_end=how,
        git=GitAt(facts_git.branch, facts_git.head_sha, facts_git.base_sha, facts_git.commits, facts_git.dirty_files),
        brief=text,
        delivery=spec.prompt_delivery,
        argv=argv,
        old_argv=old_argv,
        client_path=client_path,
        old_pid=rec.agent_pid,
        old_started=rec.agent_started_at,
        prior_state=rec.state,
        step_at=ctx.clock(),
    )
    shown = plan.of(policy.Handoff(target, unverified, why=f"handing off to {target}"), max_attempts=0)
    assert shown is not None  # a handoff always shows its target
    how_chosen = " (unverified: its limit state is unknown)" if unverified else ""
    started = Tell(
        "handoff.started",
        f"handing off from {who(rec.agent, rec.account)} to {who(agent, account)}{how_chosen} at {facts_git.head_sha[:12]}"
        f" ({'automatic' if automatic else 'asked by the user'}; {rec.agent}'s turn had ended: {how})"
        + (f"; {reason}" if before_wall else ""),
    )
    # The row and the session's handing_off are one commit: a poll in between must not judge a pane the swap owns.
    entry = runner.begin(ctx, name, ACTION, to_row(intent), records=(Observe(sessions.HandoffBegun(shown)),))
    runner.tell(ctx, name, (replace(started, data={"journal": entry}),))
    return entry
