#!/usr/bin/env bash
# Reads objects from an S3-compatible server on loopback (moto, started here
# on a free port and stopped after) through sluice and through a bare Arrow
# loop, in one run: bench/objstore/objstore_read_bench. docs/perf.md,
# "Object stores", has the numbers and how to read them.
#
# Usage: scripts/bench-objstore.sh [--build DIR] [-- BENCH FLAGS...]
#     --build DIR   the build folder (default: build)
#   Flags after -- go to objstore_read_bench (--objects, --object-mib,
#   --read-kib, --reps).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/lib/args.sh"
args_help "$@"
build=build
bench_flags=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --) shift; bench_flags=("$@"); break ;;
    *) args_die "unknown argument '$1'" ;;
  esac
done
bench="$build/bench/objstore/objstore_read_bench"
[[ -x "$bench" ]] || { echo "bench-objstore.sh: no $bench (a build with Arrow C++)" >&2; exit 1; }
python=$(sed -n 's/^SLUICE_PYTHON:FILEPATH=//p' "$build/CMakeCache.txt")
moto="$(dirname "$python")/moto_server"
[[ -x "$moto" ]] || { echo "bench-objstore.sh: no moto_server beside '$python'" >&2; exit 1; }
port=$("$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$moto" -H 127.0.0.1 -p "$port" >/dev/null 2>&1 &
moto_pid=$!
trap 'kill $moto_pid 2>/dev/null || true' EXIT
for _ in $(seq 300); do
  "$python" -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port', timeout=1)" \
    2>/dev/null && break
  sleep 0.1
done
"$python" -c "import urllib.request as u; u.urlopen(u.Request('http://127.0.0.1:$port/bench', method='PUT', data=b''))"
export AWS_ENDPOINT_URL_S3="http://127.0.0.1:$port" AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench \
       AWS_DEFAULT_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "server: moto_server $("$python" -c 'import moto; print(moto.__version__)') on 127.0.0.1:$port"
"$bench" --bucket bench "${bench_flags[@]}"
