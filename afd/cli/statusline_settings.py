"""`afd statusline install` / `uninstall`: afd's command in a Claude Code account's settings.json, and out again.

Claude Code reads its user settings from `settings.json` in its config
directory (`CLAUDE_CONFIG_DIR`, `~/.claude` by default), and its
`statusLine.command` is a shell string. Installing keeps every other key
and the user's own command: `afd statusline -- sh -c '<their command>'`
runs it on the same stdin and prints what it printed. Uninstalling puts
that command back (or takes the statusLine out, when afd added it). Each
edit writes a backup of the file first and says what changed; a file that
is not a JSON object is left alone with a clear error.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from afd.errors import EXIT_OK, EXIT_USAGE, UserError

SETTINGS = "settings.json"


@dataclass(frozen=True, slots=True)
class Change:
    account: str
    settings: Path
    before: str | None  # statusLine.command as it was (None: no statusLine)
    after: str | None
    backup: Path | None

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def to_json(self) -> dict:
        return {"account": self.account, "settings": str(self.settings), "changed": self.changed,
                "before": self.before, "after": self.after, "backup": str(self.backup) if self.backup else None}


def afd_command() -> str:
    """afd as the status line must call it: by its absolute path (Claude Code's PATH may not have it)."""
    argv0 = sys.argv[0] if sys.argv else ""
    if os.path.basename(argv0) == "afd" and os.path.isfile(argv0):
        return shlex.quote(os.path.abspath(argv0))
    found = shutil.which("afd")
    if found:
        return shlex.quote(os.path.abspath(found))
    return f"{shlex.quote(sys.executable)} -m afd"


def is_ours(command: object) -> bool:
    """Whether a statusLine command is `afd statusline` (wrapping a command or not), by whatever path afd was called."""
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    for i, word in enumerate(words[:4]):
        if word == "statusline" and i > 0 and (os.path.basename(words[i - 1]) == "afd" or words[i - 2:i] == ["-m", "afd"]):
            return words[i + 1:i + 2] in ([], ["--"])
    return False


def wrapped(command: str) -> str | None:
    """The user's own command inside an `afd statusline -- sh -c '…'`, or None when afd wraps nothing."""
    words = shlex.split(command)
    if "--" not in words:
        return None
    rest = words[words.index("--") + 1:]
    if rest[:2] == ["sh", "-c"] and len(rest) == 3:
        return rest[2]
    return shlex.join(rest) if rest else None


def installed(command: str | None, afd: str) -> str:
    """The statusLine command with afd in front of `command` (the user's, kept as it runs today)."""
    if command is None or not command.strip():
        return f"{afd} statusline"
    return f"{afd} statusline -- sh -c {shlex.quote(command)}"


def edit_install(settings: dict, afd: str) -> tuple[dict, str | None, str | None]:
    """`settings` with afd's status line in, every other key kept: (new settings, command before, command after)."""
    line = settings.get("statusLine")
    before = line.get("command") if isinstance(line, dict) and isinstance(line.get("command"), str) else None
    if is_ours(before):
        assert before is not None
        user = wrapped(before)
        after = installed(user, afd)  # afd's path refreshed, the user's command kept
    else:
        after = installed(before, afd)
    new_line = dict(line) if isinstance(line, dict) else {}
    new_line["type"] = "command"
    new_line["command"] = after
    return {**settings, "statusLine": new_line}, before, after


def edit_uninstall(settings: dict) -> tuple[dict, str | None, str | None]:
    line = settings.get("statusLine")
    before = line.get("command") if isinstance(line, dict) and isinstance(line.get("command"), str) else None
    if not is_ours(before):
        return settings, before, before
    assert before is not None and isinstance(line, dict)
    user = wrapped(before)
    out = dict(settings)
    if user is None:
        del out["statusLine"]
    else:
        out["statusLine"] = {**line, "command": user}
    return out, before, user


def status_line_agent(plugins):
    """The agent whose status line `afd statusline` serves (its spec says `status_line`); UserError when none."""
    spec = next((s for s in plugins.agents.values() if s.status_line), None)
    if spec is None:
        raise UserError("no plugin provides an agent with a status-line command (Claude Code's)", EXIT_USAGE)
    return spec


def config_dir(account: str, config, plugins) -> Path:
    """The config directory of an account of the status-line agent (Claude Code's CLAUDE_CONFIG_DIR): its default's
    (`~/.claude`), or the one its [accounts] entry sets."""
    from afd.judge.accounts import env_of, expand, vars_of

    spec = status_line_agent(plugins)
    env = env_of(account, spec.name, vars_of(spec), config.accounts)
    if env is None:
        named = ", ".join([spec.name, *(a.name for a in config.accounts.values() if a.agent == spec.name)])
        raise UserError(f'"{account}" is not a {spec.name} account (known: {named})', EXIT_USAGE)
    chosen = dict(env) or dict(spec.account_defaults)
    return Path(expand(chosen[spec.account_env[0]], os.path.expanduser("~")))


def read_settings(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise UserError(f"{path}: cannot be read: {exc.strerror or exc}", EXIT_USAGE) from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UserError(f"{path}: is not valid JSON ({exc}); fix it first, nothing was changed", EXIT_USAGE) from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: is not a JSON object; nothing was changed", EXIT_USAGE)
    return data


def write_settings(path: Path, data: dict) -> Path | None:
    """Write `data` over `path` through a temporary file, after a backup of what was there (returned)."""
    backup = None
    if path.exists():
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        backup = path.with_name(f"{path.name}.afd-backup-{stamp}")
        n = 1
        while backup.exists():
            n += 1
            backup = path.with_name(f"{path.name}.afd-backup-{stamp}-{n}")
        shutil.copy2(path, backup)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.afd.tmp")
    mode = path.stat().st_mode & 0o7777 if path.exists() else 0o600
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    os.replace(temp, path)
    return backup


def apply(account: str, folder: Path, action: str, afd: str) -> Change:
    path = folder / SETTINGS
    settings = read_settings(path)
    new, before, after = edit_install(settings, afd) if action == "install" else edit_uninstall(settings)
    backup = write_settings(path, new) if new != settings else None
    return Change(account, path, before, after, backup)


def run(args: argparse.Namespace) -> int:
    from afd.cli.common import load_effective, print_json

    config, plugins = load_effective(args.config)
    account = args.account or status_line_agent(plugins).name
    change = apply(account, config_dir(account, config, plugins), args.action_name, afd_command())
    if args.json:
        print_json(change.to_json())
        return EXIT_OK
    where = change.settings
    if not change.changed and change.backup is None:
        state = "is in" if args.action_name == "install" else "is not in"
        print(f"{account}: afd's status line {state} {where} already; nothing changed")
        return EXIT_OK
    print(f"{account}: {where}: statusLine.command")
    print(f"  before: {change.before if change.before is not None else '(none)'}")
    print(f"  after:  {change.after if change.after is not None else '(none)'}")
    if change.backup is not None:
        print(f"  backup: {change.backup}")
    if args.action_name == "install":
        print("Claude Code sessions of this account pick it up on their next status-line refresh.")
    return EXIT_OK
