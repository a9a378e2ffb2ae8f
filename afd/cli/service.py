"""`afd service install|uninstall`: put afd's systemd user unit in place, or take it away.

The unit ships inside the package (`afd/data/afd.service`, identical to
`contrib/systemd/afd.service`); install rewrites its ExecStart to run the very
afd that is installing it, since a user manager's PATH rarely includes a
virtualenv or ~/.local/bin.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from importlib import resources
from pathlib import Path

from afd.cli.common import print_json
from afd.errors import EXIT_USAGE, UserError

UNIT_NAME = "afd.service"
ENABLE_LINE = "systemctl --user daemon-reload && systemctl --user enable --now afd"
DISABLE_LINE = "systemctl --user disable --now afd"
STOP_LINE = "systemctl --user stop afd; systemctl --user daemon-reload"

# Characters that need no quoting in a systemd command line word.
_PLAIN_WORD = re.compile(r"[A-Za-z0-9_./:@+=,%$-]+")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "service",
        help="install or remove afd's systemd user unit",
        description="Install afd as a systemd user service (so it starts with your session and "
        "restarts on failure), or remove it again.",
    )
    actions = p.add_subparsers(dest="service_command", metavar="ACTION", required=True)

    install = actions.add_parser(
        "install",
        help=f"write {UNIT_NAME} to your systemd user directory",
        description=f"Write {UNIT_NAME}, with ExecStart pointing at this afd, to DIR (default: "
        "$XDG_CONFIG_HOME/systemd/user, i.e. ~/.config/systemd/user), then print the systemctl "
        "line that enables and starts it. A different existing file is kept unless --force.",
    )
    install.add_argument("--dir", metavar="DIR", help="directory to write the unit to")
    install.add_argument("--force", action="store_true", help="replace an existing unit that differs")
    install.add_argument("--json", action="store_true", help="print one JSON object")
    install.set_defaults(func=run_install)

    uninstall = actions.add_parser(
        "uninstall",
        help=f"remove {UNIT_NAME} from your systemd user directory",
        description=f"Remove {UNIT_NAME} from DIR (default: $XDG_CONFIG_HOME/systemd/user). "
        f"An enabled unit is kept until you disable it (`{DISABLE_LINE}`), unless --force, "
        "which also removes the enablement links.",
    )
    uninstall.add_argument("--dir", metavar="DIR", help="directory to remove the unit from")
    uninstall.add_argument("--force", action="store_true", help="remove it even while it is enabled")
    uninstall.add_argument("--json", action="store_true", help="print one JSON object")
    uninstall.set_defaults(func=run_uninstall)


def user_unit_dir() -> Path:
    """`$XDG_CONFIG_HOME/systemd/user`, default `~/.config/systemd/user`, resolved now."""
    from afd.kit import paths

    return paths.config_dir().parent / "systemd" / "user"


def template() -> str:
    """The unit as shipped in the package."""
    return resources.files("afd").joinpath("data", UNIT_NAME).read_text(encoding="utf-8")


def afd_command(argv0: str | None = None, executable: str | None = None) -> list[str]:
    """The command that runs this afd: its console script, else this interpreter with `-m afd`."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    executable = sys.executable if executable is None else executable
    if os.path.basename(argv0) == "afd" and os.path.isfile(argv0) and os.access(argv0, os.X_OK):
        # Not resolved: a pipx or ~/.local/bin symlink should survive upgrades.
        return [os.path.abspath(argv0)]
    return [os.path.abspath(executable), "-m", "afd"]


def systemd_word(word: str) -> str:
    """`word` quoted for a systemd command line: `%` and `$` doubled, quotes where needed."""
    word = word.replace("%", "%%").replace("$", "$$")
    if _PLAIN_WORD.fullmatch(word):
        return word
    return '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'


def unit_text(command: list[str], base: str | None = None) -> str:
    """The unit with ExecStart running `command run`."""
    base = template() if base is None else base
    exec_start = "ExecStart=" + " ".join(systemd_word(w) for w in [*command, "run"])
    lines = base.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.startswith("ExecStart=")]
    if len(starts) != 1:
        raise ValueError(f"the packaged {UNIT_NAME} must have exactly one ExecStart line")
    lines[starts[0]] = exec_start + "\n"
    return "".join(lines)


def enablement_links(directory: Path) -> list[Path]:
    """Links `systemctl enable` made for the unit under `directory` (`*.wants/afd.service`, ...)."""
    return sorted(p for pattern in ("*.wants", "*.requires") for p in directory.glob(f"{pattern}/{UNIT_NAME}")
                  if p.is_symlink())


def install(directory: Path, text: str, force: bool = False) -> str:
    """Write the unit; returns "installed", "replaced" or "unchanged". UserError for a differing file without force."""
    path = directory / UNIT_NAME
    try:
        existing = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        existing = None
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror or exc}") from None
    if existing == text:
        return "unchanged"
    if existing is not None and not force:
        raise UserError(f"{path} exists and differs from the unit afd would write; pass --force to replace it")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        # Written beside the target and renamed, so systemd never reads half a file.
        fd, tmp = tempfile.mkstemp(prefix=f".{UNIT_NAME}.", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None
    return "installed" if existing is None else "replaced"


def uninstall(directory: Path, force: bool = False) -> str:
    """Remove the unit; returns "removed" or "absent". UserError while it is enabled, unless force."""
    path = directory / UNIT_NAME
    links = enablement_links(directory)
    if links and not force:
        # Removing the file first would leave systemctl unable to disable it by name.
        raise UserError(f"afd.service is still enabled ({links[0]}); run `{DISABLE_LINE}` first, or pass --force")
    try:
        for link in links:
            link.unlink(missing_ok=True)
        if not path.exists() and not path.is_symlink():
            return "absent"
        path.unlink()
    except OSError as exc:
        raise UserError(f"cannot remove {path}: {exc.strerror or exc}") from None
    return "removed"


def _directory(args: argparse.Namespace) -> Path:
    if args.dir:
        directory = Path(args.dir).expanduser()
        if directory.exists() and not directory.is_dir():
            raise UserError(f"--dir {args.dir} is not a directory", EXIT_USAGE)
        return directory.absolute()
    return user_unit_dir()


def _console():
    from rich.console import Console

    # soft_wrap: a path or a command line must come out whole, never wrapped or cropped.
    return Console(highlight=False, soft_wrap=True)


def run_install(args: argparse.Namespace) -> int:
    directory = _directory(args)
    command = afd_command()
    action = install(directory, unit_text(command), force=args.force)
    path = directory / UNIT_NAME
    exec_start = " ".join(systemd_word(w) for w in [*command, "run"])
    if args.json:
        print_json({"action": action, "path": str(path), "exec_start": exec_start, "next": ENABLE_LINE})
        return 0
    console = _console()
    verb = {"installed": "Wrote", "replaced": "Replaced", "unchanged": "Already up to date:"}[action]
    console.print(f"{verb} {path}", markup=False)
    console.print(f"  ExecStart={exec_start}", markup=False)
    console.print("Enable and start it with:")
    console.print(f"  {ENABLE_LINE}", markup=False)
    return 0


def run_uninstall(args: argparse.Namespace) -> int:
    directory = _directory(args)
    action = uninstall(directory, force=args.force)
    path = directory / UNIT_NAME
    if args.json:
        print_json({"action": action, "path": str(path), "next": STOP_LINE})
        return 0
    console = _console()
    if action != "removed":
        console.print(f"Nothing to remove: {path} does not exist", markup=False)
        return 0
    console.print(f"Removed {path}", markup=False)
    console.print("If afd is still running as a service, stop it and reload systemd with:")
    console.print(f"  {STOP_LINE}", markup=False)
    return 0
