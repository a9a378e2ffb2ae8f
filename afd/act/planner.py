"""Starting the actions policy asks for: a resume on the wait path, an automatic handoff once per wall.

The shell around `afd.decide.policy`: it gathers the stored facts (the
resume history, what was tried for this wall, the limit map), asks policy,
has what policy decided written (the plan status shows, through the sessions
rulebook; what was tried) and begins the action through its executor. What was tried for a wall is stored
with the session's resume history, so a restart between trying and
deciding does not try again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from afd.act import Observe, SaveHistory, Tell, handoff, resume, runner
from afd.act.context import ActionContext
from afd.decide import before_wall, headroom, nextaction, plan, policy
from afd.judge import screen, sessions
from afd.judge.sessions import after_continuation
from afd.kit.resettime import local_zone
from afd.model import LIMITED_STATES, Clock, SessionState
from afd.record.ledger import who
from afd.record.types import NO_HISTORY, LimitState, Pause, PlanKind, ResumeHistory, SessionRecord, Witnesses

log = logging.getLogger("afd.actions")



@dataclass(frozen=True, slots=True)
class Handoffs:
    """What the handoff policy needs besides the store: asked for by `afd run`'s turn, never by `run --once`."""

    figures: object  # the accounts' usage figures (afd.judge.usage.UsageFigures): targets ranked by headroom
    jobs_of: Callable[[str], Sequence[str]] = lambda name: ()  # what a session's brief says of its jobs
    alerts_given: set[str] = field(default_factory=set)  # handoffs before the wall already given, by key
    mark: Callable[[str], None] = lambda key: None  # records one given


def plan_turn(ctx: ActionContext, live: Iterable[str], watches: Mapping, now: datetime, *,
              hold: Callable[[Mapping[str, SessionRecord], set[str]], bool] | None = None,
              handoffs: Handoffs | None = None) -> None:
    """The plan stage, after the engine's turn: held prompts, the wait path, then the handoffs, in one place.

    Every plan reads one view of the store taken after the engine's turn, never the records bound
    before it: a continuation the engine saw the agent take this turn has ended its episode, whatever
    the poll's earlier look at the pane said (DESIGN "Acting on a limit"). Each plan writes only its
    own session's record and history, and what it began or recorded is carried in the view, so the
    handoffs see the episode the wait path recorded and skip a session it resumed. `hold`: the held
    prompts' hand-over (afd/jobs/held.py), given the live records and the busy sessions; True when
    prompts are held (the view is then read again, as a delivery may have begun).
    """
    live = list(live)
    busy = {e.session for e in ctx.store.pending_journal()}
    records = {r.name: r for r in ctx.store.list_sessions()}
    # Held prompts first: one due at this reset goes in with the resume, in one paste.
    if hold is not None and hold({n: records[n] for n in live if n in records}, busy):
        busy = {e.session for e in ctx.store.pending_journal()}
        records = {r.name: r for r in ctx.store.list_sessions()}
    histories = dict(ctx.store.resume_histories())
    for name in live:
        rec = records.get(name)
        if rec is not None and name not in busy:
            histories[name], began = plan_wait(ctx, rec, watches.get(name), now, stored=histories.get(name, NO_HISTORY))
            if began:
                busy.add(name)
    if handoffs is None:
        return
    start_handoffs(ctx, busy, handoffs.jobs_of, handoffs.figures, records=records.values(), histories=histories)
    start_handoffs_before_the_wall(ctx, busy, handoffs.figures, handoffs.alerts_given, handoffs.mark, watches,
                                   records=records.values())


def native_armed(ctx: ActionContext, rec: SessionRecord, watch, now: datetime) -> bool:
    """Whether the agent's own auto-continue is armed at the wall it stands at (Claude Code's)."""
    limit = limit_of(ctx, rec, watch, now)
    return limit is not None and limit.native is screen.Native.ARMED


def limit_of(ctx: ActionContext, rec: SessionRecord, watch, now: datetime) -> policy.Limit | None:
    """The limit the session stands at this poll, from the gates' verdict and the pane's last capture."""
    if rec.state == SessionState.EXITED:
        history = ctx.store.resume_history(rec.name)
        if history.episode is None or history.first_seen_at is None or not after_continuation(rec, history.first_seen_at):
            return None
        # The agent exited at its limit: the wall is still the one it stood at.
        # What its banner said beside the reset is not kept, so it is waited
        # out like a plan window (the retry interval when no reset was read).
        return policy.Limit(
            kind="exited", episode=history.episode, first_seen_at=history.first_seen_at, reset_at=history.reset_at,
            reset_unstated=True,
        )
    if rec.state not in LIMITED_STATES or rec.banner_first_seen_at is None:
        return None
    if not after_continuation(rec, rec.banner_first_seen_at):
        # The wall a continuation the agent took answered: its episode is over. Only a wall
        # drawn after it (a new appearance, or a re-limit) is planned for.
        return None
    if rec.witnesses is Witnesses.RECORD:
        # The agent's own records say it is walled; its pane shows no wall to read or answer.
        return policy.Limit(
            kind="record", episode=f"record@{rec.banner_first_seen_at.isoformat()}", first_seen_at=rec.banner_first_seen_at,
            reset_at=rec.reset_at, reset_unstated=rec.reset_at is None, on_screen=False,
        )
    found = watch.detections[-1] if watch is not None and watch.detections else None
    if found is None:
        return None
    spec = ctx.plugins.agents.get(rec.agent) if rec.agent else None
    native, native_at = screen.native_continue(spec, watch.captures[-1], Clock(now=now, local_zone=local_zone()))
    if spec is not None and found.kind in spec.self_continuing_kinds:
        native, native_at = screen.Native.ARMED, rec.reset_at  # the agent retries at its reset by itself
    return policy.Limit(
        kind=found.kind,
        episode=f"{rec.last_banner}@{rec.banner_first_seen_at.isoformat()}",
        first_seen_at=rec.banner_first_seen_at,
        reset_at=rec.reset_at,
        native=native,
        native_at=(rec.reset_at or native_at) if native is screen.Native.ARMED else None,
        reset_unstated=found.reset_unstated,
        offers_other_model=found.offers_other_model,
    )


def path_of(ctx: ActionContext, rec: SessionRecord, history: policy.ResumeHistory, limit: policy.Limit | None) -> policy.Path:
    config = ctx.config
    tried = policy.tried_for(history, policy.wall_key(rec.banner_first_seen_at, rec.witnesses))
    return policy.limit_path(limit_action=config.limit_action, handoff_order=config.handoff_order, state=rec.state, tried=tried,
                             cancelled=policy.is_cancelled(history, limit))


def pause_of(ctx: ActionContext, name: str, now: datetime) -> Pause | None:
    """The session's pause while it holds (an ended one is ended by `end_pauses`, on the next poll)."""
    pause = ctx.store.pauses().get(name)
    return pause if pause is not None and policy.pause_in_force(pause.until, now) else None


def plan_wait(ctx: ActionContext, rec: SessionRecord, watch, now: datetime, *,
              stored: ResumeHistory | None = None) -> tuple[ResumeHistory, bool]:
    """The wait path for one session this poll: history observed, then resume now, schedule, or report.

    Returns the session's resume history as it stands after the plan, and whether a resume began.

    `rec` is the session's record as stored after the engine's turn (never one bound before it): a
    plan is made from values that include everything the engine has done, at any tempo of the loop.
    `stored`: the session's resume history as stored now, when the caller read every session's at once.
    """
    cfg = ctx.config
    name = rec.name
    limit = limit_of(ctx, rec, watch, now)
    before = stored if stored is not None else ctx.store.resume_history(name)
    history = policy.observe(before, limit, now=now)
    if history != before:
        ctx.store.save_resume_history(name, history)
    elif limit is None and rec.next_action is None:
        return history, False  # most sessions, most polls: no wall, nothing remembered to move on, no plan shown to clear
    decision = policy.decide_limit(
        name, limit, history, path_of(ctx, rec, history, limit),
        tried=policy.tried_for(history, policy.wall_key(rec.banner_first_seen_at, rec.witnesses)),
        pause=pause_of(ctx, name, now),
        auto_resume=cfg.limit_auto_resume,
        resume_grace=cfg.resume_grace,
        retry_interval=cfg.limit_retry_interval,
        max_attempts=cfg.resume_max_attempts,
        now=now,
    )
    if decision is None:
        return history, False  # the handoff path has the wall (`start_handoffs` tries it next, in `plan_turn`), or there is none
    if isinstance(decision, policy.ResumeNow) and (cfg.cold_cache_tokens > 0 or cfg.spend_warn_at is not None):
        costly = wake_cost(ctx, rec, now)
        if costly is not None:
            decision = policy.NeedsHuman(f"a resume now costs more than it is worth: {costly}; `afd resume {name}` "
                                         "resumes anyway")
    shown = plan.of(decision, max_attempts=cfg.resume_max_attempts, agent=rec.agent)
    old = rec.next_action
    if isinstance(decision, policy.NeedsHuman) and (old is None or old.action is not PlanKind.NEEDS_HUMAN):
        ctx.event("session.needs_human", f"needs you: {decision.why}", name, why=decision.why)
    if _waits_for_you(decision) and (old is None or (old.action, old.reason) != (PlanKind.REPORT, decision.why)):
        # The wall is left to a person: told once a wall and reason, as the plan stored says.
        assert isinstance(decision, policy.Nothing) and decision.next_action is not None
        at = shown.as_json().get("at") if shown is not None else None
        ctx.event("session.waiting", f"afd will not act on this wall; it waits for you: {decision.next_action}", name,
                  why=decision.why, next=decision.next_action, reset_at=at)
    if isinstance(decision, policy.ResumeAt) and (old is None or old.at != (shown.at if shown else None)):
        shown_json = shown.as_json() if shown else None
        ctx.event("resume.scheduled", f"{nextaction.words(shown_json)} (attempt {decision.attempt} of {cfg.resume_max_attempts})",
                  name, at=(shown_json or {}).get("at"), attempt=decision.attempt, why=decision.why)
    if isinstance(decision, policy.ResumeNow):
        resume.begin(ctx, rec, attempt=decision.attempt, why=decision.why, episode=limit.episode if limit else None)
        return history, True
    if old != shown:
        _commit(ctx, name, (Observe(sessions.Planned(shown)),))  # the rulebook writes it only where it changed
    return history, False


def choose_target(ctx: ActionContext, outgoing: str | None, facts, figures) -> policy.Handoff | policy.Park:
    """The account a handoff goes to: `handoff_order` ranked as `handoff_rank` says, with the usage figures (None: none)."""
    config = ctx.config
    ranked = headroom.rank_targets(config.handoff_order, outgoing, facts, figures, config.handoff_rank)
    if not ranked:
        park = policy.choose_target(config.handoff_order, outgoing, facts)
        # Every account limited, or the rest with a window used up by their exact figures.
        return park if isinstance(park, policy.Park) else policy.Park(all_limited=True, until=None, why="all agents limited")
    to, room = ranked[0]
    fact = facts.get(to)
    state = fact.state.value if fact is not None else "unknown"
    how = f"{room:g} % headroom" if room is not None else state
    why = f"{'most headroom' if config.handoff_rank == 'headroom' else 'first in handoff_order'} not limited ({how})"
    return policy.Handoff(to, unverified=fact is None or fact.state is not LimitState.AVAILABLE, why=why)


def wake_cost(ctx: ActionContext, rec: SessionRecord, now: datetime, figures=None) -> str | None:
    """Why waking this session now (a resume, a handoff's continuation) costs more than it is worth, or None.

    The session's prompt cache is the newest its account's status line reported for the session's
    directory; the spend window is the account's, by exact figures.
    """
    from afd.judge import usage
    from afd.record.usage_book import UsageBook

    cfg = ctx.config
    account = rec.account or rec.agent
    book = UsageBook(ctx.store)
    cache = None
    if cfg.cold_cache_tokens > 0 and account:
        mine = [c for c in book.prompt_caches(account) if c.cwd and rec.worktree and c.cwd == rec.worktree]
        if mine:
            cache = before_wall.PromptCacheState(mine[0].warm, mine[0].expires_at, mine[0].recache_tokens)
    if figures is None and cfg.spend_warn_at is not None:
        figures = usage.figures(book.inputs(now), [], now, stale_after=cfg.usage_stale_after)
    return before_wall.wake_cost(cache=cache, cold_cache_tokens=cfg.cold_cache_tokens, figures=figures, account=account,
                                 spend_warn_at=cfg.spend_warn_at, now=now)


def _waits_for_you(decision: policy.Decision) -> bool:
    return isinstance(decision, policy.Nothing) and decision.next_action is not None and decision.why in policy.WAITS_FOR_YOU


def start_handoffs(ctx: ActionContext, busy: set[str], jobs_of: Callable[[str], Sequence[str]] = lambda name: (),
                   figures=None, *, records: Iterable[SessionRecord] | None = None,
                   histories: Mapping[str, ResumeHistory] | None = None) -> None:
    """Hand off each newly limited session, once per wall, when the config says so; `busy`: sessions with an action.

    `jobs_of` gives what a session's brief says of the jobs it supervises; `figures`: the accounts' usage
    figures (afd.judge.usage), which rank the targets by headroom. `records` and `histories`: the plan's
    view of the store (read from it when not given). A session handed off is added to `busy`.
    """
    config = ctx.config
    now = ctx.clock()
    for rec in (ctx.store.list_sessions() if records is None else records):
        if rec.name in busy:
            continue
        history = ctx.store.resume_history(rec.name) if histories is None else histories.get(rec.name, NO_HISTORY)
        # A cancel is for an episode, which the poll's plan has recorded in the history by now.
        cancelled = history.cancelled is not None and history.cancelled == history.episode
        if cancelled or path_of(ctx, rec, history, None) is not policy.Path.HANDOFF or pause_of(ctx, rec.name, now) is not None:
            continue
        wall = policy.wall_key(rec.banner_first_seen_at, rec.witnesses)
        # The account it runs on is the one skipped (a record from before accounts: the agent's default).
        outgoing = rec.account or rec.agent
        choice = choose_target(ctx, outgoing, ctx.store.limit_map(), figures)
        if isinstance(choice, policy.Park):
            _all_limited(ctx, rec, choice, policy.tried(history, wall, policy.HandoffTry.DECLINED))
            continue
        # The incoming agent starts with a cold cache anyway: what is asked about is the spend window of the
        # account it would spend.
        costly = before_wall.wake_cost(cache=None, cold_cache_tokens=0, figures=figures, account=choice.to,
                                       spend_warn_at=ctx.config.spend_warn_at, now=ctx.clock())
        if costly is not None:
            ctx.store.save_resume_history(rec.name, policy.tried(history, wall, policy.HandoffTry.DECLINED))
            ctx.event("session.needs_human", f"needs you: a handoff now costs more than it is worth: {costly}; "
                                             f"`afd handoff {rec.name} --to {choice.to}` hands off anyway", rec.name,
                      why=costly)
            continue
        try:
            handoff.begin(ctx, rec.name, choice.to, automatic=True, jobs=jobs_of(rec.name))
            busy.add(rec.name)
        except handoff.HandoffRefused as exc:
            ctx.store.save_resume_history(rec.name, policy.tried(ctx.store.resume_history(rec.name), wall, policy.HandoffTry.DECLINED))
            after = policy.after_declined(rec.name, auto_resume=config.limit_auto_resume)
            ctx.event("handoff.refused", f"no automatic handoff to {choice.to}: {exc}; the wait path applies", rec.name,
                      to=choice.to, why=str(exc), next=after)
        else:
            ctx.store.save_resume_history(rec.name, policy.tried(ctx.store.resume_history(rec.name), wall, policy.HandoffTry.STARTED))


def turn_ended(ctx: ActionContext, rec: SessionRecord, watch) -> bool:
    """Whether the session's agent is at its prompt between turns: its pane at rest, no busy marker in its tail."""
    if watch is None or watch.moving or len(watch.captures) < 2 or rec.agent is None:
        return False
    spec = ctx.plugins.agents.get(rec.agent)
    if spec is None:
        return False
    return not sessions.seen_busy(watch.captures[-1], spec.busy, spec.chrome, ctx.config.tail_lines)


def start_handoffs_before_the_wall(ctx: ActionContext, busy: set[str], figures, done: set[str], mark, watches, *,
                                   records: Iterable[SessionRecord] | None = None) -> None:
    """`handoff_before`: hand off a session whose turn has ended while its account's window is nearly full.

    Once per account, window and reset (`done` holds the keys given; `mark` records one, in the
    store's transaction with the handoff's journal row, so a crash between them cannot start two).
    """
    config = ctx.config
    if config.handoff_before is None or figures is None or not config.handoff_order:
        return
    now = ctx.clock()
    for rec in (ctx.store.list_sessions() if records is None else records):
        if rec.name in busy or pause_of(ctx, rec.name, now) is not None:
            continue
        found = before_wall.handoff_before(state=rec.state, turn_ended=turn_ended(ctx, rec, watches.get(rec.name)),
                                           account=rec.account, figures=figures,
                                           threshold=config.handoff_before, min_wait=config.handoff_before_min_wait,
                                           now=now, done=done, zone=local_zone())
        if found is None:
            continue
        done.add(found.key)
        choice = choose_target(ctx, rec.account or rec.agent, ctx.store.limit_map(), figures)
        if isinstance(choice, policy.Park):
            mark(found.key)
            ctx.event("handoff.refused", f"no handoff before the wall, {found.reason}: every account of handoff_order is "
                                         "limited or used up; it works on until its wall", rec.name)
            continue
        try:
            with ctx.store.transaction():
                mark(found.key)
                handoff.begin(ctx, rec.name, choice.to, automatic=True, reason=found.reason, before_wall=True)
            busy.add(rec.name)
        except handoff.HandoffRefused as exc:
            mark(found.key)
            ctx.event("handoff.refused", f"no handoff before the wall to {choice.to}, {found.reason}: {exc}", rec.name)


def _all_limited(ctx: ActionContext, rec: SessionRecord, park: policy.Park, tried: ResumeHistory) -> None:
    when = park.until.strftime("%Y-%m-%dT%H:%M:%SZ") if park.until else "no reset time stated"
    shown = plan.of(park, max_attempts=ctx.config.resume_max_attempts, agent=rec.agent)
    assert shown is not None  # a park always shows until when
    said = Tell(
        "session.all_limited",
        f"all agents limited (every account of handoff_order: {', '.join(ctx.config.handoff_order)}); earliest reset {when}; "
        f"{who(rec.agent, rec.account)} waits for its reset, no round-robin",
        data={"earliest_reset": when, "next": policy.after_declined(rec.name, auto_resume=ctx.config.limit_auto_resume)},
    )
    _commit(ctx, rec.name, (SaveHistory(tried), Observe(sessions.AllLimited(shown)), said))


def _commit(ctx: ActionContext, name: str, records) -> None:
    """What the planner decided, written through the engine's commit (the sessions rulebook writes the session)."""
    with ctx.store.transaction():
        told = runner.commit(ctx, name, records)
    runner.tell(ctx, name, told)


def end_pauses(ctx: ActionContext, now: datetime) -> None:
    """End each pause whose time is up: afd may act on the session again from this poll on."""
    for name, pause in ctx.store.pauses().items():
        if not policy.pause_in_force(pause.until, now):
            ctx.store.delete_pause(name)
            ctx.event("session.unpaused", "the pause ended; afd acts on this session again as configured", name)
