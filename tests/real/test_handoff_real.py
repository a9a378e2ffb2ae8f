"""A real Claude Code at its plan's wall, handed to a real Codex in the same pane, worktree and branch."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import psutil
from harness import wait_for

import shapes
from verdicts import minutes_ahead

MISSION = "make the login redirect keep the cart"


def git(cwd, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=afd test", "-c", "user.email=test@afd.invalid", *args],
                          cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def programs(pane_pid: int) -> list[str]:
    """The program each process of the pane's tree runs; never its arguments (the brief names claude)."""
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
        found.append(argv[1] if Path(argv[0]).name == "node" and len(argv) > 1 else argv[0])
    return found


def pane_pid(rig, pane: str) -> int:
    return int(rig.tmux.run("display-message", "-p", "-t", pane, "#{pane_pid}").stdout)


def test_claude_at_its_five_hour_wall_handed_to_codex_gets_the_brief_in_the_same_pane(rig, shop, afd):
    worktree = rig.scratch / "login"
    git(shop, "worktree", "add", "-q", "-b", "fix-login", str(worktree))
    base = git(worktree, "rev-parse", "HEAD")
    (worktree / "login.py").write_text("REDIRECT = '/cart'\n", encoding="utf-8")
    git(worktree, "add", ".")
    git(worktree, "commit", "-q", "-m", "keep the cart on login")

    pane = rig.start_claude(worktree, env=rig.codex_env(worktree))
    pane.wait_for_screen(lambda s: "Claude Code v" in s and "\n❯" in s, message="the composer")
    rig.answer("claude", shapes.claude_limit(minutes_ahead(150), "five_hour"))
    pane.type("fix the login redirect")
    pane.wait_for_text("Continuing automatically at")
    name = afd.session(pane.pane, "limited")["name"]
    done = afd.command("sessions", "set-mission", name, MISSION, timeout=30)
    assert done.returncode == 0, done.stderr
    head = git(worktree, "rev-parse", "HEAD")
    assert any("claude" in p for p in programs(pane_pid(rig, pane.pane)))

    done = afd.command("handoff", name, "--to", "codex", "--json")
    assert done.returncode == 0, f"{done.stdout}{done.stderr}"
    assert json.loads(done.stdout)["state"] == "done"

    def brief_seen() -> str | None:
        prompts = [p for r in rig.requests("codex") for p in r.get("prompts") or []]
        return next((p for p in prompts if MISSION in p), None)

    brief = wait_for(brief_seen, timeout=60, interval=0.5, message="Codex's first turn at the mock")
    assert f"git log --oneline {base}..HEAD" in brief

    assert rig.tmux.run("list-panes", "-a", "-F", "#{pane_id}").stdout.split() == [pane.pane]
    running = programs(pane_pid(rig, pane.pane))
    assert any("codex" in p for p in running) and not any("claude" in p for p in running), running

    ledger = afd.command("ledger", name, "--json", timeout=30)
    assert ledger.returncode == 0, ledger.stderr
    entries = json.loads(ledger.stdout)["entries"]
    assert [(e["from"], e["to"], e["head_sha"]) for e in entries] == [("claude", "codex", head)]
