#!/usr/bin/env bash
# samples.distributed_training_mpirun: the sample under `mpirun -np 2`
# trains, evaluates over both ranks, and only the chief writes: one
# TensorBoard event file, one checkpoint series.
#   samples/distributed_training_test.sh MPIRUN SAMPLE DIR
set -euo pipefail
mpirun=$1 sample=$2 dir=$3
rm -rf "$dir/ckpt" "$dir/logs"
out=$("$mpirun" -np 2 --oversubscribe "$sample" --dir "$dir" --epochs 1 2>&1) || { echo "$out"; exit 1; }
echo "$out"
grep -Eq 'MultiWorkerMirroredStrategy: 2 replicas' <<< "$out" || { echo "FAIL: not 2 ranks"; exit 1; }
grep -Eq 'Test accuracy: 0\.[6-9]' <<< "$out" || { echo "FAIL: no test accuracy"; exit 1; }
events=$(find "$dir/logs" -name 'events.out.tfevents.*' | wc -l)
[[ $events == 1 ]] || { echo "FAIL: $events event files (only the chief writes)"; exit 1; }
[[ $(ls "$dir/ckpt" | grep -c '\.index$') == 1 ]] || { echo "FAIL: checkpoints"; ls "$dir/ckpt"; exit 1; }
echo PASS
