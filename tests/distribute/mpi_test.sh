#!/usr/bin/env bash
# Multi-process tests of distribute/ under real mpirun ranks (Open MPI):
# collectives, every input policy on 2 and 4 ranks, save on 2 ranks and
# restore on 4 and on 1, and faults: a rank that exits mid-epoch and a rank
# that stops taking part must end the job with an error naming them, never
# a hang.
#   tests/distribute/mpi_test.sh WORKER
# Exits 77 (CTest: skipped) when mpirun is missing.
set -uo pipefail
worker=$1
command -v mpirun > /dev/null || { echo "SKIP: mpirun not found"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# --oversubscribe: more ranks than cores (CI has 2).
run() { local np=$1; shift; timeout 120 mpirun -np "$np" --oversubscribe "$worker" "$@"; }
fail() { echo "FAIL: $*"; exit 1; }

for np in 1 2 4; do
  run "$np" collectives > "$work/out" 2>&1 || { cat "$work/out"; fail "collectives on $np ranks"; }
  [[ $(grep -c ': OK collectives' "$work/out") == "$np" ]] || { cat "$work/out"; fail "collectives on $np ranks: not every rank said OK"; }
done
echo "collectives: OK on 1, 2 and 4 ranks"

for policy in RECORD FILE DATA; do
  for np in 2 4; do
    mkdir -p "$work/$policy$np"
    run "$np" input "$work/$policy$np" "$policy" > "$work/out" 2>&1 \
      || { cat "$work/out"; fail "input $policy on $np ranks"; }
    grep -m1 'OK input' "$work/out"
  done
done

# Save on 2 ranks after 5 batches, restore on 4 and on 1.
for np2 in 4 1; do
  rm -rf "$work/ckpt"; mkdir -p "$work/ckpt"
  run 2 save "$work/ckpt" 5 > "$work/out" 2>&1 || { cat "$work/out"; fail "save on 2 ranks"; }
  run "$np2" restore "$work/ckpt" > "$work/out" 2>&1 || { cat "$work/out"; fail "restore on $np2 ranks"; }
  grep -m1 'OK restored' "$work/out"
done

# A rank that dies mid-epoch ends the job at once; mpirun names it.
start=$SECONDS
run 2 die 5 > "$work/out" 2>&1 && { cat "$work/out"; fail "the job survived a dead rank"; }
rc=$?
(( rc != 124 )) || fail "a dead rank hung the job"
grep -q 'rank 1 exits at step 5' "$work/out" || { cat "$work/out"; fail "the dying rank did not run"; }
grep -Eq 'Process name: \[\[[0-9]+,1\],1\]' "$work/out" || { cat "$work/out"; fail "mpirun did not name rank 1"; }
echo "die: the job ended in $((SECONDS - start)) s, naming rank 1"

# A rank that stops taking part: rank 0's barrier times out naming it.
start=$SECONDS
SLUICE_COLLECTIVE_TIMEOUT_S=2 run 2 hang > "$work/out" 2>&1 \
  && { cat "$work/out"; fail "a barrier without rank 1 succeeded"; }
(( SECONDS - start < 60 )) || fail "the hang took $((SECONDS - start)) s to end"
grep -q 'did not complete within 2000 ms' "$work/out" || { cat "$work/out"; fail "no timeout error"; }
grep -q 'alive but did not take part' "$work/out" || { cat "$work/out"; fail "the timeout did not say why"; }
echo "hang: rank 0 timed out and aborted the job in $((SECONDS - start)) s"
echo PASS
