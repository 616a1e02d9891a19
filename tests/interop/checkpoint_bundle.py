#!/usr/bin/env python3
"""Reads a tensor bundle written by sluice's BundleWriter with TensorFlow.

The bundle is the one tensor_bundle_test's InteropWrite case writes
(SampleTensors() plus a 700x100 float32 tensor). Checks with
tf.train.list_variables, tf.train.load_checkpoint (dtype map, shape map,
get_tensor) and the RestoreV2 op that every checkpoint restore runs that the
keys, dtypes, shapes and values (bit for bit) are what sluice wrote.

Not run by CI. Run it through tests/interop/checkpoint_bundle.sh [BUILD_DIR].
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def expected():
    big = (np.arange(70000, dtype=np.float32) * np.float32(0.5) - np.float32(1000)).reshape(700, 100)
    return {
        "w": np.array([[1, -2, 3.5], [0, 7, 8]], np.float32),
        "a/step": np.array(42, np.int64),
        "b/flags": np.zeros([0], np.bool_),
        "b/bools": np.array([True, False, True]),
        "c/u8": np.array([0, 255, 7], np.uint8),
        "d/i32": np.array([-1, 1 << 30], np.int32),
        "e/f64": np.array(-0.0, np.float64),
        "f/half": np.array([1.5], np.float16),
        "g/bf16": tf.constant([-3.0], tf.bfloat16).numpy(),
        "s/one": np.array(b"hello", object),
        "s/many": np.array([b"", b"x", b"z" * 300, b"\xff\x00"], object),
        "s/none": np.zeros([0, 2], object),
        "zz/empty": np.zeros([3, 0], np.int64),
        "big/.ATTRIBUTES/VARIABLE_VALUE": big,
    }


def same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype == object or b.dtype == object:
        return [bytes(x) for x in a.flat] == [bytes(x) for x in b.flat]
    if a.dtype != b.dtype:
        return False
    return a.tobytes() == b.tobytes()  # bit for bit (-0.0, NaN)


def main(prefix):
    want = expected()
    listed = dict(tf.train.list_variables(prefix))
    check(sorted(listed) == sorted(want), f"keys {sorted(listed)}")
    reader = tf.train.load_checkpoint(prefix)
    dtypes = reader.get_variable_to_dtype_map()
    shapes = reader.get_variable_to_shape_map()
    for key, value in sorted(want.items()):
        tf_dtype = tf.as_dtype(value.dtype) if value.dtype != object else tf.string
        check(dtypes[key] == tf_dtype, f"{key}: dtype {dtypes[key]} != {tf_dtype}")
        check(list(shapes[key]) == list(value.shape), f"{key}: shape {shapes[key]}")
        check(list(listed[key]) == list(value.shape), f"{key}: listed shape {listed[key]}")
        got = reader.get_tensor(key)
        check(same(got, value), f"{key}: values differ:\n{got!r}\n{value!r}")
        print(f"  {key:34s} {tf_dtype.name:9s} {list(value.shape)}  ok")
    # The RestoreV2 op (what tf.train.Checkpoint.restore runs) on every key.
    keys = sorted(want)
    restored = tf.raw_ops.RestoreV2(
        prefix=prefix, tensor_names=keys, shape_and_slices=[""] * len(keys),
        dtypes=[tf.as_dtype(want[k].dtype) if want[k].dtype != object else tf.string
                for k in keys])
    for key, t in zip(keys, restored):
        check(same(t.numpy(), want[key]), f"RestoreV2 {key}")
    print(f"checkpoint_bundle: TensorFlow {tf.__version__} read sluice's bundle {prefix}: "
          f"{len(want)} tensors, {checks} checks passed")


if __name__ == "__main__":
    main(sys.argv[1])
