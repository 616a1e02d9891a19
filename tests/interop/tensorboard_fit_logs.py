#!/usr/bin/env python3
"""Reads the TensorBoard logs that nn::Sequential::Fit wrote with tensorboard's
own event reader (EventAccumulator, from PyPI's tensorboard) and checks the
scalars a user expects are there: per-step batch_loss, batch_<metric>,
examples_per_second, input_wait_fraction and pipeline/<stage>/... and
per-epoch epoch_<name>. Not run in CI.

  build/samples/image_classifier DIR --dir /tmp/run ...   # writes /tmp/run/logs
  ~/.cache/sluice/tf-venv/bin/python tests/interop/tensorboard_fit_logs.py /tmp/run/logs
"""
import sys

from tensorboard.backend.event_processing import event_accumulator
from tensorboard.util import tensor_util


def main():
    logdir = sys.argv[1]
    acc = event_accumulator.EventAccumulator(logdir, size_guidance={"tensors": 0, "scalars": 0})
    acc.Reload()
    tags = acc.Tags()
    # TF2 writes scalars as tensors with plugin "scalars"; the accumulator
    # lists them under "tensors".
    names = sorted(set(tags.get("tensors", [])) | set(tags.get("scalars", [])))
    want = ["batch_loss", "batch_accuracy", "examples_per_second", "input_wait_fraction",
            "epoch_loss", "epoch_accuracy", "epoch_val_accuracy"]
    missing = [w for w in want if w not in names]
    pipeline = [n for n in names if n.startswith("pipeline/")]
    for n in want[:1] + want[4:5]:
        if n in names:
            events = acc.Tensors(n)
            print(f"{n}: {len(events)} points, first step {events[0].step}, "
                  f"last value {float(tensor_util.make_ndarray(events[-1].tensor_proto)):.4f}")
    print(f"{len(names)} scalar tags, {len(pipeline)} pipeline tags, e.g. {pipeline[:3]}")
    if missing or not pipeline:
        print("MISSING:", missing or "pipeline/ tags")
        return 1
    print("tensorboard_fit_logs: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
