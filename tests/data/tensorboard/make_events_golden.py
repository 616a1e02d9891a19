#!/usr/bin/env python3
"""Writes tests/data/tensorboard/events.golden with TensorFlow's tf.summary.

The C++ test (tests/records/summary_writer_test.cc) writes the same summaries
with sluice::SummaryWriter and compares the events field by field (wall_time
excepted). Inputs are defined by integer formulas so both sides build the
same values exactly. Run with the TF venv (see tests/data/README.md):

  ~/.cache/sluice/tf-venv/bin/python tests/data/tensorboard/make_events_golden.py

It also prints the name TF gave the events file, to check our naming.
"""
import os
import shutil
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def hist_values():
    # 101 float64 values: ((i * 37) % 101) / 7 - 3, i = 0..100.
    return np.array([((i * 37) % 101) / 7.0 - 3.0 for i in range(101)], dtype=np.float64)


def image_batch():
    # uint8 [2, 3, 4, 3]: pixel (n, y, x, c) = (n * 97 + y * 31 + x * 13 + c * 7) % 256.
    n, y, x, c = np.meshgrid(range(2), range(3), range(4), range(3), indexing="ij")
    return ((n * 97 + y * 31 + x * 13 + c * 7) % 256).astype(np.uint8)


def main():
    out = os.path.dirname(os.path.abspath(__file__))
    logdir = tempfile.mkdtemp()
    try:
        writer = tf.summary.create_file_writer(logdir)
        with writer.as_default():
            tf.summary.scalar("loss", 0.5, step=1)
            tf.summary.scalar("loss", -1.25e-3, step=2)
            tf.summary.histogram("weights", hist_values(), step=3)
            tf.summary.histogram("weights5", hist_values(), step=3, buckets=5)
            tf.summary.histogram("single", np.array([2.5, 2.5, 2.5]), step=4)
            tf.summary.histogram("empty", np.zeros([0], np.float32), step=5)
            tf.summary.image("images", image_batch(), step=6, max_outputs=1)
            tf.summary.image("images2", image_batch(), step=6)  # max_outputs 3
            tf.summary.text("note", "hello, tensorboard", step=7)
        writer.close()
        (name,) = os.listdir(logdir)
        print("TF named the file:", name)
        shutil.copyfile(os.path.join(logdir, name), os.path.join(out, "events.golden"))
    finally:
        shutil.rmtree(logdir)


if __name__ == "__main__":
    sys.exit(main())
