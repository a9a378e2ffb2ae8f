"""Install the pinned real agent CLIs from the npm registry into a cache outside the repository.

`scripts/real-agents install` runs this; the real_agents test tier reads the
same pins to find the binaries. Each CLI lives in
``$XDG_CACHE_HOME/afd/real-agents/<name>-<version>`` (``name`` is the npm
package's name without its scope), is installed into a temporary folder and
renamed into place only when complete, so an interrupted install is never
mistaken for a finished one, and is reused by every later run.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

PINS = Path(__file__).with_name("pins.toml")
EXIT_NO_NPM = 3
EXIT_INSTALL_FAILED = 4


@dataclass(frozen=True, slots=True)
class Pin:
    agent: str
    package: str
    version: str
    bin: str

    @property
    def folder(self) -> str:
        return f"{self.package.rsplit('/', 1)[-1]}-{self.version}"


def pins() -> list[Pin]:
    data = tomllib.loads(PINS.read_text(encoding="utf-8"))
    return [Pin(agent, v["package"], v["version"], v["bin"]) for agent, v in data.items()]


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "afd" / "real-agents"


def binary(pin: Pin, root: Path | None = None) -> Path:
    return (root or cache_root()) / pin.folder / "node_modules" / ".bin" / pin.bin


def installed(pin: Pin, root: Path | None = None) -> bool:
    """The pinned version is there in full (its package.json says so and its command exists)."""
    folder = (root or cache_root()) / pin.folder
    try:
        meta = json.loads((folder / "node_modules" / pin.package / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return meta.get("version") == pin.version and binary(pin, root).exists()


def install(pin: Pin, root: Path) -> str:
    """Install ``pin`` unless it is there; returns one line saying what was done."""
    if installed(pin, root):
        return f"{pin.package}@{pin.version}: already installed in {root / pin.folder}"
    partial = root / f".{pin.folder}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    started = time.monotonic()
    result = subprocess.run(
        ["npm", "install", "--prefix", str(partial), "--no-audit", "--no-fund", "--loglevel=error",
         f"{pin.package}@{pin.version}"],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        detail = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise InstallError(f"npm could not install {pin.package}@{pin.version}: {detail}")
    target = root / pin.folder
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    return f"{pin.package}@{pin.version}: installed in {time.monotonic() - started:.0f}s into {target}"


class InstallError(Exception):
    pass


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["walls"]:
        import walls  # beside this file; it reads the pins through this module

        return walls.main(argv[1:])
    parser = argparse.ArgumentParser(
        prog="real-agents",
        description="Install the pinned real agent CLIs (tests/real/pins.toml) for the real_agents test tier.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("install", help="install what is missing into the cache, reuse what is there")
    p.add_argument("--json", action="store_true", help="print {agent: binary path} as JSON when done")
    p = sub.add_parser("status", help="say what is installed and where, install nothing")
    p.add_argument("--json", action="store_true", help="print {agent: binary path or null} as JSON")
    sub.add_parser("walls", help="compare the walls in the installed CLIs with the reviewed lists (walls --help)")
    args = parser.parse_args(argv)

    root = cache_root()
    if args.command == "status":
        found = {pin.agent: str(binary(pin, root)) if installed(pin, root) else None for pin in pins()}
        if args.json:
            print(json.dumps(found))
        else:
            for pin in pins():
                where = found[pin.agent] or "not installed"
                print(f"{pin.agent}: {pin.package}@{pin.version}: {where}")
        return 0

    if shutil.which("npm") is None:
        print("real-agents: npm is not installed; install node and npm with your package manager", file=sys.stderr)
        return EXIT_NO_NPM
    root.mkdir(parents=True, exist_ok=True)
    # Two test runs at once must not install into the same folder together.
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            for pin in pins():
                print(f"real-agents: {install(pin, root)}", file=sys.stderr)
        except InstallError as exc:
            print(f"real-agents: {exc}", file=sys.stderr)
            return EXIT_INSTALL_FAILED
    if args.json:
        print(json.dumps({pin.agent: str(binary(pin, root)) for pin in pins()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
