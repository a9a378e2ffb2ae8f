"""`afd statusline`: Claude Code's statusLine command that hands afd the account's exact usage figures.

    afd statusline                    # a short line of its own
    afd statusline -- CMD ARGS...     # the user's own status line, its output unchanged

Claude Code runs it on every refresh of its status line, with a JSON object
on stdin. It records what afd keeps of that object for the session's
account (`afd.observe.statusline`) and passes the same bytes to the user's
command, whose output, stderr and exit status pass through untouched. It
never fails, blocks or slows the status line on afd's account: whatever
goes wrong in recording is swallowed, the user's command is started before
anything is recorded, and nothing here opens the store or asks the daemon.

`install` and `uninstall` edit that account's `settings.json`
(`afd.cli.statusline_settings`).
"""

from __future__ import annotations

import argparse  # already imported by afd.cli.main: free here
import os
import sys

PIPE_CHUNK = 65536


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "statusline",
        help="Claude Code's statusLine command: records the account's usage figures for afd",
        description="Run by Claude Code on every refresh of its status line, with its JSON on stdin: records the "
        "rate limits, prompt cache and session identity for the session's account (a 0600 file in afd's runtime "
        "dir that the daemon reads; it works with the daemon down), then runs your own status-line command "
        "(`afd statusline -- CMD ARGS...`) on the same stdin and prints its output unchanged, or prints a short "
        "line of its own. `afd statusline install` puts it in an account's settings.json.",
    )
    p.add_argument("command", nargs="*", metavar="-- CMD ARGS", help="your own status-line command, after --")
    p.set_defaults(func=lambda args: relay(list(args.command)))
    actions = p.add_subparsers(dest="statusline_action", metavar="ACTION")
    for name, verb in (("install", "put `afd statusline` in"), ("uninstall", "take `afd statusline` out of")):
        a = actions.add_parser(
            name,
            help=f"{verb} an account's Claude Code settings.json",
            description=f"{verb[0].upper()}{verb[1:]} the statusLine of a Claude Code account's settings.json "
            "(under its CLAUDE_CONFIG_DIR; ~/.claude for the default account), keeping every other key. "
            + ("A statusLine command of your own is kept: it runs as `afd statusline -- sh -c '…'` and shows what it "
               "showed. " if name == "install" else "Your own statusLine command, if afd wrapped one, is put back. ")
            + "A backup of the file is written first, and what changed is printed.",
        )
        a.add_argument("--account", metavar="NAME", default=None,
                       help="the Claude Code account: `claude` (its default, ~/.claude) or an [accounts.NAME] of the "
                       "config (default: claude)")
        a.add_argument("--config", metavar="PATH", help="config file (default: the global one)")
        a.add_argument("--json", action="store_true", help="print what changed as one JSON object")
        a.set_defaults(func=_edit, action_name=name)


def _edit(args: argparse.Namespace) -> int:
    from afd.cli.statusline_settings import run

    return run(args)


def relay(command: list[str]) -> int:
    """The status line itself: record, and run the user's command on the same stdin (its exit status is ours)."""
    if command[:1] == ["--"]:
        command = command[1:]
    data = _stdin()
    pid = write_end = None
    code = 0
    if command:
        try:
            pid, write_end = _spawn(command)
        except OSError as exc:
            print(f"afd statusline: cannot run {command[0]}: {exc.strerror or exc}", file=sys.stderr)
            code = 127
    fed = False
    if write_end is not None and len(data) <= PIPE_CHUNK:
        _feed(write_end, data)  # it fits in the pipe: the command starts on it while afd records
        fed = True
    figures = _record(data)
    if write_end is not None and not fed:
        _feed(write_end, data)
    if pid is not None:
        code = _wait(pid)
    elif not command:
        _own_line(figures)
    return code


def _stdin() -> bytes:
    stream = sys.stdin
    try:
        if stream is None or stream.isatty():
            return b""  # run by hand: there is no payload to wait for
        return stream.buffer.read()
    except (OSError, ValueError):
        return b""


def _spawn(command: list[str]) -> tuple[int, int]:
    read_end, write_end = os.pipe()
    try:
        pid = os.posix_spawnp(command[0], command, os.environ, file_actions=[
            (os.POSIX_SPAWN_DUP2, read_end, 0), (os.POSIX_SPAWN_CLOSE, write_end)])
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    return pid, write_end


def _feed(fd: int, data: bytes) -> None:
    """All of `data` to the command's stdin, then its end; a command that stops reading is its own business."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except OSError:
        pass
    finally:
        os.close(fd)


def _wait(pid: int) -> int:
    while True:
        try:
            _, status = os.waitpid(pid, 0)
        except InterruptedError:
            continue
        except ChildProcessError:
            return 0
        code = os.waitstatus_to_exitcode(status)
        return 128 - code if code < 0 else code  # killed by a signal: as a shell reports it


def _record(data: bytes) -> dict | None:
    """Keep the payload for afd; never raise (the status line must show whatever happens here)."""
    if not data:
        return None
    try:
        import json

        from afd.observe import statusline

        payload = json.loads(data)
        if not isinstance(payload, dict):
            return None
        statusline.record(payload, dict(os.environ), statusline.folder())
        return payload
    except Exception:  # noqa: BLE001 - a status line that fails would show nothing at all
        return None


def _own_line(payload: dict | None) -> None:
    """A short line: the model and each window's use, with the reset in the person's zone."""
    import time

    parts = []
    if payload is not None:
        model = payload.get("model")
        if isinstance(model, dict) and isinstance(model.get("display_name"), str):
            parts.append(model["display_name"])
        limits = payload.get("rate_limits")
        for name, label in (("five_hour", "5h"), ("seven_day", "7d"), ("spend_limit", "spend")):
            window = limits.get(name) if isinstance(limits, dict) else None
            used = window.get("used_percentage") if isinstance(window, dict) else None
            reset = window.get("resets_at") if isinstance(window, dict) else None
            if isinstance(used, (int, float)) and not isinstance(used, bool) and used != reset and 0 <= used <= 10_000:
                text = f"{label} {used:.0f}%"
                if isinstance(reset, (int, float)) and reset > 0:
                    text += " ↻" + time.strftime("%H:%M", time.localtime(reset))
                parts.append(text)
        if not isinstance(limits, dict):
            parts.append("usage not reported yet")
    print(" · ".join(parts) if parts else "afd", flush=True)
