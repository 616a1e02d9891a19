#!/usr/bin/env bash
# The samples read what `sluice convert images` reads and writes: a folder
# of class folders with images at any depth, a .txt file, hidden files and
# a file directly in the folder (docs/convert.md, "the input folder"), then
#   image_folder_pipeline on the folder       the images convert counts
#   distributed_input on convert's shards     every record read once
#                                             (and under mpirun -np 2)
#
# Usage: samples/convert_output_test.sh SLUICE IMAGE_FOLDER_PIPELINE DISTRIBUTED_INPUT WORK [MPIRUN]
set -uo pipefail
(($# == 4 || $# == 5)) || {
  echo "usage: samples/convert_output_test.sh SLUICE IMAGE_FOLDER_PIPELINE DISTRIBUTED_INPUT WORK [MPIRUN]" >&2
  exit 2
}
sluice=$1 pipeline=$2 dist=$3 work=$4 mpirun=${5:-}
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
expect_in() {  # expect_in WHAT TEXT NEEDLE
  [[ $2 == *"$3"* ]] || fail "$1: expected '$3' in: $2"
}

rm -rf "$work" && mkdir -p "$work"
photos=$work/photos
# 24 JPEGs in cats/ and dogs/, then 4 more in subfolders, 2 levels deep.
"$pipeline" --make-demo "$photos" > /dev/null || { echo "FAIL: --make-demo" >&2; exit 1; }
mkdir -p "$photos/cats/more/deeper" "$photos/dogs/sub"
cp "$photos/cats/img0.jpg" "$photos/cats/more/a.JPG"
cp "$photos/cats/img1.jpg" "$photos/cats/more/deeper/b.jpeg"
cp "$photos/dogs/img0.jpg" "$photos/dogs/sub/c.jpg"
cp "$photos/dogs/img1.jpg" "$photos/dogs/sub/d.jpg"
# What convert ignores: other extensions, hidden files and folders, files
# directly in the folder.
echo "a dog" > "$photos/dogs/notes.txt"
echo "x" > "$photos/cats/.DS_Store"
mkdir -p "$photos/dogs/.thumbs" && cp "$photos/dogs/img2.jpg" "$photos/dogs/.thumbs/t.jpg"
mkdir -p "$photos/.git" && cp "$photos/dogs/img3.jpg" "$photos/.git/x.jpg"
echo "readme" > "$photos/README.txt"
cp "$photos/dogs/img4.jpg" "$photos/loose.jpg"

out=$("$sluice" convert images "$photos" --out "$work/records/train" --shards 3 --index 2>&1)
rc=$?
[[ $rc == 0 ]] || fail "convert: exit $rc: $out"
expect_in "convert" "$out" "found 28 images in 2 classes"

out=$("$pipeline" "$photos" --batch 8 2>&1)
rc=$?
[[ $rc == 0 ]] || fail "image_folder_pipeline: exit $rc: $out"
expect_in "image_folder_pipeline" "$out" "found 28 images in 2 classes under $photos"
expect_in "image_folder_pipeline" "$out" $'\n28 images in 2 classes, '
expect_in "image_folder_pipeline" "$out" "ignored 3 files"  # notes.txt, README.txt, loose.jpg

# 28 records in 3 indexed shards: batches of 7 read all of them, on one
# rank (4 steps) and on two (2 steps each).
out=$("$dist" "$work/records" --batch 7 2>&1)
rc=$?
[[ $rc == 0 ]] || fail "distributed_input: exit $rc: $out"
expect_in "distributed_input" "$out" "rank 0 of 1: 4 steps of 7"
expect_in "distributed_input" "$out" "28 of 28 records read, each once"

if [[ -n $mpirun ]]; then
  out=$("$mpirun" -np 2 --oversubscribe "$dist" "$work/records" --batch 7 2>&1)
  rc=$?
  [[ $rc == 0 ]] || fail "mpirun -np 2 distributed_input: exit $rc: $out"
  expect_in "mpirun distributed_input" "$out" "rank 1 of 2: 2 steps of 7"
  expect_in "mpirun distributed_input" "$out" "28 of 28 records read, each once"
fi

if ((failures > 0)); then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "OK: the samples read the 28 images of $photos and the records convert made of them"
