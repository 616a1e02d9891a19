#!/usr/bin/env bash
# Runs every Google Benchmark program under BUILD_DIR/bench and prints the
# machine it ran on, for pasting into docs/perf.md.
#   scripts/run-benchmarks.sh build [extra benchmark flags...]
set -euo pipefail
build=${1:?build dir}
shift || true
echo "# $(date -u +%Y-%m-%d) on $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
for b in $(find "$build/bench" -type f -name '*_bench' -perm -u+x | sort); do
  echo "## $(basename "$b")"
  "$b" --benchmark_min_time=0.5 "$@"
done
