"""`afd detect`: run the detectors and both gates over saved captures of one pane."""

from __future__ import annotations

import argparse
import os
import stat
from datetime import datetime, timezone
from pathlib import Path

from afd.cli.common import compiled_pattern, iso_utc, load_effective, print_json
from afd.errors import EXIT_USAGE, UserError

# The detectors, gates and plugin values are imported where they are used, so
# that `afd --help` (which registers every command) does not load them.


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "detect",
        help="judge saved pane captures: is the agent stalled at its usage limit?",
        description="Run the detectors and the tail and stability gates over captures of one pane, "
        "one file per poll, oldest first, with the effective config.",
    )
    p.add_argument("--agent", required=True, metavar="NAME", help="the agent running in the pane (claude, codex, devin, …)")
    p.add_argument("--now", metavar="ISO8601", help="the instant to judge by (default: now); a time without a zone is local")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--config", metavar="PATH", help="config file (default: the global one)")
    p.add_argument(
        "--record", metavar="FILE",
        help="the agent's own session record (a Claude transcript or a Codex rollout) to combine with the captures",
    )
    p.add_argument("files", nargs="+", metavar="CAPTURE_FILE", help="pane captures, oldest first")
    p.set_defaults(func=run)


def parse_now(text: str | None, zone) -> datetime:
    if text is None:
        return datetime.now(timezone.utc)
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UserError(f"--now: {text!r} is not an ISO 8601 time (e.g. 2026-07-13T09:00:00Z)", EXIT_USAGE) from None
    value = value if value.tzinfo else value.replace(tzinfo=zone)
    try:
        value.astimezone(timezone.utc)
    except OverflowError:  # 9999-12-31T23:59-12:00 is past the last instant UTC can hold
        raise UserError(f"--now: {text!r} is outside the range of times afd can judge by", EXIT_USAGE) from None
    return value


# More than any screen holds (500 rows of 500 cells, 4 bytes each): what
# lies above it cannot be on screen, and so cannot be a wall the agent is at.
MAX_CAPTURE_BYTES = 1 << 20
# A pipe or device is read through (its end is the screen's bottom) up to
# this much, keeping only the tail: `/dev/zero` must end, not fill memory.
MAX_STREAM_BYTES = 64 << 20


def read_tail(name: str) -> bytes:
    """The last MAX_CAPTURE_BYTES of a capture file, starting on a whole row."""
    with open(name, "rb") as f:
        info = os.fstat(f.fileno())
        size = info.st_size
        if stat.S_ISREG(info.st_mode):
            f.seek(max(size - MAX_CAPTURE_BYTES, 0))
            data, cut = f.read(MAX_CAPTURE_BYTES), size > MAX_CAPTURE_BYTES
        else:
            tail, total = bytearray(), 0
            while chunk := f.read(1 << 16):
                total += len(chunk)
                if total > MAX_STREAM_BYTES:
                    raise UserError(f"{name}: more than {MAX_STREAM_BYTES >> 20} MiB without an end: not a pane capture", EXIT_USAGE)
                tail += chunk
                del tail[: max(len(tail) - MAX_CAPTURE_BYTES, 0)]
            data, cut = bytes(tail), total > MAX_CAPTURE_BYTES
    return data.split(b"\n", 1)[-1] if cut else data


def read_captures(files: list[str]) -> list[list[str]]:
    from afd.kit.text import capture_rows, decode_capture

    captures = []
    for name in files:
        try:
            data = read_tail(name)
        except FileNotFoundError:
            raise UserError(f"{name}: no such capture file", EXIT_USAGE) from None
        except IsADirectoryError:
            raise UserError(f"{name}: is a directory, not a capture file", EXIT_USAGE) from None
        except OSError as exc:
            raise UserError(f"{name}: cannot read: {exc.strerror}", EXIT_USAGE) from None
        captures.append(capture_rows(decode_capture(data)))
    return captures


def run(args: argparse.Namespace) -> int:
    from afd.judge.gates import chrome_of, compared_content, judge
    from afd.kit.resettime import local_zone
    from afd.model import Clock

    zone = local_zone()
    now = parse_now(args.now, zone)
    captures = read_captures(args.files)
    config, plugins = load_effective(args.config)
    spec = plugins.agents.get(args.agent)
    if spec is None:
        known = ", ".join(sorted(plugins.agents)) or "none"
        raise UserError(f"--agent: {args.agent!r} is not an agent any plugin provides (known: {known})", EXIT_USAGE)

    clock = Clock(now=now, local_zone=zone)
    pattern = compiled_pattern(config, args.agent)
    detections = [plugins.detect(args.agent, rows, clock, pattern) for rows in captures]
    # Each capture with its own chrome (an input box found by its shape moves with what is typed in it), as the daemon does.
    chromes = [chrome_of(spec, rows) for rows in captures]
    verdict = judge(
        args.agent,
        captures,
        detections,
        chromes[-1] if chromes else spec.chrome,
        tail_lines=config.tail_lines,
        stability_polls=config.stability_polls,
        contents=[compared_content(rows, found, chrome, spec.volatile)
                  for rows, found, chrome in zip(captures, detections, chromes, strict=True)],
    )
    found = verdict.detection
    result = {
        "agent": args.agent,
        "hit": verdict.hit,
        "anchored": verdict.anchored,
        "stable": verdict.stable,
        "limited": verdict.limited,
        # The reset of a wall the agent is stalled at; a banner that is not a
        # limit (quoted, worked past, changing) has none to report.
        "reset_at": iso_utc(verdict.reset_at) if verdict.limited else None,
        "has_reset_time": verdict.limited and verdict.reset_at is not None,
        # A wall the agent is stalled at that names no reset and offers no
        # other model (`afd.model.person_must_act`): a person has to act.
        "needs_human": verdict.limited and found is not None and found.needs_human,
        # A wall with no reset that offers another model: nothing to wait for.
        "offers_other_model": verdict.limited and found is not None and found.offers_other_model,
        "banner_reset_at": iso_utc(verdict.reset_at),
        "banner": found.banner if found else None,
        "kind": found.kind if found else None,
        "reason": verdict.reason,
        "captures": len(captures),
        "now": iso_utc(now),
    }
    if args.record is not None:
        result.update(_second_witness(plugins, args.agent, Path(args.record), verdict, captures, spec, now))
    if args.json:
        print_json(result)
    else:
        _print_human(result, now)
    return 0


def _second_witness(plugins, agent: str, record: Path, verdict, captures, spec, now: datetime) -> dict:
    from afd.judge.gates import chrome_of, content_of, same_content
    from afd.model import AgentProcess

    """The record file's verdict and how it combines with the captures' (``--record``)."""
    from afd.judge.witness import combine

    if not record.is_file():
        raise UserError(f"--record: {record}: no such record file", EXIT_USAGE)
    # Offline there is no process to date the records against: every record
    # up to --now is evidence.
    found = plugins.witness(agent, AgentProcess(pid=None, cwd=None, start_time=None), None, now, record)
    if found is None:
        raise UserError(f"--record: no plugin reads {agent}'s own records (only the pane can witness its limit)", EXIT_USAGE)
    volatile = spec.volatile if verdict.hit else ()  # masked only while a wall is on screen, as the gates do
    idle = len(captures) >= 2 and same_content(
        content_of(captures[-1], chrome_of(spec, captures[-1]), volatile),
        content_of(captures[-2], chrome_of(spec, captures[-2]), volatile),
    )
    pane_reset = verdict.reset_at if verdict.limited else None
    combined = combine(verdict.limited, pane_reset, found, pane_idle=idle)
    return {
        "pane_limited": verdict.limited,
        "limited": combined.limited,
        "reset_at": iso_utc(combined.reset_at) if combined.limited else None,
        "has_reset_time": combined.limited and combined.reset_at is not None,
        "witnesses": combined.witnesses.value if combined.witnesses else None,
        "record": {
            "file": str(record),
            "state": found.state.value,
            "reset_at": iso_utc(found.reset_at),
            "window": found.window,
            "at": iso_utc(found.at),
            "why": found.why,
        },
        "reason": combined.why if combined.witnesses else verdict.reason,
    }


def _print_human(result: dict, now) -> None:
    from rich.console import Console
    from rich.markup import escape

    from afd.display.reader import Reader

    reader = Reader.here(now)  # countdowns from --now, when given
    console = Console(highlight=False, soft_wrap=True)
    if result.get("witnesses") == "disputed":
        head = "[yellow]banner disputed by the agent's records, not limited[/]"
    elif result["limited"]:
        head = "[bold red]limited[/]"
    elif result["hit"]:
        head = "[yellow]banner seen, not limited[/]"
    else:
        head = "[green]not limited[/]"
    console.print(f"{escape(reader.says(result['agent']))}: {head}")
    # The banner is a pane's text, the reason quotes it: neutral, and instants in the reader's zone (--json keeps UTC).
    if result["banner"]:
        console.print(f"  banner: {reader.says(result['banner'])}", markup=False)
    if result["limited"]:
        console.print(f"  reset:  {reader.at(result['reset_at']) or 'not stated'}", markup=False)
    if result["needs_human"]:
        console.print("  [bold]needs a human[/]: the wall names no reset; a limit, credits or an admin must lift it")
    console.print(f"  why:    {reader.says(result['reason'])}", markup=False)
    if "record" in result:
        rec = result["record"]
        console.print(f"  record: {rec['state']} ({reader.says(rec['why'])})", markup=False)
        console.print(f"  witnesses: {result['witnesses'] or '-'}", markup=False)
