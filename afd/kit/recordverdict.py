"""From an agent's own session records to a witness verdict: the rule every record witness shares.

Each agent's plugin says what a wall, a prompt and progress look like in its
records, and where the reset is; the reading of the timeline is the same for
all: the latest wall written while this process ran, not followed by
progress, is a limit; progress at or after the banner's appearance shows
the conversation went on; anything else says nothing.

A prompt recorded after the wall (a continuation afd typed, or the person's
own) moves the verdict past that wall: unknown until the agent answers. Not
"not limited": a prompt shows that someone went on, not that the plan has
room (a plan still walled answers it with a new rejection, which is a limit
again). And no longer "limited": the wall it stood at was answered, and a
real agent writes its answer only when a content block completes, so until
then the records would call a working agent limited.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from afd.kit.recordtail import TailCache, parse_instant
from afd.model import AgentProcess, WitnessState, WitnessVerdict

# psutil's start time and a record's clock can differ by rounding.
SLACK = timedelta(seconds=1)
# Claude continues by itself 30-90 s after a reset; a wall whose reset passed
# well before now is a conversation left standing, not a limit.
OUTLIVED = timedelta(minutes=15)

Record = dict
# (the records up to and including the wall, oldest first) -> (reset, window kind)
WallReset = Callable[[list[Record]], tuple[datetime | None, str | None]]


def verdict_of(
    records: Iterable[object],
    *,
    is_wall: Callable[[Record], bool],
    is_progress: Callable[[Record], bool],
    wall_reset: WallReset,
    since: datetime | None,
    until: datetime,
    record: str | None = None,
    is_prompt: Callable[[Record], bool] = lambda r: False,
) -> WitnessVerdict:
    """The verdict of records, oldest first, that fall in ``[since, until]`` (``since`` None: no lower bound).

    Claude Code and Codex record every wall they show, so a process whose
    records go on with no wall was not stopped by one, whatever its pane
    shows; records from before ``since`` (an earlier run of a resumed
    conversation) are not evidence either way.
    """
    floor = since - SLACK if since is not None else None
    timed: list[tuple[datetime, Any]] = []
    for r in records:
        t = parse_instant(r.get("timestamp")) if isinstance(r, dict) else None
        if t is not None and t <= until and (floor is None or t >= floor):
            timed.append((t, r))
    wall_i = None
    for i, (_t, r) in enumerate(timed):
        if is_wall(r):
            wall_i = i
    after = timed[wall_i + 1 :] if wall_i is not None else timed
    progress = [t for t, r in after if is_progress(r)]
    prompts = [t for t, r in after if is_prompt(r)] if wall_i is not None else []
    if wall_i is not None and not progress and prompts:
        return WitnessVerdict(WitnessState.UNKNOWN, "a prompt went in after its usage-limit rejection, and the agent has "
                                                    "not answered yet", record=record, at=prompts[-1])
    if wall_i is not None and not progress:
        at = timed[wall_i][0]
        reset, window = wall_reset([r for _, r in timed[: wall_i + 1]])
        if reset is not None and reset + OUTLIVED < until:
            return WitnessVerdict(WitnessState.UNKNOWN, "the recorded wall's reset time passed long ago", record=record, at=at)
        return WitnessVerdict(
            WitnessState.LIMITED, "the agent's latest record is a usage-limit rejection", reset, window, record, at
        )
    if progress:
        why = "the agent went on after its usage-limit rejection" if wall_i is not None else (
            "the agent's records show it going on with no usage-limit rejection"
        )
        return WitnessVerdict(WitnessState.NOT_LIMITED, why, record=record, at=progress[-1])
    return WitnessVerdict(WitnessState.UNKNOWN, "the agent's records say nothing either way", record=record)


# A full listing of a folder is taken again after this long, or at once when
# a file is added or removed; in between only its newest files are looked at
# again. A project folder can hold hundreds of old conversations.
LIST_AGAIN_AFTER = 10.0  # seconds
_listings: dict[tuple[Path, str], tuple[int, float, list[Path]]] = {}


def _listing(folder: Path, pattern: str, most: int) -> list[Path]:
    """The ``most`` newest files of ``folder`` matching ``pattern`` as of the last full listing."""
    try:
        folder_mtime = folder.stat().st_mtime_ns
    except OSError:
        return []
    key = (folder, pattern)
    now = time.monotonic()
    hit = _listings.get(key)
    if hit is not None and hit[0] == folder_mtime and now - hit[1] < LIST_AGAIN_AFTER:
        return hit[2]
    files = []
    for path in folder.glob(pattern):
        try:
            files.append((path.stat().st_mtime, path))
        except OSError:
            continue
    files.sort(reverse=True)
    newest = [path for _, path in files[:most]]
    _listings[key] = (folder_mtime, now, newest)
    return newest


def recent_files(folders: Iterable[Path], pattern: str, start: datetime | None, most: int) -> list[Path]:
    """Files matching ``pattern`` in ``folders``, newest first, at most ``most``, none older than ``start``.

    A file last written before the process started holds nothing this
    process did.
    """
    files = []
    for folder in folders:
        for path in _listing(folder, pattern, most):
            try:
                files.append((path.stat().st_mtime, path))
            except OSError:
                continue
    files.sort(reverse=True)
    floor = start.timestamp() - SLACK.total_seconds() if start is not None else None
    return [path for mtime, path in files[:most] if floor is None or mtime >= floor]


def read_verdict(
    cache: TailCache,
    process: AgentProcess,
    record: Path | None,
    find: Callable[[AgentProcess], Path | None],
    verdict: Callable[..., WitnessVerdict],
    since: datetime | None,
    until: datetime,
) -> WitnessVerdict:
    """Find the process's record file (or take ``record``), read its tail, and judge it with ``verdict``."""
    path = Path(record) if record is not None else find(process)
    if path is None:
        return WitnessVerdict(WitnessState.UNKNOWN, "no session record of this agent was found")
    try:
        tail = cache.tail(path)
    except OSError as exc:
        return WitnessVerdict(WitnessState.UNKNOWN, f"cannot read {path}: {exc.strerror or exc}", record=str(path))
    return verdict(tail.records, path, since, until)
