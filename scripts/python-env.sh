#!/usr/bin/env bash
# Makes the Python environment the Python package is built and tested in:
# a venv at BUILD/pyenv (default build/pyenv) from Debian's python3 (with
# python3-dev and python3-venv, which scripts/install-deps.sh installs),
# holding python/requirements.txt's pinned packages (nanobind,
# scikit-build-core, numpy, pytest) from PyPI. Idempotent: a stamp holding
# the requirements' checksum makes a second run cost milliseconds.
#
# Used by `make test` / `make demo` before configuring (CMake is then given
# -DSLUICE_PYTHON=BUILD/pyenv/bin/python). Prints the venv's python.
#
# Usage: scripts/python-env.sh [BUILD]
# Env: PYTHON (default /usr/bin/python3, else python3 on PATH).
set -euo pipefail
. "$(dirname "$0")/lib/args.sh"
args_help "$@"
args_positional 1 "$@"
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
venv=$build/pyenv
req=$root/python/requirements.txt
want=$(sha256sum "$req" | cut -d' ' -f1)
if [[ -x $venv/bin/python && "$(cat "$venv/.sluice-stamp" 2>/dev/null)" == "$want" ]]; then
  echo "$venv/bin/python"
  exit 0
fi
python=${PYTHON:-}
if [[ -z $python ]]; then
  if [[ -x /usr/bin/python3 ]]; then python=/usr/bin/python3; else python=python3; fi
fi
mkdir -p "$build"
rm -rf "$venv"
"$python" -m venv "$venv" >&2 ||
  { echo "python-env: '$python -m venv' failed (Debian: apt-get install python3-venv)" >&2; exit 1; }
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req" >&2 ||
  { echo "python-env: pip could not install $req into $venv" >&2; exit 1; }
echo "$want" > "$venv/.sluice-stamp"
echo "python-env: $venv ready ($(tr '\n' ' ' < <(grep -v '^#' "$req")))" >&2
echo "$venv/bin/python"
