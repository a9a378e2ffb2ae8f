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

from afd.act import (
    Finish,
    Go,
    Key,
    Liveness,
    Move,
    Observe,
    PaneView,
    Paste,
    Record,
    Respawn,
    Result,
    SaveHistory,
    Tell,
    Wait,
    deliver,
)
from afd.act.intent import from_row, stored
from afd.act.launch import bare
from afd.decide import plan, policy
from afd.judge import screen, sessions
from afd.record.types import NextAction
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
        known = screen.limit_menu(view.spec, menu)
        if known is None:
            return Finish(Result.NEEDS_HUMAN, f"a menu afd does not know is open ({menu.title or menu.options[0]})")
        if known.answer is None:
            return Finish(Result.NEEDS_HUMAN, known.ask or f"answer the agent's menu ({menu.title or menu.options[0]})")
        wanted = known.answer
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
    if ready and not screen.busy(view.spec, view.rows):
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

    def progress(self, ctx, entry, move: Move) -> tuple[Record, ...]:
        intent = from_row(ResumeIntent, entry.intent)
        records: list[Record] = []
        if isinstance(move, Go) and not entry.intent.get("effect_error"):
            pane = intent.pane_id
            if move.step == ResumeStep.SUBMITTED and move.data.get("enters") == 1:
                records.append(Tell("resume.sent", f"continuation sent to pane {pane} (attempt {intent.attempt})",
                                    data={"attempt": intent.attempt}))
            if move.step == ResumeStep.RESPAWNED:
                records.append(Observe(sessions.AgentStarted()))  # the next agent in this pane is the session's own
                argv = move.effect.argv if isinstance(move.effect, Respawn) else ()
                records.append(Tell("resume.respawned", f"started {' '.join(bare(argv))} in pane {pane}"))
        hold = move.hold if isinstance(move, Wait) else None
        shown = plan.resuming(intent.step, attempt=intent.attempt, max_attempts=ctx.config.resume_max_attempts, hold=hold)
        return (*records, *_shown(ctx, entry.session, shown))

    def finished(self, ctx, entry, end: Finish) -> tuple[Record, ...]:
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
        kind = {
            Result.CONFIRMED: "resume.confirmed",
            Result.UNCONFIRMED: "resume.unconfirmed",
            Result.NEEDS_HUMAN: "session.needs_human",
        }.get(end.result, "resume.failed")
        records: list[Record] = [SaveHistory(history), Observe(sessions.Planned(None))]
        if end.result is Result.CONFIRMED:
            # The agent took the text: the wall it stood at, as the pane and its records showed it
            # before, is over. Only evidence drawn after this puts it back.
            records.append(Observe(sessions.ContinuationTaken(end.sent_at or now)))
        after = {}
        if kind == "resume.failed":
            # What comes next, for the person told of it.
            after = {"next": policy.after_failure(name, history, auto_resume=ctx.config.limit_auto_resume,
                                                  max_attempts=ctx.config.resume_max_attempts)}
        records.append(Tell(kind, end.outcome, data={"result": end.result.value, "attempt": entry.intent.get("attempt"), **after}))
        return tuple(records)


def _shown(ctx, name: str, shown: NextAction | None) -> tuple[Record, ...]:
    """The session's next action as status shows it, when it changed (most turns of a resume change nothing)."""
    rec = ctx.store.get_session(name)
    return (Observe(sessions.Planned(shown)),) if rec is not None and rec.next_action != shown else ()


def begin(ctx, rec, *, attempt: int, why: str, episode: str | None, manual: bool = False, text: str | None = None) -> int:
    """Commit a resume's intent (step `scheduled`) before anything touches the pane; returns its row's id.

    `text`: what the continuation says instead of the configured one (a prompt held for the reset, with
    or without the resume's own words: afd/act/queue.py).
    """
    from afd.act import runner
    from afd.act.intent import to_row
    from afd.act.launch import Launch, account_env, argv_for, on_account

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
    who = "by hand" if manual else why
    told = Tell("resume.scheduled", f"resuming now ({who}; attempt {attempt} of {cfg.resume_max_attempts})",
                data={"attempt": attempt, "why": why, "manual": manual})
    shown = plan.resuming(ResumeStep.SCHEDULED, attempt=attempt, max_attempts=cfg.resume_max_attempts)
    return runner.begin(ctx, rec.name, ACTION, to_row(intent), at=now, records=(told, Observe(sessions.Planned(shown))))
