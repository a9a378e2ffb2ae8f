"""The `afd` command line: parses arguments and hands each subcommand to its module."""

from __future__ import annotations

import argparse
import importlib
import sys

from afd import __version__

# Re-exported: commands and scripts written against `afd.cli` keep working.
from afd.errors import EXIT_CONFIG, EXIT_DAEMON_DOWN, EXIT_FAIL, EXIT_OK, EXIT_USAGE, UserError  # noqa: F401

# Each module has `register(subparsers)` that adds its parser and sets `func`.
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
    "afd.cli.web",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="afd",
        description="Watch coding agents in tmux; when one stalls at its usage limit, "
        "wait for the reset or hand the work to another agent in place.",
    )
    parser.add_argument("--version", action="version", version=f"afd {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue  # a command not built yet
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"afd: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
