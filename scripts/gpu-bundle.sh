#!/usr/bin/env bash
# Packs the GPU checks into .gpu-bundle/ (ignored by git) for a lent GPU
# machine, which has the CUDA driver, PyTorch and cuBLAS/cuDNN but none of
# the Debian packages sluice builds against (see /work/.library/device):
#   .gpu-bundle/payload.tar.xz  the gpu test and benchmark binaries built
#                               here (stripped) and the shared libraries
#                               they load, glibc and libstdc++ excepted
#   .gpu-bundle/run.sh          unpacks it there and runs everything
#   .gpu-bundle/torch_train_step.py
# Then, with the device tool:
#   run(carry=[".gpu-bundle"], command="bash .gpu-bundle/run.sh")
# run.sh runs every gpu test binary (their /gpu:0 cases run there),
# gpu_bench, gpu_train_bench and the PyTorch reference, and writes
# tests.log, gpu_bench.json, gpu_train_bench.json, torch.json and summary.txt
# to $OUT.
#
#   scripts/gpu-bundle.sh [BUILD_DIR]     (default: build; must have the gpu module)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
case "${1:-}" in -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
[ -d "$BUILD/tests/gpu" ] || { echo "gpu-bundle: no $BUILD/tests/gpu (build with the gpu module first: make build)" >&2; exit 1; }
cmake --build "$BUILD" --target gpu_test gpu_runtime_test gpu_stream_test gpu_image_ops_test \
  gpu_nn_backend_test gpu_nn_model_test gpu_bench gpu_train_bench >/dev/null
BINS=("$BUILD"/tests/gpu/gpu_*test "$BUILD"/bench/gpu/gpu_bench "$BUILD"/bench/gpu/gpu_train_bench)
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/bin" "$STAGE/lib"
for b in "${BINS[@]}"; do strip -o "$STAGE/bin/$(basename "$b")" "$b"; done
# The libraries the binaries load, except what every Linux has (glibc's,
# libstdc++/libgcc_s, which are newer there) and the CUDA driver.
ldd "${BINS[@]}" | awk '/=> \//{print $3}' | sort -u |
  grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*|libstdc\+\+|libgcc_s|libcuda)\.so' |
  while read -r lib; do cp -L "$lib" "$STAGE/lib/"; done
rm -rf .gpu-bundle && mkdir -p .gpu-bundle
tar -C "$STAGE" -cJf .gpu-bundle/payload.tar.xz bin lib
cp bench/gpu/torch_train_step.py .gpu-bundle/
cat > .gpu-bundle/run.sh <<'RUN'
#!/usr/bin/env bash
# Made by scripts/gpu-bundle.sh: runs sluice's GPU tests and benchmarks on a
# lent GPU machine; results go to $OUT.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/gpu-out}
mkdir -p "$OUT" /tmp/sluice-gpu && tar -C /tmp/sluice-gpu -xJf "$HERE/payload.tar.xz"
# cuBLAS and cuDNN are opened at run time: the toolkit's, or PyTorch's wheels'.
LIBS=/tmp/sluice-gpu/lib
for name in libcublas.so.13 libcudnn.so.9; do
  found=$(find /usr/local/cuda*/lib64 /usr/lib/x86_64-linux-gnu /opt -name "$name" 2>/dev/null | head -1)
  [ -n "$found" ] && LIBS="$LIBS:$(dirname "$found")"
done
export LD_LIBRARY_PATH="$LIBS:${LD_LIBRARY_PATH:-}"
{ nvidia-smi -L; nproc; echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"; } > "$OUT/summary.txt" 2>&1
cd /tmp/sluice-gpu
for t in bin/gpu_*test; do
  echo "== $t" >> "$OUT/tests.log"
  timeout 300 "$t" --gtest_brief=1 >> "$OUT/tests.log" 2>&1
  echo "$t: exit $?" | tee -a "$OUT/summary.txt"
done
grep -E "PASSED|FAILED|SKIPPED \]" "$OUT/tests.log" | sort | uniq -c >> "$OUT/summary.txt"
timeout 200 bin/gpu_bench --benchmark_min_time=1 --benchmark_format=json > "$OUT/gpu_bench.json" 2>> "$OUT/summary.txt"
timeout 300 bin/gpu_train_bench --benchmark_min_time=2 --benchmark_format=json > "$OUT/gpu_train_bench.json" 2>> "$OUT/summary.txt"
timeout 120 python3 "$HERE/torch_train_step.py" --graph > "$OUT/torch.json" 2>> "$OUT/summary.txt"
timeout 120 python3 "$HERE/torch_train_step.py" --graph --bf16 >> "$OUT/torch.json" 2>> "$OUT/summary.txt"
cat "$OUT/summary.txt" "$OUT/torch.json"
python3 - "$OUT" <<'PY'
import json, sys
for f in ("gpu_bench.json", "gpu_train_bench.json"):
    try:
        for b in json.load(open(f"{sys.argv[1]}/{f}"))["benchmarks"]:
            extra = {k: v for k, v in b.items() if k in ("bytes_per_second", "images_per_s", "input_wait_fraction", "wait_fraction", "error_message")}
            print(b["name"], round(b.get("real_time", 0), 3), b.get("time_unit", ""), extra)
    except Exception as e:  # noqa: BLE001 - report and go on
        print(f, "unreadable:", e)
PY
RUN
chmod +x .gpu-bundle/run.sh
du -sh .gpu-bundle | sed 's/^/gpu-bundle: /'
