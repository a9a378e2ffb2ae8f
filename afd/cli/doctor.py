"""`afd doctor`: is everything afd needs in place?"""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path

from afd.cli.common import add_server_options
from afd.errors import EXIT_FAIL, EXIT_OK, UserError

OK, WARN, FAIL = "ok", "warn", "fail"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "doctor",
        help="check tmux, the tmux server, agent CLIs, config, state dir, daemon and systemd unit",
        description="Check what afd needs: tmux and its version, the configured tmux server, agent CLIs "
        "on PATH, the config, the state directory, the daemon, and the systemd user unit. "
        "Exit 1 when any check fails (warnings do not fail).",
    )
    p.add_argument("--config", metavar="PATH", help="config file (default: the global one)")
    add_server_options(p, "the running daemon's, else the configured one")
    p.add_argument("--json", action="store_true", help="print a JSON list of checks")
    p.set_defaults(func=run)


def checks(config_path: str | None, socket_name: str | None = None, socket_path: str | None = None) -> list[dict]:
    # imported here: `afd --help` registers every command and must not load the engine
    from afd.act.launch import Launch, launch_argv
    from afd.cli.common import load_effective
    from afd.cli.service import UNIT_NAME, enablement_links, user_unit_dir
    from afd.daemon import control
    from afd.daemon.loop import server_ref
    from afd.kit.paths import state_dir
    from afd.world import tmux

    out: list[dict] = []

    def add(name: str, status: str, detail: str) -> None:
        out.append({"check": name, "status": status, "detail": detail})

    exe = shutil.which("tmux")
    if exe:
        version, why = tmux.version()
        if version is None:
            add("tmux", FAIL, f"{exe}: {why}")
            exe = None  # a tmux that does not answer -V will not answer list-panes either
        else:
            add("tmux", OK, f"{version} at {exe}")
    else:
        add("tmux", FAIL, "tmux is not on PATH; install it with your package manager")

    config = plugins = None
    try:
        config, plugins = load_effective(config_path)
        add("config", OK, f"{config.path or 'no config file: safe built-in defaults (watch and report only)'}")
    except UserError as exc:
        add("config", FAIL, str(exc))

    daemon_info = None
    try:
        daemon_info = control.request(control.socket_path(), "status", {"events": 0}, timeout=3)["daemon"]
    except UserError:
        pass
    if config is not None and exe:
        if not (socket_name or socket_path) and daemon_info and daemon_info.get("server_ref"):
            socket_name, socket_path = daemon_info["server_ref"]
        server = server_ref(config, socket_name, socket_path)
        inv = tmux.list_panes(server)
        where = f"the tmux server at {inv.socket_path or server.socket()}"
        if not inv.answered:
            add("tmux server", FAIL, f"{where} did not answer: {inv.error}")
        elif not inv.server_running:
            add("tmux server", WARN, f"{where} is not running (afd waits for it)")
        else:
            add("tmux server", OK, f"{inv.socket_path}: {len(inv.panes)} panes")

    if plugins is not None:
        # Imported here: `afd --help` registers every command and must not load the config reader.
        from afd.act.launch import Launch, launch_argv

        for name, spec in sorted(plugins.agents.items()):
            command = launch_argv(spec, config.agents.get(name) if config else None, Launch.FIRST)
            found = shutil.which(command[0])
            add(f"agent {name}", OK if found else WARN, found or f"{command[0]} is not on PATH")
        for failure in plugins.failures:
            add(f"plugin {failure.name}", FAIL, failure.error)

    if config is not None and plugins is not None and any(s.status_line for s in plugins.agents.values()):
        for check in statusline_checks(config, plugins):
            add(*check)

    state = state_dir()
    probe = state if state.exists() else next((p for p in state.parents if p.exists()), Path("/"))
    if os.access(probe, os.W_OK):
        add("state dir", OK, f"{state} is writable")
    else:
        add("state dir", FAIL, f"{state} is not writable")

    try:
        info = control.request(control.socket_path(), "status", {"events": 0}, timeout=3)
        add("daemon", OK, f"running, pid {info['daemon']['pid']}")
    except control.DaemonUnavailable:
        add("daemon", WARN, "not running; start it with `afd run` or the systemd unit")
    except UserError as exc:
        add("daemon", FAIL, str(exc))

    unit_dir = user_unit_dir()
    if (unit_dir / UNIT_NAME).exists():
        enabled = bool(enablement_links(unit_dir))
        add("systemd unit", OK if enabled else WARN, f"{unit_dir / UNIT_NAME} installed, {'enabled' if enabled else 'not enabled'}")
    else:
        add("systemd unit", WARN, "not installed; `afd service install` writes it")
    return out


def statusline_checks(config, plugins, project_dirs=None) -> list[tuple[str, str, str]]:
    """Per Claude Code account, whether `afd statusline` is its statusLine; and project settings that override it.

    Claude Code lets a project's `.claude/settings.json` (or `settings.local.json`) set its own
    statusLine over the account's: sessions there then hand afd no figures. The projects looked
    at are the worktrees of afd's Claude Code sessions and the current directory.
    """
    from afd.cli.statusline_settings import SETTINGS, config_dir, is_ours, read_settings, status_line_agent
    from afd.errors import UserError as _UserError

    out: list[tuple[str, str, str]] = []
    agent = status_line_agent(plugins).name
    names = [agent, *(a.name for a in config.accounts.values() if a.agent == agent)]
    for name in names:
        folder = config_dir(name, config, plugins)
        path = folder / SETTINGS
        try:
            line = read_settings(path).get("statusLine")
        except _UserError as exc:
            out.append((f"statusline {name}", WARN, str(exc)))
            continue
        command = line.get("command") if isinstance(line, dict) else None
        if is_ours(command):
            out.append((f"statusline {name}", OK, f"installed in {path}"))
        elif command:
            out.append((f"statusline {name}", WARN, f"{path} runs its own statusLine; `afd statusline install "
                                                    f"--account {name}` keeps it and adds afd's exact usage figures"))
        else:
            out.append((f"statusline {name}", WARN, f"not installed in {path}: `afd statusline install --account {name}` "
                                                    "gives afd the account's exact usage figures"))
    for place in project_dirs if project_dirs is not None else _projects_of(agent):
        for leaf in ("settings.json", "settings.local.json"):
            project = Path(place) / ".claude" / leaf
            try:
                line = read_settings(project).get("statusLine")
            except _UserError:
                continue
            command = line.get("command") if isinstance(line, dict) else None
            if command and not is_ours(command):
                out.append(("statusline override", WARN, f"{project} sets its own statusLine, which overrides afd's for "
                                                         f"Claude Code sessions in {place}"))
    return out


def _projects_of(agent: str) -> list[str]:
    """The worktrees of afd's sessions of `agent` (from the daemon, else the store), and the current directory."""
    from afd.cli.status import read_report

    found: list[str] = []
    try:
        report, _ = read_report(0)
    except UserError:
        report = {"sessions": []}
    for s in report.get("sessions", ()):
        if s.get("agent") == agent and s.get("state") != "gone" and s.get("worktree"):
            found.append(s["worktree"])
    cwd = os.getcwd()
    return list(dict.fromkeys([*found, cwd]))


def run(args: argparse.Namespace) -> int:
    results = checks(args.config, args.socket_name, args.socket_path)
    if args.json:
        from afd.cli.common import print_json

        print_json(results)
    else:
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        from afd.display.text import cell

        style = {OK: "green", WARN: "yellow", FAIL: "bold red"}
        table = Table(title="afd doctor", title_justify="left")
        for col in ("check", "status", "detail"):
            table.add_column(col)
        for r in results:
            # A detail quotes what tmux, a plugin or the daemon said: neutral.
            table.add_row(cell(r["check"]), Text(r["status"], style=style[r["status"]]), cell(r["detail"]))
        Console(highlight=False).print(table)
    return EXIT_FAIL if any(r["status"] == FAIL for r in results) else EXIT_OK
