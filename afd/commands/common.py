"""What several commands share: loading the effective config and plugins, printing JSON."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from afd.cli import EXIT_USAGE, UserError


def load_effective(config_path: str | None):
    """The config (explicit path or the global default) and the plugins it asks for.

    A syntax or validation error is a UserError naming file and line.
    """
    from afd.config import ConfigError, load_config
    from afd.loader import load_for_config

    path = Path(config_path) if config_path else None
    try:
        config = load_config(path)
    except ConfigError as exc:
        raise UserError("\n".join(str(p) for p in exc.problems), EXIT_USAGE) from None
    plugins = load_for_config(config)
    for failure in plugins.failures:
        print(f"afd: warning: plugin {failure.name} ({failure.origin}) was skipped: {failure.error}", file=sys.stderr)
    return config, plugins


def compiled_pattern(config, agent: str) -> re.Pattern[str] | None:
    """The user's `[limit_patterns]` regex for an agent; a bad one warns and keeps the built-in."""
    raw = (config.limit_patterns or {}).get(agent)
    if not raw:
        return None
    try:
        return re.compile(raw)
    except re.error as exc:
        print(f"afd: warning: limit_patterns.{agent}: {exc}; using the built-in pattern", file=sys.stderr)
        return None


def print_json(value) -> None:
    json.dump(value, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


def iso_utc(value) -> str | None:
    if value is None:
        return None
    from datetime import timezone

    return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
