#!/usr/bin/env bash
# `make demo`: the end-to-end job on a built-in default.
#
# Fashion-MNIST from Debian's dataset-fashion-mnist is written out as an
# image folder (one folder per class, gray PNGs), converted to sharded
# TFRecords with `sluice convert images`, and streamed through an AUTOTUNE
# pipeline (parallel decode, shuffle, batch, prefetch) into a small CNN,
# which trains, validates each epoch, checkpoints and writes TensorBoard
# logs, then reports the test accuracy.
#
#   scripts/demo.sh [BUILD_DIR] [OUT_DIR]      (env DEMO_EPOCHS, default 8)
#
# Everything lands under OUT_DIR (default BUILD_DIR/demo); a second run
# reuses the folder and the records and resumes from the last checkpoint.
set -euo pipefail
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

echo "== 1. Fashion-MNIST IDX files -> an image folder (one subfolder per class)"
for split in train t10k; do
  name=$([[ $split == train ]] && echo train || echo test)
  if [[ ! -f $OUT/folder-$name.done ]]; then
    "$SLUICE" convert idx "$DATA/$split-images-idx3-ubyte.gz" "$DATA/$split-labels-idx1-ubyte.gz" \
      --fashion --to-folder "$OUT/folder/$name" --name-prefix "$name" --resume
    touch "$OUT/folder-$name.done"
  fi
done

echo "== 2+3. sluice convert images, then train the CNN on an AUTOTUNE pipeline"
# image_classifier converts each folder with `sluice convert images` (once),
# measures the input pipeline alone, then trains with fit().
SLUICE_CLI=$SLUICE "$BUILD/samples/image_classifier" "$OUT/folder/train" \
  --test-dir "$OUT/folder/test" --size 0 --channels 1 --model compact \
  --epochs "$EPOCHS" --batch 64 --dir "$OUT/run"

echo
echo "Checkpoints: $OUT/run/ckpt   TensorBoard: tensorboard --logdir $OUT/run/logs"
