#!/usr/bin/env python3
"""Keras reference numbers for sluice's nn/ module (not built or run in CI).

The peer that sluice's training core is compared with: the same two
Fashion-MNIST models, built with TensorFlow 2 / Keras 3 the way their
tutorials do it, measured on the CPU.

  step      time one training step (forward, loss, backward, Adam update)
            on random data after warm-up; one JSON line with the median.
  accuracy  train on the real Fashion-MNIST (the IDX .gz files read
            directly) and print the test accuracy and the wall time of
            every epoch, one JSON line each.

Models:
  mlp  Flatten(28x28) -> Dense(128, relu) -> Dense(10);
       SparseCategoricalCrossentropy(from_logits=True), Adam.
  cnn  Input(28,28,1) -> Conv2D(32,3,relu) -> MaxPooling2D -> Conv2D(32,5,relu)
       -> MaxPooling2D -> Flatten -> Dense(64,relu) -> Dense(10, softmax);
       SparseCategoricalCrossentropy(), Adam.

Pin the process to the cores you give it, e.g.
  taskset -c 0,1 python bench/nn/keras_reference.py step --model mlp \
      --batch 64 --threads 2 --steps 200
  taskset -c 0,1 python bench/nn/keras_reference.py accuracy --model cnn \
      --epochs 12 --batch 64 --threads 2

Use a TensorFlow venv (e.g. ~/.cache/sluice/tf-venv/bin/python, TF 2.21).
"""

import argparse
import gzip
import json
import os
import statistics
import struct
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"  # Debian's dataset-fashion-mnist


def configure_threads(threads):
    import tensorflow as tf

    if threads > 0:
        # Must run before TensorFlow creates its thread pools (first op).
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)


def build_model(name):
    import keras
    from keras import layers

    if name == "mlp":
        model = keras.Sequential(
            [
                keras.Input(shape=(28, 28)),
                layers.Flatten(),
                layers.Dense(128, activation="relu"),
                layers.Dense(10),
            ]
        )
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    elif name == "cnn":
        model = keras.Sequential(
            [
                keras.Input(shape=(28, 28, 1)),
                layers.Conv2D(32, 3, activation="relu"),
                layers.MaxPooling2D(),
                layers.Conv2D(32, 5, activation="relu"),
                layers.MaxPooling2D(),
                layers.Flatten(),
                layers.Dense(64, activation="relu"),
                layers.Dense(10, activation="softmax"),
            ]
        )
        loss = keras.losses.SparseCategoricalCrossentropy()
    else:
        raise ValueError(f"unknown model {name!r}")
    model.compile(optimizer=keras.optimizers.Adam(), loss=loss, metrics=["accuracy"])
    return model


def input_shape(name):
    return (28, 28) if name == "mlp" else (28, 28, 1)


def read_idx(path, rank):
    """An IDX file (plain or gzip) as a numpy uint8 array of `rank` dims."""
    import numpy as np

    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] != 0x08 or data[3] != rank:
        raise ValueError(f"{path}: not an IDX uint8 file of rank {rank}")
    dims = struct.unpack(">" + "I" * rank, data[4 : 4 + 4 * rank])
    body = data[4 + 4 * rank :]
    expected = 1
    for d in dims:
        expected *= d
    if len(body) != expected:
        raise ValueError(f"{path}: {len(body)} data bytes, the header says {expected}")
    return np.frombuffer(body, dtype=np.uint8).reshape(dims)


def load_fashion_mnist(data_dir, model_name):
    import numpy as np

    def part(prefix):
        x = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz"), 3)
        y = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz"), 1)
        x = x.astype(np.float32) / 255.0
        if model_name == "cnn":
            x = x[..., np.newaxis]
        return x, y.astype(np.int64)

    return part("train"), part("t10k")


def cmd_step(args):
    configure_threads(args.threads)
    import numpy as np
    import tensorflow as tf

    keras_seed = 7
    tf.keras.utils.set_random_seed(keras_seed)
    model = build_model(args.model)
    rng = np.random.default_rng(keras_seed)
    x = rng.random((args.batch,) + input_shape(args.model), dtype=np.float32)
    y = rng.integers(0, 10, size=(args.batch,), dtype=np.int64)

    if args.method == "train_on_batch":
        # Keras' own compiled train step (a tf.function), one batch per call.
        xt, yt = tf.constant(x), tf.constant(y)

        def step():
            model.train_on_batch(xt, yt)

    else:
        # A hand-written tf.function train step: no Keras call overhead.
        optimizer = model.optimizer
        loss_fn = model.loss
        xt, yt = tf.constant(x), tf.constant(y)

        @tf.function(jit_compile=args.method == "xla")
        def train_step(xb, yb):
            with tf.GradientTape() as tape:
                loss = loss_fn(yb, model(xb, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        def step():
            train_step(xt, yt).numpy()  # wait for the step to finish

    for _ in range(args.warmup):
        step()
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        times.append((time.perf_counter() - t0) * 1e3)
    print(
        json.dumps(
            {
                "system": "tf-keras",
                "model": args.model,
                "batch": args.batch,
                "threads": args.threads,
                "method": args.method,
                "ms_per_step": round(statistics.median(times), 4),
                "ms_p10": round(sorted(times)[len(times) // 10], 4),
                "ms_p90": round(sorted(times)[(len(times) * 9) // 10], 4),
                "steps": args.steps,
                "tf": tf.__version__,
            }
        ),
        flush=True,
    )


def cmd_accuracy(args):
    configure_threads(args.threads)
    import tensorflow as tf

    tf.keras.utils.set_random_seed(args.seed)
    (x_train, y_train), (x_test, y_test) = load_fashion_mnist(args.data_dir, args.model)
    model = build_model(args.model)
    total = 0.0
    for epoch in range(1, args.epochs + 1):
        t0 = time.perf_counter()
        hist = model.fit(x_train, y_train, batch_size=args.batch, epochs=1, shuffle=True, verbose=0)
        train_s = time.perf_counter() - t0
        total += train_s
        t1 = time.perf_counter()
        test_loss, test_acc = model.evaluate(x_test, y_test, batch_size=256, verbose=0)
        eval_s = time.perf_counter() - t1
        print(
            json.dumps(
                {
                    "system": "tf-keras",
                    "model": args.model,
                    "batch": args.batch,
                    "threads": args.threads,
                    "epoch": epoch,
                    "train_loss": round(float(hist.history["loss"][-1]), 5),
                    "train_accuracy": round(float(hist.history["accuracy"][-1]), 5),
                    "test_loss": round(float(test_loss), 5),
                    "test_accuracy": round(float(test_acc), 5),
                    "epoch_s": round(train_s, 3),
                    "eval_s": round(eval_s, 3),
                    "cumulative_train_s": round(total, 3),
                }
            ),
            flush=True,
        )


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("step", help="median ms per training step on random data")
    s.add_argument("--model", choices=["mlp", "cnn"], required=True)
    s.add_argument("--batch", type=int, default=64)
    s.add_argument("--threads", type=int, default=2, help="TF intra/inter-op threads (0: TF's default)")
    s.add_argument("--steps", type=int, default=200)
    s.add_argument("--warmup", type=int, default=20)
    s.add_argument(
        "--method",
        choices=["train_on_batch", "tf_function", "xla"],
        default="train_on_batch",
        help="Keras' train_on_batch (default), a hand-written tf.function step, or that with XLA",
    )
    s.set_defaults(func=cmd_step)

    a = sub.add_parser("accuracy", help="train on Fashion-MNIST, test accuracy per epoch")
    a.add_argument("--model", choices=["mlp", "cnn"], required=True)
    a.add_argument("--epochs", type=int, default=10)
    a.add_argument("--batch", type=int, default=32, help="32 is Keras' fit() default")
    a.add_argument("--threads", type=int, default=2, help="TF intra/inter-op threads (0: TF's default)")
    a.add_argument("--seed", type=int, default=7)
    a.add_argument("--data-dir", default=DEFAULT_DATA)
    a.set_defaults(func=cmd_accuracy)

    args = p.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main(sys.argv[1:])
