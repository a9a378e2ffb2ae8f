"""The `afd` command line: parses arguments and hands each subcommand to its module."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from afd import __version__

# Re-exported: commands and scripts written against `afd.cli` keep working.
from afd.errors import EXIT_CONFIG, EXIT_DAEMON_DOWN, EXIT_FAIL, EXIT_OK, EXIT_USAGE, AfdError, UserError  # noqa: F401

# Each module has `register(subparsers)` that adds its parsers and sets `func`.
COMMAND_MODULES = (
    "afd.cli.run",
    "afd.cli.status",
    "afd.cli.detect",
    "afd.cli.sessions",
    "afd.cli.config",
    "afd.cli.plugins",
    "afd.cli.service",
    "afd.cli.doctor",
    "afd.cli.jobs",
    "afd.cli.help",
    "afd.cli.resume",
    "afd.cli.handoff",
    "afd.cli.demo",
    "afd.cli.notify",
    "afd.cli.web",
    "afd.cli.statusline",
    "afd.cli.usage",
    "afd.cli.queue",
    "afd.cli.hosts",
    "afd.cli.fleet",
    "afd.cli.remote",
)

# Which module registers each command: `afd status` imports afd.cli.status
# alone, not the twelve others and what they import (a test keeps this true).
COMMANDS = {
    "run": "afd.cli.run",
    "status": "afd.cli.status",
    "events": "afd.cli.status",
    "detect": "afd.cli.detect",
    "sessions": "afd.cli.sessions",
    "config": "afd.cli.config",
    "plugins": "afd.cli.plugins",
    "service": "afd.cli.service",
    "doctor": "afd.cli.doctor",
    "jobs": "afd.cli.jobs",
    "help": "afd.cli.help",
    "resume": "afd.cli.resume",
    "handoff": "afd.cli.handoff",
    "ledger": "afd.cli.handoff",
    "demo": "afd.cli.demo",
    "notify": "afd.cli.notify",
    "web": "afd.cli.web",
    "statusline": "afd.cli.statusline",
    "usage": "afd.cli.usage",
    "queue": "afd.cli.queue",
    "hosts": "afd.cli.hosts",
    "fleet": "afd.cli.fleet",
    "remote": "afd.cli.remote",
}


def _columns() -> int:
    """The terminal's width as shutil.get_terminal_size() finds it ($COLUMNS, then stdout's terminal, else 80)."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]  # None is caught below
    except (AttributeError, ValueError, OSError):
        return 80


class _HelpFormatter(argparse.HelpFormatter):
    # argparse makes a formatter for every add_argument, and its default
    # sizing imports shutil and, behind it, zlib, bz2 and lzma: a few ms on
    # every command, `afd status` included, for a width only --help uses.
    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None):
        super().__init__(prog, indent_increment, max_help_position, _columns() if width is None else width)


class _ArgumentParser(argparse.ArgumentParser):
    # Subparsers are made with the parent's class, so they get this formatter too.
    def __init__(self, *args, formatter_class=_HelpFormatter, **kwargs):
        super().__init__(*args, formatter_class=formatter_class, **kwargs)  # type: ignore[misc]


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of `command` alone when it is one."""
    parser = _ArgumentParser(
        prog="afd",
        description="Watch coding agents in tmux; when one stalls at its usage limit, "
        "wait for the reset or hand the work to another agent in place.",
    )
    parser.add_argument("--version", action="version", version=f"afd {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    only = COMMANDS.get(command or "")
    for name in (only,) if only else COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue  # a command not built yet
        module.register(sub)
    return parser


def _command_word(argv: list[str]) -> str | None:
    """The command named on the line, if it comes first (afd has no options that take a value before it)."""
    return argv[0] if argv and not argv[0].startswith("-") else None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["statusline"] and argv[1:2] in ([], ["--"]):
        # Claude Code runs this on every refresh of its status line: no parser, nothing it does not need.
        from afd.cli.statusline import relay

        return relay(argv[1:])
    parser = build_parser(_command_word(argv))
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(args.func(args) or 0)
    except AfdError as exc:
        from afd.display.reader import Reader

        # An error may quote a name, a pane or an endpoint; its instants are ISO UTC (a refusal's "until").
        print(f"afd: {Reader.here().says(str(exc), lines=True)}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
