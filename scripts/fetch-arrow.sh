#!/usr/bin/env bash
# Fetches Apache Arrow C++ for the object-store file systems (core/, s3://,
# gs://, az://) and the Parquet reader (records/, pipeline/): the headers and
# three libraries of PyPI's pyarrow wheel (Debian 12 has no Arrow), pinned,
# downloaded with pip, checked against its SHA-256 and unpacked into DEST:
#   DEST/include/{arrow,parquet}/   found by cmake/SluiceArrow.cmake
#   DEST/lib/libarrow.so.2600       (with the GCS and Azure file systems)
#   DEST/lib/libarrow_s3.so.2600    (S3FileSystem)
#   DEST/lib/libparquet.so.2600
# The wheel is built for CPython 3.11, but these libraries do not use Python.
# `make` runs this before configuring; a failed fetch (no network) is a
# warning there, and the build goes on without Arrow: the remote file systems
# and Parquet then say that this build lacks them (SLUICE_WITH_ARROW).
#
# Usage: scripts/fetch-arrow.sh [DEST]     (default build/arrow; relative to the repository root)
# Env: PIP (default "python3 -m pip").
set -euo pipefail
. "$(dirname "$0")/lib/args.sh"
args_help "$@"
args_positional 1 "$@"
cd "$(dirname "$0")/.."
DEST=${1:-build/arrow}
VERSION=26.0.1
WHEEL=pyarrow-$VERSION-cp311-cp311-manylinux_2_28_x86_64.whl
SHA256=39cb0f2418282c24bea6ceda77b03e5a8f0a5766b63a8bf194d4e2a2c423548c
LIBS="libarrow.so.2600 libarrow_s3.so.2600 libparquet.so.2600"
if [ "$(cat "$DEST/version" 2>/dev/null)" = "$VERSION" ]; then
  exit 0
fi
mkdir -p "$DEST"
if [ ! -f "$DEST/$WHEEL" ]; then
  ${PIP:-python3 -m pip} download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --platform manylinux_2_28_x86_64 --python-version 3.11 --implementation cp --abi cp311 \
    --dest "$DEST" "pyarrow==$VERSION" >&2
fi
echo "$SHA256  $DEST/$WHEEL" | sha256sum --check --quiet - ||
  { echo "fetch-arrow: $DEST/$WHEEL does not have the expected SHA-256; removed" >&2; rm -f "$DEST/$WHEEL"; exit 1; }
rm -rf "$DEST/include" "$DEST/lib" "$DEST/unpack"
python3 - "$DEST" "$DEST/$WHEEL" $LIBS <<'PY'
import os, shutil, sys, zipfile
dest, wheel, libs = sys.argv[1], sys.argv[2], sys.argv[3:]
os.makedirs(f"{dest}/lib")
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        name = info.filename
        if name.startswith("pyarrow/include/") and not name.endswith("/"):
            out = f"{dest}/include/{name[len('pyarrow/include/'):]}"
        elif name[len("pyarrow/"):] in libs:
            out = f"{dest}/lib/{name[len('pyarrow/'):]}"
        else:
            continue
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with z.open(info) as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
PY
# The wheel is kept only until the unpack succeeded.
rm -f "$DEST/$WHEEL"
echo "$VERSION" > "$DEST/version"
echo "fetch-arrow: Arrow C++ $VERSION in $DEST" >&2
