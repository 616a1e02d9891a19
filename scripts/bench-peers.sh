#!/usr/bin/env bash
# sluice against its peers, side by side in one run on the same cores:
# tf.data (tensorflow-cpu), PyTorch's DataLoader with torchvision (where it
# installs), and the physical references (bare libjpeg-turbo decode on every
# core, page-cache read and memcpy). Writes the table between the markers
# `<!-- peers:begin -->` and `<!-- peers:end -->` of docs/perf.md.
#
#   scripts/bench-peers.sh [BUILD_DIR]        (default: build/)
#
# Environment (defaults): ROUNDS=3 runs of each system per case, alternating,
# median reported; DURATION=10 seconds timed per run after WARMUP=3;
# CORES=$(nproc) (everything runs under taskset -c 0-(CORES-1));
# CASES="1 2 3 4 5"; IMAGES=/tmp/sluice-imagenet-like (made with
# scripts/make-imagenet-like.sh --count $COUNT, COUNT=2000, if missing);
# WORK=/tmp/sluice-peers (shards, records, outputs); RECORDS=400000 small
# Examples for cases 3-4; TORCH=auto|skip; TF_VENV=~/.cache/sluice/tf-venv,
# TORCH_VENV=~/.cache/sluice/torch-venv (made if missing; a torch install
# that fails or takes over 5 minutes is skipped and remembered in
# TORCH_VENV.failed); PERF_MD=docs/perf.md (PERF_MD= prints only).
#
# Cases: 1 decode (TFRecords -> parse, full decode, random resized crop 224,
# flip, normalize, batch 128, prefetch), 2 fused (crop-window decode), 3 raw
# TFRecord reading with CRCs, 4 batched Example parsing, 5 image folder ->
# TFRecords (`sluice convert images` vs the tutorial's Python loop).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
command_line="ROUNDS=${ROUNDS:-3} DURATION=${DURATION:-10} WARMUP=${WARMUP:-3} CORES=${CORES:-$(nproc)}${CASES:+ CASES=\"$CASES\"} scripts/bench-peers.sh $*"
build=${1:-$root/build}
[[ $build = /* ]] || build=$PWD/$build
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-3}
CORES=${CORES:-$(nproc)}
CASES=${CASES:-"1 2 3 4 5"}
IMAGES=${IMAGES:-/tmp/sluice-imagenet-like}
COUNT=${COUNT:-2000}
WORK=${WORK:-/tmp/sluice-peers}
RECORDS=${RECORDS:-400000}
TORCH=${TORCH:-auto}
TF_VENV=${TF_VENV:-$HOME/.cache/sluice/tf-venv}
TORCH_VENV=${TORCH_VENV:-$HOME/.cache/sluice/torch-venv}
PERF_MD=${PERF_MD-$root/docs/perf.md}
cpus="0-$((CORES - 1))"
log() { echo "bench-peers: $*" >&2; }

# --- Build ------------------------------------------------------------------
if [[ ! -f $build/build.ninja ]]; then
  log "configuring $build (Release)"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
fi
log "building in $build"
nice -n 10 ninja -C "$build" -j "$(nproc)" sluice sluice_cases bare_decode make_imagenet_like >&2
sluice=$build/tools/sluice
cases_bin=$build/bench/peers/sluice_cases
bare_bin=$build/bench/peers/bare_decode

# --- Data -------------------------------------------------------------------
mkdir -p "$WORK"
if [[ ! -d $IMAGES ]]; then
  "$root/scripts/make-imagenet-like.sh" --build "$build" --out "$IMAGES" --count "$COUNT" >&2
fi
n_images=$(find "$IMAGES" -type f | wc -l)
stamp="$n_images $(find "$IMAGES" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')"
if [[ ! -f $WORK/shards.stamp || $(cat "$WORK/shards.stamp") != "$stamp" ]]; then
  log "converting $IMAGES into $WORK/shards (8 shards, indexed)"
  rm -rf "$WORK/shards"; mkdir -p "$WORK/shards"
  "$sluice" convert images "$IMAGES" --out "$WORK/shards/train" --shards 8 --index >&2
  echo "$stamp" > "$WORK/shards.stamp"
fi
if [[ ! -f $WORK/small.stamp || $(cat "$WORK/small.stamp") != "$RECORDS" ]]; then
  log "writing $RECORDS small Examples into $WORK/small"
  rm -rf "$WORK/small"; mkdir -p "$WORK/small"
  "$cases_bin" --make-records "$WORK/small/small" --count "$RECORDS" --shards 4
  echo "$RECORDS" > "$WORK/small.stamp"
fi
shards="$WORK/shards/train-*.tfrecord"
small="$WORK/small/small-*.tfrecord"
# Warm the page cache.
cat "$WORK"/shards/* "$WORK"/small/* > /dev/null
find "$IMAGES" -type f -print0 | xargs -0 cat > /dev/null

# --- Peers' environments -----------------------------------------------------
tf_py=""
if "$TF_VENV/bin/python" -c 'import tensorflow' 2>/dev/null; then
  tf_py=$TF_VENV/bin/python
else
  log "making $TF_VENV with tensorflow-cpu from PyPI"
  if python3 -m venv "$TF_VENV" >&2 && timeout 900 "$TF_VENV/bin/pip" install -q tensorflow-cpu >&2 &&
     "$TF_VENV/bin/python" -c 'import tensorflow' 2>/dev/null; then
    tf_py=$TF_VENV/bin/python
  else
    log "tensorflow-cpu did not install: the tf.data peer and case 5's Python loop are skipped"
  fi
fi
torch_py=""
torch_note=""
if [[ $TORCH == skip ]]; then
  torch_note="torch skipped (TORCH=skip)"
elif "$TORCH_VENV/bin/python" -c 'import torch, torchvision' 2>/dev/null; then
  torch_py=$TORCH_VENV/bin/python
elif [[ -f $TORCH_VENV.failed ]]; then
  torch_note="torch skipped: an earlier install failed ($TORCH_VENV.failed; delete it to retry)"
else
  log "installing torch and torchvision from PyPI into $TORCH_VENV (5 minutes at most)"
  if python3 -m venv "$TORCH_VENV" >&2 &&
     timeout 300 "$TORCH_VENV/bin/pip" install -q torch torchvision >&2 &&
     "$TORCH_VENV/bin/python" -c 'import torch, torchvision' 2>/dev/null; then
    torch_py=$TORCH_VENV/bin/python
  else
    date -u > "$TORCH_VENV.failed"
    torch_note="torch skipped: pip install torch torchvision failed or took over 5 minutes"
  fi
fi
[[ -n $torch_note ]] && log "$torch_note"

# --- Runs -----------------------------------------------------------------------
results=$WORK/results.jsonl
: > "$results"
common=(--cores "$CORES" --seconds "$DURATION" --warmup "$WARMUP")

# run_system CASE_NO SYSTEM: one timed run, its JSON line appended to $results.
run_system() {
  local no=$1 sys=$2 line="" t0 t1
  local -A name=([1]=decode [2]=fused [3]=read [4]=parse [5]=convert)
  local c=${name[$no]}
  local tset=(taskset -c "$cpus")
  exec 3>&2 2> "$WORK/stderr.txt"  # the peers' chatter, shown only on failure
  case $sys in
    sluice)
      if [[ $c == convert ]]; then
        rm -rf "$WORK/convert"; mkdir -p "$WORK/convert"; sync
        # The rate sluice convert reports (its conversion, without process
        # start), as python_convert.py times its loop without the import.
        local report rate
        if report=$("${tset[@]}" "$sluice" convert images "$IMAGES" --out "$WORK/convert/train" \
                      --shards 16 --workers "$CORES"); then
          rate=$(sed -n 's|^converted .* s: \([0-9.]*\) images/s.*|\1|p' <<< "$report")
          [[ -n $rate ]] && line="{\"system\":\"sluice\",\"case\":\"convert\",\"items_per_s\":$rate}"
        fi
      else
        local files=$shards
        [[ $c == read || $c == parse ]] && files=$small
        line=$("${tset[@]}" "$cases_bin" --case "$c" --files "$files" "${common[@]}" | tail -1) || true
      fi ;;
    tf.data)
      if [[ $c == convert ]]; then
        rm -rf "$WORK/convert"; mkdir -p "$WORK/convert"; sync
        line=$("${tset[@]}" "$tf_py" "$root/bench/peers/python_convert.py" --images "$IMAGES" \
          --out "$WORK/convert/train" --shards 16 | tail -1) || true
      else
        local files=$shards
        [[ $c == read || $c == parse ]] && files=$small
        line=$("${tset[@]}" "$tf_py" "$root/bench/peers/tfdata_cases.py" --case "$c" --files "$files" \
          "${common[@]}" | tail -1) || true
      fi ;;
    torch)
      line=$("${tset[@]}" "$torch_py" "$root/bench/peers/torch_cases.py" --case "$c" \
        --images "$IMAGES" "${common[@]}" 2>/dev/null | tail -1) || true ;;
    bare)
      if [[ $c == read ]]; then
        line=$("${tset[@]}" "$bare_bin" --mode read --files "$small" --threads "$CORES" \
          --seconds "$DURATION" | tail -1) || true
      else
        line=$("${tset[@]}" "$bare_bin" --mode decode --images "$IMAGES" --threads "$CORES" \
          --seconds "$DURATION" | tail -1) || true
      fi ;;
  esac
  exec 2>&3 3>&-
  if [[ $line == \{* ]]; then
    log "case $no $sys: $line"
    echo "${line%\}},\"case_no\":$no}" >> "$results"
  else
    log "case $no $sys: no result (failed); its stderr ends with:"
    tail -5 "$WORK/stderr.txt" >&2
  fi
}

# Other processes' CPU use during the runs: busy CPU time in /proc/stat
# minus our children's CPU time.
busy_jiffies() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
children_seconds() {
  times | tail -1 | awk '{ s = 0; for (i = 1; i <= 2; ++i) { split($i, p, /[ms]/); s += p[1] * 60 + p[2] } print s }'
}
load_before=$(cut -d' ' -f1 /proc/loadavg)
( while true; do cut -d' ' -f1 /proc/loadavg; sleep 2; done ) > "$WORK/load.txt" &
sampler=$!
trap 'kill "$sampler" 2>/dev/null || true' EXIT
busy0=$(busy_jiffies); kids0=$(children_seconds); wall0=$(date +%s.%N)

for no in $CASES; do
  systems=()
  case $no in
    1) systems=(sluice); [[ -n $tf_py ]] && systems+=(tf.data); [[ -n $torch_py ]] && systems+=(torch)
       systems+=(bare) ;;
    2|4) systems=(sluice); [[ -n $tf_py ]] && systems+=(tf.data) ;;
    3) systems=(sluice); [[ -n $tf_py ]] && systems+=(tf.data); systems+=(bare) ;;
    5) systems=(sluice); [[ -n $tf_py ]] && systems+=(tf.data) ;;
    *) log "unknown case $no"; continue ;;
  esac
  for ((r = 0; r < ROUNDS; ++r)); do
    for ((i = 0; i < ${#systems[@]}; ++i)); do
      run_system "$no" "${systems[(i + r) % ${#systems[@]}]}"
    done
  done
done

busy1=$(busy_jiffies); kids1=$(children_seconds); wall1=$(date +%s.%N)
kill "$sampler" 2>/dev/null || true
other_cpu=$(awk -v b0="$busy0" -v b1="$busy1" -v k0="$kids0" -v k1="$kids1" -v w0="$wall0" -v w1="$wall1" \
  -v hz="$(getconf CLK_TCK)" 'BEGIN { o = ((b1 - b0) / hz - (k1 - k0)) / (w1 - w0); if (o < 0) o = 0; printf "%.2f", o }')
load_max=$(sort -g "$WORK/load.txt" | tail -1)

# --- Table ----------------------------------------------------------------------
rev=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
[[ -n $(git -C "$root" status --porcelain 2>/dev/null) ]] && rev="$rev (with uncommitted changes)"
tf_version=$([[ -n $tf_py ]] && "$tf_py" -c 'import tensorflow as tf; print(tf.__version__)' 2>/dev/null || echo "not installed")
torch_version=$([[ -n $torch_py ]] && "$torch_py" -c 'import torch, torchvision; print(f"{torch.__version__}, torchvision {torchvision.__version__}")' 2>/dev/null || echo "not measured")
export RESULTS=$results ROUNDS DURATION WARMUP CORES PERF_MD n_images RECORDS
export META_CPU="$(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs online, $CORES used (taskset -c $cpus)"
export META_DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
export META_VERSIONS="sluice $rev, g++ $(g++ -dumpfullversion), TensorFlow $tf_version, torch $torch_version, libjpeg-turbo $(dpkg-query -W -f '${Version}' libturbojpeg0 2>/dev/null || echo '?')"
export META_COMMAND=$command_line META_LOAD_BEFORE=$load_before META_LOAD_MAX=$load_max META_OTHER_CPU=$other_cpu
export META_TORCH_NOTE=$torch_note
python3 "$root/bench/peers/peers_table.py"
