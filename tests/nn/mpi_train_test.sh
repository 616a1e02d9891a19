#!/usr/bin/env bash
# Data-parallel training under real mpirun ranks (MultiWorkerMirroredStrategy
# on the CPU): 2 and 3 ranks train to the weights of one model with the
# global batch, equal bit for bit on every rank; a rank that dies mid-epoch
# ends the job, named, never a hang; all of it also with the gradient
# all-reduce overlapped with the backward pass.
#   tests/nn/mpi_train_test.sh WORKER
set -uo pipefail
worker=$1
command -v mpirun > /dev/null || { echo "SKIP: mpirun not found"; exit 77; }
run() { local np=$1; shift; timeout 120 mpirun -np "$np" --oversubscribe "$worker" "$@"; }
fail() { echo "FAIL: $*"; exit 1; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# Without and with the all-reduce overlapped with the backward pass.
for overlap in "" overlap; do
  for np in 2 3; do
    run "$np" equivalence $overlap > "$out" 2>&1 ||
      { cat "$out"; fail "equivalence on $np ranks $overlap"; }
    [[ $(grep -c ': OK' "$out") == "$np" ]] || { cat "$out"; fail "not every rank said OK"; }
    echo "$(grep -m1 ': OK' "$out") ${overlap:+(overlapped)}"
  done
  start=$SECONDS
  run 2 die 3 $overlap > "$out" 2>&1 && { cat "$out"; fail "the job survived a dead rank"; }
  (( $? != 124 )) || fail "a dead rank hung the job $overlap"
  grep -q 'rank 1 exits at step 3' "$out" || { cat "$out"; fail "the dying rank did not run"; }
  grep -Eq 'Process name: \[\[[0-9]+,1\],1\]' "$out" || { cat "$out"; fail "mpirun did not name rank 1"; }
  echo "die ${overlap:+(overlapped)}: the job ended in $((SECONDS - start)) s, naming rank 1"
done
echo PASS
