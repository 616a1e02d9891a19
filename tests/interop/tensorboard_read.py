#!/usr/bin/env python3
"""Reads an events file written by sluice::SummaryWriter with TensorBoard and
TensorFlow.

Runs the `tensorboard_write_events` program (tests/interop/
tensorboard_write_events.cc) into a temporary log directory, then reads the
file with TensorBoard's EventAccumulator (the loader TensorBoard itself uses,
plugin_event_accumulator) and with tf.compat.v1.train.summary_iterator, and
checks tags, plugins, steps, scalar values, histogram buckets (against
tensorboard's own bucketing run by TensorFlow), image sizes and pixels
(decoded with tf.io.decode_png) and the text.

Not run by CI (CI has no TensorFlow). Run it with
  tests/interop/tensorboard_read.sh [BUILD_DIR]
"""
import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorboard.backend.event_processing import plugin_event_accumulator as pea  # noqa: E402
from tensorboard.plugins.histogram import summary_v2 as hist_v2  # noqa: E402

checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def hist_values():
    return np.array([((i * 37) % 101) / 7.0 - 3.0 for i in range(101)], dtype=np.float64)


def image(n):
    y, x, c = np.meshgrid(range(5), range(7), range(3), indexing="ij")
    return ((n * 97 + y * 31 + x * 13 + c * 7) % 256).astype(np.uint8)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--writer", required=True, help="path of tensorboard_write_events")
    args = ap.parse_args()
    logdir = tempfile.mkdtemp(prefix="sluice-tb-")
    path = subprocess.run([args.writer, logdir], check=True, capture_output=True,
                          text=True).stdout.strip()
    name = os.path.basename(path)
    print("sluice wrote", name, os.path.getsize(path), "bytes")
    m = re.fullmatch(r"events\.out\.tfevents\.(\d{10})\.(.+)\.(\d+)\.(\d+)\.v2", name)
    check(m is not None, f"file name {name}")
    check(m.group(2) == socket.gethostname(), "host name in the file name")

    # --- TensorBoard's loader ---
    acc = pea.EventAccumulator(logdir, size_guidance={pea.TENSORS: 0})
    acc.Reload()
    tags = acc.Tags()
    print("EventAccumulator tags:", sorted(tags["tensors"]))
    check(sorted(tags["tensors"]) == ["images", "loss", "note", "weights", "weights/b7"],
          "tensor tags")
    for plugin, want in [("scalars", ["loss"]), ("histograms", ["weights", "weights/b7"]),
                         ("images", ["images"]), ("text", ["note"])]:
        got = sorted(acc.PluginTagToContent(plugin).keys())
        check(got == want, f"plugin {plugin}: {got}")
    losses = acc.Tensors("loss")
    check([e.step for e in losses] == list(range(10)), "loss steps")
    for e in losses:
        v = tf.make_ndarray(e.tensor_proto)
        check(v.dtype == np.float32 and v.shape == (), "loss is a float32 scalar")
        check(v == np.float32(1.0) / np.float32(1 + e.step), f"loss at step {e.step}")
    print("loss:", [float(tf.make_ndarray(e.tensor_proto)) for e in losses])
    for tag, buckets in [("weights", 30), ("weights/b7", 7)]:
        events = acc.Tensors(tag)
        check([e.step for e in events] == [0, 5], f"{tag} steps")
        want = hist_v2._buckets(tf.constant(hist_values()), bucket_count=buckets).numpy()
        for e in events:
            got = tf.make_ndarray(e.tensor_proto)
            check(got.dtype == np.float64 and got.shape == (buckets, 3), f"{tag} shape")
            check(np.array_equal(got, want), f"{tag} buckets equal tensorboard's, bit for bit")
        print(f"{tag}: {buckets} buckets equal tensorboard's _buckets(); first rows",
              tf.make_ndarray(events[0].tensor_proto)[:2].tolist())
    (img_event,) = acc.Tensors("images")
    check(img_event.step == 3, "image step")
    blobs = tf.make_ndarray(img_event.tensor_proto)
    check(blobs.shape == (4,), "image tensor has width, height and 2 PNGs")
    check(blobs[0] == b"7" and blobs[1] == b"5", "image width and height")
    for i in range(2):
        px = tf.io.decode_png(blobs[2 + i]).numpy()
        check(px.shape == (5, 7, 3), f"image {i} shape")
        check(np.array_equal(px, image(i)), f"image {i} pixels")
    print("images: width", blobs[0].decode(), "height", blobs[1].decode(), "2 PNGs decode to",
          "the expected pixels")
    (text_event,) = acc.Tensors("note")
    check(text_event.step == 1, "text step")
    check(tf.make_ndarray(text_event.tensor_proto) == b"sluice wrote this", "text")

    # --- TensorFlow's iterator ---
    events = list(tf.compat.v1.train.summary_iterator(path))
    check(events[0].file_version == "brain.Event:2", "file_version first")
    check(events[0].wall_time == float(m.group(1)), "first wall_time is the name's seconds")
    seen = {}
    for e in events[1:]:
        check(e.wall_time > 1e9, "wall_time")
        for v in e.summary.value:
            seen.setdefault(v.tag, []).append(e.step)
    print("summary_iterator:", len(events), "events;", {k: v for k, v in sorted(seen.items())})
    check(seen == {"loss": list(range(10)), "weights": [0, 5], "weights/b7": [0, 5],
                   "images": [3], "note": [1]}, "tags and steps")
    print(f"OK: {checks} checks passed")


if __name__ == "__main__":
    sys.exit(main())
