#!/usr/bin/env python3
"""Reads a checkpoint written by sluice's Checkpoint with TensorFlow.

The checkpoint is what checkpoint_test's InteropWrite case writes through a
CheckpointManager (max_to_keep=2, two saves) into $SLUICE_CKPT_INTEROP_DIR: a
tree shaped like Keras 3's Sequential([Input(4), Dense(3), Dense(2)]) + Adam
(see docs/checkpoint.md), an int64 "step" and a pipeline iterator. Checks:
  - tf.train.latest_checkpoint reads sluice's `checkpoint` state file;
  - tf.train.list_variables / load_checkpoint: keys, dtypes, shapes, values;
  - the _CHECKPOINTABLE_OBJECT_GRAPH parses as TrackableObjectGraph;
  - tf.train.Checkpoint restores it into a real Keras model + Adam
    (values match and assert_existing_objects_matched passes).
Hook for the lead: once sluice's Sequential exists, save it from C++ the same
way and compare model.predict() here (see restore_into_keras()).

Usage: tests/interop/checkpoint_interop.py DIR   (not run by CI)
    build/tests/nn/nn_test needs SLUICE_CKPT_INTEROP_DIR=DIR
    --gtest_filter=CheckpointTest.InteropWrite first.
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.core.protobuf import trackable_object_graph_pb2  # noqa: E402

checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def counting(shape):  # FloatVar in the test: 0, 1, 2, ...
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)


def restore_into_keras(path):
    import keras
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="relu"),
                              keras.layers.Dense(2)])
    opt = keras.optimizers.Adam()
    opt.build(model.trainable_variables)
    step = tf.Variable(0, dtype=tf.int64)
    status = tf.train.Checkpoint(model=model, optimizer=opt, step=step).restore(path)
    status.assert_existing_objects_matched()
    k0, b0, k1, b1 = [v.numpy() for v in model.trainable_variables]
    check(np.array_equal(k0, counting((4, 3))), "keras dense kernel")
    check(np.array_equal(b1, counting((2,))), "keras dense_1 bias")
    check(int(opt.iterations.numpy()) == 3, "keras optimizer iterations")
    check(int(step.numpy()) == 42, "step")
    # m of the first kernel is _variables/2.
    check(np.array_equal(opt.variables[2].numpy(), counting((4, 3))), "adam m")
    return model


def main(d):
    path = tf.train.latest_checkpoint(d)
    check(path is not None and path.endswith("ckpt-2"), f"latest_checkpoint {path}")
    check(not tf.io.gfile.exists(os.path.join(d, "ckpt-0.index")), "numbering")
    state = tf.train.get_checkpoint_state(d)
    check(len(state.all_model_checkpoint_paths) == 2, "state paths")
    check(len(state.all_model_checkpoint_timestamps) == 2, "state timestamps")
    variables = dict(tf.train.list_variables(path))
    reader = tf.train.load_checkpoint(path)
    dtypes = reader.get_variable_to_dtype_map()
    tv = "optimizer/_trainable_variables/%d/.ATTRIBUTES/VARIABLE_VALUE"
    shapes = [(4, 3), (3,), (3, 2), (2,)]
    for i, shape in enumerate(shapes):
        check(variables[tv % i] == list(shape), f"shape {tv % i}")
        check(np.array_equal(reader.get_tensor(tv % i), counting(shape)), f"value {tv % i}")
        for j in (2 + 2 * i, 3 + 2 * i):
            key = "optimizer/_variables/%d/.ATTRIBUTES/VARIABLE_VALUE" % j
            check(np.array_equal(reader.get_tensor(key), counting(shape)), key)
    check(dtypes["save_counter/.ATTRIBUTES/VARIABLE_VALUE"] == tf.int64, "counter dtype")
    check(reader.get_tensor("save_counter/.ATTRIBUTES/VARIABLE_VALUE") == 2, "counter")
    check(reader.get_tensor("step/.ATTRIBUTES/VARIABLE_VALUE") == 42, "step value")
    check(reader.get_tensor("optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE") == 3, "iters")
    check(dtypes["iterator/.ATTRIBUTES/ITERATOR_STATE"] == tf.string, "iterator dtype")
    check(len(reader.get_tensor("iterator/.ATTRIBUTES/ITERATOR_STATE")) > 0, "iterator bytes")
    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    graph.ParseFromString(reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"))
    root = [c.local_name for c in graph.nodes[0].children]
    check(root == ["iterator", "model", "optimizer", "step", "save_counter"], f"root {root}")
    restore_into_keras(path)
    print(f"checkpoint_interop: OK, {checks} checks, {len(variables)} keys in {path}")


if __name__ == "__main__":
    main(sys.argv[1])
