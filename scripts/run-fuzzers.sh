#!/usr/bin/env bash
# Runs every libFuzzer target in BUILD_DIR for SECONDS each, starting from its
# committed seed corpus (tests/fuzz/corpus/<name>/, read-only) plus a scratch
# corpus. Fails if any target finds a crash.
# Usage: scripts/run-fuzzers.sh BUILD_DIR [SECONDS]     (default 30; e.g. build-fuzz 30)
set -euo pipefail
. "$(dirname "$0")/lib/args.sh"
args_help "$@"
args_positional 2 "$@"
(($# >= 1)) || args_die "give BUILD_DIR"
build=$1
seconds=${2:-30}
root=$(cd "$(dirname "$0")/.." && pwd)
# Undefined behaviour is a finding, as a crash is: the fuzz build's UBSan
# checks recover by default, so without this a report is only printed (and
# its printer's allocations then show up as a leak).
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1:suppressions=$root/scripts/ubsan.supp}
fuzzers=$(find "$build/tests/fuzz" -maxdepth 1 -type f -name '*_fuzz' -perm -u+x | sort)
[[ -n "$fuzzers" ]] || { echo "no fuzz targets under $build/tests/fuzz" >&2; exit 1; }
for f in $fuzzers; do
  name=$(basename "$f")
  seeds="$root/tests/fuzz/corpus/${name%_fuzz}"
  scratch="$build/fuzz-corpus/$name"
  mkdir -p "$scratch"
  echo "fuzzing $name for ${seconds}s"
  args=(-max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1
        -artifact_prefix="$build/$name-")
  [[ -d "$seeds" ]] && corpora=("$scratch" "$seeds") || corpora=("$scratch")
  log="$build/$name.log"
  if ! "$f" "${args[@]}" "${corpora[@]}" > "$log" 2>&1; then
    tail -n 60 "$log" >&2
    echo "$name FAILED: see $log and the artifact under $build/" >&2
    exit 1
  fi
  grep -E "^stat::(number_of_executed_units|peak_rss_mb)" "$log" | sed 's/^/  /' || true
done
