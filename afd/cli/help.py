"""`afd help agents`: the usage reference an agent reads to learn the jobs verbs."""

from __future__ import annotations

import argparse
import sys

from afd.cli.main import EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("help", help="references written for agents", description="Print a usage reference.")
    p.add_argument("topic", choices=["agents"], help="agents: what jobs are and the commands an agent in a session uses")
    p.add_argument("--config", metavar="PATH", help="config file (default: the global one); gives plugins_dir and accounts")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from afd.jobs.rules import agent_help

    agents, accounts = _startable(args.config)
    print(agent_help(agents, accounts), end="")
    return EXIT_OK


def _startable(config_path: str | None) -> tuple[list[str], list[str]]:
    """The agents the plugin manager loads and the accounts the config names.

    An agent reading this cannot fix the person's config: a broken one still
    gets the reference, with the agents afd ships and what is installed.
    """
    from pathlib import Path

    from afd.config.settings import ConfigError
    from afd.pluginset import load_config_and_plugins, load_plugins

    try:
        config, plugins = load_config_and_plugins(Path(config_path) if config_path else None)
    except ConfigError as exc:
        print(f"afd: warning: the config has problems ({exc.problems[0]}); listing the agents afd ships",
              file=sys.stderr)
        return sorted(load_plugins(None).agents), []
    return sorted(plugins.agents), list(config.accounts)
