"""The wheel, installed in a fresh virtualenv, is a working afd.

An editable install reads the source tree, so a sub-package or a data file
missing from the package list would go unnoticed until a user installs the
wheel. This builds it, checks what it holds against the tree, installs it
where the source tree is out of reach, and runs the command.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CASE = REPO / "tests" / "data" / "real" / "codex" / "plan-limit-with-reset"


def _run(*argv, **kw) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=300, **kw)
    assert done.returncode == 0, f"{argv}: {done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    # Built from a copy: setuptools writes build/ in the tree it builds, and two workers building
    # in one tree at once break each other's build.
    tree = tmp_path_factory.mktemp("tree") / "afd"
    shutil.copytree(REPO, tree, ignore=shutil.ignore_patterns(".*", "build", "*.egg-info", "__pycache__", "tests"))
    # No build isolation: the build uses this interpreter's setuptools, not one fetched for it.
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", out, tree)
    # The distribution is afd-tmux: "afd" on PyPI is another project, which `pip install afd` would fetch.
    (built,) = out.glob("afd_tmux-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A fresh venv with only the wheel installed in it; its dependencies are this interpreter's, read-only."""
    venv = tmp_path_factory.mktemp("venv")
    _run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    site = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip())
    # A .pth line only puts the directory on sys.path: this interpreter's
    # editable-install hooks (its own .pth files) are not run, so `afd` can
    # come from nowhere but the wheel.
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "zz_afd_test_deps.pth").write_text("\n".join(sorted(deps)) + "\n")
    _run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", "-q", wheel)
    return venv


def _packages_in_tree() -> set[str]:
    found = {"afd_plugins"}
    for init in (REPO / "afd").rglob("__init__.py"):
        found.add(".".join(init.parent.relative_to(REPO).parts))
    return found


def test_the_wheel_is_the_afd_tmux_distribution_with_the_afd_command(wheel):
    archive = zipfile.ZipFile(wheel)
    (metadata,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
    assert "\nName: afd-tmux\n" in archive.read(metadata).decode()
    (scripts,) = [n for n in archive.namelist() if n.endswith(".dist-info/entry_points.txt")]
    assert "afd = afd.cli.main:main" in archive.read(scripts).decode()


def test_every_package_folder_and_data_file_reaches_the_wheel(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    packages = {".".join(Path(n).parent.parts) for n in names if n.endswith("/__init__.py")}
    assert packages == _packages_in_tree()
    data = {
        str(p.relative_to(REPO)) for p in (REPO / "afd").rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts
    }
    assert data and data <= names
    sources = {str(p.relative_to(REPO)) for p in (REPO / "afd").rglob("*.py") if "__pycache__" not in p.parts}
    assert sources <= names
    plugins = {f"afd_plugins/{p.name}" for p in (REPO / "plugins").glob("*.py")}
    assert plugins <= names


def test_the_installed_command_runs_from_the_wheel(installed, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "cfg"), XDG_STATE_HOME=str(tmp_path / "st"), TZ="UTC")
    where = _run(installed / "bin" / "python", "-c", "import afd, afd_plugins; print(afd.__file__, afd_plugins.__file__)",
                 cwd=tmp_path, env=env).stdout.split()
    assert all(Path(p).is_relative_to(installed) for p in where), where

    version = "import importlib.metadata as m; print(m.version('afd-tmux'))"
    assert _run(installed / "bin" / "python", "-c", version, cwd=tmp_path, env=env).stdout.strip() == "0.2.0"

    afd = installed / "bin" / "afd"
    assert _run(afd, "--version", cwd=tmp_path, env=env).stdout.strip() == "afd 0.2.0"

    expect = json.loads((CASE / "expect.json").read_text())
    captures = sorted(CASE.glob("*.txt"))
    done = _run(afd, "detect", "--agent", expect["agent"], "--now", expect["now"], "--json", *captures, cwd=tmp_path, env=env)
    result = json.loads(done.stdout)
    assert (result["limited"], result["reset_at"]) == (expect["limited"], expect["reset_at"]), result["reason"]
    # The systemd unit is a data file the command reads from the package.
    _run(afd, "service", "install", "--dir", tmp_path / "units", "--json", cwd=tmp_path, env=env)
    unit = (tmp_path / "units" / "afd.service").read_text()
    assert "RestartPreventExitStatus=78" in unit and str(afd) in unit
