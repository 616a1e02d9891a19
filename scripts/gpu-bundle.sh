#!/usr/bin/env bash
# Packs the GPU checks into .gpu-bundle/ (ignored by git) for a lent GPU
# machine, which has the CUDA driver, PyTorch and cuBLAS/cuDNN but none of
# the Debian packages sluice builds against (see /work/.library/device):
#   .gpu-bundle/payload.tar.xz  the gpu test and benchmark binaries, the
#                               `sluice` CLI and the training samples, built
#                               here (stripped), and the shared libraries
#                               they load, glibc and libstdc++ excepted
#   .gpu-bundle/run.sh          scripts/gpu-run.sh: unpacks the payload there
#                               and runs the checks, phase by phase
#   .gpu-bundle/torch_train_step.py, torchvision_jpeg.py, torch_cases.py (with peer_common.py),
#   fashion-mnist/*.gz,
#   images/ (ImageNet-like JPEGs for the pipeline phase)
#   .gpu-bundle/mpi.tar.xz, mpi-tests/  a relocatable Open MPI and the
#                               mpirun test scripts, for the mpi phase
# Then, with the device tool (each call at most 600 s; run.sh keeps inside
# 570 s and writes its logs to $OUT; `bash .gpu-bundle/run.sh --help`):
#   run(carry=[".gpu-bundle"], command="bash .gpu-bundle/run.sh tests samples")
#   run(carry=[".gpu-bundle"], command="bash .gpu-bundle/run.sh bench")
#   run(carry=[".gpu-bundle"], command="bash .gpu-bundle/run.sh pipeline")
#   run(carry=[".gpu-bundle"], command="bash .gpu-bundle/run.sh mpi")
#   run(carry=[".gpu-bundle"], command="bash .gpu-bundle/run.sh jpeg")
#
# Usage: scripts/gpu-bundle.sh [BUILD_DIR [DEST]]
#     BUILD_DIR: default build; must have the gpu module
#     DEST: default .gpu-bundle (tests/gpu/gpu_bundle_test.sh packs elsewhere)
#   Env PIPELINE_IMAGES: JPEGs for the pipeline phase (default 320; 0: none).
set -euo pipefail
. "$(dirname "$0")/lib/args.sh"
args_help "$@"
args_positional 2 "$@"
cd "$(dirname "$0")/.."
BUILD=${1:-build}
DEST=${2:-.gpu-bundle}
[ -d "$BUILD/tests/gpu" ] || { echo "gpu-bundle: no $BUILD/tests/gpu (build with the gpu module first: make build)" >&2; exit 1; }
FASHION=/usr/share/datasets/fashion-mnist
# Replace only an earlier bundle or an empty folder, never anything else.
if [ -d "$DEST" ] && [ -n "$(ls -A "$DEST")" ] && [ ! -f "$DEST/payload.tar.xz" ]; then
  echo "gpu-bundle: $DEST is not empty and holds no bundle; not replacing it" >&2
  exit 1
fi
cmake --build "$BUILD" --target gpu_test gpu_cuda_test gpu_runtime_test gpu_stream_test gpu_image_ops_test \
  gpu_nn_backend_test gpu_nn_model_test gpu_nccl_strategy_test gpu_bench gpu_train_bench sluice \
  fashion_mnist_mlp \
  image_classifier sluice_cases bare_decode make_imagenet_like pipeline_parallel_reads_bench >/dev/null
# nvJPEG decode (ops/cuda/jpeg_decoder.h): its test and bench; libnvjpeg.so.13,
# which they dlopen (so ldd does not list it), from scripts/fetch-nvjpeg.sh;
# the codec test JPEGs gpu_jpeg_test reads (run.sh sets SLUICE_TEST_DATA).
cmake --build "$BUILD" --target gpu_jpeg_test gpu_jpeg_bench >/dev/null
NVJPEG_LIB=$(sed -n 's/^SLUICE_NVJPEG_ROOT:PATH=//p' "$BUILD/CMakeCache.txt")/lib/libnvjpeg.so.13
[ -f "$NVJPEG_LIB" ] ||
  echo "gpu-bundle: no $NVJPEG_LIB (scripts/fetch-nvjpeg.sh): JPEG decode there will be CPU only" >&2
BINS=("$BUILD"/tests/gpu/gpu_*test "$BUILD"/bench/gpu/gpu_bench "$BUILD"/bench/gpu/gpu_train_bench
  "$BUILD"/bench/gpu/gpu_jpeg_bench
  "$BUILD"/tools/sluice "$BUILD"/samples/fashion_mnist_mlp "$BUILD"/samples/image_classifier
  "$BUILD"/bench/peers/sluice_cases "$BUILD"/bench/peers/bare_decode
  "$BUILD"/bench/pipeline/pipeline_parallel_reads_bench)
# MPI, for run.sh's mpi phase (a separate block): when sluice was built with
# MPI, the MPI test workers, the distributed sample and mpi_bench join the
# payload; a relocatable copy of this machine's Open MPI (the GPU machine
# has none; scripts/pack-openmpi.sh) goes beside it as mpi.tar.xz, and the
# scripts that run them under mpirun as mpi-tests/.
MPI_BINS=()
if grep -q '/gpu_mpi_train_worker\.dir' "$BUILD/CMakeFiles/TargetDirectories.txt"; then
  cmake --build "$BUILD" --target mpi_worker mpi_train_worker gpu_mpi_train_worker mpi_bench \
    distributed_training >/dev/null
  MPI_BINS=("$BUILD"/tests/distribute/mpi_worker "$BUILD"/tests/nn/mpi_train_worker
    "$BUILD"/tests/gpu/gpu_mpi_train_worker "$BUILD"/bench/distribute/mpi_bench
    "$BUILD"/samples/distributed_training)
  BINS+=("${MPI_BINS[@]}")
fi
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/bin" "$STAGE/lib"
for b in "${BINS[@]}"; do strip -o "$STAGE/bin/$(basename "$b")" "$b"; done
# The libraries the binaries load, except what every Linux has (glibc's,
# libstdc++/libgcc_s, which are newer there) and the CUDA driver.
ldd "${BINS[@]}" | awk '/=> \//{print $3}' | sort -u |
  grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*|libstdc\+\+|libgcc_s|libcuda)\.so' |
  while read -r lib; do cp -L "$lib" "$STAGE/lib/"; done
if [ -f "$NVJPEG_LIB" ]; then cp -L "$NVJPEG_LIB" "$STAGE/lib/"; fi
rm -rf "$DEST" && mkdir -p "$DEST"
tar -C "$STAGE" -cJf "$DEST/payload.tar.xz" bin lib
if ((${#MPI_BINS[@]})); then  # MPI, continued: see above
  if scripts/pack-openmpi.sh "$STAGE/mpi" >/dev/null; then
    tar -C "$STAGE" -cJf "$DEST/mpi.tar.xz" mpi
    mkdir -p "$DEST/mpi-tests"
    cp tests/distribute/mpi_test.sh tests/nn/mpi_train_test.sh tests/gpu/mpi_train_gpu_test.sh \
      samples/distributed_training_test.sh "$DEST/mpi-tests/"
  else
    echo "gpu-bundle: no relocatable Open MPI: the mpi phase will be skipped there" >&2
  fi
fi
cp bench/gpu/torch_train_step.py bench/gpu/torchvision_jpeg.py bench/peers/torch_cases.py \
  bench/peers/peer_common.py "$DEST/"
cp scripts/gpu-run.sh "$DEST/run.sh"
mkdir -p "$DEST/testdata/ops/codec" && cp tests/data/ops/codec/*.jpg "$DEST/testdata/ops/codec/"
chmod +x "$DEST/run.sh"
# Fashion-MNIST for the samples phase (Debian's dataset-fashion-mnist; the
# GPU machine has no Debian packages and no network).
if [ -f "$FASHION/train-images-idx3-ubyte.gz" ]; then
  mkdir -p "$DEST/fashion-mnist" && cp "$FASHION"/*-ubyte.gz "$DEST/fashion-mnist/"
else
  echo "gpu-bundle: $FASHION missing: the samples phase will be skipped there" >&2
fi
# ImageNet-like JPEGs for the pipeline phase (case 1 of bench-peers.sh on the
# GPU machine's cores): PIPELINE_IMAGES of them (default 320, ~11 MB; 0: none).
PIPELINE_IMAGES=${PIPELINE_IMAGES:-320}
if ((PIPELINE_IMAGES > 0)); then
  scripts/make-imagenet-like.sh --build "$BUILD" --out "$DEST/images" --count "$PIPELINE_IMAGES" \
    >/dev/null || { rm -rf "$DEST/images"; echo "gpu-bundle: no images: the pipeline phase will be skipped there" >&2; }
fi
du -sh "$DEST" | sed 's/^/gpu-bundle: /'
