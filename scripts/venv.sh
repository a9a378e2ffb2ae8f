# Sourced by scripts/run-afd and scripts/test: makes .venv in this checkout and
# installs afd into it (editable), saying what it does; the slow part is the
# first run's install of afd's dependencies.
#   afd_venv [EXTRAS]    e.g. afd_venv test
say() { echo "$say_as: $*" >&2; }

afd_venv() {
  local extras=${1:-} spec=. stamp python=${PYTHON:-python3} started old
  [ -n "$extras" ] && spec=".[$extras]"
  stamp=.venv/.afd-installed${extras:+-$extras}
  if [ ! -x .venv/bin/python ]; then
    say "creating a virtualenv in .venv with $("$python" --version 2>&1) (first run only)"
    "$python" -m venv .venv
  fi
  # Installed already, and pyproject.toml (dependencies, entry points) unchanged since: an
  # editable install reads the source tree, so there is nothing to do.
  if [ -e "$stamp" ] && [ ! pyproject.toml -nt "$stamp" ] && .venv/bin/python -c 'import afd' 2>/dev/null; then
    return 0
  fi
  # The distribution was called "afd" before it became afd-tmux ("afd" on PyPI is another
  # project); an editable install of this checkout under the old name would shadow the new one.
  old=$(.venv/bin/python -m pip show afd 2>/dev/null || true)
  if grep -qxF "Editable project location: $PWD" <<<"$old"; then
    say "removing this checkout's install under its old distribution name, afd (it is afd-tmux now)"
    .venv/bin/python -m pip uninstall -q -y afd
  fi
  say "installing afd${extras:+ with its $extras dependencies} into .venv (pip; about half a minute the first time)"
  started=$SECONDS
  .venv/bin/python -m pip install -q --disable-pip-version-check -e "$spec"
  touch "$stamp"
  say "installed in $((SECONDS - started)) s"
}
