"""The dashboard and jobs: an agent cannot log itself in; the person at the page hands a supervisor's jobs over."""

from __future__ import annotations

import pytest
from web_harness import Client, free_port

from afd.daemon import control
from harness import read_log, wait_for
from jobs_harness import AFD, World, world  # noqa: F401 (world is a fixture)

pytestmark = pytest.mark.tmux


@pytest.fixture
def dashboard_world(world):
    port = free_port()
    cfg = world.xdg["XDG_CONFIG_HOME"] / "afd" / "config.toml"
    cfg.write_text(cfg.read_text() + f"\n[web]\nport = {port}\n")
    world.release.touch()  # the agents' turns end at once
    world.start_daemon()
    return world, port


def _ran(world: World, fake, command: str) -> dict:
    before = len([e for e in read_log(fake.log) if e["event"] == "command"])
    fake.type(f"run: {command}")
    return wait_for(lambda: (c := [e for e in read_log(fake.log) if e["event"] == "command"])[before:] and c[before],
                    timeout=60, message=f"{command!r} run in {fake.pane}")


def test_afd_web_is_refused_inside_a_watched_agents_pane_even_without_tmux_pane(dashboard_world):
    world, port = dashboard_world
    boss_fake, boss = world.supervisor("boss")
    for command in (f"{AFD} web", f"env -u TMUX_PANE {AFD} web"):
        ran = _ran(world, boss_fake, command)
        assert ran["rc"] == 1, ran
        assert ran["stderr"].strip() == (f"afd: refused: this runs inside session {boss}'s pane ({boss_fake.pane}); "
                                         "open the dashboard from a terminal of your own")
    # Nothing was started for it: the port is still free.
    with pytest.raises(OSError):
        Client(port).get("/", timeout=2)


def test_the_dashboard_hands_a_supervisors_jobs_over_with_the_refusals_of_afd_jobs_handoff(dashboard_world):
    world, port = dashboard_world
    boss_fake, boss = world.supervisor("boss")
    heir_fake, heir = world.supervisor("heir")
    world.create_job(boss_fake, "fix-a")
    wait_for(lambda: world.book(lambda b: b.store.pending_journal()) == [], timeout=30, message="the create settled")
    client = Client(port)
    client.log_in()

    jobs = client.get("/api/jobs").json()["jobs"]
    assert [(j["name"], j["owner"]) for j in jobs] == [("fix-a", boss)]
    before = world.dump()
    for body, status, reason in (
        ({"from": boss, "to": boss}, 409, "cannot hand its jobs to itself"),
        ({"from": heir, "to": boss, "jobs": ["fix-a"]}, 409, f"supervised by {boss}"),
        ({"from": boss, "to": "ghost"}, 409, "'ghost' is not a live session"),
        ({"from": boss, "to": heir, "note": "x" * 4001}, 409, "4001 characters"),
        ({"from": "nobody", "to": heir}, 400, "no session named 'nobody'"),
        ({"from": boss, "to": heir, "jobs": []}, 400, '"jobs" must be'),
        ({"to": heir}, 400, '"from" must be'),
    ):
        reply = client.post("/api/jobs/handoff", body)
        assert reply.status == status and reason in reply.json()["error"], (body, reply.text)
        assert world.dump() == before, body

    reply = client.post("/api/jobs/handoff", {"from": boss, "to": heir, "jobs": "all", "note": "finish the parser first"})
    assert reply.status == 200, reply.text
    assert reply.json()["jobs"] == ["fix-a"] and reply.json()["from"] == boss
    assert world.book(lambda b: {n: j.owner for n, j in b.jobs().items()}) == {"fix-a": heir}
    wake = heir_fake.wait_for_log(lambda e: e["event"] == "input" and "handed off by" in e["text"], timeout=30)
    assert f"Note from {boss}: finish the parser first" in wake["text"]


def test_only_the_dashboard_may_act_for_a_named_supervisor(dashboard_world):
    world, port = dashboard_world
    boss_fake, boss = world.supervisor("boss")
    heir_fake, heir = world.supervisor("heir")
    world.create_job(boss_fake, "fix-a")
    # A process of the user's own, not the daemon's dashboard, naming the supervisor itself: refused.
    with pytest.raises(control.ControlError, match="only the dashboard may ask this"):
        control.request(control.socket_path(), "web.jobs-handoff", {"source": boss, "to": heir})
    assert world.book(lambda b: {n: j.owner for n, j in b.jobs().items()}) == {"fix-a": boss}
