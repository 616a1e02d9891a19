#!/usr/bin/env bash
# sluice against its peers, side by side in one run on the same cores:
# tf.data (tensorflow-cpu), NVIDIA DALI's CPU pipeline, Meta's SPDL, Google's
# Grain, PyTorch's DataLoader with torchvision and the webdataset package,
# and the physical references (bare libjpeg-turbo decode on every core,
# page-cache read and memcpy). Writes the table between the markers
# `<!-- peers:begin -->` and `<!-- peers:end -->` of docs/perf.md (cases
# 1-8), and the file formats' table between `<!-- formats:begin -->` and
# `<!-- formats:end -->` (cases text, csv, fixedlength); a run touches only
# the tables of the cases it ran. PLOT=FILE.svg also draws the run's medians
# (scripts/plot-bench.py --peers).
#
# Usage: scripts/bench-peers.sh [BUILD_DIR]        (default: build/)
#   scripts/bench-peers.sh --check-venvs      the peers' Python venvs: ready,
#       missing or incomplete (what a run would do); nothing is changed or
#       downloaded. Exit status 0 if all are ready.
#   scripts/bench-peers.sh --setup-venvs      make or repair the venvs (pip
#       installs from PyPI), then exit without building or measuring.
#
# Environment (defaults): ROUNDS=3 runs of each system per case, alternating,
# median reported; DURATION=10 seconds timed per run after WARMUP=3;
# CORES=$(nproc) (everything runs under taskset -c 0-(CORES-1));
# CASES="1 2 3 4 5 7 8"; IMAGES=/tmp/sluice-imagenet-like (made with
# scripts/make-imagenet-like.sh --count $COUNT, COUNT=2000, if missing);
# WORK=/tmp/sluice-peers (shards, records, outputs); RECORDS=400000 small
# Examples for cases 3-4; CONVERT_REPEATS=5 conversions per sluice run of
# case 5 (their combined rate; one takes well under a second);
# PEERS="tf torch dali spdl grain" (the peers to run; TORCH=skip drops
# torch, as before); their venvs TF_VENV, TORCH_VENV, DALI_VENV, SPDL_VENV,
# GRAIN_VENV (default ~/.cache/sluice/NAME-venv; made if missing with pinned
# versions from PyPI: tensorflow-cpu 2.21.0; torch 2.15.0, torchvision
# 0.29.2 and webdataset 1.0.2; nvidia-dali-cuda120 2.4.0; spdl 0.8.0;
# grain 0.2.18 with pillow 13.0.0; an install that fails or takes too long
# is skipped and remembered in DIR.failed); SPDL also needs FFmpeg's
# libraries (Debian's libav*), installed with apt-get when missing and run
# as root; PYTHON3=python3 (the Python that makes the venvs);
# PERF_MD=docs/perf.md (PERF_MD= prints only). No peer is ever installed by
# the build or by CI.
#
# A venv is used when its bin/python imports the peer's modules. A venv
# directory that does not (an interrupted `python3 -m venv` or pip install:
# no bin/python, no pip, a failed import) is removed and made again; a
# directory without pyvenv.cfg is not a venv and is left alone (the peer is
# skipped). Making venvs needs python3-venv on Debian/Ubuntu.
#
# Cases: 1 decode (TFRecords -> parse, full decode, random resized crop 224,
# flip, normalize, batch 128, prefetch), 2 fused (crop-window decode), 3 raw
# TFRecord reading with CRCs, 4 batched Example parsing, 5 image folder ->
# TFRecords (`sluice convert images` vs the tutorial's Python loop), 6 case 2
# on shards converted with `--restart-interval 1` (both systems read the same
# restart-marked files; sluice's crop decodes then read only the window's
# segments), 7 the image folder itself -> case 1's batches (every system
# reads the files: sluice list -> read_file -> the fused op, tf.data's
# tutorial pipeline, DALI readers.file, SPDL, Grain, torchvision's
# ImageFolder), 8 WebDataset tar shards of the same images (KEY.jpg +
# KEY.cls, written by bench/peers/make_wds.py) -> case 1's batches (sluice's
# WebDatasetDataset, DALI readers.webdataset, the webdataset package with
# torch's DataLoader). DALI runs cases 1, 2, 6, 7 and 8 as its docs write an
# ImageNet pipeline (bench/peers/dali_cases.py; case 2 with its ROI decode,
# decoders.image_random_crop). CASES defaults to 1-5, 7 and 8.
# File formats (issue 40; not in the default CASES, name them): `text`
# (TextLineDataset over TEXT_LINES=2000000 log-like lines of ~120 bytes in
# 4 files of ~60 MB, batch 4096), `csv` (CsvDataset over CSV_ROWS=2000000
# rows of ~43 bytes in 4 files with a header, 6 columns typed by
# record_defaults: int64, int32, 2 float32 required, a float32 and a string
# with defaults; batch 4096) and `fixedlength` (FixedLengthRecordDataset of
# 3,073-byte records, CIFAR-10's binary format, FIXED_RECORDS=50000 in 5
# files; batch 1024), each in sluice (C++), tf.data and sluice-python. The
# files are written once into $WORK/text, $WORK/csv and $WORK/fixed by
# `sluice_cases --make-files KIND` (deterministic). All three systems read
# FORMAT_READS=1 file at a time (num_parallel_reads; -1: AUTOTUNE on every
# side). The table adds each system's MB/s (items/s x the files' mean bytes
# per item). Cases 1, 2 and 6 also time "loop":
# sluice's map function of the case in a plain loop on CORES threads over
# the records in memory (`sluice_cases --loop 1`), the same work per image
# with no pipeline: how much of a gap to the bare limit is the work itself.
# Cases 1-4 and 6-8 also time "sluice-python": the same pipeline written with
# sluice's Python package (bench/peers/python_cases.py), when the build was
# configured with SLUICE_PYTHON (make build does; the package is built in
# BUILD/python and run with that venv's python).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/lib/args.sh"
args_help "$@"
command_line="ROUNDS=${ROUNDS:-3} DURATION=${DURATION:-10} WARMUP=${WARMUP:-3} CORES=${CORES:-$(nproc)}${CASES:+ CASES=\"$CASES\"}${PEERS:+ PEERS=\"$PEERS\"}${FORMAT_READS:+ FORMAT_READS=$FORMAT_READS} scripts/bench-peers.sh $*"
mode=run
positional=()
for arg in "$@"; do
  case $arg in
    --check-venvs) mode=check ;;
    --setup-venvs) mode=setup ;;
    -*) args_die "unknown option $arg" ;;
    *) positional+=("$arg") ;;
  esac
done
((${#positional[@]} <= 1)) || args_die "one BUILD_DIR at most, got: ${positional[*]}"
build=${positional[0]:-$root/build}
[[ $build = /* ]] || build=$PWD/$build
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-3}
CORES=${CORES:-$(nproc)}
CASES=${CASES:-"1 2 3 4 5 7 8"}
IMAGES=${IMAGES:-/tmp/sluice-imagenet-like}
COUNT=${COUNT:-2000}
WORK=${WORK:-/tmp/sluice-peers}
RECORDS=${RECORDS:-400000}
TEXT_LINES=${TEXT_LINES:-2000000}
CSV_ROWS=${CSV_ROWS:-2000000}
FIXED_RECORDS=${FIXED_RECORDS:-50000}
FORMAT_READS=${FORMAT_READS:-1}
CONVERT_REPEATS=${CONVERT_REPEATS:-5}
PEERS=${PEERS:-"tf torch dali spdl grain"}
[[ ${TORCH:-} == skip ]] && PEERS=${PEERS//torch/}  # the old switch
TF_VENV=${TF_VENV:-$HOME/.cache/sluice/tf-venv}
TORCH_VENV=${TORCH_VENV:-$HOME/.cache/sluice/torch-venv}
DALI_VENV=${DALI_VENV:-$HOME/.cache/sluice/dali-venv}
SPDL_VENV=${SPDL_VENV:-$HOME/.cache/sluice/spdl-venv}
GRAIN_VENV=${GRAIN_VENV:-$HOME/.cache/sluice/grain-venv}
PERF_MD=${PERF_MD-$root/docs/perf.md}
PYTHON3=${PYTHON3:-python3}
cpus="0-$((CORES - 1))"
log() { echo "bench-peers: $*" >&2; }

# --- Peers' Python environments -------------------------------------------------
# venv_state DIR MODULE...: "ready", "missing", "incomplete: WHY" (made
# again) or "foreign: WHY" (not a venv: left alone).
venv_state() {
  local dir=$1; shift
  local imports; imports=$(IFS=,; echo "$*")
  if [[ ! -e $dir && ! -L $dir ]]; then echo missing; return; fi
  if [[ ! -d $dir ]]; then echo "foreign: not a directory"; return; fi
  if [[ ! -f $dir/pyvenv.cfg ]]; then
    if [[ -z $(ls -A "$dir") ]]; then echo "incomplete: empty directory"
    else echo "foreign: no pyvenv.cfg"; fi
    return
  fi
  if [[ ! -x $dir/bin/python ]]; then echo "incomplete: no working bin/python"; return; fi
  if "$dir/bin/python" -c "import $imports" 2>/dev/null; then echo ready; return; fi
  if [[ ! -x $dir/bin/pip ]]; then echo "incomplete: no bin/pip"
  else echo "incomplete: import $imports fails"; fi
}

# venv_tools_note: empty if $PYTHON3 can make venvs with pip, else why not.
venv_tools_note() {
  if ! command -v "$PYTHON3" > /dev/null; then
    echo "$PYTHON3 not found (apt-get install python3 python3-venv)"
  elif ! "$PYTHON3" -c 'import venv, ensurepip' 2>/dev/null; then
    echo "$PYTHON3 cannot make venvs with pip: install python3-venv (apt-get install python3-venv)"
  fi
}

# ensure_venv DIR TIMEOUT_S "PACKAGES" MODULE...: makes DIR ready (removing
# an incomplete one first, pip install from PyPI); on failure returns 1 with
# the reason in venv_note.
venv_note=""
ensure_venv() {
  local dir=$1 timeout_s=$2 packages=$3; shift 3
  local state; state=$(venv_state "$dir" "$@")
  venv_note=""
  case $state in
    ready) return 0 ;;
    foreign:*) venv_note="$dir is not a Python venv (${state#foreign: }): left alone"; return 1 ;;
    incomplete:*)
      log "$dir is incomplete (${state#incomplete: }), as an interrupted run leaves it: removing it"
      rm -rf -- "$dir" ;;
  esac
  venv_note=$(venv_tools_note)
  [[ -z $venv_note ]] || return 1
  log "making $dir with $packages from PyPI ($timeout_s s at most)"
  mkdir -p "$(dirname "$dir")"
  if ! "$PYTHON3" -m venv "$dir" >&2 || [[ ! -x $dir/bin/pip ]]; then
    rm -rf -- "$dir"
    venv_note="$PYTHON3 -m venv $dir failed (on Debian/Ubuntu: apt-get install python3-venv)"
    return 1
  fi
  # shellcheck disable=SC2086  # PACKAGES is a list
  if timeout "$timeout_s" "$dir/bin/pip" install -q $packages >&2 &&
     [[ $(venv_state "$dir" "$@") == ready ]]; then
    return 0
  fi
  venv_note="pip install $packages into $dir failed or took over $timeout_s s"
  return 1
}

# The peers and their venvs: NAME -> "DIR TIMEOUT_S PACKAGES... -- MODULES...".
# Versions are pinned: the numbers in docs/perf.md name them.
declare -A peer_spec=(
  [tf]="$TF_VENV 900 tensorflow-cpu==2.21.0 -- tensorflow"
  [torch]="$TORCH_VENV 600 torch==2.15.0 torchvision==0.29.2 webdataset==1.0.2 -- torch torchvision webdataset"
  [dali]="$DALI_VENV 600 nvidia-dali-cuda120==2.4.0 numpy==2.4.6 -- nvidia.dali"
  [spdl]="$SPDL_VENV 300 spdl==0.8.0 numpy==2.4.6 -- spdl.io spdl.pipeline"
  [grain]="$GRAIN_VENV 300 grain==0.2.18 pillow==13.0.0 numpy==2.4.6 -- grain PIL"
)
# peer_parts NAME: sets p_dir, p_timeout, p_packages, p_modules (an array).
peer_parts() {
  local words; read -r -a words <<< "${peer_spec[$1]}"
  p_dir=${words[0]} p_timeout=${words[1]} p_packages="" p_modules=()
  local i=2
  while [[ ${words[i]} != -- ]]; do p_packages+="${p_packages:+ }${words[i]}"; i=$((i + 1)); done
  p_modules=("${words[@]:i+1}")
}
wanted() { [[ " $PEERS " == *" $1 "* ]]; }

# SPDL decodes through FFmpeg's shared libraries (Debian's libav*): installed
# with apt-get when missing and we are root, else SPDL is skipped.
ffmpeg_present() {
  ldconfig -p 2>/dev/null | grep -q 'libavcodec\.so\.' &&
    ldconfig -p 2>/dev/null | grep -q 'libavfilter\.so\.'
}
ffmpeg_note() {
  if ffmpeg_present; then return; fi
  local pkgs="libavcodec-dev libavformat-dev libavfilter-dev libavdevice-dev libswscale-dev libavutil-dev"
  if [[ $(id -u) == 0 ]] && command -v apt-get > /dev/null; then
    log "installing FFmpeg's libraries for SPDL: apt-get install $pkgs"
    if DEBIAN_FRONTEND=noninteractive apt-get install -y -q $pkgs > "$WORK/apt-ffmpeg.log" 2>&1; then
      return
    fi
    echo "apt-get install $pkgs failed ($WORK/apt-ffmpeg.log)"
  else
    echo "FFmpeg's libraries are missing (apt-get install $pkgs)"
  fi
}

# setup_venvs: sets py[NAME] (a venv's python; unset: that peer is skipped)
# and notes[NAME] (why it is skipped). A pip install that failed is
# remembered in DIR.failed (delete it to retry), so that a run does not
# download for minutes again for nothing.
declare -A py=() notes=()
setup_venvs() {
  local name
  for name in tf torch dali spdl grain; do
    peer_parts "$name"
    if ! wanted "$name"; then
      notes[$name]="$name skipped (not in PEERS)"
    elif [[ $(venv_state "$p_dir" "${p_modules[@]}") != ready && -f $p_dir.failed ]]; then
      notes[$name]="$name skipped: an earlier install failed ($p_dir.failed; delete it to retry)"
    elif ensure_venv "$p_dir" "$p_timeout" "$p_packages" "${p_modules[@]}"; then
      py[$name]=$p_dir/bin/python
    else
      # Remembered only when pip itself failed, not when venvs cannot be made.
      [[ $venv_note == pip* ]] && date -u > "$p_dir.failed"
      notes[$name]="$name skipped: $venv_note"
    fi
    if [[ $name == spdl && -n ${py[spdl]:-} ]]; then
      local why; why=$(ffmpeg_note)
      if [[ -n $why ]]; then unset 'py[spdl]'; notes[spdl]="spdl skipped: $why"; fi
    fi
    if [[ -n ${notes[$name]:-} ]]; then log "${notes[$name]}"; fi
  done
}

# check_venvs: prints each venv's state and what a run would do; changes nothing.
check_venvs() {
  local ok=0 state tools name
  tools=$(venv_tools_note)
  for name in tf torch dali spdl grain; do
    peer_parts "$name"
    if ! wanted "$name"; then echo "$name-venv $p_dir: skipped (not in PEERS)"; continue; fi
    state=$(venv_state "$p_dir" "${p_modules[@]}")
    if [[ $state != ready && -f $p_dir.failed ]]; then
      echo "$name-venv $p_dir: $state; skipped: an earlier install failed ($p_dir.failed)"
    else
      echo "$name-venv $p_dir: $state$(venv_action "$state" "$tools")"
    fi
    [[ $state == ready ]] || ok=1
    if [[ $name == spdl ]] && ! ffmpeg_present; then
      echo "spdl: FFmpeg's libraries are missing (a run as root installs them with apt-get)"
      ok=1
    fi
  done
  if [[ -n $tools ]]; then echo "venv tools: $tools"; fi
  return $ok
}
venv_action() {
  case $1 in
    ready) ;;
    foreign:*) echo "; left alone, the peer is skipped" ;;
    *) if [[ -n $2 ]]; then echo "; cannot be made: $2"
       elif [[ $1 == missing ]]; then echo "; a run makes it from PyPI"
       else echo "; a run removes it and makes it again from PyPI"; fi ;;
  esac
}

case $mode in
  check) if check_venvs; then exit 0; else exit 1; fi ;;
  setup)
    mkdir -p "$WORK"
    setup_venvs
    for name in $PEERS; do [[ -n ${py[$name]:-} ]] || exit 1; done
    exit 0 ;;
esac

# --- Build ------------------------------------------------------------------
if [[ ! -f $build/build.ninja ]]; then
  log "configuring $build (Release)"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
fi
log "building in $build"
nice -n 10 ninja -C "$build" -j "$(nproc)" sluice sluice_cases bare_decode make_imagenet_like >&2
# The Python package, where the build has one (SLUICE_PYTHON: a venv's python).
sluice_py=$(sed -n 's/^SLUICE_PYTHON:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
if [[ -n $sluice_py && -x $sluice_py ]]; then
  nice -n 10 ninja -C "$build" -j "$(nproc)" _sluice >&2
else
  log "no SLUICE_PYTHON in $build: the sluice-python row is skipped (configure with make build)"
  sluice_py=""
fi
sluice=$build/tools/sluice
cases_bin=$build/bench/peers/sluice_cases
bare_bin=$build/bench/peers/bare_decode

# --- Data -------------------------------------------------------------------
# Only what the named cases read: images and their shards for cases 1, 2, 5
# and 6, the small Examples for 3 and 4.
has_case() { local c; for c in "$@"; do [[ " $CASES " == *" $c "* ]] && return 0; done; return 1; }
mkdir -p "$WORK"
n_images=0
if has_case 1 2 5 6 7 8; then
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
  if has_case 6 &&
     [[ ! -f $WORK/shards-rst.stamp || $(cat "$WORK/shards-rst.stamp") != "$stamp" ]]; then
    log "converting $IMAGES into $WORK/shards-rst (8 shards, restart marker every MCU)"
    rm -rf "$WORK/shards-rst"; mkdir -p "$WORK/shards-rst"
    "$sluice" convert images "$IMAGES" --out "$WORK/shards-rst/train" --shards 8 --index \
      --restart-interval 1 >&2
    echo "$stamp" > "$WORK/shards-rst.stamp"
  fi
  if has_case 8 &&
     [[ ! -f $WORK/wds.stamp || $(cat "$WORK/wds.stamp") != "$stamp" ]]; then
    log "writing $IMAGES as WebDataset shards into $WORK/wds (8 tars)"
    rm -rf "$WORK/wds"; mkdir -p "$WORK/wds"
    python3 "$root/bench/peers/make_wds.py" --images "$IMAGES" --out "$WORK/wds/train" >&2
    echo "$stamp" > "$WORK/wds.stamp"
  fi
  # Warm the page cache.
  cat "$WORK"/shards/* > /dev/null
  if has_case 8; then cat "$WORK"/wds/* > /dev/null; fi
  if has_case 6; then cat "$WORK"/shards-rst/* > /dev/null; fi
  find "$IMAGES" -type f -print0 | xargs -0 cat > /dev/null
fi
if has_case 3 4; then
  if [[ ! -f $WORK/small.stamp || $(cat "$WORK/small.stamp") != "$RECORDS" ]]; then
    log "writing $RECORDS small Examples into $WORK/small"
    rm -rf "$WORK/small"; mkdir -p "$WORK/small"
    "$cases_bin" --make-records "$WORK/small/small" --count "$RECORDS" --shards 4
    echo "$RECORDS" > "$WORK/small.stamp"
  fi
  cat "$WORK"/small/* > /dev/null
fi
# The file formats' files (cases text, csv, fixedlength), when named.
format_kinds=()
[[ " $CASES " == *" text "* ]] && format_kinds+=("text:$TEXT_LINES:4")
[[ " $CASES " == *" csv "* ]] && format_kinds+=("csv:$CSV_ROWS:4")
[[ " $CASES " == *" fixedlength "* ]] && format_kinds+=("fixed:$FIXED_RECORDS:5")
format_bytes_per_item=""
for spec in ${format_kinds[@]+"${format_kinds[@]}"}; do
  IFS=: read -r kind count nfiles <<< "$spec"
  if [[ ! -f $WORK/$kind.stamp || $(cat "$WORK/$kind.stamp") != "$count $nfiles" ]]; then
    log "writing $count $kind items into $WORK/$kind ($nfiles files)"
    rm -rf "${WORK:?}/$kind"; mkdir -p "$WORK/$kind"
    "$cases_bin" --make-files "$kind" --out "$WORK/$kind/$kind" --count "$count" --shards "$nfiles"
    echo "$count $nfiles" > "$WORK/$kind.stamp"
  fi
  cat "$WORK/$kind"/* > /dev/null
  bytes=$(find "$WORK/$kind" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
  format_bytes_per_item+="${format_bytes_per_item:+ }$kind=$(awk -v b="$bytes" -v n="$count" 'BEGIN { printf "%.2f", b / n }')"
done
shards="$WORK/shards/train-*.tfrecord"
shards_rst="$WORK/shards-rst/train-*.tfrecord"
small="$WORK/small/small-*.tfrecord"
wds_tars="$WORK/wds/train-*.tar"

# --- Peers' environments -----------------------------------------------------
setup_venvs

# --- Runs -----------------------------------------------------------------------
results=$WORK/results.jsonl
: > "$results"
common=(--cores "$CORES" --seconds "$DURATION" --warmup "$WARMUP")

# run_system CASE_NO SYSTEM: one timed run, its JSON line appended to $results.
run_system() {
  local no=$1 sys=$2 line="" t0 t1
  local -A name=([1]=decode [2]=fused [3]=read [4]=parse [5]=convert [6]=fused [7]=folder
                 [8]=wds [text]=text [csv]=csv [fixedlength]=fixedlength)
  local c=${name[$no]}
  local image_shards=$shards
  [[ $no == 6 ]] && image_shards=$shards_rst
  [[ $no == 7 ]] && image_shards=$IMAGES  # the image folder itself
  [[ $no == 8 ]] && image_shards=$wds_tars
  # The file formats: their files, and num_parallel_reads on every side.
  local -A format_files=([text]="$WORK/text/text-*.txt" [csv]="$WORK/csv/csv-*.csv"
                         [fixedlength]="$WORK/fixed/fixed-*.bin")
  local reads=()
  if [[ -n ${format_files[$c]:-} ]]; then
    image_shards=${format_files[$c]}
    reads=(--parallel-reads "$FORMAT_READS")
  fi
  local tset=(taskset -c "$cpus")
  exec 3>&2 2> "$WORK/stderr.txt"  # the peers' chatter, shown only on failure
  case $sys in
    sluice)
      if [[ $c == convert ]]; then
        # The rate sluice convert reports (its conversion, without process
        # start), as python_convert.py times its loop without the import.
        # One conversion of the default 2,000 images takes 0.04-0.4 s, too
        # short to time steadily: CONVERT_REPEATS conversions, each into a
        # fresh folder, and their combined rate (all images over all
        # seconds: the harmonic mean of the rates, as each converts the
        # same images).
        local report rate inverse_sum=0 reps=0
        for ((rep = 0; rep < CONVERT_REPEATS; rep++)); do
          rm -rf "$WORK/convert"; mkdir -p "$WORK/convert"; sync
          report=$("${tset[@]}" "$sluice" convert images "$IMAGES" --out "$WORK/convert/train" \
                     --shards 16 --workers "$CORES") || break
          rate=$(sed -n 's|^converted .* s: \([0-9.]*\) images/s.*|\1|p' <<< "$report")
          [[ -n $rate ]] || break
          inverse_sum=$(awk -v s="$inverse_sum" -v r="$rate" 'BEGIN { printf "%.12g", s + 1 / r }')
          reps=$((reps + 1))
        done
        if ((reps == CONVERT_REPEATS)); then
          rate=$(awk -v s="$inverse_sum" -v n="$reps" 'BEGIN { printf "%.1f", n / s }')
          line="{\"system\":\"sluice\",\"case\":\"convert\",\"items_per_s\":$rate,\"repeats\":$reps}"
        fi
      else
        local files=$image_shards
        [[ $c == read || $c == parse ]] && files=$small
        line=$("${tset[@]}" "$cases_bin" --case "$c" --files "$files" "${common[@]}" \
          ${reads[@]+"${reads[@]}"} | tail -1) || true
      fi ;;
    sluice-python)
      local files=$image_shards
      [[ $c == read || $c == parse ]] && files=$small
      line=$(PYTHONPATH=$build/python "${tset[@]}" "$sluice_py" "$root/bench/peers/python_cases.py" \
        --case "$c" --files "$files" "${common[@]}" ${reads[@]+"${reads[@]}"} |
        tail -1) || true ;;
    loop)
      line=$("${tset[@]}" "$cases_bin" --case "$c" --loop 1 --files "$image_shards" "${common[@]}" |
               tail -1) || true ;;
    tf.data)
      if [[ $c == convert ]]; then
        rm -rf "$WORK/convert"; mkdir -p "$WORK/convert"; sync
        line=$("${tset[@]}" "${py[tf]}" "$root/bench/peers/python_convert.py" --images "$IMAGES" \
          --out "$WORK/convert/train" --shards 16 | tail -1) || true
      else
        local files=$image_shards
        [[ $c == read || $c == parse ]] && files=$small
        line=$("${tset[@]}" "${py[tf]}" "$root/bench/peers/tfdata_cases.py" --case "$c" --files "$files" \
          "${common[@]}" ${reads[@]+"${reads[@]}"} | tail -1) || true
      fi ;;
    torch|webdataset)  # ImageFolder + DataLoader (7), the webdataset package (8)
      line=$("${tset[@]}" "${py[torch]}" "$root/bench/peers/torch_cases.py" --case "$c" \
        --images "$IMAGES" --files "$wds_tars" "${common[@]}" | tail -1) || true ;;
    dali)
      local where=(--files "$image_shards")
      [[ $c == folder ]] && where=(--images "$IMAGES")
      line=$("${tset[@]}" "${py[dali]}" "$root/bench/peers/dali_cases.py" --case "$c" \
        "${where[@]}" "${common[@]}" | tail -1) || true ;;
    spdl|grain)
      line=$("${tset[@]}" "${py[$sys]}" "$root/bench/peers/${sys}_cases.py" --case "$c" \
        --images "$IMAGES" "${common[@]}" | tail -1) || true ;;
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
    local case_no=$no
    [[ $no =~ ^[0-9]+$ ]] || case_no="\"$no\""
    echo "${line%\}},\"case_no\":$case_no}" >> "$results"
  else
    log "case $no $sys: no result (failed); its stderr ends with:"
    tail -5 "$WORK/stderr.txt" >&2
  fi
}

# Other processes' CPU use during the runs: busy CPU time in /proc/stat
# minus our children's CPU time.
busy_jiffies() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
# Time the hypervisor gave our vCPUs to other guests (a VM's neighbours).
steal_jiffies() { awk '/^cpu / { print $9 }' /proc/stat; }
# Sets the variable named $1 to our children's CPU seconds so far. Not called
# as $(...): in that subshell `times` would report the subshell's children
# (none), and every run of ours would count as another process's load.
children_seconds() {
  times > "$WORK/times.txt"
  printf -v "$1" '%s' "$(tail -1 "$WORK/times.txt" |
    awk '{ s = 0; for (i = 1; i <= 2; ++i) { split($i, p, /[ms]/); s += p[1] * 60 + p[2] } print s }')"
}
load_before=$(cut -d' ' -f1 /proc/loadavg)
( while true; do cut -d' ' -f1 /proc/loadavg; sleep 2; done ) > "$WORK/load.txt" &
sampler=$!
trap 'kill "$sampler" 2>/dev/null || true' EXIT
busy0=$(busy_jiffies); steal0=$(steal_jiffies); children_seconds kids0; wall0=$(date +%s.%N)

has() { [[ -n ${py[$1]:-} ]]; }  # has NAME: that peer's venv is ready
for no in $CASES; do
  # The systems of each case, where installed: sluice, then its peers.
  systems=(sluice)
  case $no in
    1|2|6) [[ -n $sluice_py ]] && systems+=(sluice-python)
       has tf && systems+=(tf.data); has dali && systems+=(dali)
       [[ $no == 1 ]] && systems+=(bare); systems+=(loop) ;;
    3) [[ -n $sluice_py ]] && systems+=(sluice-python)
       has tf && systems+=(tf.data); systems+=(bare) ;;
    4) [[ -n $sluice_py ]] && systems+=(sluice-python); has tf && systems+=(tf.data) ;;
    5) has tf && systems+=(tf.data) ;;
    7) [[ -n $sluice_py ]] && systems+=(sluice-python)
       has tf && systems+=(tf.data); has dali && systems+=(dali); has spdl && systems+=(spdl)
       has grain && systems+=(grain); has torch && systems+=(torch) ;;
    8) [[ -n $sluice_py ]] && systems+=(sluice-python)
       has dali && systems+=(dali); has torch && systems+=(webdataset) ;;
    text|csv|fixedlength) [[ -n $sluice_py ]] && systems+=(sluice-python)
       has tf && systems+=(tf.data) ;;
    *) log "unknown case $no"; continue ;;
  esac
  for ((r = 0; r < ROUNDS; ++r)); do
    for ((i = 0; i < ${#systems[@]}; ++i)); do
      run_system "$no" "${systems[(i + r) % ${#systems[@]}]}"
    done
  done
done

busy1=$(busy_jiffies); steal1=$(steal_jiffies); children_seconds kids1; wall1=$(date +%s.%N)
kill "$sampler" 2>/dev/null || true
other_cpu=$(awk -v b0="$busy0" -v b1="$busy1" -v k0="$kids0" -v k1="$kids1" -v w0="$wall0" -v w1="$wall1" \
  -v hz="$(getconf CLK_TCK)" 'BEGIN { o = ((b1 - b0) / hz - (k1 - k0)) / (w1 - w0); if (o < 0) o = 0; printf "%.2f", o }')
steal_cpu=$(awk -v s0="$steal0" -v s1="$steal1" -v w0="$wall0" -v w1="$wall1" \
  -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", (s1 - s0) / hz / (w1 - w0) }')
load_max=$(sort -g "$WORK/load.txt" | tail -1)

# --- Table ----------------------------------------------------------------------
rev=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
[[ -n $(git -C "$root" status --porcelain 2>/dev/null) ]] && rev="$rev (with uncommitted changes)"
# version NAME CODE: what the peer's python prints for CODE, or "not measured".
version() {
  [[ -n ${py[$1]:-} ]] && "${py[$1]}" -c "$2" 2>/dev/null || echo "not measured"
}
tf_version=$(version tf 'import tensorflow as tf; print(tf.__version__)')
torch_version=$(version torch "import torch, torchvision, importlib.metadata as m; print(f'{torch.__version__}, torchvision {torchvision.__version__}, webdataset {m.version(\"webdataset\")}')")
dali_version=$(version dali 'import nvidia.dali as d; print(d.__version__)')
spdl_version=$(version spdl 'import importlib.metadata as m; print(m.version("spdl"))')
grain_version=$(version grain 'import importlib.metadata as m; print(m.version("grain"))')
export RESULTS=$results ROUNDS DURATION WARMUP CORES PERF_MD n_images RECORDS
export TEXT_LINES CSV_ROWS FIXED_RECORDS FORMAT_READS
export FORMAT_BYTES_PER_ITEM=$format_bytes_per_item
export META_CPU="$(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs online, $CORES used (taskset -c $cpus)"
export META_DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
export META_VERSIONS="sluice $rev, g++ $(g++ -dumpfullversion), TensorFlow $tf_version, DALI $dali_version, SPDL $spdl_version, Grain $grain_version, torch $torch_version, libjpeg-turbo $(dpkg-query -W -f '${Version}' libturbojpeg0 2>/dev/null || echo '?')"
export META_COMMAND=$command_line META_LOAD_BEFORE=$load_before META_LOAD_MAX=$load_max META_OTHER_CPU=$other_cpu META_STEAL_CPU=$steal_cpu
export META_PEER_NOTES=$(for n in "${!notes[@]}"; do echo "${notes[$n]}"; done | sort | paste -sd ';' -)
python3 "$root/bench/peers/peers_table.py"
if [[ -n ${PLOT:-} ]]; then
  python3 "$root/scripts/plot-bench.py" --peers "$results" --out "$PLOT" >&2
fi
