#!/usr/bin/env bash
# gpu.mpirun_training: 2 ranks of MultiWorkerMirroredStrategy on one gpu:0
# under mpirun (the host-staged MPI ops; the GPU backend's code on the host
# without a GPU): both ranks pass both checks of mpi_train_gpu_worker.cc.
#   tests/gpu/mpi_train_gpu_test.sh WORKER
set -uo pipefail
worker=$1
command -v mpirun > /dev/null || { echo "SKIP: mpirun not found"; exit 77; }
out=$(timeout 170 mpirun -np 2 --oversubscribe "$worker" 2>&1)
rc=$?
echo "$out"
((rc == 0)) || { echo "FAIL: exit $rc"; exit 1; }
[[ $(grep -c ': OK host' <<< "$out") == 2 ]] || { echo "FAIL: not both ranks used the host ops"; exit 1; }
[[ $(grep -c ': OK 2 ranks of batch' <<< "$out") == 2 ]] || { echo "FAIL: not both ranks matched"; exit 1; }
echo PASS
