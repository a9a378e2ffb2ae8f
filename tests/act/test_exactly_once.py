"""Exactly once, at any tempo of the loop: every pane-typing action delivers one copy, on a simulated clock.

The real supervisor, engine, planner and executors are driven turn by turn (`afd.daemon.loop.turn`,
the loop's `Tempo`) over a simulated tmux server and simulated time (tests/sim_harness.py). For
each action that types into a pane — a resume's continuation, a handoff's brief (a launch argument
for claude and codex), a brief that waited for its agent, a job's envelope — whatever reached the
pane is counted where it arrived: exactly one, at every poll interval, with quick turns on and
off, whether the agent shows at once that it took the text or seconds later.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

import pytest

from afd.act.deliver import DEFAULT_MESSAGE
from afd.daemon import loop
from afd.daemon.supervisor import Supervisor
from afd.jobs.book import JobBook
from afd.pluginset import load_config_and_plugins
from afd.record.store import Store
from afd.testing.scenario import Scenario
from harness import BRIEF, CODEX_PAST, MYCLI, add_worktree, make_git_repo
from sim_harness import SimClock, SimServer, SimWorld

T0 = datetime(2026, 7, 13, 9, 0, tzinfo=timezone.utc)
POLLS = (0.5, 1.0, 2.0, 5.0)
TAKES = (0.0, 1.0, 3.0)  # how long the agent takes to show it took the text
QUICK = {"quick": loop.Tempo(), "no-quick": loop.Tempo(quick_after_step=0.0)}
# When what the agent did shows: before the next turn's poll looks, or after its listing (the engine sees it first).
PHASES = {"between-turns": False, "mid-turn": True}
BASE = 'resume_grace = "0s"\nhandoff_stop_timeout = "1s"\nhandoff_requires_witness = false\n'


@dataclass
class Case:
    """One action's world: the agents' scenarios, the config, the pane it starts from, and what to count."""

    config: str
    agents: dict[str, dict]
    argv: list[str]
    expect: str  # the event that says the action did its part
    marker: str = DEFAULT_MESSAGE
    git: bool = False
    envelope: bool = False
    seconds: float = 45.0  # of simulated time: the action and what follows it, at the slowest tempo
    plugins: dict[str, str] = field(default_factory=dict)


def resume(agent: str) -> Case:
    # The wall lifts inside the agent by the time afd resumes it: the continuation must not meet it again.
    wall = {"codex": {"banner_params": CODEX_PAST, "limit_lasts_seconds": 0.5},
            # A reset a minute into the run: the wait is planned, then the resume made at the reset.
            "claude": {"banner_params": {"reset": "9:01am", "zone": "UTC"}, "limit_lasts_seconds": 60.0}}[agent]
    # Its first step after the continuation is slow: only the prompt it took shows, under the wall, for
    # longer than the gates take to call a still pane at the slowest tempo.
    return Case("limit_auto_resume = true\n", {agent: {"limit_now": True, "think_seconds": 15.0, **wall}}, [agent],
                "resume.confirmed", seconds={"codex": 40.0, "claude": 100.0}[agent])


def handoff(outgoing: str, target: str) -> Case:
    config = f'limit_action = "handoff"\nhandoff_order = ["{target}"]\n'
    return Case(config, {outgoing: {"limit_after_prompts": 1}, target: {}}, [outgoing, "Fix the login test"],
                "session.handoff", marker=BRIEF, git=True)


def waiting_brief() -> Case:
    # The typed brief waits: its agent starts at a wall of its own, then continues by itself.
    wall = "■ Mycli quota used up. It comes back at 11:45 PM (UTC)."
    mycli = {"style": "codex", "limit_now": True, "banner_rows": [wall], "limit_lasts_seconds": 5.0,
             "native_resume_after_seconds": 20.0}
    config = 'limit_action = "handoff"\nhandoff_order = ["mycli"]\n'
    return Case(config, {"claude": {"limit_after_prompts": 1}, "mycli": mycli}, ["claude", "Fix the login test"],
                "handoff.brief", marker=BRIEF, git=True, plugins={"mycli.toml": MYCLI}, seconds=70.0)


def envelope() -> Case:
    return Case("", {"codex": {}}, ["codex"], "job.envelope-consumed", marker="[afd ", envelope=True, seconds=30.0)


CASES = {
    "resume-codex": resume("codex"),
    "resume-claude": resume("claude"),
    "handoff-claude-to-codex": handoff("claude", "codex"),
    "handoff-codex-to-claude": handoff("codex", "claude"),
    "waiting-brief": waiting_brief(),
    "job-envelope": envelope(),
}


@pytest.fixture
def sim(tmp_path):
    worlds: list[SimWorld] = []

    def start(case: Case, poll: float, take: float, mid_turn: bool = False) -> tuple[SimWorld, Supervisor]:
        plugins_dir = tmp_path / "plugins"
        plugins_dir.mkdir()
        for name, text in case.plugins.items():
            (plugins_dir / name).write_text(text, encoding="utf-8")
        config = tmp_path / "config.toml"
        config.write_text(f'poll_interval = "{poll}s"\nplugins_dir = "{plugins_dir}"\n{BASE}{case.config}', encoding="utf-8")
        cfg, plugins = load_config_and_plugins(config)
        scenarios = {a: Scenario(**{**s, "take_seconds": take}) for a, s in case.agents.items()}
        clock = SimClock(T0.timestamp())
        world = SimWorld(clock, tmp_path / "bin", scenarios, env={"HOME": str(tmp_path)}, mid_turn=mid_turn)
        worlds.append(world)
        cwd = tmp_path / "work"
        if case.git:
            cwd = add_worktree(make_git_repo(tmp_path / "repo"), tmp_path / "wt", "feature")
        cwd.mkdir(exist_ok=True)
        world.new_pane(case.argv, cwd)
        sup = Supervisor(cfg, plugins, Store(tmp_path / "state.db"), SimServer(world), clock=clock.now,
                         monotonic=clock.time, tmux_time=clock.time)
        return world, sup

    yield start
    for world in worlds:
        world.close()


def run(world: SimWorld, sup: Supervisor, tempo: loop.Tempo, seconds: float, *, each_turn=lambda: None) -> None:
    """Turn the loop as `afd run` does, each turn starting `Tempo.next_turn_in` after the last one started."""
    end = world.clock.t + seconds
    while world.clock.t < end:
        started = world.clock.t
        loop.turn(sup)
        each_turn()
        world.clock.t = max(world.clock.t, started + tempo.next_turn_in(sup.config.poll_interval, sup))


def enqueue_once(sup: Supervisor) -> None:
    sessions = sup.store.list_sessions()
    book = JobBook(sup.store)
    if sessions and not book.envelopes() and sessions[0].state == "idle":
        book.enqueue("result:sim", "result", "The job you started is done: read its summary.", to_session=sessions[0].name,
                      at=sup.clock())


@pytest.mark.parametrize("phase", sorted(PHASES))
@pytest.mark.parametrize("take", TAKES, ids=lambda t: f"takes-{t:g}s")
@pytest.mark.parametrize("tempo", sorted(QUICK))
@pytest.mark.parametrize("poll", POLLS, ids=lambda p: f"poll-{p:g}s")
@pytest.mark.parametrize("action", sorted(CASES))
def test_each_pane_typing_action_reaches_the_pane_exactly_once(sim, action, poll, tempo, take, phase):
    case = CASES[action]
    world, sup = sim(case, poll, take, PHASES[phase])
    run(world, sup, QUICK[tempo], case.seconds, each_turn=(lambda: enqueue_once(sup)) if case.envelope else (lambda: None))

    pane = next(iter(world.panes.values()))
    story = "\n".join(f"{e.event.at:%H:%M:%S.%f} {e.event.kind}: {e.event.message}" for e in sup.store.events_since(0))
    assert case.expect in story, story
    assert len(pane.received(case.marker)) == 1, story
    # What tmux was asked to deliver, typed or as a launch argument: one copy too.
    pasted = [t for _, t in world.pastes if case.marker in t]
    launched = [argv for _, argv in world.launches if any(case.marker in word for word in argv[1:])]
    assert len(pasted) + len(launched) == 1, (pasted, launched, story)
