#!/usr/bin/env bash
# Fetches nvJPEG's header and library for the gpu/ module's JPEG decoder
# (ops/cuda/jpeg_decoder.h): the PyPI wheel nvidia-nvjpeg for CUDA 13 (3.8 MB;
# the CUDA toolkit's Debian packages here have no nvjpeg.h), downloaded with
# pip, checked against its SHA-256 and unpacked into DEST:
#   DEST/include/nvjpeg.h        found by gpu/CMakeLists.txt (SLUICE_NVJPEG_ROOT)
#   DEST/lib/libnvjpeg.so.13     opened at run time (dlopen), never linked;
#                                scripts/gpu-bundle.sh carries it to the GPU machine
# Nothing is fetched at build time unless asked: run this once, then
# reconfigure (or configure with -DSLUICE_FETCH_NVJPEG=ON, which runs it).
# Without it the decoder is built without nvJPEG (CPU decode only) and
# everything else builds and works as before.
#
# Usage: scripts/fetch-nvjpeg.sh [DEST]     (default build/nvjpeg; relative to the repository root)
# Env: PIP (default "python3 -m pip").
set -euo pipefail
. "$(dirname "$0")/lib/args.sh"
args_help "$@"
args_positional 1 "$@"
cd "$(dirname "$0")/.."
DEST=${1:-build/nvjpeg}
VERSION=13.3.2.43
WHEEL=nvidia_nvjpeg-$VERSION-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl
SHA256=27f9c4a25a73f1d1ad35c342c8d657c8ff43e23877f338ef15fb2602ac2e5aa8
if [ -f "$DEST/include/nvjpeg.h" ] && [ -f "$DEST/lib/libnvjpeg.so.13" ] &&
   [ "$(cat "$DEST/version" 2>/dev/null)" = "$VERSION" ]; then
  exit 0
fi
mkdir -p "$DEST/include" "$DEST/lib"
if [ ! -f "$DEST/$WHEEL" ]; then
  ${PIP:-python3 -m pip} download --quiet --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
    --python-version 3 --dest "$DEST" "nvidia-nvjpeg==$VERSION" >&2
fi
echo "$SHA256  $DEST/$WHEEL" | sha256sum --check --quiet - ||
  { echo "fetch-nvjpeg: $DEST/$WHEEL does not have the expected SHA-256; removed" >&2; rm -f "$DEST/$WHEEL"; exit 1; }
python3 - "$DEST" "$DEST/$WHEEL" <<'PY'
import sys, zipfile
dest, wheel = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    for member, out in (("nvidia/cu13/include/nvjpeg.h", "include/nvjpeg.h"),
                        ("nvidia/cu13/lib/libnvjpeg.so.13", "lib/libnvjpeg.so.13")):
        with z.open(member) as src, open(f"{dest}/{out}", "wb") as dst:
            dst.write(src.read())
PY
echo "$VERSION" > "$DEST/version"
echo "fetch-nvjpeg: nvJPEG $VERSION in $DEST" >&2
