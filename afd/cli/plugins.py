"""`afd plugins`: what is loaded, from where, and what failed."""

from __future__ import annotations

import argparse
from dataclasses import asdict

from afd.cli.common import load_effective, print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "plugins",
        help="list loaded detector plugins, the agents and hooks each provides, and any that failed",
        description="List every loaded plugin (built-in, entry point or drop-in file), the agents "
        "and hooks it provides, which built-in agents it overrides, and plugins that failed to load.",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--config", metavar="PATH", help="config file (default: the global one); gives plugins_dir")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # the human listing shows failures itself; with --json they also go to stderr
    config, plugins = load_effective(args.config, warn_failed_plugins=args.json)
    if args.json:
        print_json(
            {
                "plugins_dir": str(config.plugins_dir),
                "plugins": [asdict(p) for p in plugins.plugins],
                "agents": {name: plugins.owners[name] for name in sorted(plugins.agents)},
                "failed": [asdict(f) for f in plugins.failures],
            }
        )
        return 0

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from afd.display.text import cell, neutral

    console = Console(highlight=False, soft_wrap=True)
    if not console.is_terminal:
        # Piped, a row keeps its paths whole on one line (80 columns would fold them).
        console.width = 10_000
    table = Table(title="afd plugins", title_justify="left")
    for col in ("plugin", "source", "agents", "hooks"):
        table.add_column(col)
    # Folded rather than cropped to "…": a path must stay whole to be opened.
    table.add_column("from", overflow="fold")
    for p in plugins.plugins:
        # A drop-in names itself and its agents: text, never markup.
        agents = cell(", ".join(p.agents) or "-")
        if p.overrides:
            agents.append(neutral(f" overrides {', '.join(p.overrides)}"), style="yellow")
        table.add_row(cell(p.name), cell(p.source), agents, cell(", ".join(p.hooks)), cell(p.origin))
    console.print(table)
    console.print(f"drop-in folder: {config.plugins_dir}", markup=False)
    for f in plugins.failures:
        # Text, not markup: an error message may hold brackets rich would eat.
        console.print(Text.assemble(("failed", "red"), neutral(f" {f.name} ({f.source}, {f.origin}): {f.error}")))
    return 0
