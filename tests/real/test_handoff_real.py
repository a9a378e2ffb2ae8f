"""A real Claude Code at its plan's wall, handed to a real Codex (or Gemini CLI) in the same pane, worktree and branch."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import psutil
import pytest
import shapes
from rig import write_gemini_settings
from verdicts import minutes_ahead

from harness import wait_for

MISSION = "make the login redirect keep the cart"


def git(cwd, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=afd test", "-c", "user.email=test@afd.invalid", *args],
                          cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def programs(pane_pid: int) -> list[str]:
    """The name of the program each process of the pane's tree runs; never its arguments (the brief names claude)."""
    try:
        root = psutil.Process(pane_pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []
    found = []
    for proc in procs:
        try:
            argv = proc.cmdline() or [proc.name()]
        except psutil.Error:
            continue
        # node runs a CLI's script: that script is the program.
        found.append(Path(argv[1] if Path(argv[0]).name == "node" and len(argv) > 1 else argv[0]).name)
    return found


def brief_at(rig, api: str, needle: str) -> str | None:
    """The first prompt the mock got from ``api`` that holds ``needle``."""
    prompts = [p for r in rig.requests(api) for p in r.get("prompts") or []]
    return next((p for p in prompts if needle in p), None)


def pane_pid(rig, pane: str) -> int:
    return int(rig.tmux.run("display-message", "-p", "-t", pane, "#{pane_pid}").stdout)


def hand_back_to_claude(rig, afd, pane, worktree: Path, name: str, *, leaving: str, head: str, mission: str, topic: str,
                        reply: str | None = None) -> None:
    """``leaving`` commits on the branch, then the work goes back to Claude: refused while its plan is walled, then
    forced; Claude resumes its own conversation (`--continue`), told what changed since the swap at ``head``."""
    (worktree / f"{topic}.py").write_text("KEEP_CART = True\n", encoding="utf-8")
    git(worktree, "add", ".")
    git(worktree, "commit", "-q", "-m", f"{topic} keeps the cart")
    back_head = git(worktree, "rev-parse", "HEAD")
    # afd still knows Claude's plan as walled until its reset: only --force hands back before then.
    refused = afd.command("handoff", name, "--to", "claude", "--json")
    assert refused.returncode == 1 and "usage limit" in refused.stderr, refused.stderr
    if reply is not None:
        rig.answer("claude", shapes.claude_answer(reply))
    done = afd.command("handoff", name, "--to", "claude", "--force", "--json")
    assert done.returncode == 0, f"{done.stdout}{done.stderr}"
    assert json.loads(done.stdout)["state"] == "done"
    brief = wait_for(lambda: brief_at(rig, "claude", f"git log --oneline {head}..HEAD"), timeout=60, interval=0.5,
                     message="Claude's first turn after the hand-back at the mock")
    assert mission in brief
    running = programs(pane_pid(rig, pane.pane))
    assert "claude" in running and leaving not in running, running
    argv = psutil.Process(pane_pid(rig, pane.pane)).cmdline()
    assert "--continue" in argv, argv
    entries = json.loads(afd.command("ledger", name, "--json", timeout=30).stdout)["entries"]
    assert [(e["from"], e["to"], e["head_sha"]) for e in entries] == [("claude", leaving, head), (leaving, "claude", back_head)]


@pytest.mark.slow
def test_claude_at_its_five_hour_wall_handed_to_codex_and_back_in_the_same_pane(rig, shop, afd):
    worktree = rig.scratch / "login"
    git(shop, "worktree", "add", "-q", "-b", "fix-login", str(worktree))
    base = git(worktree, "rev-parse", "HEAD")
    (worktree / "login.py").write_text("REDIRECT = '/cart'\n", encoding="utf-8")
    git(worktree, "add", ".")
    git(worktree, "commit", "-q", "-m", "keep the cart on login")

    env = rig.swap_env(worktree)
    # The rig's Codex is configured in a CODEX_HOME of its own: to afd, an account, named here. (Handed
    # to plain `codex`, afd would start Codex's default account, with CODEX_HOME unset.)
    codex_home = env["CODEX_HOME"]
    afd.configure(f'poll_interval = "1s"\n[accounts.codex-rig]\nagent = "codex"\nenv = {{ CODEX_HOME = "{codex_home}" }}\n')
    pane = rig.start_claude(worktree, env=env)
    pane.wait_for_screen(lambda s: "Claude Code v" in s and "\n❯" in s, message="the composer")
    rig.answer("claude", shapes.claude_limit(minutes_ahead(150), "five_hour"))
    pane.type("fix the login redirect")
    pane.wait_for_text("Continuing automatically at")
    name = afd.session(pane.pane, "limited")["name"]
    done = afd.command("sessions", "set-mission", name, MISSION, timeout=30)
    assert done.returncode == 0, done.stderr
    head = git(worktree, "rev-parse", "HEAD")
    assert "claude" in programs(pane_pid(rig, pane.pane))

    done = afd.command("handoff", name, "--to", "codex-rig", "--json")
    assert done.returncode == 0, f"{done.stdout}{done.stderr}"
    assert json.loads(done.stdout)["state"] == "done"

    brief = wait_for(lambda: brief_at(rig, "codex", MISSION), timeout=60, interval=0.5, message="Codex's first turn at the mock")
    assert f"git log --oneline {base}..HEAD" in brief

    assert rig.tmux.run("list-panes", "-a", "-F", "#{pane_id}").stdout.split() == [pane.pane]
    running = programs(pane_pid(rig, pane.pane))
    assert "codex" in running and "claude" not in running, running

    ledger = afd.command("ledger", name, "--json", timeout=30)
    assert ledger.returncode == 0, ledger.stderr
    entries = json.loads(ledger.stdout)["entries"]
    assert [(e["from"], e["to"], e["head_sha"]) for e in entries] == [("claude", "codex", head)]
    assert (entries[0]["from_account"], entries[0]["to_account"]) == ("claude", "codex-rig")
    root = psutil.Process(pane_pid(rig, pane.pane))
    codex = next(p for p in [root, *root.children(recursive=True)] if "codex" in " ".join(p.cmdline()))
    assert codex.environ()["CODEX_HOME"] == codex_home  # started on the account it was handed to

    # And back, once Codex's turn has ended: Claude resumes its own conversation, told what changed since.
    rig.answer("claude", shapes.claude_answer("Picking up from the brief."))
    pane.wait_for_text("Worked for", timeout=60)
    assert afd.session(pane.pane, "idle")["agent"] == "codex"
    hand_back_to_claude(rig, afd, pane, worktree, name, leaving="codex", head=head, mission=MISSION, topic="cart")


@pytest.mark.slow
def test_claude_at_its_wall_handed_to_gemini_and_back(rig, shop, afd):
    """A CLI afd knows only from its manifest takes a real handoff, its brief typed into its composer, and gives it back."""
    worktree = rig.scratch / "signup"
    git(shop, "worktree", "add", "-q", "-b", "fix-signup", str(worktree))
    base = git(worktree, "rev-parse", "HEAD")

    pane = rig.start_claude(worktree, env=rig.swap_env(worktree))
    write_gemini_settings(pane.home)  # the pane's HOME is Claude's: Gemini reads its settings there
    pane.wait_for_screen(lambda s: "Claude Code v" in s and "\n❯" in s, message="the composer")
    rig.answer("claude", shapes.claude_limit(minutes_ahead(150), "five_hour"))
    pane.type("fix the signup form")
    pane.wait_for_text("Continuing automatically at")
    name = afd.session(pane.pane, "limited")["name"]
    assert afd.command("sessions", "set-mission", name, "make signup keep the cart", timeout=30).returncode == 0
    head = git(worktree, "rev-parse", "HEAD")

    rig.answer("gemini", shapes.gemini_answer("Picking up the signup form from the brief."))
    done = afd.command("handoff", name, "--to", "gemini", "--json")
    assert done.returncode == 0, f"{done.stdout}{done.stderr}"
    assert json.loads(done.stdout)["state"] == "done"
    # Gemini takes its first prompt typed: afd pastes the brief once its composer is up.
    try:
        brief = wait_for(lambda: brief_at(rig, "gemini", "make signup keep the cart"), timeout=90, interval=0.5,
                         message="Gemini's first turn at the mock")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the pane shows:\n{pane.capture()}\nafd's events: {afd.events('handoff.done')}") from None
    assert f"git log --oneline {base}..HEAD" in brief
    running = programs(pane_pid(rig, pane.pane))
    assert "gemini" in running and "claude" not in running, running
    pane.wait_for_text("Picking up the signup form from the brief.", timeout=60)
    assert afd.session(pane.pane, "idle")["agent"] == "gemini"

    hand_back_to_claude(rig, afd, pane, worktree, name, leaving="gemini", head=head, mission="make signup keep the cart",
                        topic="signup", reply="Back on the signup form.")


def _hand_to_and_back(rig, shop, afd, target: str, api: str, topic: str) -> None:
    """Claude Code at its wall handed to ``target`` (a CLI that takes its first prompt typed), then back."""
    worktree = rig.scratch / topic
    git(shop, "worktree", "add", "-q", "-b", f"fix-{topic}", str(worktree))
    base = git(worktree, "rev-parse", "HEAD")
    mission = f"make {topic} keep the cart"

    pane = rig.start_claude(worktree, env=rig.swap_env(worktree))
    pane.wait_for_screen(lambda s: "Claude Code v" in s and "\n❯" in s, message="the composer")
    rig.answer("claude", shapes.claude_limit(minutes_ahead(150), "five_hour"))
    pane.type(f"fix {topic}")
    pane.wait_for_text("Continuing automatically at")
    name = afd.session(pane.pane, "limited")["name"]
    assert afd.command("sessions", "set-mission", name, mission, timeout=30).returncode == 0
    head = git(worktree, "rev-parse", "HEAD")

    reply = f"Picking up {topic} from the brief."
    rig.answer(api, shapes.chat_answer(reply))
    done = afd.command("handoff", name, "--to", target, "--json")
    assert done.returncode == 0, f"{done.stdout}{done.stderr}"
    assert json.loads(done.stdout)["state"] == "done"
    # Its first turn at the mock is the whole brief, typed into its input box and submitted once it showed there.
    try:
        brief = wait_for(lambda: brief_at(rig, api, mission), timeout=90, interval=0.5,
                         message=f"{target}'s first turn at the mock")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the pane shows:\n{pane.capture()}\nafd's events: {afd.events('handoff.done')}") from None
    assert f"git log --oneline {base}..HEAD" in brief and f"git diff {base}...HEAD" in brief, brief
    assert rig.tmux.run("list-panes", "-a", "-F", "#{pane_id}").stdout.split() == [pane.pane]
    running = programs(pane_pid(rig, pane.pane))
    assert target in running and "claude" not in running, running
    pane.wait_for_text(reply, timeout=60)
    idle = afd.session(pane.pane, "idle")
    assert (idle["agent"], idle["reset_at"]) == (target, None)
    entries = json.loads(afd.command("ledger", name, "--json", timeout=30).stdout)["entries"]
    assert [(e["from"], e["to"], e["head_sha"]) for e in entries] == [("claude", target, head)]

    hand_back_to_claude(rig, afd, pane, worktree, name, leaving=target, head=head, mission=mission, topic=topic,
                        reply=f"Back on {topic}.")


@pytest.mark.slow
def test_claude_at_its_wall_handed_to_opencode_and_back(rig, shop, afd):
    """OpenCode, known only from its manifest, takes the brief typed into its input box, and gives the work back."""
    _hand_to_and_back(rig, shop, afd, "opencode", "chat", "checkout")


@pytest.mark.slow
def test_claude_at_its_wall_handed_to_copilot_and_back(rig, shop, afd):
    """Copilot CLI, known only from its manifest and signed in to GitHub's hosts on loopback, takes the brief typed."""
    _hand_to_and_back(rig, shop, afd, "copilot", "chat", "search")
