#!/usr/bin/env bash
# scripts/gpu-bundle.sh and scripts/gpu-run.sh without a GPU: packs a bundle
# (fast compression, no pipeline images), unpacks it as the GPU machine
# would, checks that every program in it starts with only the bundle's
# libraries, and runs the tests phase (in a temporary root), whose gpu:0
# cases skip here. A renamed target, a library left out
# or a broken run.sh fails here instead of on a scarce GPU lease.
#   tests/gpu/gpu_bundle_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
SRC=$1
BUILD=$(cd "$2" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "gpu_bundle_test: $*" >&2; exit 1; }

XZ_OPT=-0 PIPELINE_IMAGES=0 "$SRC/scripts/gpu-bundle.sh" "$BUILD" "$TMP/bundle" > "$TMP/bundle.log" 2>&1 ||
  { cat "$TMP/bundle.log"; fail "gpu-bundle.sh failed"; }
for f in payload.tar.xz run.sh torch_train_step.py torch_cases.py peer_common.py; do
  [ -f "$TMP/bundle/$f" ] || fail "bundle lacks $f"
done
# Refuses to replace a folder that is not a bundle.
mkdir -p "$TMP/other" && touch "$TMP/other/keep"
if "$SRC/scripts/gpu-bundle.sh" "$BUILD" "$TMP/other" > /dev/null 2>&1; then
  fail "replaced a folder that held no bundle"
fi
[ -f "$TMP/other/keep" ] || fail "deleted a folder that held no bundle"

mkdir -p "$TMP/root"
tar -C "$TMP/root" -xJf "$TMP/bundle/payload.tar.xz"
for b in sluice fashion_mnist_mlp image_classifier gpu_bench gpu_train_bench gpu_test \
  gpu_image_ops_test gpu_nn_backend_test sluice_cases bare_decode; do
  [ -x "$TMP/root/bin/$b" ] || fail "payload lacks bin/$b"
done
# With MPI: the mpi phase's programs, scripts and relocatable Open MPI.
if grep -q '/gpu_mpi_train_worker\.dir' "$BUILD/CMakeFiles/TargetDirectories.txt"; then
  for f in mpi.tar.xz mpi-tests/mpi_test.sh mpi-tests/mpi_train_gpu_test.sh; do
    [ -f "$TMP/bundle/$f" ] || fail "bundle lacks $f"
  done
  for b in mpi_worker mpi_train_worker gpu_mpi_train_worker mpi_bench distributed_training; do
    [ -x "$TMP/root/bin/$b" ] || fail "payload lacks bin/$b"
  done
  tar -C "$TMP/root" -xJf "$TMP/bundle/mpi.tar.xz"
  [ -x "$TMP/root/mpi/bin/mpirun" ] && [ -f "$TMP/root/mpi/env.sh" ] || fail "mpi.tar.xz lacks mpirun, env.sh"
fi
# Every library a program needs is in lib/ or is one the GPU machine has.
missing=$(LD_LIBRARY_PATH="$TMP/root/lib" ldd "$TMP"/root/bin/* | grep "not found" | sort -u || true)
[ -z "$missing" ] || fail "libraries not in the bundle: $missing"
LD_LIBRARY_PATH="$TMP/root/lib" "$TMP/root/bin/sluice" --help > /dev/null || fail "sluice --help"
LD_LIBRARY_PATH="$TMP/root/lib" "$TMP/root/bin/fashion_mnist_mlp" --help > /dev/null ||
  fail "fashion_mnist_mlp --help"

export SLUICE_GPU_ROOT="$TMP/run-root"
OUT="$TMP/out" bash "$TMP/bundle/run.sh" tests > "$TMP/run.log" 2>&1 || { cat "$TMP/run.log"; fail "run.sh tests"; }
summary="$TMP/out/summary.txt"
[ "$(grep -c ': exit 0 (' "$summary")" -ge 6 ] || { cat "$summary"; fail "not every test binary ran and passed"; }
if grep -qE "FAILED|TIMED OUT|exit [1-9]" "$summary"; then cat "$summary"; fail "a test failed"; fi
# Without images (PIPELINE_IMAGES=0) the pipeline phase says so and goes on.
OUT="$TMP/out2" bash "$TMP/bundle/run.sh" pipeline > /dev/null 2>&1 || fail "run.sh pipeline"
grep -q "no images in the bundle" "$TMP/out2/summary.txt" || fail "pipeline without images"
bash "$TMP/bundle/run.sh" --help | grep -q "samples" || fail "run.sh --help"
echo "gpu_bundle_test: OK"
