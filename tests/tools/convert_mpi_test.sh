#!/usr/bin/env bash
# `sluice convert ... --mpi` under a real launcher: `mpirun -np 2` and
# `mpirun -np 3` write exactly the files a one-process run writes (sha256 of
# every file, hidden ones included, so no temporary may be left), for
# `convert images` and `convert idx`, with --shuffle, --index and gzip.
#
# Usage: convert_mpi_test.sh SLUICE_BINARY
# Exits 77 (CTest's SKIP_RETURN_CODE) when mpirun is not installed. Running
# as root needs OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# (tests/tools/CMakeLists.txt sets them for this test only).
set -euo pipefail
export LC_ALL=C

SLUICE=${1:?usage: convert_mpi_test.sh SLUICE_BINARY}
MPIRUN=$(command -v mpirun || true)
if [[ -z $MPIRUN ]]; then
  echo "SKIP: mpirun not found (Debian: apt-get install openmpi-bin)"
  exit 77
fi
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# --- Input: IDX files made here, and the PNG folder `convert idx` makes ------
N=60 ROWS=8 COLS=6
be32() { printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 >> 24 & 255)) $(($1 >> 16 & 255)) \
  $(($1 >> 8 & 255)) $(($1 & 255)); }
pixels="$(be32 $((0x803)))$(be32 $N)$(be32 $ROWS)$(be32 $COLS)"
x=7
for ((i = 0; i < N * ROWS * COLS; i++)); do
  x=$(((x * 1103515245 + 12345) & 0x7fffffff))
  printf -v byte '\\x%02x' $((x >> 16 & 255))
  pixels+=$byte
done
printf "$pixels" >"$W/train-images-idx3-ubyte"
labels="$(be32 $((0x801)))$(be32 $N)"
for ((i = 0; i < N; i++)); do
  printf -v byte '\\x%02x' $((i * 3 % 5))
  labels+=$byte
done
printf "$labels" >"$W/train-labels-idx1-ubyte"
[[ $(stat -c %s "$W/train-images-idx3-ubyte") == $((16 + N * ROWS * COLS)) ]] ||
  fail "the generated IDX images file has the wrong size"
"$SLUICE" convert idx "$W/train-images-idx3-ubyte" "$W/train-labels-idx1-ubyte" \
  --to-folder "$W/folder" >/dev/null || fail "convert idx --to-folder"
# One file that is not an image: the rank that meets it skips it, lists it and
# still exits 0, so that mpirun does not stop the other ranks mid-way.
printf 'not an image' >"$W/folder/2/broken.png"

IMAGES=(convert images "$W/folder" --shards 7 --shuffle --seed 5 --index)
IDX=(convert idx "$W/train-images-idx3-ubyte" "$W/train-labels-idx1-ubyte" --shards 5
  --shuffle --seed 3 --index --compression gzip)

# sha256 of every file below $1, by relative path.
sums() { (cd "$1" && find . -type f | sort | xargs sha256sum); }

# --- One process -------------------------------------------------------------
rc=0
"$SLUICE" "${IMAGES[@]}" --out "$W/one/img/t" >/dev/null 2>&1 || rc=$?
[[ $rc == 3 ]] || fail "one-process convert images exited with $rc, not 3 (one file skipped)"
"$SLUICE" "${IDX[@]}" --out "$W/one/idx/m" >/dev/null || fail "one-process convert idx"
expected=$(sums "$W/one")
# Per conversion: its shards, their .idx, the labels, the manifest, the lock file.
[[ $(wc -l <<<"$expected") == $((7 * 2 + 3 + 5 * 2 + 3)) ]] ||
  fail "the one-process run wrote an unexpected set of files:"$'\n'"$expected"

# --- mpirun ------------------------------------------------------------------
# --oversubscribe: CI machines may have fewer cores than ranks.
for np in 2 3; do
  out="$W/np$np"
  for what in IMAGES IDX; do
    if [[ $what == IMAGES ]]; then
      args=("${IMAGES[@]}" --out "$out/img/t")
    else
      args=("${IDX[@]}" --out "$out/idx/m")
    fi
    log="$W/np$np-$what.log"
    if ! timeout 50 "$MPIRUN" --oversubscribe -np "$np" "$SLUICE" "${args[@]}" --mpi >"$log" 2>&1; then
      cat "$log" >&2
      fail "mpirun -np $np sluice ${args[*]} --mpi"
    fi
    if [[ $what == IMAGES ]] && ! grep -q "2/broken.png: not a JPEG or PNG file" "$log"; then
      cat "$log" >&2
      fail "no rank listed the skipped file"
    fi
    for ((rank = 0; rank < np; rank++)); do
      grep -q "^task $rank of $np (Open MPI rank): " "$log" || {
        cat "$log" >&2
        fail "rank $rank of $np did not report its shards"
      }
    done
  done
  got=$(sums "$out")
  if [[ $got != "$expected" ]]; then
    diff <(echo "$expected") <(echo "$got") >&2 || true
    fail "mpirun -np $np wrote other files than one process"
  fi
  echo "mpirun -np $np: $(wc -l <<<"$got") files identical to the one-process run"
done
echo PASS
