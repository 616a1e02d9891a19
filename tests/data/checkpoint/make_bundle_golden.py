#!/usr/bin/env python3
"""Writes a small TensorFlow checkpoint (tensor bundle) for sluice's tests.

Run with the TensorFlow venv (see tests/data/README.md):
  ~/.cache/sluice/tf-venv/bin/python tests/data/checkpoint/make_bundle_golden.py \
      tests/data/checkpoint

Produces golden.index, golden.data-00000-of-00001 (tf.train.Checkpoint.write,
which saves no save_counter) and golden_manifest.json: for every key of the
bundle, its dtype name, shape and values as tf.train.load_checkpoint reads
them (float16/32/64 as their bit patterns in "0x..." hex, strings as hex).
"""
import json
import os
import struct
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def encode(value):
    arr = np.asarray(value)
    if arr.dtype == np.float32:
        vals = ["0x%08x" % struct.unpack("<I", struct.pack("<f", float(v)))[0] for v in arr.flat]
    elif arr.dtype == np.float16:
        vals = ["0x%04x" % int(v) for v in arr.view(np.uint16).flat]
    elif arr.dtype == np.float64:
        vals = ["0x%016x" % struct.unpack("<Q", struct.pack("<d", float(v)))[0] for v in arr.flat]
    elif arr.dtype == object or arr.dtype.kind == "S":
        vals = [bytes(v).hex() for v in arr.flat]
    elif arr.dtype == np.bool_:
        vals = [bool(v) for v in arr.flat]
    else:
        vals = [int(v) for v in arr.flat]
    return list(arr.shape), vals


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    prefix = os.path.join(out_dir, "golden")
    ckpt = tf.train.Checkpoint(
        weights=tf.Variable(np.array([[1.5, -2.0, 0.1], [float("inf"), -0.0, 3e-39]], np.float32)),
        step=tf.Variable(np.int64(-9007199254740993)),
        name=tf.Variable(b"caf\xc3\xa9 \x00bytes"),
        vec=tf.Variable(np.array([np.pi, -1e300, 0.0, 2.5], np.float64)),
        empty=tf.Variable(np.zeros([0, 3], np.int32)),
        flags=tf.Variable(np.array([True, False, True])),
        half=tf.Variable(np.array([1.0, -2.5, 65504.0], np.float16)),
        words=tf.Variable(np.array([[b"", b"a"], [b"bb" * 100, b"\xff"]], object)),
    )
    path = ckpt.write(prefix)
    assert path == prefix, path
    reader = tf.train.load_checkpoint(prefix)
    dtypes = reader.get_variable_to_dtype_map()
    manifest = {}
    for key in sorted(dtypes):
        value = reader.get_tensor(key)
        shape, vals = encode(value)
        manifest[key] = {"dtype": dtypes[key].name, "shape": shape, "values": vals}
    manifest["__tensorflow_version__"] = tf.__version__
    with open(os.path.join(out_dir, "golden_manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
