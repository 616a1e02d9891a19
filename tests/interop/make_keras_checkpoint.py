#!/usr/bin/env python3
"""Makes the golden Keras checkpoint under tests/data/nn/keras_dense_adam/.

A Keras 3 Sequential Input(4) -> Dense(3, relu) -> Dense(2) trained one step
with Adam (custom loop, seeded), saved with
tf.train.Checkpoint(model=model, optimizer=opt).save(".../ckpt") -> ckpt-1.
Also writes expected.txt, one line per checkpoint value:

    <key> <dtype> <dim0,dim1,...|scalar> <values, repr'd, space-separated>

which tests/nn/checkpoint_test.cc (KerasGolden*) reads. Run with the TF venv:
    ~/.cache/sluice/tf-venv/bin/python tests/interop/make_keras_checkpoint.py
(TF 2.21 / Keras 3.15 made the committed files.)
"""
import os
import shutil
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "data", "nn", "keras_dense_adam")
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)

keras.utils.set_random_seed(7)
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="relu"),
                          keras.layers.Dense(2)])
opt = keras.optimizers.Adam(learning_rate=0.01)
x = np.arange(8, dtype=np.float32).reshape(2, 4) / 8.0
y = np.array([[1.0, -1.0], [0.5, 2.0]], dtype=np.float32)
with tf.GradientTape() as tape:
    loss = tf.reduce_mean(tf.square(model(x) - y))
grads = tape.gradient(loss, model.trainable_variables)
opt.apply_gradients(zip(grads, model.trainable_variables))

path = tf.train.Checkpoint(model=model, optimizer=opt).save(os.path.join(out, "ckpt"))
reader = tf.train.load_checkpoint(path)
dtypes = reader.get_variable_to_dtype_map()
with open(os.path.join(out, "expected.txt"), "w") as f:
    for key, shape in tf.train.list_variables(path):
        if key == "_CHECKPOINTABLE_OBJECT_GRAPH":
            continue
        value = np.asarray(reader.get_tensor(key))
        dims = ",".join(str(d) for d in shape) if shape else "scalar"
        vals = " ".join(repr(v.item()) for v in value.reshape(-1))
        f.write(f"{key} {dtypes[key].name} {dims} {vals}\n")
print("wrote", path)
