#!/usr/bin/env bash
# Usage: scripts/bench-ab.sh OLD_BUILD NEW_BUILD
# Reading speed of two builds of sluice (a change's before and after), in one
# run, alternating: case 3 of bench-peers (raw TFRecord reading with CRCs,
# `sluice_cases --case read` over 400,000 small Examples in 4 indexed
# shards) and pipeline_parallel_reads_bench (8 files of 32 KiB records,
# num_parallel_reads 1 and 8, indexed, plain and GZIP). Prints each round and
# the medians' ratio new / old. Both builds need the targets sluice_cases and
# pipeline_parallel_reads_bench (ninja -C BUILD sluice_cases
# pipeline_parallel_reads_bench). Environment: ROUNDS=5, SECONDS_PER_RUN=5,
# WORK=/tmp/sluice-ab (the shards), CORES=$(nproc), FILTER (a regex of the
# parallel reads benchmark's names; default all).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/lib/args.sh"
args_help "$@"
args_positional 2 "$@"
(($# == 2)) || args_die "need OLD_BUILD and NEW_BUILD"
old=$1 new=$2
ROUNDS=${ROUNDS:-5}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-5}
WORK=${WORK:-/tmp/sluice-ab}
CORES=${CORES:-$(nproc)}
for b in "$old" "$new"; do
  for t in bench/peers/sluice_cases bench/pipeline/pipeline_parallel_reads_bench; do
    [[ -x $b/$t ]] || args_die "$b/$t is missing (ninja -C $b sluice_cases pipeline_parallel_reads_bench)"
  done
done
mkdir -p "$WORK"
if [[ ! -f $WORK/small-00003-of-00004.tfrecord.idx ]]; then
  "$new/bench/peers/sluice_cases" --make-records "$WORK/small" --count 400000 --shards 4 >&2
fi
cat "$WORK"/small-* > /dev/null

declare -A rates  # "build case" -> rates, space-separated
read_rate() {  # build: items/s of case 3
  "$1/bench/peers/sluice_cases" --case read --files "$WORK/small-*.tfrecord" --cores "$CORES" \
    --seconds "$SECONDS_PER_RUN" --warmup 1 | tail -1 |
    sed -n 's/.*"items_per_s":\([0-9.e+]*\).*/\1/p'
}
reads_rates() {  # build: "name items/s" per line of the parallel reads benchmark
  "$1/bench/pipeline/pipeline_parallel_reads_bench" --benchmark_min_time=1 \
    --benchmark_filter="${FILTER:-.}" \
    --benchmark_format=csv 2> /dev/null | awk -F, 'NR > 1 && $1 ~ /^"/ {
      gsub(/"/, "", $1); print $1, $7 }'
}
for ((r = 1; r <= ROUNDS; r++)); do
  for side in old new; do
    b=$old; [[ $side == new ]] && b=$new
    rate=$(read_rate "$b")
    rates["$side case3"]+="$rate "
    echo "round $r $side case3 $rate"
    while read -r name rate; do
      rates["$side $name"]+="$rate "
      echo "round $r $side $name $rate"
    done < <(reads_rates "$b")
  done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "== medians of $ROUNDS rounds (items/s), new / old"
for key in "${!rates[@]}"; do
  [[ $key == old* ]] || continue
  name=${key#old }
  o=$(median <<< "${rates["old $name"]}") n=$(median <<< "${rates["new $name"]}")
  awk -v name="$name" -v o="$o" -v n="$n" 'BEGIN { printf "%-40s old %12.0f  new %12.0f  %.3f\n", name, o, n, n / o }'
done | sort
