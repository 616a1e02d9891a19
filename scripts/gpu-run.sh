#!/usr/bin/env bash
# Runs sluice's GPU checks on a lent GPU machine, from the bundle that
# scripts/gpu-bundle.sh packs (it copies this file to .gpu-bundle/run.sh).
# Logs and results go to $OUT (default /tmp/gpu-out), at most 8 files.
#
# Usage: bash .gpu-bundle/run.sh [PHASE...]          (default: tests samples)
#
# Phases, in the order given:
#   tests     every gpu test binary; their gpu:0 cases run here   -> tests.log
#   samples   fashion_mnist_mlp and image_classifier with --device gpu, and
#             the GPU's checkpoint evaluated on the CPU               -> samples.log
#   bench     gpu_bench, gpu_train_bench and the PyTorch reference
#             -> gpu_bench.json, gpu_train_bench.json, torch.json
#   sanitize  compute-sanitizer memcheck over the kernel tests      -> sanitize.log
#   pipeline  case 1 of scripts/bench-peers.sh (decode, crop, resize, flip,
#             normalize, batch 128) on 16, 8, 4 and 2 of the machine's cores:
#             sluice, its work in a plain loop, bare libjpeg-turbo decode,
#             case 7 (the image folder read file by file) and PyTorch's
#             DataLoader, all on the bundle's images -> pipeline.jsonl
#   trainbench  BM_TrainStep (both models, eager and captured; float32
#             again with SLUICE_CUDNN_GRAPH=0) beside PyTorch's references,
#             and NCCL's one-rank all-reduce -> trainbench.json,
#             trainbench-legacy.json, torch.json, nccl.json
#   profile   ncu's per-kernel times of about two CNN training steps
#             (float32 and bfloat16), summed per kernel -> profile.txt
#   mpi       under the bundle's relocated Open MPI (mpi.tar.xz), 2 ranks:
#             the distribute/ and nn/ mpirun tests, MultiWorkerMirrored-
#             Strategy on 2 ranks sharing gpu:0 (host-staged MPI ops), the
#             distributed sample, and mpi_bench (all-reduce bus bandwidth
#             vs bare MPI_Allreduce; the CNN step with and without
#             overlap)                -> mpi.log, mpi_bench.json, mpi_cnn.json
#   jpeg      nvJPEG decode (ops/cuda/jpeg_decoder.h): gpu_jpeg_test, then
#             gpu_jpeg_bench on the bundle's images (hardware, GPU_HYBRID
#             and CPU path at batch 128 and 256 against libjpeg-turbo on all
#             cores, pixel differences to the CPU decode; decode + random-
#             resized crop 224 + flip + normalize on the device, as a
#             helper, overlapped on two streams and as the
#             JpegBatchesToDevice stage reading the TFRecord shards, prefetch 0
#             and 2; the overlapped decode with 1, 2
#             and 3 nvJPEG states), torchvision's decode_jpeg on
#             the same images, and gpu_train_bench's BM_TrainFromJpegs*
#             (input_wait_fraction)                                -> jpeg.log
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
# (timed, default 6).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/gpu-out}
BUDGET_S=${BUDGET_S:-570}
DEVICE=${DEVICE:-gpu}
EPOCHS=${EPOCHS:-2}
ROOT=${SLUICE_GPU_ROOT:-/tmp/sluice-gpu}
WORK=$ROOT/work
SUMMARY=$OUT/summary.txt
# The command-line conventions of scripts/lib/args.sh, which does not travel
# with the bundle: --help, and an unknown phase or option refused up front.
usage() { awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; }
for arg in "$@"; do
  case $arg in
    -h|--help) usage; exit 0 ;;
  esac
done
for arg in "$@"; do
  case $arg in
    tests|samples|bench|trainbench|sanitize|pipeline|profile|mpi|jpeg|all) ;;
    -*) { echo "run.sh: unknown option $arg"; echo; usage; } >&2; exit 2 ;;
    *) { echo "run.sh: unknown phase '$arg'"; echo; usage; } >&2; exit 2 ;;
  esac
done

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
# The codec JPEGs gpu_jpeg_test reads (gpu-bundle.sh packs them).
[ -d "$HERE/testdata" ] && export SLUICE_TEST_DATA=$HERE/testdata
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
  step 120 "$OUT/torch.json" "$SUMMARY" python3 "$HERE/torch_train_step.py" --model heavy --graph \
    --steps 20
  step 120 "$OUT/torch.json" "$SUMMARY" python3 "$HERE/torch_train_step.py" --model heavy --bf16 \
    --steps 20
  # cuDNN's fastest algorithms whatever their determinism (PyTorch's
  # cudnn.benchmark rule), beside the default deterministic choice.
  step 120 "$OUT/gpu_train_bench_any.json" "$SUMMARY" env SLUICE_CUDNN_DETERMINISTIC=0 \
    bin/gpu_train_bench --benchmark_filter='BM_TrainStep/gpu(_bf16)?(_heavy)?/' \
    --benchmark_min_time=1 --benchmark_format=json
  python3 - "$OUT" >> "$SUMMARY" 2>&1 <<'PY'
import json, sys
keys = ("bytes_per_second", "images_per_s", "input_wait_fraction", "wait_fraction", "error_message")
for f in ("gpu_bench.json", "gpu_train_bench.json", "gpu_train_bench_any.json"):
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
  # The kernels that share memory between threads (BiasGrad's block sums)
  # and the vectorized ones, under racecheck.
  step 200 "$OUT/sanitize.log" "$OUT/sanitize.log" "$cs" --tool racecheck --error-exitcode 3 \
    bin/gpu_nn_backend_test --gtest_brief=1 --gtest_filter='*Bias*:*Pool*:*Vector*:*Activation*'
}

# A short re-measure of the training steps beside PyTorch's eager float32
# references (the same call, so the same machine): BM_TrainStep's eager
# and captured cases of both models -> trainbench.json, torch.json.
phase_trainbench() {
  step 150 "$OUT/trainbench.json" "$SUMMARY" bin/gpu_train_bench \
    --benchmark_filter='BM_TrainStep/gpu' --benchmark_min_time=1 --benchmark_format=json
  # The same float32 steps with the legacy cuDNN API's algorithms only
  # (SLUICE_CUDNN_GRAPH=0), for the graph engines' effect in this run.
  SLUICE_CUDNN_GRAPH=0 step 90 "$OUT/trainbench-legacy.json" "$SUMMARY" bin/gpu_train_bench \
    --benchmark_filter='BM_TrainStep/gpu(_heavy)?/' --benchmark_min_time=1 --benchmark_format=json
  # NCCL on one rank (issue 26's smoke test and bandwidth with one GPU).
  step 60 "$OUT/nccl.json" "$SUMMARY" bin/gpu_bench --benchmark_filter=BM_NcclAllReduce \
    --benchmark_min_time=0.5 --benchmark_format=json
  step 60 "$OUT/torch.json" "$SUMMARY" python3 "$HERE/torch_train_step.py" --graph
  step 60 "$OUT/torch.json" "$SUMMARY" python3 "$HERE/torch_train_step.py" --graph --bf16
  step 60 "$OUT/torch.json" "$SUMMARY" python3 "$HERE/torch_train_step.py" --model heavy --steps 20
  step 60 "$OUT/torch.json" "$SUMMARY" python3 "$HERE/torch_train_step.py" --model heavy --bf16 \
    --steps 20
  python3 - "$OUT/trainbench.json" "$OUT/trainbench-legacy.json" "$OUT/nccl.json" >> "$SUMMARY" 2>&1 <<'PY'
import json, sys
for path, tag in zip(sys.argv[1:], ("", " (SLUICE_CUDNN_GRAPH=0)", "")):
    try:
        for b in json.load(open(path))["benchmarks"]:
            gbps = f'{b["bytes_per_second"] / 1e9:.1f} GB/s' if "bytes_per_second" in b else ""
            print(b["name"] + tag, round(b.get("real_time", 0), 3), b.get("time_unit", ""), gbps,
                  b.get("error_message", ""))
    except Exception as e:  # noqa: BLE001 - report and go on
        print(path, "unreadable:", e)
PY
  cat "$OUT/torch.json" >> "$SUMMARY" 2>/dev/null
}

# Where a training step's GPU time goes: Nsight Compute's per-kernel
# summary of about two steps of BM_TrainStep/gpu and /gpu_bf16 (after
# PROFILE_SKIP launches of warm-up, cuDNN's measuring included), the
# kernels summed by name, the 20 costliest first -> profile.txt. The step
# times ncu prints are slowed by it and mean nothing.
phase_profile() {
  local ncu mode
  ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  [ -n "$ncu" ] || { echo "ncu: not found" | tee -a "$SUMMARY"; return 0; }
  for mode in gpu gpu_bf16; do
    echo "== BM_TrainStep/$mode" >> "$OUT/profile.raw"
    step 120 "$OUT/profile.raw" "$OUT/profile.raw" "$ncu" --metrics gpu__time_duration.sum \
      --print-summary per-kernel --launch-skip "${PROFILE_SKIP:-2000}" \
      --launch-count "${PROFILE_COUNT:-110}" bin/gpu_train_bench \
      --benchmark_filter="BM_TrainStep/$mode/" --benchmark_min_time=3
  done
  python3 - "$OUT/profile.raw" > "$OUT/profile.txt" 2>&1 <<'PY'
import re, sys
# ncu's per-kernel summary: a kernel's name line, then its metric table;
# "gpu__time_duration.sum  <unit>  <min> <max> <average>" with the count
# on the name line ("... (N invocations)" or similar). Summed per name.
section, rows, name, count = None, {}, None, 1
out = []
def flush():
    if section is None:
        return
    total = sum(t for t, _ in rows.values())
    out.append(f"== {section}: {total / 1e3:.2f} ms over {sum(c for _, c in rows.values())} launches")
    for n, (t, c) in sorted(rows.items(), key=lambda kv: -kv[1][0])[:20]:
        out.append(f"  {t:9.1f} us  x{c:<3d} {n[:150]}")
for line in open(sys.argv[1], errors="replace"):
    if line.startswith("== BM_TrainStep"):
        flush()
        section, rows = line[3:].strip(), {}
        continue
    m = re.match(r"\s{2}(\S.*?)\s+\(\d+, \d+, \d+\)x\(\d+, \d+, \d+\).*?Invocations\s*(\d+)?", line)
    if m:
        name = m.group(1)
        count = int(m.group(2) or 1)
        continue
    m = re.search(r"gpu__time_duration\.sum\s+(\S+)\s+([\d.,]+)\s+([\d.,]+)\s+([\d.,]+)", line)
    if m and name:
        unit, avg = m.group(1), float(m.group(4).replace(",", ""))
        scale = {"ns": 1e-3, "nsecond": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}.get(unit, 1.0)
        t, c = rows.get(name, (0.0, 0))
        rows[name] = (t + avg * scale * count, c + count)
        name = None
flush()
print("\n".join(out) if out else "no per-kernel summary parsed: see profile.raw")
PY
  cat "$OUT/profile.txt" >> "$SUMMARY"
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

# The bundle's images as 8 TFRecord shards (sluice convert), once, in
# $WORK/shards: the pipeline and jpeg phases read them.
make_shards() {
  local shards=$WORK/shards
  [ -f "$shards/done" ] && return 0
  rm -rf "$shards"
  step 60 /dev/null "$SUMMARY" bin/sluice convert images "$HERE/images" --out "$shards/train" \
    --shards 8 --index || return 1
  touch "$shards/done"
}

phase_pipeline() {
  # Issue 30: variants side by side on 16/8/4/2 cores, each ~PIPELINE_SECONDS
  # timed, tagged with "variant" in pipeline.jsonl: bare (bare decode), loop
  # (the map function in a plain loop, a new 588 KiB tensor per image, in
  # cache), auto (sluice as shipped: a task arena of 4 x cores threads),
  # arena (Options::max_threads = cores: no idle arena thread left to spin
  # and preempt the map's workers), arena+1 (max_threads = cores + 1: a
  # thread for the prefetch beside a full map), map-1 (cpu_budget = cores - 1
  # and max_threads = cores: the map one short of the cores, the consumer's
  # core kept free), cache (auto with the records held in memory after one
  # read: no file reading in the map's pull). sluice lines carry
  # map_parallelism / map_busy (threads busy in the map's calls) / map_wait /
  # map_input_wait / map_room_wait / cpu_wait (threads blocked on the map's
  # input lock, for room in its buffer, for the CPU budget) / map_input_hold
  # (the input lock held: the serial pull, near 1 = the wall) / map_lock_wait
  # (threads waiting for the map's own lock); every line
  # cpus (CPU-s per s) and context switches. Before the core counts, the
  # read rate of the shards alone (records/s, record by record, CRCs
  # checked): serial on one core, and 8 files read ahead on 4. ~43 s per
  # core count at PIPELINE_SECONDS=4.
  # PIPELINE_TORCH=1 adds PyTorch's DataLoader (~20 s per core count).
  [ -d "$HERE/images" ] || { echo "no images in the bundle: pipeline skipped" | tee -a "$SUMMARY"; return 0; }
  local shards=$WORK/shards log=$OUT/pipeline.jsonl secs=${PIPELINE_SECONDS:-6} cores tmp=$WORK/variant.out
  make_shards || return 0
  cat "$shards"/* "$HERE"/images/*/* > /dev/null  # the page cache, as bench-peers.sh
  { echo "== cpus: $(nproc); $(grep -m1 'model name' /proc/cpuinfo)"
    for c in 0 1 2 3 8 15; do
      echo "cpu$c siblings $(cat /sys/devices/system/cpu/cpu$c/topology/thread_siblings_list 2>/dev/null)" \
        "core $(cat /sys/devices/system/cpu/cpu$c/topology/core_id 2>/dev/null)" \
        "node $(ls -d /sys/devices/system/cpu/cpu$c/node* 2>/dev/null | sed 's|.*/node||')"
    done; } | tee -a "$SUMMARY"
  local files="$shards/train-*.tfrecord"
  # Reading alone: one file at a time in the calling thread (serial), and 8
  # files with their runs read ahead in tasks on 4 cores.
  step 30 "$log" "$SUMMARY" taskset -c 0 bin/sluice_cases --case read --batch 1 --parallel-reads 1 \
    --files "$files" --cores 1 --seconds 2 --warmup 1
  tail -1 "$log" | sed 's/^/read, serial on 1 core: /' | tee -a "$SUMMARY"
  step 30 "$log" "$SUMMARY" taskset -c 0-3 bin/sluice_cases --case read --batch 1 --parallel-reads 8 \
    --files "$files" --cores 4 --seconds 2 --warmup 1
  tail -1 "$log" | sed 's/^/read, 8 files ahead on 4 cores: /' | tee -a "$SUMMARY"
  # TFRecordDataset's parallel reads against one file at a time, all cores
  # (~10 s).
  step 60 "$OUT/parallel_reads.txt" "$OUT/parallel_reads.txt" bin/pipeline_parallel_reads_bench \
    --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
  grep median "$OUT/parallel_reads.txt" | tee -a "$SUMMARY"
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
    variant auto 30 "${sl[@]}" --warmup 2 --stats 1
    variant arena 30 "${sl[@]}" --warmup 2 --stats 1 --max-threads "$cores"
    variant arena+1 30 "${sl[@]}" --warmup 2 --stats 1 --max-threads $((cores + 1))
    variant cache 30 "${sl[@]}" --warmup 2 --stats 1 --cache 1
    # Case 7 of bench-peers: the image folder itself (every file read).
    variant folder 30 "${cpus[@]}" bin/sluice_cases --case folder --files "$HERE/images" \
      --cores "$cores" --seconds "$secs" --warmup 2 --stats 1
    if ((cores > 1)); then
      variant map-1 30 "${sl[@]}" --warmup 2 --stats 1 --cpu-budget $((cores - 1)) \
        --max-threads "$cores"
    fi
    if [ "${PIPELINE_TORCH:-0}" = 1 ] && python3 -c "import torch, torchvision" 2>/dev/null; then
      step 90 "$log" "$SUMMARY" "${cpus[@]}" python3 "$HERE/torch_cases.py" --case folder \
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
    if r.get("case") == "read":
        continue
    v = r.get("variant", r["system"])
    c = r.get("cores") or r.get("threads")
    rows.setdefault(c, {})[v] = r
    order += [v] if v not in order else []
print("images/s by variant (x: of bare; cpus: CPU-s per s; ivcsw: involuntary context switches per s; mp/busy: the map's parallelism, busy threads; in/room/cpu wait: threads blocked on the map's input lock, for room in its buffer, for the cpu_budget; hold: the input lock held, per s; lock wait: threads waiting for the map's own lock; reads ahead/in place: the records' buffers read by tasks and in place, wait: for a read in progress)")
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
        if "ivcsw_per_s" in r:
            cell += f" ivcsw {r['ivcsw_per_s']}"
        if "map_parallelism" in r:
            cell += f" mp {r['map_parallelism']} busy {r['map_busy']}"
        if "map_input_wait" in r:
            cell += f" in/room/cpu wait {r['map_input_wait']}/{r['map_room_wait']}/{r['cpu_wait']}"
        if "map_input_hold" in r:
            cell += f" hold {r['map_input_hold']}"
        if "map_lock_wait" in r:
            cell += f" lock wait {r['map_lock_wait']}"
        if "reads_ahead" in r:
            cell += f" reads ahead/in place {r['reads_ahead']}/{r['reads_in_place']} wait {r['read_wait']}"
        cells.append(cell)
    print(f"{c} cores: " + "; ".join(cells))
PY
}

# The mpi phase (a separate block). The GPU machine has no Open MPI: the
# bundle carries a relocatable one (scripts/pack-openmpi.sh: env.sh sets
# OPAL_PREFIX and the rest), unpacked beside the payload and used in a
# subshell only. About 1.5 to 2.5 minutes (each step at most 90 s).
phase_mpi() {
  [ -f "$HERE/mpi.tar.xz" ] || { echo "no mpi.tar.xz in the bundle: mpi skipped" | tee -a "$SUMMARY"; return 0; }
  if [ ! "$ROOT/mpi/unpacked" -nt "$HERE/mpi.tar.xz" ]; then
    rm -rf "${ROOT:?}/mpi" && tar -C "$ROOT" -xJf "$HERE/mpi.tar.xz" && touch "$ROOT/mpi/unpacked"
  fi
  (
    # shellcheck source=/dev/null
    . "$ROOT/mpi/env.sh"
    log=$OUT/mpi.log
    t=$HERE/mpi-tests
    echo "mpirun: $(command -v mpirun), $(mpirun --version 2>&1 | head -1)" | tee -a "$SUMMARY"
    # Shared memory's single copy (CMA, process_vm_readv) is much faster for
    # large messages but often blocked in containers: used if a 4 MiB
    # all-reduce works with it, else env.sh's safe default (none).
    if OMPI_MCA_btl_vader_single_copy_mechanism=cma timeout 30 mpirun -np 2 bin/mpi_bench \
      --benchmark_filter='BM_AllReduce/bytes:4194304' > "$WORK/cma.log" 2>&1 &&
      ! grep -qiE 'errno|error|cma' "$WORK/cma.log"; then
      export OMPI_MCA_btl_vader_single_copy_mechanism=cma
    fi
    echo "vader single copy: $OMPI_MCA_btl_vader_single_copy_mechanism" | tee -a "$SUMMARY"
    step 60 "$log" "$log" bash "$t/mpi_test.sh" bin/mpi_worker
    step 60 "$log" "$log" bash "$t/mpi_train_test.sh" bin/mpi_train_worker
    step 60 "$log" "$log" bash "$t/mpi_train_gpu_test.sh" bin/gpu_mpi_train_worker
    grep -E '^(gpu_mpi_train_worker: |rank 0: OK (host|2 ranks))' "$log" | tail -n 3 >> "$SUMMARY"
    if fashion_data; then
      step 90 "$log" "$log" bash "$t/distributed_training_test.sh" mpirun bin/distributed_training \
        "$WORK/distributed-training"
      grep -E '^(Epoch|Test accuracy)' "$log" | tail -n 2 >> "$SUMMARY"
    fi
    step 90 "$OUT/mpi_bench.json" "$log" mpirun -np 2 bin/mpi_bench \
      --benchmark_filter='BM_(AllReduce|CrossDeviceOps)' --benchmark_format=json
    python3 - "$OUT/mpi_bench.json" >> "$SUMMARY" 2>&1 <<'PY'
import json, sys
try:
    for b in json.load(open(sys.argv[1]))["benchmarks"]:
        print(b["name"], {k: round(b[k], 3) for k in ("sluice_GBps", "mpi_GBps", "ratio") if k in b},
              b.get("label", ""))
except Exception as e:  # noqa: BLE001 - report and go on
    print("mpi_bench.json unreadable:", e)
PY
    # The CNN step with the gradient all-reduce after the backward pass and
    # overlapped with it (alternating rounds), 2 CPU ranks: about 20-40 s.
    step 90 "$OUT/mpi_cnn.json" "$log" mpirun -np 2 bin/mpi_bench \
      --benchmark_filter='BM_CnnStep/global_batch:128' --benchmark_format=json
    python3 - "$OUT/mpi_cnn.json" >> "$SUMMARY" 2>&1 <<'PY'
import json, sys
try:
    for b in json.load(open(sys.argv[1]))["benchmarks"]:
        keys = ("ms_per_step", "overlap_ms_per_step", "overlap_speedup")
        print(b["name"], {k: round(b[k], 3) for k in keys if k in b}, b.get("label", ""))
except Exception as e:  # noqa: BLE001 - report and go on
    print("mpi_cnn.json unreadable:", e)
PY
  )
}

# nvJPEG decode: the test (its gpu:0 case compares with the CPU decode),
# then the bench's JSON lines, also copied into the summary.
phase_jpeg() {
  local log=$OUT/jpeg.log
  step 60 "$log" "$log" bin/gpu_jpeg_test --gtest_brief=1
  [ -d "$HERE/images" ] || { echo "no images in the bundle: gpu_jpeg_bench skipped" | tee -a "$SUMMARY"; return 0; }
  local records=()
  make_shards && records=(--tfrecords "$WORK/shards/train-*")
  step 100 "$log" "$log" bin/gpu_jpeg_bench --images "$HERE/images" --threads "$(nproc)" --seconds 2 \
    "${records[@]}"
  step 60 "$log" "$log" python3 "$HERE/torchvision_jpeg.py" --images "$HERE/images" --seconds 2
  step 120 "$log" "$log" bin/gpu_train_bench --benchmark_filter='BM_TrainFromJpegs' \
    --benchmark_min_time=2
  grep -E '^\{|^BM_TrainFromJpegs' "$log" >> "$SUMMARY"
}

phases=("$@")
((${#phases[@]})) || phases=(tests samples)
[ "${phases[*]}" = all ] && phases=(tests samples bench)
header "${phases[@]}"
for p in "${phases[@]}"; do
  case "$p" in
    tests|samples|bench|trainbench|sanitize|pipeline|profile|mpi|jpeg) "phase_$p" ;;
    *) echo "run.sh: unknown phase '$p' (tests, samples, bench, trainbench, sanitize, pipeline, profile, mpi, jpeg, all)" |
         tee -a "$SUMMARY" ;;
  esac
done
echo "== done in $SECONDS s" >> "$SUMMARY"
cat "$SUMMARY"
