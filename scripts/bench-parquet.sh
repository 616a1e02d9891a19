#!/usr/bin/env bash
# sluice.ParquetDataset vs pyarrow.parquet on one ~100 MB file, same run
# (bench/peers/parquet_peer.py; docs/perf.md, "Parquet").
#   scripts/bench-parquet.sh [BUILD_DIR] [PYARROW_VENV]
# Creates the venv (pyarrow==26.0.1, numpy) if it is missing; the sluice
# package comes from BUILD_DIR/python (built with Arrow).
set -euo pipefail
build=${1:-build}
venv=${2:-${SLUICE_PYARROW_VENV:-$HOME/.cache/sluice/pyarrow-venv}}
if [[ ! -x "$venv/bin/python" ]]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q pyarrow==26.0.1 numpy
fi
here=$(cd "$(dirname "$0")/.." && pwd)
PYTHONPATH="$build/python" exec "$venv/bin/python" "$here/bench/peers/parquet_peer.py" "${@:3}"
