"""The demo's private world: a tmux server, a git repository, an afd and two fake agents, in one directory.

Everything lives in one throwaway directory: a private tmux server, a git
repository with two worktrees, afd's own state, config and control socket,
a HOME for the agents, and the fake `claude` and `codex` (the test suite's
stand-ins, which draw the real CLIs' screens and walls).

The agents get an environment of their own, not the person's: a HOME in the
directory (so their records and accounts are the demo's, and each agent runs
on its default account, named after it), and none of the person's account or
credential variables (`CLAUDE_CONFIG_DIR`, an API key), which would put the
fakes' records in the person's own directories or make their accounts
unknown.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from afd.errors import EXIT_FAIL, UserError

RESUME_SESSION, HANDOFF_SESSION = "resume-demo", "handoff-demo"
RESUME_AGENT, HANDOFF_FROM, HANDOFF_TO = "codex", "claude", "codex"
MISSIONS = {RESUME_SESSION: "Write the changelog", HANDOFF_SESSION: "Fix the login test"}
AGENT_OF = {RESUME_SESSION: RESUME_AGENT, HANDOFF_SESSION: HANDOFF_FROM}
GRACE_SECONDS = 2
STABILITY_POLLS = 2
# First: wait for a wall's reset and resume the same agent.
WAIT_CONFIG = f"""\
poll_interval = "250ms"
stability_polls = {STABILITY_POLLS}
limit_action = "wait"
limit_auto_resume = true
resume_grace = "{GRACE_SECONDS}s"
handoff_stop_timeout = "2s"
"""
# Then, as a person would edit it: hand a walled agent's work to codex.
HANDOFF_CONFIG = WAIT_CONFIG.replace('limit_action = "wait"', f'limit_action = "handoff"\nhandoff_order = ["{HANDOFF_TO}"]')
SCENARIOS = {
    # codex's wall comes three seconds in and names a reset eight seconds away; inside the fake it
    # lifts after six, so the continuation afd sends after the reset finds it ready.
    RESUME_SESSION: {"agents": {"codex": {"limit_after_seconds": 3, "banner_params": {"reset": "8 seconds"},
                                          "limit_lasts_seconds": 6}}},
    # claude's wall comes after its first piece of work, an hour long, and its own transcript
    # records it too; the codex that takes over works on.
    HANDOFF_SESSION: {"agents": {"claude": {"limit_after_prompts": 1, "records": "agree"}}},
}
# What the agents' environment keeps of the person's: enough to run, nothing that selects an account.
KEPT = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMUX_TMPDIR", "USER", "LOGNAME", "TMPDIR")


class Demo:
    def __init__(self, root: Path, web: bool = False):
        self.root = root
        self.web_port = _free_port() if web else None
        self.socket = f"afd-demo-{secrets.token_hex(4)}"
        self.bin = root / "bin"
        self.logs = root / "logs"
        self.config = root / "cfg" / "afd" / "config.toml"
        xdg = {
            "XDG_CONFIG_HOME": str(root / "cfg"),
            "XDG_STATE_HOME": str(root / "state"),
            "XDG_DATA_HOME": str(root / "data"),
            "XDG_RUNTIME_DIR": str(root / "run"),
        }
        path = f"{self.bin}{os.pathsep}{os.environ.get('PATH', os.defpath)}"
        lang = os.environ.get("LANG") or "C.UTF-8"
        # afd itself: the person's environment (its Python must import as it does for them), its own dirs.
        self.env = {**{k: v for k, v in os.environ.items() if k != "TMUX"}, **xdg, "PATH": path, "LANG": lang}
        # The tmux server and so every pane and every agent afd starts in one.
        self.pane_env = {**{k: os.environ[k] for k in KEPT if k in os.environ}, **xdg, "PATH": path, "LANG": lang,
                         "HOME": str(root / "home")}
        self.daemon: subprocess.Popen | None = None

    # --- setting up ---------------------------------------------------------

    def tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(["tmux", "-L", self.socket, *args], env=self.pane_env, capture_output=True, text=True,
                              check=check, timeout=10)

    def git(self, cwd: Path, *args: str) -> None:
        ident = ["-c", "user.name=afd demo", "-c", "user.email=demo@afd.invalid", "-c", "commit.gpgsign=false"]
        subprocess.run(["git", *ident, *args], cwd=cwd, env=self.env, capture_output=True, check=True, timeout=30)

    def prepare(self) -> None:
        from afd.testing.fake_agent import write_launcher

        for sub in ("cfg/afd", "state", "data", "run", "bin", "logs", "home"):
            (self.root / sub).mkdir(parents=True, mode=0o700, exist_ok=True)
        for agent in ("claude", "codex"):
            write_launcher(self.bin, agent, agent)
        self.write_config(WAIT_CONFIG)
        for name, scenario in SCENARIOS.items():
            (self.root / f"{name}.json").write_text(json.dumps(scenario), encoding="utf-8")
        repo = self.root / "repo"
        repo.mkdir()
        self.git(repo, "init", "-q", "-b", "main")
        (repo / "README.md").write_text("# A project\n", encoding="utf-8")
        self.git(repo, "add", "README.md")
        self.git(repo, "commit", "-q", "-m", "Start")
        for name in (RESUME_SESSION, HANDOFF_SESSION):
            self.git(repo, "worktree", "add", "-q", "-b", name, str(self.root / name), "main")

    def write_config(self, text: str) -> None:
        web = f"\n[web]\nenabled = true\nport = {self.web_port}\n" if self.web_port else ""
        # Written whole and moved into place, as an editor saves: afd never reads half a file.
        draft = self.config.with_suffix(".new")
        draft.write_text(text + web, encoding="utf-8")
        draft.replace(self.config)

    def start_afd(self) -> None:
        self.tmux("-f", "/dev/null", "start-server", ";", "set-option", "-g", "exit-empty", "off")
        err = (self.root / "afd.log").open("wb")
        self.daemon = subprocess.Popen(
            [sys.executable, "-m", "afd", "run", "-L", self.socket, "--config", str(self.config)],
            env=self.env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
        )
        self.wait(lambda: self.ask("status", {"events": 0}) is not None, 30, "afd to start")

    def start_agent(self, name: str) -> None:
        env = ["-e", f"AFD_FAKE_SCENARIO={self.root / name}.json", "-e", f"AFD_FAKE_LOG={self.logs / name}.jsonl",
               "-e", "TERM=tmux-256color"]
        self.tmux("new-session", "-d", "-s", name, "-x", "110", "-y", "30", "-c", str(self.root / name), *env,
                  shlex.join([AGENT_OF[name], MISSIONS[name]]))

    # --- watching -------------------------------------------------------------

    def ask(self, cmd: str, args: dict | None = None):
        from afd.daemon import control

        try:
            return control.request(Path(self.env["XDG_RUNTIME_DIR"]) / "afd" / "control.sock", cmd, args or {}, timeout=5)
        except (control.ControlError, control.DaemonUnavailable, OSError):
            return None

    def wait(self, ready, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            self.check_alive()
            if time.monotonic() > deadline:
                raise UserError(f"the demo timed out waiting for {what}", EXIT_FAIL)
            time.sleep(0.2)

    def check_alive(self) -> None:
        if self.daemon is not None and self.daemon.poll() is not None:
            raise UserError(f"the demo's afd stopped (see {self.root / 'afd.log'})", EXIT_FAIL)

    # --- ending ----------------------------------------------------------------

    def stop(self) -> None:
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGTERM)
            try:
                self.daemon.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
        self.tmux("kill-server", check=False)
        from afd.daemon.supervisor import expected_socket_path
        from afd.world.tmux import ServerRef

        socket = expected_socket_path(ServerRef(socket_name=self.socket))
        if socket:
            Path(socket).unlink(missing_ok=True)
        self._kill_fakes()
        shutil.rmtree(self.root, ignore_errors=True)

    def _kill_fakes(self) -> None:
        # Fakes that ignore SIGHUP would outlive their panes; their logs name them.
        import psutil

        for log in self.logs.glob("*.jsonl"):
            for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                pid = record.get("child_pid") or (record.get("pid") if record.get("event") == "start" else None)
                try:
                    proc = psutil.Process(pid) if pid else None
                    if proc is not None and str(self.bin) in " ".join(proc.cmdline()):
                        proc.kill()
                except psutil.Error:
                    pass


def _free_port() -> int:
    import socket

    # Never the person's own [web] port: their daemon may be serving there.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
