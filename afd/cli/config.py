"""`afd config`: check, show, locate and edit the one global config file."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from afd.cli.common import print_json
from afd.errors import EXIT_FAIL, EXIT_OK, EXIT_USAGE, UserError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from afd.config.settings import Config, ConfigProblem
    from afd.model import AgentSpec

# afd.config.settings (tomlkit, the regex package) is imported by the functions
# that use it, so that `afd --help`, which registers every command, does not load it.

_CONFIG_HELP = "config file to use instead of the global one ($XDG_CONFIG_HOME/afd/config.toml)"


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "config",
        help="check, show, locate or edit afd's config file",
        description="afd reads one global config file, $XDG_CONFIG_HOME/afd/config.toml "
        "(or --config PATH), never a file in the current directory or a repository. "
        "With no file, safe defaults apply: nothing is resumed or handed off unattended.",
    )
    commands = parser.add_subparsers(dest="config_command", metavar="SUBCOMMAND", required=True)

    check = commands.add_parser(
        "check",
        help="validate the config; list every problem with its line",
        description="Validate the config file: TOML syntax, key names, types, durations, agent names "
        "and limit_patterns regexes. Prints ok and exits 0, or prints every problem, one per line, and exits 1.",
    )
    check.add_argument("--config", metavar="PATH", help=_CONFIG_HELP)
    check.set_defaults(func=run_check)

    show = commands.add_parser(
        "show",
        help="print every key's effective value and whether it comes from the file or the defaults",
        description="Print every key with its effective value and its source (file or default). "
        "Values are shown as the config file writes them (durations as strings such as \"2s\"). "
        "A notifier's URL shows only its scheme and host unless --show-secrets is given.",
    )
    show.add_argument("--config", metavar="PATH", help=_CONFIG_HELP)
    show.add_argument(
        "--json", action="store_true", help='print one JSON object: {"KEY": {"value": ..., "source": "default"|"file"}}'
    )
    show.add_argument(
        "--show-secrets", action="store_true",
        help="show notifiers' URLs whole (by default their path and query, a webhook's key or an ntfy topic, are redacted)",
    )
    show.set_defaults(func=run_show)

    path = commands.add_parser(
        "path",
        help="print the path of the config file afd reads, and whether it exists",
        description="Print the path of the config file afd would read and whether it exists.",
    )
    path.add_argument("--config", metavar="PATH", help=_CONFIG_HELP)
    path.add_argument("--json", action="store_true", help='print one JSON object: {"path": ..., "exists": ...}')
    path.set_defaults(func=run_path)

    setter = commands.add_parser(
        "set",
        help="set one key in the config file, keeping its comments and order",
        description="Set KEY to VALUE in the config file, creating the file if it is absent. "
        "VALUE is TOML ('[\"codex\"]', true, 3, '\"2s\"'); a bare word is taken as a string. "
        "Use dotted keys for tables: tmux.socket_name, agents.codex.command, limit_patterns.codex. "
        "The whole resulting file is validated first; if it has any problem nothing is written.",
    )
    setter.add_argument("key", metavar="KEY", help="the key, dotted for tables (e.g. agents.codex.command)")
    setter.add_argument("value", metavar="VALUE", help="the value in TOML syntax, or a bare word for a string")
    setter.add_argument("--config", metavar="PATH", help=_CONFIG_HELP)
    setter.set_defaults(func=run_set)


def _explicit_path(args: argparse.Namespace) -> Path | None:
    """The --config path, which unlike the default path must exist."""
    if not args.config:
        return None
    path = Path(args.config).expanduser()
    if not path.exists():
        raise UserError(f"{path}: no such config file (only the default path may be absent)", EXIT_USAGE)
    return path


def _known_agents(config: Config, *, warn: bool = False) -> Mapping[str, AgentSpec]:
    """The agent names the config's plugins provide; with ``warn``, a skipped plugin is said on stderr."""
    from afd.pluginset import load_for_config

    plugins = load_for_config(config)
    if warn:
        # A broken drop-in's agents are missing from the names checked against.
        for failure in plugins.failures:
            print(f"afd: warning: plugin {failure.name} ({failure.origin}) was skipped: {failure.error}", file=sys.stderr)
    return plugins.agents  # the specs too: an account is checked against its agent's variables


def _problems(path: Path | None, *, warn: bool = False) -> list[ConfigProblem]:
    """Every problem in the config, agent names included."""
    from afd.config.settings import ConfigError, load_config

    try:
        config = load_config(path)
    except ConfigError as exc:
        if exc.partial is None:
            return exc.problems  # a syntax error: nothing more can be read
        config = exc.partial  # the second pass below reports these problems again, with the agent names
    # Agent names are checked only now: plugins_dir, which says which plugins
    # (and so which agents) exist, comes from the file itself.
    known = _known_agents(config, warn=warn)
    try:
        load_config(path, known_agents=known)
    except ConfigError as exc:
        return exc.problems
    return []


def _valid_config(path: Path | None) -> Config:
    from afd.config.settings import load_config

    problems = _problems(path)
    if problems:
        raise UserError("the config has problems:\n" + "\n".join(str(p) for p in problems), EXIT_FAIL)
    return load_config(path)


def run_check(args: argparse.Namespace) -> int:
    from afd.config.settings import default_config_path

    path = _explicit_path(args)
    problems = _problems(path, warn=True)
    if problems:
        for problem in problems:
            print(problem)
        return EXIT_FAIL
    shown = path or default_config_path()
    if shown.exists():
        print(f"ok: {shown}")
    else:
        print(f"ok: {shown} does not exist, so the defaults are in force")
    return EXIT_OK


def run_show(args: argparse.Namespace) -> int:
    from afd.config.settings import default_config_path, effective_items

    config = _valid_config(_explicit_path(args))
    items = effective_items(config, show_secrets=args.show_secrets)
    if args.json:
        print_json({key: {"value": value, "source": source} for key, value, source in items})
        return EXIT_OK

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    source = str(config.path) if config.path else f"{default_config_path()} (absent: all defaults)"
    table = Table(title=Text(f"afd config: {source}"), title_justify="left")
    table.add_column("key")
    table.add_column("value")
    table.add_column("source")
    for key, value, origin in items:
        shown = "(not set)" if value is None else json.dumps(value, ensure_ascii=False)
        style = "bold" if origin == "file" else "dim"
        table.add_row(Text(key, style=style), Text(shown, style=style), Text(origin, style=style))
    Console(highlight=False).print(table)
    return EXIT_OK


def run_path(args: argparse.Namespace) -> int:
    from afd.config.settings import default_config_path

    path = Path(args.config).expanduser() if args.config else default_config_path()
    exists = path.is_file()
    if args.json:
        print_json({"path": str(path), "exists": exists})
    elif exists:
        print(f"{path} (exists)")
    elif args.config:
        # Only the default path may be absent; afd refuses a missing --config.
        print(f"{path} (does not exist; afd refuses a --config file that is missing)")
    else:
        print(f"{path} (does not exist; the defaults are in force)")
    return EXIT_OK


def run_set(args: argparse.Namespace) -> int:
    from afd.config.settings import Config, ConfigError, default_config_path, effective_items, load_config, set_value

    path = Path(args.config).expanduser() if args.config else default_config_path()
    # Agent names are checked against the plugins the current file asks for.
    try:
        current: Config | None = load_config(path) if path.exists() else Config()
    except ConfigError as exc:
        current = exc.partial
    known = _known_agents(current) if current is not None else None
    existed = path.exists()
    try:
        config = set_value(path, args.key, args.value, known_agents=known)
    except ConfigError as exc:
        outcome = "left unchanged" if existed else "not created"
        print(f"afd: {path} {outcome}:", file=sys.stderr)
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return EXIT_FAIL
    shown = {key: value for key, value, _ in effective_items(config)}
    if args.key in shown:
        print(f"{args.key} = {json.dumps(shown[args.key], ensure_ascii=False)} in {path}")
    else:
        print(f"{args.key} set in {path}")
    return EXIT_OK
