#!/usr/bin/env bash
# Converts small generated inputs with `sluice convert` and reads them back
# with real TensorFlow (tests/interop/convert_read_with_tf.py). Not run by CI.
#   tests/interop/convert_read_with_tf.sh [BUILD_DIR]   (default: build)
# TensorFlow comes from the venv ~/.cache/sluice/tf-venv; made if missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
venv=${SLUICE_TF_VENV:-$HOME/.cache/sluice/tf-venv}
if ! "$venv/bin/python" -c "import tensorflow" 2>/dev/null; then
  echo "convert_read_with_tf: making $venv (tensorflow-cpu, numpy)" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q tensorflow-cpu numpy
fi
exec "$venv/bin/python" "$here/convert_read_with_tf.py" --sluice "$build/tools/sluice"
