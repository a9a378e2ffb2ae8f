"""Jobs end to end: a daemon on a private tmux server, fake agents that run `afd jobs …` from their panes."""

from __future__ import annotations

import json

import pytest

from afd.jobs.book import JobBook
from afd.record.store import Store
from harness import wait_for, wait_for_log
from jobs_harness import AFD, World, afd, world  # noqa: F401 (world is a fixture)

pytestmark = pytest.mark.tmux


def test_job_created_from_a_supervisors_pane_reports_done_when_the_supervisor_is_idle(world):
    world.start_daemon()
    boss_fake, boss = world.supervisor("boss")
    job = world.create_job(boss_fake, "fix-a", "--title", "'fix module a'")
    assert job["owner"] == boss and job["branch"] == "afd/fix-a"
    start = wait_for_log(world.job_log, lambda e: e["event"] == "start", message="the job's agent started")
    assert "afd help agents" in start["prompt"] and start["prompt"].startswith("work on fix-a")

    # Outside any pane, and with a $TMUX_PANE the caller does not run in: refused, nothing created.
    outside = afd("jobs", "create", "stray", "--agent", "claude", "--prompt", "p")
    assert outside.returncode == 1 and "refused" in outside.stderr and "\n" not in outside.stderr.strip()
    forged = afd("jobs", "create", "stray", "--agent", "claude", "--prompt", "p", env={"TMUX_PANE": boss_fake.pane})
    assert forged.returncode == 1 and "does not match the process tree" in forged.stderr
    listed = json.loads(afd("jobs", "list", "--json").stdout)
    assert [(j["name"], j["title"], j["status"], j["owner"], j["parent"]) for j in listed] == [
        ("fix-a", "fix module a", "running", boss, None)]

    # The supervisor is busy: the envelope waits.
    boss_fake.type("review the plan")
    world.wait_state(boss, "working")
    job_pane = job["pane"]
    done = world.run_in_job(job_pane, "jobs done --summary 'module a fixed'")
    assert done["rc"] == 0, done["stderr"]
    [env] = world.envelopes()
    assert env.kind == "done" and env.recipient is None
    world.wait_event("job.envelope-held", f"waits: {boss} is working")
    assert world.envelopes()[0].state.value == "pending" and world.inputs(boss_fake, "[afd") == []

    world.release.touch()  # the supervisor's turn ends; it goes idle and takes the envelope
    got = boss_fake.wait_for_log(lambda e: e["event"] == "input" and f"[afd {env.nonce}]" in e["text"], timeout=30)
    assert "job fix-a (fix module a) is done on branch afd/fix-a: module a fixed" in got["text"]
    wait_for(lambda: world.envelopes()[0].state.value == "consumed", timeout=20, message="the envelope consumed")
    assert len(world.inputs(boss_fake, env.nonce)) == 1
    mine = json.loads(world.run(boss_fake, "jobs list --json")["stdout"])
    assert [(j["name"], j["status"]) for j in mine] == [("fix-a", "done")]


def test_handoff_moves_named_jobs_with_descendants_then_all_and_each_rejection_changes_nothing(world):
    world.release.touch()  # turns end at once
    world.start_daemon()
    boss_fake, boss = world.supervisor("boss")
    heir_fake, heir = world.supervisor("heir")
    world.create_job(boss_fake, "fix-a")
    world.create_job(boss_fake, "fix-a1", "--parent", "fix-a")
    world.create_job(boss_fake, "fix-b")

    # Creates settle their journal entries once their agents are seen; after that only refusals could write.
    wait_for(lambda: world.book(lambda b: b.store.pending_journal()) == [], timeout=30, message="creates settled")
    before = world.dump()
    refusals = [
        (heir_fake, "jobs handoff --to " + boss, "has no jobs to hand off"),  # empty selection
        (boss_fake, f"jobs handoff --to {heir} --jobs nope", "no job named 'nope'"),
        (heir_fake, f"jobs handoff --to {boss} --jobs fix-a", "supervised by " + boss),
        (boss_fake, "jobs handoff --to ghost", "'ghost' is not a live session"),
        (boss_fake, f"jobs handoff --to {boss}", "cannot hand its jobs to itself"),
        (boss_fake, f"jobs handoff --to {heir} --note \"$(printf '%4001s' | tr ' ' x)\"", "4001 characters"),
    ]
    for fake, command, reason in refusals:
        ran = world.run(fake, command)
        assert ran["rc"] == 1 and reason in ran["stderr"], (command, ran)
        assert ran["stderr"].count("\n") == 1  # one line
        assert world.dump() == before, command

    ran = world.run(boss_fake, f"jobs handoff --to {heir} --jobs fix-a --note 'finish the parser first' --json")
    assert ran["rc"] == 0, ran["stderr"]
    moved = json.loads(ran["stdout"])
    assert moved["jobs"] == ["fix-a", "fix-a1"] and moved["top"] == ["fix-a"]
    jobs = world.book(lambda b: {n: (j.owner, j.parent) for n, j in b.jobs().items()})
    assert jobs == {"fix-a": (heir, None), "fix-a1": (heir, "fix-a"), "fix-b": (boss, None)}
    assert world.book(lambda b: b.masters("fix-a1")) == [heir, boss]
    assert [(h["from"], h["to"]) for h in world.book(lambda b: b.history("fix-a1"))] == [(None, boss), (boss, heir)]
    [receipt] = world.book(lambda b: b.receipts())
    assert (receipt["from"], receipt["to"], receipt["jobs"], receipt["note"]) == (boss, heir, ["fix-a", "fix-a1"], "finish the parser first")

    wake = heir_fake.wait_for_log(lambda e: e["event"] == "input" and "handed off by" in e["text"], timeout=30)
    assert "fix-a (work on fix-a, running); fix-a1 (work on fix-a1, running)" in wake["text"]
    assert "Note from " + boss + ": finish the parser first" in wake["text"]
    confirm = boss_fake.wait_for_log(lambda e: e["event"] == "input" and f"to {heir}:" in e["text"], timeout=30)
    assert "handed off 2 jobs to " + heir + ": fix-a, fix-a1" in confirm["text"]
    listed = json.loads(world.run(heir_fake, "jobs list --json")["stdout"])
    assert sorted(j["name"] for j in listed) == ["fix-a", "fix-a1"]

    ran = world.run(boss_fake, f"jobs handoff --to {heir} --jobs all")
    assert ran["rc"] == 0, ran["stderr"]
    assert world.book(lambda b: {n: j.owner for n, j in b.jobs().items()}) == {"fix-a": heir, "fix-a1": heir, "fix-b": heir}
    heir_fake.wait_for_log(lambda e: e["event"] == "input" and "fix-b (work on fix-b" in e["text"], timeout=30)
    wait_for(lambda: all(e.state.value == "consumed" for e in world.envelopes()), timeout=30, message="all consumed")
    assert len(world.inputs(heir_fake, "handed off by")) == 2 and len(world.inputs(boss_fake, "handed off ")) == 2


def test_envelopes_go_to_the_former_supervisor_while_the_primary_is_limited_and_back_when_it_resumes(world):
    world.release.touch()
    boss_hold = world.tmux.scratch / "boss-free"
    boss_hold.touch()
    world.start_daemon()
    boss_fake, boss = world.supervisor("boss", hold=boss_hold)
    # The heir hits its limit after its first turn (the waking message); the wall is gone half a second later.
    heir_fake, heir = world.supervisor("heir", limit_after_prompts=1, limit_lasts_seconds=0.5)
    a = world.create_job(boss_fake, "fix-a")
    b = world.create_job(boss_fake, "fix-b")
    assert world.run(boss_fake, f"jobs handoff --to {heir}")["rc"] == 0
    world.wait_state(heir, "limited", timeout=30)

    assert world.run_in_job(a["pane"], "jobs done --summary 'a works'")["rc"] == 0
    got = boss_fake.wait_for_log(lambda e: e["event"] == "input" and "job fix-a" in e["text"], timeout=30)
    assert "is done" in got["text"] and world.inputs(heir_fake, "job fix-a") == []
    assert world.book(lambda b: b.masters("fix-a")) == [heir, boss]  # the primary did not change

    boss_hold.unlink()  # the former supervisor is busy now, the primary still limited: the next one waits
    boss_fake.type("keep going")
    world.wait_state(boss, "working")
    assert world.run_in_job(b["pane"], "jobs fail --reason 'the API is gone'")["rc"] == 0
    world.wait_event("job.envelope-held", f"waits: {boss} is working")
    heir_fake.type("carry on")  # the heir resumes
    got = heir_fake.wait_for_log(lambda e: e["event"] == "input" and "job fix-b" in e["text"], timeout=30)
    assert "failed: the API is gone" in got["text"]
    boss_hold.touch()
    wait_for(lambda: all(e.state.value == "consumed" for e in world.envelopes()), timeout=30, message="all consumed")
    assert world.inputs(boss_fake, "job fix-b") == []
    assert [e.recipient for e in world.envelopes() if e.job] == [boss, heir]


def test_daemon_killed_after_the_handoff_commit_and_while_attempting_delivers_each_envelope_once(world):
    boss_hold, heir_hold = world.tmux.scratch / "boss-free", world.tmux.scratch / "heir-free"
    world.release.touch()
    world.start_daemon()
    boss_fake, boss = world.supervisor("boss", hold=boss_hold)
    heir_fake, heir = world.supervisor("heir", hold=heir_hold)
    job = world.create_job(boss_fake, "fix-a")

    # Both supervisors busy, so nothing is typed: the handoff commits, then the daemon dies.
    heir_fake.type("think")
    world.wait_state(heir, "working")
    ran = world.run(boss_fake, f"jobs handoff --to {heir}", then="think")
    assert ran["rc"] == 0, ran["stderr"]
    world.kill_daemon()
    assert [e.state.value for e in world.envelopes()] == ["pending", "pending"]
    world.start_daemon()
    heir_hold.touch()
    boss_hold.touch()
    wait_for(lambda: all(e.state.value == "consumed" for e in world.envelopes()), timeout=40, message="both consumed")

    # Now between attempting and sent: killed the moment the envelope is written as attempting.
    assert world.run_in_job(job["pane"], "jobs done")["rc"] == 0
    wait_for(lambda: any(e.state.value == "attempting" for e in world.envelopes()), timeout=30, interval=0.002,
             message="an envelope attempting")
    world.kill_daemon()
    [env] = [e for e in world.envelopes() if e.kind == "done"]
    assert env.state.value == "attempting"
    world.start_daemon()
    wait_for(lambda: all(e.state.value == "consumed" for e in world.envelopes()), timeout=40, message="consumed after restart")
    assert len(world.inputs(heir_fake, env.nonce)) == 1
    assert len(world.inputs(heir_fake, "handed off by")) == 1 and len(world.inputs(boss_fake, "handed off 1 job")) == 1


@pytest.mark.parametrize("step", ["routed", "pasted", "entered"])
def test_daemon_killed_after_each_delivery_step_delivers_the_envelope_once(world, step):
    # The daemon dies (SIGKILL) right after it has written `step` to the delivery's journal row, before its effect.
    world.release.touch()
    world.start_daemon(env={"AFD_TEST_CRASH_AT_STEP": step})
    boss_fake, boss = world.supervisor("boss")
    with Store(world.db) as store:
        assert JobBook(store).enqueue("note:plan", "note", "read the plan first", to_session=boss)
    world.daemon.wait(timeout=30)
    assert world.daemon.returncode == -9
    [env] = world.envelopes()
    assert env.state.value == "attempting" and env.recipient == boss
    assert world.inputs(boss_fake, env.nonce) == []  # nothing submitted before the kill

    world.start_daemon()
    wait_for(lambda: world.envelopes()[0].state.value == "consumed", timeout=40, message="consumed after the restart")
    world.wait_event("journal.recovered", f"envelope of {boss}: afd restarted at step {step!r}")
    got = world.inputs(boss_fake, env.nonce)
    assert len(got) == 1 and got[0]["text"].count(env.nonce) == 1 and "read the plan first" in got[0]["text"]
    with Store.open_readonly(world.db) as store:
        assert store.pending_journal() == []


def test_a_paused_supervisor_is_typed_no_envelope_until_unpaused_and_handoff_takes_its_tmux_name(world):
    world.release.touch()  # turns end at once
    world.start_daemon()
    boss_fake, boss = world.supervisor("boss")
    heir_fake, heir = world.supervisor("heir")
    world.create_job(boss_fake, "fix-a")
    wait_for(lambda: world.book(lambda b: b.store.pending_journal()) == [], timeout=30, message="the create settled")
    assert afd("sessions", "pause", heir).returncode == 0

    tmux_session = heir.split(":")[0]  # `s2`, as tmux names it; afd's name is `s2:0.0`
    ran = world.run(boss_fake, f"jobs handoff --to {tmux_session} --json")
    assert ran["rc"] == 0, ran["stderr"]
    assert json.loads(ran["stdout"])["to"] == heir
    # The confirmation reaches the boss; the wake-up waits for the heir's pause to end.
    boss_fake.wait_for_log(lambda e: e["event"] == "input" and f"to {heir}:" in e["text"], timeout=30)
    world.wait_event("job.envelope-held", f"waits: {heir}: paused by you (afd sessions unpause {heir})")
    assert world.inputs(heir_fake, "handed off by") == []

    assert afd("sessions", "unpause", heir).returncode == 0
    heir_fake.wait_for_log(lambda e: e["event"] == "input" and "handed off by" in e["text"], timeout=30)
    assert len(world.inputs(heir_fake, "handed off by")) == 1
