#!/usr/bin/env bash
# Runs sluice's GPU checks on a lent GPU machine, from the bundle that
# scripts/gpu-bundle.sh packs (it copies this file to .gpu-bundle/run.sh).
# Logs and results go to $OUT (default /tmp/gpu-out), at most 8 files.
#
#   bash .gpu-bundle/run.sh [PHASE...]          (default: tests samples)
#
# Phases, in the order given:
#   tests     every gpu test binary; their /gpu:0 cases run here   -> tests.log
#   samples   fashion_mnist_mlp and image_classifier with --device gpu, and
#             the GPU's checkpoint evaluated on the CPU               -> samples.log
#   bench     gpu_bench, gpu_train_bench and the PyTorch reference
#             -> gpu_bench.json, gpu_train_bench.json, torch.json
#   sanitize  compute-sanitizer memcheck over the kernel tests      -> sanitize.log
#   pipeline  case 1 of scripts/bench-peers.sh (decode, crop, resize, flip,
#             normalize, batch 128) on 16, 8, 4 and 2 of the machine's cores:
#             sluice, its work in a plain loop, bare libjpeg-turbo decode and
#             PyTorch's DataLoader, all on the bundle's images -> pipeline.jsonl
#   all       tests samples bench
# summary.txt gets one line per step (exit status, seconds) and the totals.
#
# One device call may run 600 s at most. Steps start only while the run is
# inside BUDGET_S seconds (default 570), and each step's timeout is cut to
# what is left, so a hanging test cannot take the logs with it. Suggested
# calls: `run.sh tests samples`, then `run.sh bench`, then `run.sh pipeline`.
#
# Env: OUT, BUDGET_S, SLUICE_GPU_ROOT (where the payload is unpacked and the
# phases work, default /tmp/sluice-gpu), DEVICE (default gpu; cpu runs the
# samples phase on a machine without a GPU, to try the script itself),
# EPOCHS (samples, 2), PIPELINE_CORES (default "16 8 4 2"), PIPELINE_SECONDS
# (timed, default 8).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/gpu-out}
BUDGET_S=${BUDGET_S:-570}
DEVICE=${DEVICE:-gpu}
EPOCHS=${EPOCHS:-2}
ROOT=${SLUICE_GPU_ROOT:-/tmp/sluice-gpu}
WORK=$ROOT/work
SUMMARY=$OUT/summary.txt
case "${1:-}" in -h|--help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;; esac

mkdir -p "$OUT" "$WORK"
# Unpacked once per payload (a newer bundle replaces what an older one left).
if [ ! "$ROOT/unpacked" -nt "$HERE/payload.tar.xz" ]; then
  rm -rf "${ROOT:?}/bin" "${ROOT:?}/lib" && tar -C "$ROOT" -xJf "$HERE/payload.tar.xz" && touch "$ROOT/unpacked"
fi
# cuBLAS and cuDNN are opened at run time: the toolkit's, or PyTorch's wheels'.
LIBS=$ROOT/lib
for name in libcublas.so.13 libcudnn.so.9; do
  found=$(find /usr/local/cuda*/lib64 /usr/lib/x86_64-linux-gnu /opt -name "$name" 2>/dev/null | head -1)
  [ -n "$found" ] && LIBS="$LIBS:$(dirname "$found")"
done
export LD_LIBRARY_PATH="$LIBS:${LD_LIBRARY_PATH:-}"
export SLUICE_CLI=$ROOT/bin/sluice
cd "$ROOT" || exit 1

left() { echo $((BUDGET_S - SECONDS)); }

# step LIMIT STDOUT STDERR CMD...: runs CMD under min(LIMIT, time left),
# appending its output to the two files; one line in the summary. Returns
# CMD's status (1 when the budget skipped it).
step() {
  local limit=$1 out=$2 err=$3 remaining
  shift 3
  remaining=$(left)
  if ((remaining < 20)); then
    echo "SKIPPED (budget, ${remaining} s left): $*" | tee -a "$SUMMARY"
    return 1
  fi
  ((limit > remaining)) && limit=$remaining
  [ "$out" = "$err" ] && echo "== $*" >> "$out"
  local t0=$SECONDS rc
  timeout -k 5 "$limit" "$@" >> "$out" 2>> "$err"
  rc=$?
  local what="exit $rc"
  ((rc == 124 || rc == 137)) && what="TIMED OUT after $limit s"
  echo "$* : $what ($((SECONDS - t0)) s)" | sed "s|$ROOT/||g" | tee -a "$SUMMARY"
  return "$rc"
}

header() {
  {
    echo "== $(date -u +%FT%TZ) phases: $*; budget ${BUDGET_S} s; DEVICE=$DEVICE"
    if command -v nvidia-smi >/dev/null; then nvidia-smi -L 2>&1; else echo "nvidia-smi: not here"; fi
    echo "cores: $(nproc)  LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  } >> "$SUMMARY"
}

phase_tests() {
  local t
  for t in bin/gpu_*test; do
    step 150 "$OUT/tests.log" "$OUT/tests.log" "$t" --gtest_brief=1
  done
  grep -E "^\[  (PASSED|FAILED|SKIPPED) *\]" "$OUT/tests.log" | sort | uniq -c >> "$SUMMARY"
}

# Fashion-MNIST as the samples expect it (Debian's dataset-fashion-mnist
# path); the bundle carries the four .gz files.
fashion_data() {
  local dir=/usr/share/datasets/fashion-mnist
  [ -f "$dir/train-images-idx3-ubyte.gz" ] && return 0
  [ -d "$HERE/fashion-mnist" ] || { echo "no fashion-mnist in the bundle" | tee -a "$SUMMARY"; return 1; }
  mkdir -p "$dir" && cp "$HERE"/fashion-mnist/*.gz "$dir/"
}

phase_samples() {
  fashion_data || return 0
  local log=$OUT/samples.log mlp=$WORK/mlp ic=$WORK/image-classifier folder=$WORK/fashion-folder
  # The tutorials' MLP with a custom loop, trained on the device; then its
  # latest checkpoint evaluated on the device and on the CPU.
  step 180 "$log" "$log" bin/fashion_mnist_mlp --device "$DEVICE" --epochs "$EPOCHS" --dir "$mlp"
  step 60 "$log" "$log" bin/fashion_mnist_mlp --device "$DEVICE" --mode=test --dir "$mlp"
  step 60 "$log" "$log" bin/fashion_mnist_mlp --device cpu --mode=test --dir "$mlp"
  # `make demo`'s job: Fashion-MNIST as an image folder, converted and
  # streamed into the compact CNN with fit().
  local split
  for split in train t10k; do
    [ -d "$folder/$split" ] && continue
    step 120 "$log" "$log" bin/sluice convert idx \
      "/usr/share/datasets/fashion-mnist/$split-images-idx3-ubyte.gz" \
      "/usr/share/datasets/fashion-mnist/$split-labels-idx1-ubyte.gz" \
      --fashion --to-folder "$folder/$split" --name-prefix "$split"
  done
  step 240 "$log" "$log" bin/image_classifier "$folder/train" --test-dir "$folder/t10k" \
    --size 0 --channels 1 --model compact --epochs "$EPOCHS" --batch 64 --device "$DEVICE" \
    --dir "$ic"
}

phase_bench() {
  step 200 "$OUT/gpu_bench.json" "$SUMMARY" bin/gpu_bench --benchmark_min_time=1 \
    --benchmark_format=json
  step 300 "$OUT/gpu_train_bench.json" "$SUMMARY" bin/gpu_train_bench --benchmark_min_time=2 \
    --benchmark_format=json
  step 120 "$OUT/torch.json" "$SUMMARY" python3 "$HERE/torch_train_step.py" --graph
  step 120 "$OUT/torch.json" "$SUMMARY" python3 "$HERE/torch_train_step.py" --graph --bf16
  python3 - "$OUT" >> "$SUMMARY" 2>&1 <<'PY'
import json, sys
keys = ("bytes_per_second", "images_per_s", "input_wait_fraction", "wait_fraction", "error_message")
for f in ("gpu_bench.json", "gpu_train_bench.json"):
    try:
        for b in json.load(open(f"{sys.argv[1]}/{f}"))["benchmarks"]:
            extra = {k: v for k, v in b.items() if k in keys}
            print(b["name"], round(b.get("real_time", 0), 3), b.get("time_unit", ""), extra)
    except Exception as e:  # noqa: BLE001 - report and go on
        print(f, "unreadable:", e)
PY
  cat "$OUT/torch.json" >> "$SUMMARY" 2>/dev/null
}

phase_sanitize() {
  local cs
  cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  [ -n "$cs" ] || { echo "compute-sanitizer: not found" | tee -a "$SUMMARY"; return 0; }
  local t
  for t in bin/gpu_image_ops_test bin/gpu_nn_backend_test bin/gpu_stream_test; do
    step 200 "$OUT/sanitize.log" "$OUT/sanitize.log" "$cs" --tool memcheck --error-exitcode 3 \
      "$t" --gtest_brief=1
  done
}

# One row per system and core count: images/s and the ratios to bare decode.
pipeline_table() {
  python3 - "$1" <<'PY'
import json, sys
rows = {}
for line in open(sys.argv[1]):
    line = line.strip()
    if not line.startswith("{"):
        continue
    r = json.loads(line)
    cores = r.get("cores") or r.get("threads")
    rows.setdefault(cores, {})[r["system"]] = r["items_per_s"]
print("cores  sluice  loop  bare  torch  sluice/bare  sluice/torch")
for cores in sorted(rows, reverse=True):
    s = rows[cores]
    def ratio(a, b):
        return f"{s[a] / s[b]:.2f}" if s.get(a) and s.get(b) else "-"
    cols = [f"{s[k]:.0f}" if k in s else "-" for k in ("sluice", "loop", "bare", "torch")]
    print(cores, *cols, ratio("sluice", "bare"), ratio("sluice", "torch"), sep="  ")
PY
}

phase_pipeline() {
  # Issue 30: variants side by side on 16/8/4/2 cores, each ~PIPELINE_SECONDS
  # timed, tagged with "variant" in pipeline.jsonl: bare (bare decode), loop
  # (the map function in a plain loop, a new 588 KiB tensor per image, in
  # cache), loop-rows (the same into rows of a 128-image buffer, as the fused
  # map writes its batch), auto (sluice as shipped), fixed (map parallelism
  # = cores), budget+2 (auto with cpu_budget = cores + 2: the CPU governor's
  # slack). sluice lines carry map_parallelism / map_busy (threads busy in
  # the map's calls) / map_wait; every line cpus (CPU-s per s) and context
  # switches. PIPELINE_TORCH=1 adds PyTorch's DataLoader (~20 s per core count).
  [ -d "$HERE/images" ] || { echo "no images in the bundle: pipeline skipped" | tee -a "$SUMMARY"; return 0; }
  local shards=$WORK/shards log=$OUT/pipeline.jsonl secs=${PIPELINE_SECONDS:-6} cores tmp=$WORK/variant.out
  if [ ! -f "$shards/done" ]; then
    rm -rf "$shards"
    step 60 /dev/null "$SUMMARY" bin/sluice convert images "$HERE/images" --out "$shards/train" \
      --shards 8 --index || return 0
    touch "$shards/done"
  fi
  cat "$shards"/* "$HERE"/images/*/* > /dev/null  # the page cache, as bench-peers.sh
  { echo "== cpus: $(nproc); $(grep -m1 'model name' /proc/cpuinfo)"
    for c in 0 1 2 3 8 15; do
      echo "cpu$c siblings $(cat /sys/devices/system/cpu/cpu$c/topology/thread_siblings_list 2>/dev/null)" \
        "core $(cat /sys/devices/system/cpu/cpu$c/topology/core_id 2>/dev/null)" \
        "node $(ls -d /sys/devices/system/cpu/cpu$c/node* 2>/dev/null | sed 's|.*/node||')"
    done; } | tee -a "$SUMMARY"
  local files="$shards/train-*.tfrecord"
  variant() {  # NAME LIMIT CMD...: runs CMD under step, tags its JSON line
    local name=$1 limit=$2
    shift 2
    : > "$tmp"
    step "$limit" "$tmp" "$SUMMARY" "$@"
    sed "s/^{/{\"variant\":\"$name\",/" "$tmp" | grep '^{' >> "$log"
  }
  for cores in ${PIPELINE_CORES:-16 8 4 2}; do
    ((cores > $(nproc))) && continue
    local cpus=(taskset -c "0-$((cores - 1))")
    local sl=("${cpus[@]}" bin/sluice_cases --case decode --files "$files" --cores "$cores" --seconds "$secs")
    variant bare 30 "${cpus[@]}" bin/bare_decode --mode decode --images "$HERE/images" \
      --threads "$cores" --seconds "$secs"
    variant loop 30 "${sl[@]}" --warmup 1 --loop 1
    variant auto 30 "${sl[@]}" --warmup 3 --stats 1
    variant fixed 30 "${sl[@]}" --warmup 1 --stats 1 --parallelism "$cores"
    if ((cores >= 8)); then
      variant loop-rows 30 "${sl[@]}" --warmup 1 --loop 1 --loop-rows 128
      variant budget+2 30 "${sl[@]}" --warmup 3 --stats 1 --cpu-budget $((cores + 2))
    fi
    if [ "${PIPELINE_TORCH:-0}" = 1 ] && python3 -c "import torch, torchvision" 2>/dev/null; then
      step 90 "$log" "$SUMMARY" "${cpus[@]}" python3 "$HERE/torch_cases.py" --case decode \
        --images "$HERE/images" --cores "$cores" --seconds "$secs" --warmup 3 --repeat 20
    fi
  done
  python3 - "$log" <<'PY' | tee -a "$SUMMARY"
import json, sys
rows, order = {}, []
for line in open(sys.argv[1]):
    if not line.startswith("{"):
        continue
    r = json.loads(line)
    v = r.get("variant", r["system"])
    c = r.get("cores") or r.get("threads")
    rows.setdefault(c, {})[v] = r
    order += [v] if v not in order else []
print("images/s by variant (x: of bare; cpus: CPU-s per s; mp/busy: the map's parallelism, busy threads)")
for c in sorted(rows, reverse=True):
    s, bare = rows[c], rows[c].get("bare", {}).get("items_per_s")
    cells = []
    for v in order:
        if v not in s:
            continue
        r = s[v]
        cell = f"{v} {r['items_per_s']:.0f}"
        if bare:
            cell += f" ({r['items_per_s'] / bare:.2f}x)"
        if "cpus" in r:
            cell += f" cpus {r['cpus']}"
        if "map_parallelism" in r:
            cell += f" mp {r['map_parallelism']} busy {r['map_busy']}"
        cells.append(cell)
    print(f"{c} cores: " + "; ".join(cells))
PY
}

phases=("$@")
((${#phases[@]})) || phases=(tests samples)
[ "${phases[*]}" = all ] && phases=(tests samples bench)
header "${phases[@]}"
for p in "${phases[@]}"; do
  case "$p" in
    tests|samples|bench|sanitize|pipeline) "phase_$p" ;;
    *) echo "run.sh: unknown phase '$p' (tests, samples, bench, sanitize, pipeline, all)" |
         tee -a "$SUMMARY" ;;
  esac
done
echo "== done in $SECONDS s" >> "$SUMMARY"
cat "$SUMMARY"
