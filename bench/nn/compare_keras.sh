#!/usr/bin/env bash
# One training step of the tutorials' MLP and CNN: sluice's CPU backend
# against TensorFlow-CPU / Keras on the same cores, in one run, alternating,
# median of the rounds. The Keras side is its fastest eager-free path: the
# model's train step compiled with tf.function (what fit() runs), not
# train_on_batch. Prints a table and the ratio (Keras ms / sluice ms;
# above 1 means sluice is faster). Not run in CI (needs TensorFlow from PyPI).
#
# Usage: bench/nn/compare_keras.sh [BUILD_DIR] [CORES] [ROUNDS]
#   e.g. bench/nn/compare_keras.sh build 0,1 3
#
# Python: $TF_PYTHON, or ~/.cache/sluice/tf-venv/bin/python (make it with
# `python3 -m venv ~/.cache/sluice/tf-venv && ~/.cache/sluice/tf-venv/bin/pip
# install tensorflow-cpu`).
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib/args.sh"
args_help "$@"
args_positional 3 "$@"
BUILD=${1:-build}
CORES=${2:-0,1}
ROUNDS=${3:-3}
PY=${TF_PYTHON:-$HOME/.cache/sluice/tf-venv/bin/python}
HERE=$(cd "$(dirname "$0")" && pwd)
THREADS=$(awk -F, '{print NF}' <<<"$CORES")
BENCH=$BUILD/bench/nn/train_step_bench
[[ -x $BENCH ]] || { echo "build $BENCH first (cmake --build $BUILD --target train_step_bench)" >&2; exit 1; }
[[ -x $PY ]] || { echo "no TensorFlow python at $PY (set TF_PYTHON)" >&2; exit 1; }

declare -A ours keras
for round in $(seq "$ROUNDS"); do
  for model in mlp cnn; do
    for batch in 32 64; do
      name=$( [[ $model == mlp ]] && echo Mlp || echo Cnn )
      ms=$(OMP_NUM_THREADS=$THREADS taskset -c "$CORES" "$BENCH" \
             --benchmark_filter="BM_TrainStep$name/$batch/" --benchmark_min_time=2 \
             --benchmark_format=json 2>/dev/null |
           "$PY" -c 'import json,sys; b=json.load(sys.stdin)["benchmarks"][0]; print(b["real_time"])')
      ours[$model/$batch]+="$ms "
      k=$(taskset -c "$CORES" "$PY" "$HERE/keras_reference.py" step --model $model \
            --batch $batch --threads "$THREADS" --steps 200 --method tf_function 2>/dev/null | tail -1 |
          "$PY" -c 'import json,sys; print(json.load(sys.stdin)["ms_per_step"])')
      keras[$model/$batch]+="$k "
    done
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "machine: $(nproc) cores visible, pinned to $CORES; $(lscpu | sed -n 's/^Model name: *//p')"
echo "tensorflow: $("$PY" -c 'import tensorflow as tf; print(tf.__version__)' 2>/dev/null)"
printf '%-6s %6s %14s %14s %8s\n' model batch "sluice ms" "keras ms" ratio
for model in mlp cnn; do
  for batch in 32 64; do
    o=$(median <<<"${ours[$model/$batch]}")
    k=$(median <<<"${keras[$model/$batch]}")
    printf '%-6s %6s %14.3f %14.3f %8s\n' $model $batch "$o" "$k" \
      "$(awk -v k="$k" -v o="$o" 'BEGIN { printf "%.2f", k / o }')"
  done
done
