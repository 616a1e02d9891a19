#!/usr/bin/env bash
# `make demo`: the end-to-end job on a built-in default, building only what
# each step needs, in the order it needs it, so the first numbers come early.
#
#   0. build the `sluice` command line (about 4 minutes from a cold cache on
#      2 cores; ninja shows [done/total] as it goes)
#   1. Fashion-MNIST from Debian's dataset-fashion-mnist -> an image folder
#      (one folder per class, gray PNGs)
#   2. `sluice convert images` -> sharded TFRecords
#   3. `sluice bench`: the input pipeline's own speed (parallel decode,
#      shuffle, batch, prefetch): the first numbers
#   4. build the trainer (the training core on oneDNN; the CPU-only build of
#      samples/image_classifier, so no CUDA code is compiled)
#   5. train a small CNN on an AUTOTUNE pipeline: it validates each epoch,
#      checkpoints and writes TensorBoard logs, then reports the test accuracy
#
# Usage: scripts/demo.sh [BUILD_DIR] [OUT_DIR]      (env DEMO_EPOCHS, default 8)
#
# BUILD_DIR must be configured (the Makefile does it). Everything lands
# under OUT_DIR (default BUILD_DIR/demo); a second run reuses the folder and
# the records and resumes from the last checkpoint.
set -euo pipefail
. "$(dirname "$0")/lib/args.sh"
args_help "$@"
args_positional 2 "$@"
BUILD=${1:-build}
OUT=${2:-$BUILD/demo}
EPOCHS=${DEMO_EPOCHS:-8}
DATA=/usr/share/datasets/fashion-mnist
SLUICE=$BUILD/tools/sluice
[[ -f $DATA/train-images-idx3-ubyte.gz ]] || {
  echo "demo: $DATA is missing: install Debian's dataset-fashion-mnist (scripts/install-deps.sh)" >&2
  exit 1
}
mkdir -p "$OUT"
start=$SECONDS
elapsed() { printf '   (%d s since the start)\n' $((SECONDS - start)); }

echo "== 0. Build the sluice command line"
cmake --build "$BUILD" --target sluice
elapsed

echo "== 1. Fashion-MNIST IDX files -> an image folder (one subfolder per class)"
for split in train t10k; do
  name=$([[ $split == train ]] && echo train || echo test)
  if [[ ! -f $OUT/folder-$name.done ]]; then
    "$SLUICE" convert idx "$DATA/$split-images-idx3-ubyte.gz" "$DATA/$split-labels-idx1-ubyte.gz" \
      --fashion --to-folder "$OUT/folder/$name" --name-prefix "$name" --resume
    touch "$OUT/folder-$name.done"
  fi
done
elapsed

echo "== 2. sluice convert images: the folders -> sharded TFRecords"
# The records image_classifier would make (it reuses them).
RECORDS=$OUT/run/records
mkdir -p "$RECORDS"
for split in train test; do
  shards=$([[ $split == train ]] && echo 8 || echo 2)
  [[ -f $RECORDS/$split-labels.txt ]] ||
    "$SLUICE" convert images "$OUT/folder/$split" --out "$RECORDS/$split" --shards "$shards" \
      --shuffle --seed 1
done
elapsed

echo "== 3. The input pipeline alone: read, shuffle, decode in parallel, batch, prefetch"
"$SLUICE" bench --tfrecord "$RECORDS/train-*.tfrecord" --shuffle 10000 --decode --batch 64 \
  --duration 5
elapsed

echo "== 4. Build the trainer (the training core; no CUDA code for the demo)"
cmake --build "$BUILD" --target image_classifier_cpu
elapsed

echo "== 5. Train the CNN on an AUTOTUNE pipeline"
SLUICE_CLI=$SLUICE "$BUILD/samples/image_classifier_cpu" "$OUT/folder/train" \
  --test-dir "$OUT/folder/test" --size 0 --channels 1 --model compact \
  --epochs "$EPOCHS" --batch 64 --dir "$OUT/run"
elapsed

echo
echo "Checkpoints: $OUT/run/ckpt   TensorBoard: tensorboard --logdir $OUT/run/logs"
