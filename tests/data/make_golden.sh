#!/usr/bin/env bash
# Regenerates the TensorFlow golden files under tests/data/tf/.
#
# Usage: bash tests/data/make_golden.sh
#
# Creates (once) a Python virtualenv holding tensorflow-cpu and the "tfrecord"
# package, then runs tests/data/make_golden.py with it. The venv location can
# be overridden with SLUICE_TF_VENV. Re-running is safe and produces
# byte-identical output for the same TensorFlow / zlib / protobuf versions.
#
# Optionally pin versions, e.g.
#   SLUICE_TF_PIP_SPECS="tensorflow-cpu==2.21.0 tfrecord==1.14.6" bash tests/data/make_golden.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${SLUICE_TF_VENV:-$HOME/.cache/sluice/tf-venv}"
specs="${SLUICE_TF_PIP_SPECS:-tensorflow-cpu tfrecord}"

if [[ ! -x "$venv/bin/python" ]]; then
  echo "make_golden: creating virtualenv at $venv" >&2
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
fi

# Install only what is missing, so re-runs do not touch the network.
# (Two separate imports: tensorflow and tfrecord cannot share one process.)
if ! "$venv/bin/python" -c "import tensorflow" >/dev/null 2>&1 ||
   ! "$venv/bin/python" -c "import tfrecord.tools.tfrecord2idx" >/dev/null 2>&1; then
  echo "make_golden: installing $specs into $venv (this can take a while)" >&2
  # shellcheck disable=SC2086  # word-splitting of $specs is intended
  "$venv/bin/python" -m pip install --quiet $specs
fi

# Keep TensorFlow's start-up chatter out of the way; results do not depend on it.
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"
export PYTHONHASHSEED=0

exec "$venv/bin/python" "$here/make_golden.py" "$here/tf"
