#!/usr/bin/env bash
# Writes a checkpoint with sluice (checkpoint_test's InteropWrite case) and
# reads / restores it with TensorFlow + Keras (checkpoint_interop.py).
#   tests/interop/checkpoint_interop.sh [BUILD_DIR]   (default: build). Not run by CI.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
venv=${SLUICE_TF_VENV:-$HOME/.cache/sluice/tf-venv}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
SLUICE_CKPT_INTEROP_DIR="$tmp/ckpts" SLUICE_TEST_DATA="$here/../data" \
  "$build/tests/nn/nn_test" --gtest_filter=CheckpointTest.InteropWrite >"$tmp/log" 2>&1 ||
  { cat "$tmp/log"; exit 1; }
"$venv/bin/python" "$here/checkpoint_interop.py" "$tmp/ckpts"
