"""What afd says about a real agent's pane: live (`afd run`) and offline (`afd detect`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from harness import wait_for

# Both CLIs draw reset times in the pane's zone; the panes run with TZ=UTC,
# so afd reads them in UTC too.
AFD_ENV = {**os.environ, "TZ": "UTC"}


class Supervisor:
    """`afd run` on the rig's tmux server, in the background, as systemd would run it."""

    def __init__(self, server: str, log: Path):
        self.log = log
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "afd", "run", "-L", server, "--verbose"],
            stdout=subprocess.DEVNULL, stderr=open(log, "wb"), env={**AFD_ENV, **_xdg()},
        )

    def configure(self, text: str, timeout: float = 30.0) -> None:
        """Replace afd's config file with `text` and wait until the running afd has reloaded it."""
        wait_for(lambda: self.command("events", "--json", timeout=30).returncode == 0, timeout=timeout, interval=0.5,
                 message="afd to answer")  # it may still be starting
        before = len(self.events("config.reloaded"))
        path = Path(_xdg()["XDG_CONFIG_HOME"]) / "afd" / "config.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        wait_for(lambda: len(self.events("config.reloaded")) > before, timeout=timeout, interval=0.5,
                 message="afd to reload its config")

    def status(self) -> dict:
        done = subprocess.run([sys.executable, "-m", "afd", "status", "--json"],
                              capture_output=True, text=True, timeout=30, env={**AFD_ENV, **_xdg()})
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def command(self, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess:
        """`afd ARGS…` as the user would type it, against this supervisor's state."""
        return subprocess.run([sys.executable, "-m", "afd", *args], capture_output=True, text=True, timeout=timeout,
                              env={**AFD_ENV, **_xdg()})

    def session(self, pane: str, state: str, timeout: float = 45.0) -> dict:
        """The pane's session once afd calls it ``state``; fails with what afd said instead.

        The default wait covers afd reusing an unchanged-looking capture for
        up to 10 s (its list-panes fingerprint) on a loaded machine.
        """
        seen: list[dict] = []

        def settled() -> dict | None:
            assert self.proc.poll() is None, f"afd run exited: {self.log.read_text(errors='replace')[-2000:]}"
            try:
                report = self.status()
            except AssertionError:
                return None  # afd is still starting (no state and no socket yet) on a loaded machine
            rows = [s for s in report["sessions"] if s["pane"] == pane]
            seen[:] = rows
            return rows[0] if rows and rows[0]["state"] == state else None

        try:
            return wait_for(settled, timeout=timeout, interval=0.5, message=f"afd to call pane {pane} {state}")
        except AssertionError as exc:
            log = self.log.read_text(errors="replace")[-1500:]
            raise AssertionError(f"{exc}; afd said: {seen}; its log ends:\n{log}") from None

    def agreed(self, pane: str, timeout: float = 45.0) -> dict:
        """The pane's session once both witnesses (its banner and the agent's own records) call it limited."""
        seen: list[dict] = []

        def both() -> dict | None:
            row = self.session(pane, "limited", timeout=timeout)
            seen[:] = [row]
            return row if row.get("witnesses") == "pane+record" else None

        try:
            return wait_for(both, timeout=timeout, interval=0.5, message=f"both witnesses to call pane {pane} limited")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; afd said: {seen}") from None

    def events(self, kind: str) -> list[dict]:
        """afd's journaled events of ``kind`` (e.g. ``resume.confirmed``), oldest first."""
        done = subprocess.run([sys.executable, "-m", "afd", "events", "--json"],
                              capture_output=True, text=True, timeout=30, env={**AFD_ENV, **_xdg()})
        assert done.returncode == 0, done.stderr
        rows = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
        return [e for e in rows if e.get("kind") == kind]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def detect(agent: str, captures: list[str], now: datetime, directory: Path) -> dict:
    """`afd detect --json` over ``captures`` (oldest first) saved as files, judged at ``now``."""
    directory.mkdir(parents=True, exist_ok=True)
    files = []
    for i, text in enumerate(captures, 1):
        path = directory / f"{i}.txt"
        path.write_text(text, encoding="utf-8")
        files.append(str(path))
    stamp = now.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    done = subprocess.run([sys.executable, "-m", "afd", "detect", "--agent", agent, "--now", stamp, "--json", *files],
                          capture_output=True, text=True, timeout=30, env={**AFD_ENV, **_xdg()})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def detect_now(pane, tmp_path: Path, name: str, tries: int = 10) -> dict:
    """`afd detect` on two captures of ``pane`` taken now, judged now.

    A wall still being drawn when the test first sees its text (on a loaded
    machine the CLI repaints a moment longer) is captured again, as afd's own
    polls wait for two captures alike; any other verdict is the answer.
    """
    for attempt in range(1, tries + 1):
        verdict = detect(pane.agent, pane.captures(), datetime.now(timezone.utc), tmp_path / name)
        still_drawn = verdict["hit"] and verdict["anchored"] and not verdict["stable"]
        if not still_drawn or attempt == tries:
            return verdict
    raise AssertionError("unreachable: the last attempt returns")


def minutes_ahead(minutes: int) -> int:
    """A reset on a whole minute (the CLIs show minutes), ``minutes`` from now."""
    return (int(time.time()) // 60 + minutes) * 60


def iso(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _xdg() -> dict:
    return {k: os.environ[k] for k in ("HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR")
            if k in os.environ}
