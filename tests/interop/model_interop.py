#!/usr/bin/env python3
"""Model-level checkpoint interop between sluice and TensorFlow / Keras 3.

  model_interop.py keras-tutorial DIR
      Trains the tutorial MLP (Input(28,28) -> Flatten -> Dense(128, relu) ->
      Dense(10), Adam) 3 steps on Fashion-MNIST test images, saves
      DIR/tutorial/ckpt-1 with tf.train.Checkpoint(model=, optimizer=) and
      writes DIR/tutorial/expected.txt (8 other images scaled to [0, 1],
      Keras's logits for them, iterations) for model_checkpoint_test's
      InteropTutorialFromKeras, which restores it into sluice and predicts.
  model_interop.py check DIR
      Restores the MLP (Adam) and CNN (SGD momentum) checkpoints sluice's
      model_checkpoint_test InteropWrite saved in DIR/{mlp,cnn} into the same
      Keras models: assert_existing_objects_matched and assert_consumed,
      tf.train.list_variables equal to what Keras itself saves for those
      objects, iterations, and model(x) against sluice's predictions
      (max abs diff < 1e-5). Then compares DIR/tutorial/ours.txt.

Run through model_interop.sh (not run by CI).
"""
import gzip
import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

FASHION = "/usr/share/datasets/fashion-mnist"
TOL = 1e-5


def read_tensors(path):
    out = {}
    with open(path) as f:
        for line in f:
            name, dims, *vals = line.split()
            shape = () if dims == "scalar" else tuple(int(d) for d in dims.split(","))
            out[name] = np.array([float(v) for v in vals], dtype=np.float64).reshape(shape)
    return out


def line(name, value):
    value = np.asarray(value)
    dims = ",".join(str(d) for d in value.shape) if value.shape else "scalar"
    return f"{name} {dims} " + " ".join(repr(v.item()) for v in value.reshape(-1)) + "\n"


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


def tutorial():
    return keras.Sequential([keras.Input((28, 28)), keras.layers.Flatten(),
                             keras.layers.Dense(128, activation="relu"), keras.layers.Dense(10)])


def fashion(n):
    with gzip.open(os.path.join(FASHION, "t10k-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)[:n]
    with gzip.open(os.path.join(FASHION, "t10k-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)[:n]
    return images.astype(np.float32) / 255.0, labels.astype(np.int32)


def keras_tutorial(d):
    out = os.path.join(d, "tutorial")
    os.makedirs(out, exist_ok=True)
    keras.utils.set_random_seed(3)
    model, opt = tutorial(), keras.optimizers.Adam()
    images, labels = fashion(72)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    for step in range(3):
        x, y = images[step * 16:(step + 1) * 16], labels[step * 16:(step + 1) * 16]
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
    path = tf.train.Checkpoint(model=model, optimizer=opt).save(os.path.join(out, "ckpt"))
    x = images[64:72]
    with open(os.path.join(out, "expected.txt"), "w") as f:
        f.write(line("input", x))
        f.write(line("predictions", model(x, training=False).numpy()))
        f.write(line("labels", labels[64:72]))
        f.write(line("iterations", np.int64(opt.iterations.numpy())))
    print("keras wrote", path)


def keras_keys(model, opt):
    """What Keras itself saves for these objects: {key: (shape, dtype)}."""
    with tempfile.TemporaryDirectory() as tmp:
        path = tf.train.Checkpoint(model=model, optimizer=opt).save(os.path.join(tmp, "ckpt"))
        return variables_of(path)


def variables_of(path):
    dtypes = tf.train.load_checkpoint(path).get_variable_to_dtype_map()
    return {k: (tuple(s), dtypes[k].name) for k, s in tf.train.list_variables(path)
            if k != "_CHECKPOINTABLE_OBJECT_GRAPH"}


def check_model(d, name, model, opt):
    folder = os.path.join(d, name)
    path = tf.train.latest_checkpoint(folder)
    assert path is not None, f"no checkpoint in {folder}"
    opt.build(model.trainable_variables)
    expected_keys = keras_keys(model, opt)
    ours = variables_of(path)
    assert ours == expected_keys, f"{name}: keys differ:\n ours {sorted(ours.items())}\n" \
                                  f" keras {sorted(expected_keys.items())}"
    status = tf.train.Checkpoint(model=model, optimizer=opt).restore(path)
    status.assert_existing_objects_matched()
    status.assert_consumed()
    reader = tf.train.load_checkpoint(path)
    for i, v in enumerate(opt.variables):  # iterations, lr, slots: exactly ours
        attr = ["_iterations", "_learning_rate"][i] if i < 2 else f"_variables/{i}"
        key = f"optimizer/{attr}/.ATTRIBUTES/VARIABLE_VALUE"
        assert np.array_equal(v.numpy(), reader.get_tensor(key)), key
    t = read_tensors(os.path.join(folder, "ours.txt"))
    assert int(opt.iterations.numpy()) == int(t["iterations"]), "iterations"
    pred = model(t["input"].astype(np.float32), training=False).numpy()
    diff = float(np.max(np.abs(pred - t["predictions"])))
    print(f"{name}: {len(ours)} keys as Keras saves them, restore asserts OK, "
          f"iterations {int(t['iterations'])}, max |keras - sluice| = {diff:.3g}")
    assert diff < TOL, f"{name}: predictions differ by {diff}"


def check(d):
    check_model(d, "mlp", mlp(), keras.optimizers.Adam(learning_rate=0.01))
    check_model(d, "cnn", cnn(), keras.optimizers.SGD(learning_rate=0.05, momentum=0.9))
    e = read_tensors(os.path.join(d, "tutorial", "expected.txt"))
    ours = read_tensors(os.path.join(d, "tutorial", "ours.txt"))["predictions"]
    diff = float(np.max(np.abs(ours - e["predictions"])))
    same = int(np.sum(np.argmax(ours, 1) == np.argmax(e["predictions"], 1)))
    print(f"tutorial MLP (Keras -> sluice): {len(ours)} Fashion-MNIST images, "
          f"max |sluice - keras| logits = {diff:.3g}, argmax agrees on {same}/{len(ours)}")
    assert diff < TOL
    print("model_interop: OK")


if __name__ == "__main__":
    {"keras-tutorial": keras_tutorial, "check": check}[sys.argv[1]](sys.argv[2])
