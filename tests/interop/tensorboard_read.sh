#!/usr/bin/env bash
# Writes an events file with sluice::SummaryWriter and reads it with
# TensorBoard's EventAccumulator and tf.compat.v1.train.summary_iterator
# (tests/interop/tensorboard_read.py). Not run by CI.
#   tests/interop/tensorboard_read.sh [BUILD_DIR]   (default: build)
# Builds the `tensorboard_write_events` target in BUILD_DIR. TensorFlow and
# TensorBoard come from the venv ~/.cache/sluice/tf-venv; installed if missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
venv=${SLUICE_TF_VENV:-$HOME/.cache/sluice/tf-venv}
if ! "$venv/bin/python" -c "import tensorflow" 2>/dev/null; then
  echo "tensorboard_read: making $venv (tensorflow-cpu, numpy)" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q tensorflow-cpu numpy
fi
if ! "$venv/bin/python" -c "import tensorboard" 2>/dev/null; then
  echo "tensorboard_read: installing tensorboard into $venv" >&2
  "$venv/bin/pip" install -q tensorboard
fi
cmake --build "$build" --target tensorboard_write_events
exec "$venv/bin/python" "$here/tensorboard_read.py" \
  --writer "$build/tests/records/tensorboard_write_events"
