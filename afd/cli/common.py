"""What several commands share: loading the effective config and plugins, printing JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from afd.errors import EXIT_USAGE, UserError

if TYPE_CHECKING:
    from afd.config.userpattern import UserPattern


def load_effective(config_path: str | None, *, warn_failed_plugins: bool = True):
    """The config (explicit path or the global default) and the plugins it asks for.

    A syntax or validation error is a UserError naming file and line.
    """
    from afd.config.settings import ConfigError
    from afd.pluginset import load_config_and_plugins

    try:
        config, plugins = load_config_and_plugins(Path(config_path) if config_path else None)
    except ConfigError as exc:
        raise UserError("\n".join(str(p) for p in exc.problems), EXIT_USAGE) from None
    for warning in config.warnings:
        print(f"afd: warning: {warning}; the built-in pattern stays in force", file=sys.stderr)
    for failure in plugins.failures if warn_failed_plugins else ():
        print(f"afd: warning: plugin {failure.name} ({failure.origin}) was skipped: {failure.error}", file=sys.stderr)
    return config, plugins


def compiled_pattern(config, agent: str) -> UserPattern | None:
    """The user's `[limit_patterns]` regex for an agent (a bad one was dropped, with a warning, at load)."""
    from afd.config.settings import compiled_limit_patterns

    return compiled_limit_patterns(config).get(agent)


def add_server_options(parser, default: str) -> None:
    """`-L NAME` / `-S PATH`: which tmux server, as tmux itself spells it."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument("-L", dest="socket_name", metavar="SOCKET_NAME", help=f"tmux server socket name, as tmux -L (default: {default})")
    where.add_argument("-S", dest="socket_path", metavar="SOCKET_PATH", help="tmux server socket path, as tmux -S")


def count(text: str) -> int:
    """An argparse type: a whole number, zero or more."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative; give 0 or more")
    return value


def print_json(value) -> None:
    """`value` as JSON: indented on a terminal, one line for a program (a pipe, a file).

    The indenting encoder is json's pure-Python one, several times slower
    than its C encoder: for a status of 200 sessions that is most of the
    time `afd status --json` spends beyond starting Python.
    """
    indent = 2 if sys.stdout.isatty() else None
    # One write: json.dump writes each token on its own, thousands of calls for a big status.
    sys.stdout.write(json.dumps(value, indent=indent, ensure_ascii=False) + "\n")


def iso_utc(value) -> str | None:
    if value is None:
        return None
    from datetime import timezone

    return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
