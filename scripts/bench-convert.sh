#!/usr/bin/env bash
# Benchmarks `sluice convert images` (no --resize) against the raw cost of
# reading the same files: `cat` of every file to /dev/null with the page
# cache warm. Reports images/s and MB/s for both and the ratio
# cat time / convert time (target: >= 0.8).
#
# Usage: scripts/bench-convert.sh [--build BUILD_DIR] [--images DIR] [--count 5000]
#       [--workers N] [--shards N] [--runs 3] [--work DIR]
#
# The images come from scripts/make-imagenet-like.sh (made once, kept in
# DIR, default /tmp/sluice-imagenet-like; --count applies when it is made).
# Output shards go to the same file system as the images (WORK, default
# /tmp/sluice-bench-convert) and are deleted between runs; the best of
# --runs is reported for both sides.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/lib/args.sh"
args_help "$@"
build=$root/build
images=/tmp/sluice-imagenet-like
work=/tmp/sluice-bench-convert
count=5000
runs=3
workers=""
shards=16
while [[ $# -gt 0 ]]; do
  case $1 in
    --build|--images|--work|--count|--workers|--shards|--runs)
      [[ $# -ge 2 ]] || args_die "$1 needs a value" ;;
    *) args_die "unknown option $1" ;;
  esac
  case $1 in
    --build) build=$2 ;;
    --images) images=$2 ;;
    --work) work=$2 ;;
    --count) count=$2 ;;
    --workers) workers=$2 ;;
    --shards) shards=$2 ;;
    --runs) runs=$2 ;;
  esac
  shift 2
done
sluice=$build/tools/sluice
[[ -x $sluice ]] || { echo "bench-convert: no $sluice (build first, or pass --build)" >&2; exit 1; }
if [[ ! -d $images ]]; then
  "$root/scripts/make-imagenet-like.sh" --build "$build" --out "$images" --count "$count"
fi

now() { date +%s.%N; }
files=$(find "$images" -type f | wc -l)
bytes=$(find "$images" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
read_all() { find "$images" -type f -print0 | xargs -0 cat > /dev/null; }
read_all; read_all  # warm the page cache

best_cat=""
for ((i = 0; i < runs; i++)); do
  t0=$(now); read_all; t1=$(now)
  best_cat=$(awk -v a="$t0" -v b="$t1" -v best="$best_cat" 'BEGIN { t = b - a; if (best == "" || t < best) best = t; print best }')
done

best_conv=""
flags=(--shards "$shards")
[[ -n $workers ]] && flags+=(--workers "$workers")
for ((i = 0; i < runs; i++)); do
  rm -rf "$work"; mkdir -p "$work"; sync
  t0=$(now); "$sluice" convert images "$images" --out "$work/train" "${flags[@]}" > "$work.log" 2>&1; t1=$(now)
  best_conv=$(awk -v a="$t0" -v b="$t1" -v best="$best_conv" 'BEGIN { t = b - a; if (best == "" || t < best) best = t; print best }')
done
written=$(du -sb "$work" | cut -f1)
rm -rf "$work" "$work.log"

echo "# $(date -u +%Y-%m-%d) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
awk -v n="$files" -v b="$bytes" -v c="$best_cat" -v s="$best_conv" -v w="$written" \
    -v workers="${workers:-$(nproc)}" -v shards="$shards" 'BEGIN {
  printf "images: %d files, %.1f MB (%.1f KB each), page cache warm, best of runs\n", n, b / 1e6, b / n / 1e3
  printf "cat to /dev/null:      %7.3f s  %8.0f images/s  %7.1f MB/s\n", c, n / c, b / 1e6 / c
  printf "sluice convert images: %7.3f s  %8.0f images/s  %7.1f MB/s  (%d workers, %d shards, %.1f MB written)\n", s, n / s, b / 1e6 / s, workers, shards, w / 1e6
  printf "ratio (cat time / convert time): %.2f  (target >= 0.8)\n", c / s
}'
