#!/usr/bin/env bash
# Writes a tensor bundle with sluice's BundleWriter (the InteropWrite case of
# tensor_bundle_test) and reads it with real TensorFlow
# (tests/interop/checkpoint_bundle.py). Not run by CI.
#   tests/interop/checkpoint_bundle.sh [BUILD_DIR]   (default: build)
# TensorFlow comes from the venv ~/.cache/sluice/tf-venv; made if missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
venv=${SLUICE_TF_VENV:-$HOME/.cache/sluice/tf-venv}
if ! "$venv/bin/python" -c "import tensorflow" 2>/dev/null; then
  echo "checkpoint_bundle: making $venv (tensorflow-cpu, numpy)" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q tensorflow-cpu numpy
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
SLUICE_BUNDLE_INTEROP_PREFIX="$tmp/sluice_ckpt" \
  "$build/tests/records/tensor_bundle_test" --gtest_filter=TensorBundleTest.InteropWrite \
  >"$tmp/log" 2>&1 || { cat "$tmp/log"; exit 1; }
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"
"$venv/bin/python" "$here/checkpoint_bundle.py" "$tmp/sluice_ckpt"
