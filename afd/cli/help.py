"""`afd help agents`: the usage reference an agent reads to learn the jobs verbs."""

from __future__ import annotations

import argparse

from afd.cli.main import EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("help", help="references written for agents", description="Print a usage reference.")
    p.add_argument("topic", choices=["agents"], help="agents: what jobs are and the commands an agent in a session uses")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from afd.jobs.rules import AGENT_HELP

    print(AGENT_HELP, end="")
    return EXIT_OK
