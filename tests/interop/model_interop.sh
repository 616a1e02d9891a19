#!/usr/bin/env bash
# Model-level checkpoint interop with TensorFlow / Keras 3 (not run by CI):
# Keras writes the tutorial MLP, sluice restores it and predicts
# (model_checkpoint_test InteropTutorialFromKeras); sluice trains and saves an
# MLP and a CNN (InteropWrite), Keras restores them and compares predictions.
#   tests/interop/model_interop.sh [BUILD_DIR]   (default: build)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
venv=${SLUICE_TF_VENV:-$HOME/.cache/sluice/tf-venv}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$venv/bin/python" "$here/model_interop.py" keras-tutorial "$tmp"
SLUICE_MODEL_INTEROP_DIR="$tmp" SLUICE_TEST_DATA="$here/../data" \
  "$build/tests/nn/nn_test" --gtest_filter='ModelCheckpointTest.Interop*' >"$tmp/log" 2>&1 ||
  { cat "$tmp/log"; exit 1; }
grep -E '^(wrote|tutorial)' "$tmp/log"
"$venv/bin/python" "$here/model_interop.py" check "$tmp"
