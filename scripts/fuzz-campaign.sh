#!/usr/bin/env bash
# Usage: scripts/fuzz-campaign.sh BUILD_DIR SECONDS OUT_DIR
#        scripts/fuzz-campaign.sh --minimize BUILD_DIR OUT_DIR
#
# A recorded fuzzing campaign (outside CI): runs every libFuzzer target in
# BUILD_DIR for SECONDS each, one at a time (-j1 style: one core), from its
# committed seed corpus plus a working corpus in OUT_DIR/<name>/, and writes
# OUT_DIR/summary.tsv: target, seconds, CPU seconds (user + system),
# executions, final corpus units, peak RSS, crashes. Findings (crash, leak,
# timeout, oom artifacts) land in OUT_DIR as <name>-*. Afterwards
#   scripts/fuzz-campaign.sh --minimize BUILD_DIR OUT_DIR
# merges each working corpus and the committed seeds into a fresh directory
# (-merge=1) and puts its units into tests/fuzz/corpus/<name>/ under their
# SHA-1 names in place of the earlier SHA-1-named ones. Seeds with other
# names (golden files, regression-* inputs that tests open) are kept as they
# are, and units equal to one of them are not added twice.
#   scripts/fuzz-campaign.sh build-fuzz 360 /tmp/fuzz-campaign
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/lib/args.sh"
args_help "$@"
if [[ ${1:-} == --minimize ]]; then args_positional 2 "${@:2}"; else args_positional 3 "$@"; fi
(($# == 3)) || args_die "three arguments expected, got $#"

if [[ "${1:-}" == "--minimize" ]]; then
  build=${2:?build dir}
  out=${3:?out dir}
  for f in $(find "$build/tests/fuzz" -maxdepth 1 -type f -name '*_fuzz' -perm -u+x | sort); do
    name=$(basename "$f")
    seeds="$root/tests/fuzz/corpus/${name%_fuzz}"
    fresh="$out/minimized/${name%_fuzz}"
    rm -rf "$fresh" && mkdir -p "$fresh"
    inputs=("$out/$name")
    [[ -d "$seeds" ]] && inputs+=("$seeds")
    "$f" -merge=1 -rss_limit_mb=2048 -timeout=10 "$fresh" "${inputs[@]}" > "$out/$name.merge.log" 2>&1
    mkdir -p "$seeds"
    find "$seeds" -maxdepth 1 -type f -regextype egrep -regex '.*/[0-9a-f]{40}' -delete
    declare -A named=()
    for s in "$seeds"/*; do
      [[ -f "$s" ]] && named[$(sha1sum "$s" | cut -d' ' -f1)]=1
    done
    for u in "$fresh"/*; do
      [[ -f "$u" && -z "${named[$(basename "$u")]:-}" ]] && cp "$u" "$seeds"/
    done
    unset named
    echo "$name: $(ls "$seeds" | wc -l) files, $(du -sk "$seeds" | cut -f1) KiB"
  done
  exit 0
fi

build=${1:?build dir}
seconds=${2:?seconds per target}
out=${3:?out dir}
mkdir -p "$out"
summary="$out/summary.tsv"
[[ -f "$summary" ]] || printf 'target\tseconds\tcpu_seconds\texecutions\tcorpus_units\tpeak_rss_mb\tfindings\n' > "$summary"
for f in $(find "$build/tests/fuzz" -maxdepth 1 -type f -name '*_fuzz' -perm -u+x | sort); do
  name=$(basename "$f")
  seeds="$root/tests/fuzz/corpus/${name%_fuzz}"
  work="$out/$name"
  mkdir -p "$work"
  corpora=("$work")
  [[ -d "$seeds" ]] && corpora+=("$seeds")
  log="$out/$name.log"
  echo "$(date -u +%H:%M:%S) fuzzing $name for ${seconds}s"
  /usr/bin/time -f '%U %S' -o "$out/$name.time" \
    "$f" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$out/$name-" "${corpora[@]}" > "$log" 2>&1 || true
  cpu=$(awk '{print $1 + $2}' "$out/$name.time" | tail -1)
  execs=$(grep -oP '^stat::number_of_executed_units:\s+\K[0-9]+' "$log" || echo 0)
  rss=$(grep -oP '^stat::peak_rss_mb:\s+\K[0-9]+' "$log" || echo 0)
  units=$(grep -oP 'DONE .* corp: \K[0-9]+' "$log" | tail -1 || true)
  [[ -n "$units" ]] || units=$(grep -oP '#[0-9]+\s+\w+\s+cov: [0-9]+ ft: [0-9]+ corp: \K[0-9]+' "$log" | tail -1 || echo 0)
  findings=$(ls "$out" | grep -c "^$name-" || true)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$seconds" "$cpu" "$execs" "$units" "$rss" "$findings" >> "$summary"
  echo "  cpu ${cpu}s, ${execs} executions, ${findings} findings"
done
