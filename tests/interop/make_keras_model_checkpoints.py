#!/usr/bin/env python3
"""Makes the golden Keras model checkpoints that model_checkpoint_test reads.

  tests/data/nn/keras_mlp_adam/  Input(4,4) -> Flatten -> Dense(8, relu) -> Dense(3),
                                 Adam(0.01), sparse CE from logits
  tests/data/nn/keras_cnn_sgd/   Input(8,8,1) -> Conv2D(4,3,relu) -> MaxPooling2D ->
                                 Conv2D(4,3,same,relu) -> Flatten -> Dense(3, softmax),
                                 SGD(0.05, momentum=0.9), sparse CE

Each is trained 2 steps (custom loop, seeded) and saved with
tf.train.Checkpoint(model=model, optimizer=opt).save(".../ckpt") -> ckpt-1.
expected.txt holds one tensor per line, `<name> <d0,d1,...|scalar> <values>`
(values repr'd, full precision):
  input        the fixed input batch
  predictions  Keras's model(input) after the 2 steps
  iterations   the optimizer's iterations (2)

Run with the TF venv (TF 2.21 / Keras 3 made the committed files):
    ~/.cache/sluice/tf-venv/bin/python tests/interop/make_keras_model_checkpoints.py [OUT_DIR]
"""
import os
import shutil
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402


def mlp():
    return keras.Sequential([keras.Input((4, 4)), keras.layers.Flatten(),
                             keras.layers.Dense(8, activation="relu"), keras.layers.Dense(3)])


def cnn():
    return keras.Sequential([
        keras.Input((8, 8, 1)),
        keras.layers.Conv2D(4, 3, activation="relu"),
        keras.layers.MaxPooling2D(),
        keras.layers.Conv2D(4, 3, padding="same", activation="relu"),
        keras.layers.Flatten(),
        keras.layers.Dense(3, activation="softmax"),
    ])


def fixed_input(shape, phase):
    """Deterministic values in [-1, 1], the same formula the C++ tests use."""
    n = int(np.prod(shape))
    return np.sin(np.arange(n, dtype=np.float64) * 0.37 + phase).astype(np.float32).reshape(shape)


def line(name, value):
    value = np.asarray(value)
    dims = ",".join(str(d) for d in value.shape) if value.shape else "scalar"
    vals = " ".join(repr(v.item()) for v in value.reshape(-1))
    return f"{name} {dims} {vals}\n"


def train(model, opt, x, y, steps, from_logits):
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=from_logits)
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))


def make(out, model, opt, x_shape, classes, from_logits):
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    x_train = fixed_input((6,) + x_shape, 0.0)
    y_train = np.arange(6, dtype=np.int32) % classes
    train(model, opt, x_train, y_train, 2, from_logits)
    path = tf.train.Checkpoint(model=model, optimizer=opt).save(os.path.join(out, "ckpt"))
    x = fixed_input((3,) + x_shape, 1.0)
    pred = model(x, training=False).numpy()
    with open(os.path.join(out, "expected.txt"), "w") as f:
        f.write(line("input", x))
        f.write(line("predictions", pred))
        f.write(line("iterations", np.int64(opt.iterations.numpy())))
    print("wrote", path)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "data", "nn")
    keras.utils.set_random_seed(7)
    make(os.path.join(root, "keras_mlp_adam"), mlp(), keras.optimizers.Adam(learning_rate=0.01),
         (4, 4), 3, True)
    keras.utils.set_random_seed(8)
    make(os.path.join(root, "keras_cnn_sgd"), cnn(),
         keras.optimizers.SGD(learning_rate=0.05, momentum=0.9), (8, 8, 1), 3, False)


if __name__ == "__main__":
    main()
