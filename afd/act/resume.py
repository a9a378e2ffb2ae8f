"""The resume executor: `scheduled → menu_answered → text_pasted → submitted → confirmed | failed`.

`decide` is pure: the journal intent (its step, when it was recorded, the
text) and the pane as it is now give the next move. Each step was recorded
before its effect, so each step checks the pane for whether that effect
happened; that is what makes a restart after SIGKILL send exactly one
continuation per episode (the pasted text still in the input row gets its
Enter; a submitted one that the agent took is settled; nothing is pasted
twice into a row that shows it).

A dead agent (the pane shows its shell, or a dead pane kept by
`remain-on-exit`) is started again with its resume args first — never on an
unknown answer about its processes, never while one of them lives.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from afd.act import Finish, Go, Key, Liveness, Move, PaneView, Paste, Respawn, Result, Wait, deliver
from afd.act.intent import from_row, stored
from afd.act.launch import bare
from afd.judge import screen
from afd.world.tmux import Presence

ACTION = "resume"


class ResumeStep(enum.StrEnum):
    SCHEDULED = "scheduled"  # the intent is committed; nothing has touched the pane
    RESPAWNED = "respawned"  # the agent had exited: started again with its resume args
    MENU_ANSWERED = "menu_answered"  # the agent's limit menu was answered ("Stop and wait", "Keep current model")
    TEXT_PASTED = "text_pasted"  # the continuation was pasted (no Enter yet)
    SUBMITTED = "submitted"  # Enter was pressed on it


STEPS = tuple(ResumeStep)


@dataclass(frozen=True, slots=True)
class ResumeIntent:
    """A resume's journal row, typed."""

    text: str = ""
    agent: str | None = None
    pane_id: str | None = None
    cwd: str | None = None
    respawn_argv: tuple[str, ...] | None = None  # how the agent is started again if it has exited
    attempt: int = 1
    episode: str | None = None
    why: str = ""
    manual: bool = False
    step: ResumeStep = ResumeStep.SCHEDULED
    step_at: datetime | None = None
    run: str | None = None  # the run of afd that recorded the step
    enters: int = 1
    submitted_at: datetime | None = None
    repasted: bool = False
    menu: str | None = None
# How long a paste may take to show before afd believes it never arrived.
PASTE_SETTLE = timedelta(seconds=2)
# A second Enter only for text still in the input row this long after the first.
ENTER_SETTLE = timedelta(seconds=1)
MAX_ENTERS = 3


def decide(row: Mapping | ResumeIntent, view: PaneView, now: datetime, settings: Mapping) -> Move:
    """The next move of a resume: its journal row (stored or typed) and the pane as it is now."""
    intent = row if isinstance(row, ResumeIntent) else from_row(ResumeIntent, row)
    if view.presence is Presence.GONE:
        return Finish(Result.ABANDONED, "the pane is gone; nothing more was sent")
    if view.presence is Presence.UNKNOWN:
        return Wait("tmux did not answer about the pane")
    step = intent.step
    step_at = intent.step_at or now
    timeout = timedelta(seconds=float(settings.get("deliver_timeout", 30.0)))
    guard = float(settings.get("typing_guard", 20.0))

    # A step recorded by an earlier run of afd may have stopped before its
    # effect; one recorded by this run had its effect handed to tmux.
    earlier = intent.run != settings.get("run")
    if step is ResumeStep.SUBMITTED:
        return _after_enter(intent, view, now, step_at, timeout, earlier)
    if step is ResumeStep.TEXT_PASTED:
        return _after_paste(intent, view, now, step_at, timeout, guard, earlier)
    if step is ResumeStep.RESPAWNED:
        return _after_respawn(intent, view, now, step_at, timeout, guard)
    return _deliver(intent, view, now, guard)


def _deliver(intent: ResumeIntent, view: PaneView, now: datetime, guard: float) -> Move:
    """From `scheduled` or `menu_answered`: answer a menu, or paste the continuation."""
    if view.dead or view.shell:
        return _respawn(intent, view, now, guard)
    hold = deliver.typing_hold(view, now, guard)
    menu = screen.find_menu(view.rows)
    if menu is not None:
        kind = screen.menu_kind(menu)
        if kind == screen.MenuKind.LIMIT_INCREASE:
            return Finish(Result.NEEDS_HUMAN, "answer the agent's question about requesting a limit increase")
        wanted = {screen.MenuKind.RATE_LIMIT_OPTIONS: screen.STOP_AND_WAIT, screen.MenuKind.SWITCH_MODEL: screen.KEEP_MODEL}.get(kind)
        if wanted is None:
            return Finish(Result.NEEDS_HUMAN, f"a menu afd does not know is open ({menu.title or menu.options[0]})")
        if hold and hold != "your text is in the agent's input row":
            return Wait(hold=hold)
        key = deliver.menu_key(menu, wanted)
        if key is None:
            return Finish(Result.NEEDS_HUMAN, f'choose in the agent\'s menu: it has no "{wanted}" option')
        if key == "Enter":
            return Go(ResumeStep.MENU_ANSWERED, Key("Enter"), stored(menu=wanted))
        return Go(intent.step, Key(key))
    if hold:
        return Wait(hold=hold)
    if screen.reads_composer(view.spec) and screen.composer_text(view.spec, view.rows) is None:
        return Wait("the agent's input row is not on screen")
    return Go(ResumeStep.TEXT_PASTED, Paste(intent.text))


def _respawn(intent: ResumeIntent, view: PaneView, now: datetime, guard: float) -> Move:
    if view.agent_alive is Liveness.UNKNOWN:
        return Wait("cannot tell whether the old agent's processes are gone")
    if view.agent_alive is Liveness.ALIVE:
        return Wait("a process of the old agent still runs")
    argv = intent.respawn_argv
    if not argv or not intent.cwd:
        return Finish(Result.FAILED, "the agent has exited and afd knows no command to resume it")
    if view.in_mode:
        return Wait(hold="the pane is in copy mode (or another tmux mode)")
    if view.client_idle is not None and view.client_idle < guard:
        return Wait(hold="you are typing in this pane")
    return Go(ResumeStep.RESPAWNED, Respawn(intent.cwd, tuple(argv)))


def _after_respawn(intent: ResumeIntent, view: PaneView, now: datetime, step_at: datetime, timeout: timedelta, guard: float) -> Move:
    ready = not view.dead and not view.shell and screen.composer_text(view.spec, view.rows) is not None
    if ready and not screen.busy(view.rows):
        return _deliver(intent, view, now, guard)
    if view.dead and now - step_at > timeout:
        return Finish(Result.FAILED, "the agent started with its resume args exited again")
    if now - step_at > 2 * timeout:
        return Finish(Result.FAILED, "the agent started with its resume args did not become ready")
    return Wait("waiting for the resumed agent to be ready")


def _after_paste(intent: ResumeIntent, view: PaneView, now: datetime, step_at: datetime, timeout: timedelta, guard: float, earlier: bool) -> Move:
    text = intent.text
    if screen.text_seen(text, view.spec, view.rows):
        return Go(ResumeStep.SUBMITTED, Key("Enter"), stored(enters=1, submitted_at=now))
    if now - step_at < PASTE_SETTLE:
        return Wait("waiting for the pasted text to show")
    held = screen.composer_text(view.spec, view.rows)
    if held:
        return Finish(Result.FAILED, "the agent's input row holds other text; nothing was submitted")
    if earlier and held == "" and not intent.repasted and deliver.typing_hold(view, now, guard) is None:
        # Recorded by a run that stopped, perhaps before pasting: the row is empty, so paste it once more.
        return Go(ResumeStep.TEXT_PASTED, Paste(text), stored(repasted=True))
    if now - step_at > timeout:
        return Finish(Result.FAILED, "the pasted text never showed in the agent's input row")
    return Wait("waiting for the pasted text to show")


def _after_enter(intent: ResumeIntent, view: PaneView, now: datetime, step_at: datetime, timeout: timedelta, earlier: bool) -> Move:
    text = intent.text
    sent_at = intent.submitted_at or step_at
    if screen.text_seen(text, view.spec, view.rows):
        enters = intent.enters
        if earlier and now - step_at >= ENTER_SETTLE and enters < MAX_ENTERS:
            # Still in the input row, and the run that recorded the Enter stopped: perhaps before pressing it.
            return Go(ResumeStep.SUBMITTED, Key("Enter"), stored(enters=enters + 1, submitted_at=sent_at))
        if now - sent_at > timeout:
            return Finish(Result.FAILED, "the continuation stayed in the agent's input row; Enter did not submit it")
        return Wait("waiting for the agent to take the continuation")
    if deliver.landed(view, text):
        return Finish(Result.CONFIRMED, "the agent took the continuation and went to work", sent_at=sent_at)
    if now - sent_at > timeout:
        return Finish(Result.UNCONFIRMED, "sent, but the agent was not seen to go to work in time", sent_at=sent_at)
    return Wait("waiting for the agent to go to work")


# --- the executor: gathering the facts, recording the endings ----------------------------------
#
# Everything below reads or writes the world; `decide` above is the whole of the deciding.


@dataclass(frozen=True, slots=True)
class ResumeFacts:
    view: PaneView
    now: datetime
    settings: Mapping  # deliver_timeout, typing_guard, and this run's token


class ResumeExecutor:
    """Resume as the engine drives it: one move per poll (a paste needs a poll to show)."""

    action = ACTION
    chain = 1
    owns_pane = False

    def facts(self, ctx, entry, bound) -> ResumeFacts:
        from afd.act.view import view_of

        now = ctx.clock()
        rec, pane, ident = bound if bound is not None else (ctx.store.get_session(entry.session), None, None)
        settings = {"deliver_timeout": ctx.config.deliver_timeout, "typing_guard": ctx.config.typing_guard, "run": ctx.run}
        spec = ctx.plugins.agents.get(rec.agent) if rec is not None and rec.agent else None
        return ResumeFacts(view_of(ctx.server, rec, pane, ident, now, spec), now, settings)

    def step(self, intent: Mapping, facts: ResumeFacts) -> Move:
        return decide(intent, facts.view, facts.now, facts.settings)

    def progress(self, ctx, entry, move: Move, report) -> None:
        from afd.decide import nextaction

        intent = from_row(ResumeIntent, entry.intent)
        if isinstance(move, Go) and not entry.intent.get("effect_error"):
            pane = intent.pane_id
            if move.step == ResumeStep.SUBMITTED and move.data.get("enters") == 1:
                ctx.event("resume.sent", f"continuation sent to pane {pane} (attempt {intent.attempt})", entry.session,
                          attempt=intent.attempt)
            if move.step == ResumeStep.RESPAWNED:
                report.restarted.add(entry.session)  # the next agent in this pane is the session's own
                argv = move.effect.argv if isinstance(move.effect, Respawn) else ()
                ctx.event("resume.respawned", f"started {' '.join(bare(argv))} in pane {pane}", entry.session)
        hold = move.hold if isinstance(move, Wait) else None
        plan = nextaction.in_progress(intent.step, attempt=intent.attempt, max_attempts=ctx.config.resume_max_attempts, hold=hold)
        save_plan(ctx, entry.session, plan)

    def finished(self, ctx, entry, end: Finish, report) -> None:
        from afd.decide import policy

        name = entry.session
        now = ctx.clock()
        history = ctx.store.resume_history(name)
        sent = end.result in (Result.CONFIRMED, Result.UNCONFIRMED)
        if sent:
            history = policy.sent(history, at=end.sent_at or now, confirmed=end.result is Result.CONFIRMED)
        elif end.result in (Result.FAILED, Result.ROLLED_BACK):
            history = policy.failed(history, at=now)
        elif end.result is Result.NEEDS_HUMAN:
            history = policy.stopped_for_human(history, end.outcome)
        ctx.store.save_resume_history(name, history)
        kind = {
            Result.CONFIRMED: "resume.confirmed",
            Result.UNCONFIRMED: "resume.unconfirmed",
            Result.NEEDS_HUMAN: "session.needs_human",
        }.get(end.result, "resume.failed")
        ctx.event(kind, end.outcome, name, result=end.result.value, attempt=entry.intent.get("attempt"))
        save_plan(ctx, name, None)


def save_plan(ctx, name: str, plan) -> None:
    """The session's next action as status shows it; written only when it changed."""
    from dataclasses import replace

    from afd.decide import nextaction

    rec = ctx.store.get_session(name)
    text = nextaction.dumps(plan)
    if rec is not None and rec.next_action != text:
        ctx.store.upsert_session(replace(rec, next_action=text, updated_at=ctx.clock()))


def begin(ctx, rec, *, attempt: int, why: str, episode: str | None, manual: bool = False, text: str | None = None) -> int:
    """Commit a resume's intent (step `scheduled`) before anything touches the pane; returns its row's id.

    `text`: what the continuation says instead of the configured one (a prompt held for the reset, with
    or without the resume's own words: afd/act/queue.py).
    """
    from afd.act import runner
    from afd.act.intent import to_row
    from afd.act.launch import Launch, account_env, argv_for, on_account
    from afd.decide import nextaction

    cfg = ctx.config
    now = ctx.clock()
    override = cfg.agents.get(rec.agent) if rec.agent else None
    argv = argv_for(ctx.plugins.agents, cfg.agents, rec.agent, Launch.RESUME)
    spec = ctx.plugins.agents.get(rec.agent) if rec.agent else None
    if argv is not None and spec is not None:
        argv = on_account(argv, spec, account_env(cfg, spec, rec.account))  # a resume keeps the session's account
    intent = ResumeIntent(
        text=text or deliver.continuation_text(override.resume_message if override else None, rec.mission),
        agent=rec.agent,
        pane_id=rec.pane_id,
        cwd=rec.worktree,
        respawn_argv=argv,
        attempt=attempt,
        episode=episode,
        why=why,
        manual=manual,
        step_at=now,
    )
    entry = runner.begin(ctx, rec.name, ACTION, to_row(intent), at=now)
    who = "by hand" if manual else why
    ctx.event("resume.scheduled", f"resuming now ({who}; attempt {attempt} of {cfg.resume_max_attempts})", rec.name,
              attempt=attempt, why=why, manual=manual)
    save_plan(ctx, rec.name, nextaction.in_progress(ResumeStep.SCHEDULED, attempt=attempt, max_attempts=cfg.resume_max_attempts))
    return entry
