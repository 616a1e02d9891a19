#!/usr/bin/env bash
# Runs every Google Benchmark program under BUILD_DIR/bench and prints the
# machine it ran on, for pasting into docs/perf.md.
# Usage: scripts/run-benchmarks.sh BUILD_DIR [Google Benchmark flags (--benchmark_*)...]
set -euo pipefail
. "$(dirname "$0")/lib/args.sh"
args_help "$@"
(($# >= 1)) || args_die "give BUILD_DIR"
[[ $1 != -* ]] || args_die "unknown option $1 (BUILD_DIR comes first)"
for arg in "${@:2}"; do
  [[ $arg == --benchmark_* || $arg == --v=* ]] ||
    args_die "unknown option $arg (Google Benchmark's --benchmark_* and --v flags only)"
done
build=$1
shift
echo "# $(date -u +%Y-%m-%d) on $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
for b in $(find "$build/bench" -type f -name '*_bench' -perm -u+x | sort); do
  echo "## $(basename "$b")"
  "$b" --benchmark_min_time=0.5 "$@"
done
