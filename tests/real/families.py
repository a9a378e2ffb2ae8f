"""One real CLI drawing its wall families one after another, each screen judged as afd judges it.

A CLI is started once and every family its bundle holds (and the
look-alikes) is drawn in turn: the mock answers the next prompt the way the
API does at that wall, the test waits for the CLI's own words, takes two
captures that agree, and asks `afd detect` (in this process, `TZ=UTC` as the
panes run) what it makes of them. With ``AFD_REAL_CAPTURES=DIR`` each
screen is kept in ``DIR/<agent>/<case>/`` with its expected answer, the
format of ``tests/data/real/``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path


@dataclass(frozen=True)
class Expect:
    """What afd must say about a family's screen: limited or not, the reset within a window, needs_human."""

    limited: bool
    reset: tuple[datetime, datetime] | None = None  # the reset lies in this window (the screen's rounding)
    needs_human: bool = False


def steady(pane, tries: int = 15, gap: float = 1.0) -> list[str]:
    """Two captures ``gap`` s apart that agree (a wall still being drawn is captured again, as afd's polls wait)."""
    shots = pane.captures(2, gap=gap)
    for _ in range(tries - 1):
        if shots[0] == shots[1]:
            break
        shots = pane.captures(2, gap=gap)
    return shots


def detect(agent: str, shots: list[str], now: datetime, folder: Path) -> dict:
    """`afd detect --json` over ``shots`` judged at ``now``, run in this process."""
    from afd.cli.main import main

    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for n, shot in enumerate(shots, 1):
        files.append(folder / f"{n}.txt")
        files[-1].write_text(shot, encoding="utf-8")
    out = io.StringIO()
    before = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    try:
        with contextlib.redirect_stdout(out):
            code = main(["detect", "--agent", agent, "--now", iso(now), "--json", *map(str, files)])
    finally:
        if before is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = before
    assert code == 0, out.getvalue()
    return json.loads(out.getvalue())


def judge(pane, case: str, expect: Expect, source: str, tmp_path: Path) -> dict:
    """Capture the pane's screen, keep it with its expected answer, and check afd's verdict against ``expect``."""
    shots = steady(pane)
    now = datetime.now(timezone.utc)
    verdict = detect(pane.agent, shots, now, tmp_path / case)
    keep(pane.agent, case, shots, expect, verdict, source, now)
    problem = mismatch(verdict, expect)
    screen = "\n".join(r for r in shots[-1].splitlines() if r.strip())
    assert problem is None, f"{pane.agent} {case}: {problem}; afd said: {verdict['reason']}\n{screen}"
    return verdict


def mismatch(verdict: dict, expect: Expect) -> str | None:
    if verdict["limited"] is not expect.limited:
        return f"limited is {verdict['limited']}, expected {expect.limited}"
    if not expect.limited:
        return None
    if verdict["needs_human"] is not expect.needs_human:
        return f"needs_human is {verdict['needs_human']}, expected {expect.needs_human}"
    if expect.reset is None:
        return None if verdict["reset_at"] is None else f"reset_at {verdict['reset_at']}, expected none"
    if verdict["reset_at"] is None:
        return "no reset_at, expected one"
    at = at_utc(verdict["reset_at"])
    low, high = expect.reset
    return None if low <= at <= high else f"reset_at {verdict['reset_at']} outside {iso(low)} .. {iso(high)}"


def keep(agent: str, case: str, shots: list[str], expect: Expect, verdict: dict, source: str, now: datetime) -> None:
    """With AFD_REAL_CAPTURES set, keep the captures and the answer afd gave (checked against ``expect``)."""
    root = os.environ.get("AFD_REAL_CAPTURES")
    if not root:
        return
    folder = Path(root) / agent / case
    folder.mkdir(parents=True, exist_ok=True)
    for n, shot in enumerate(shots, 1):
        (folder / f"{n}.txt").write_text(shot, encoding="utf-8")
    answer = {"agent": agent, "limited": expect.limited,
              "reset_at": verdict["reset_at"] if expect.limited and expect.reset else None,
              "needs_human": expect.needs_human, "source": source, "now": iso(now)}
    if expect.reset:
        answer["reset_window"] = [iso(expect.reset[0]), iso(expect.reset[1])]
    (folder / "expect.json").write_text(json.dumps(answer, indent=1) + "\n", encoding="utf-8")


def around(at: datetime, delta: timedelta, rounding: timedelta, lag: timedelta = timedelta(seconds=90)) -> tuple[datetime, datetime]:
    """The window a reset ``delta`` after ``at`` is read in: the screen's ``rounding`` either way, and the
    ``lag`` between the API's answer and afd's capture (a relative reset is read against the capture)."""
    return at + delta - rounding, at + delta + rounding + lag


def iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def at_utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def answered_at(rig, api: str, prompt: str, status: int | None = None) -> datetime:
    """When the mock last answered a call carrying ``prompt`` (with ``status``)."""
    times = [r["at"] for r in rig.requests(api)
             if any(prompt in p for p in r["prompts"]) and (status is None or r["status"] == status)]
    assert times, f"the mock never saw {prompt!r}"
    return datetime.fromtimestamp(max(times), timezone.utc)
