#!/usr/bin/env python3
"""Reads what `sluice convert` writes with real TensorFlow.

Builds a small class-per-folder image tree and a tiny Fashion-MNIST-style IDX
pair with TensorFlow and numpy, converts them with our `sluice` binary, then
reads the shards back with tf.data.TFRecordDataset +
tf.io.parse_single_example (the schema of docs/convert.md) and checks labels,
class texts, file names, shapes and that the decoded pixels equal TensorFlow's
decoding of the source files. Also: gzip shards, --resize against
tf.image.resize + tf.io.encode_jpeg, and a corrupt file (exit status 3).

Not run by CI (CI has no TensorFlow). Run it with the venv's python:
  tests/interop/convert_read_with_tf.sh [BUILD_DIR]
or
  ~/.cache/sluice/tf-venv/bin/python tests/interop/convert_read_with_tf.py \
      --sluice build/tools/sluice
"""
import argparse
import gzip
import os
import struct
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

SCHEMA = {
    "image/encoded": tf.io.FixedLenFeature([], tf.string),
    "image/format": tf.io.FixedLenFeature([], tf.string),
    "image/height": tf.io.FixedLenFeature([], tf.int64),
    "image/width": tf.io.FixedLenFeature([], tf.int64),
    "image/channels": tf.io.FixedLenFeature([], tf.int64),
    "image/class/label": tf.io.FixedLenFeature([], tf.int64),
    "image/class/text": tf.io.FixedLenFeature([], tf.string),
    "image/filename": tf.io.FixedLenFeature([], tf.string),
}
FASHION = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
           "Bag", "Ankle boot"]

checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def run(cmd, expect):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != expect:
        sys.exit(f"{' '.join(cmd)}\nexit {p.returncode}, expected {expect}\n{p.stdout}{p.stderr}")
    return p


def make_folder(root, rng):
    """Class folders in an order their sorted names do not follow."""
    files = {}
    specs = [
        ("tulip", "t0.jpg", "jpeg", (37, 51, 3)), ("tulip", "t1.png", "png", (20, 30, 4)),
        ("tulip", "deep/t2.JPEG", "jpeg", (64, 48, 1)), ("Daisy", "d0.png", "png", (33, 17, 1)),
        ("Daisy", "d1.jpg", "jpeg", (120, 90, 3)), ("rose", "r0.png", "png", (16, 16, 3)),
        ("rose", "r1.jpeg", "jpeg", (200, 160, 3)), ("rose", "r2.png", "png", (25, 40, 2)),
    ]
    for cls, name, fmt, shape in specs:
        # Smooth gradients plus noise: photo-like, so resizing means something.
        y, x = np.mgrid[0:shape[0], 0:shape[1]]
        base = (np.sin(x / 7.0 + y / 11.0) * 90 + 128)[..., None]
        img = np.clip(base + rng.normal(0, 25, shape), 0, 255).astype(np.uint8)
        data = (tf.io.encode_jpeg(img, quality=92) if fmt == "jpeg" else tf.io.encode_png(img))
        path = os.path.join(root, cls, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tf.io.write_file(path, data)
        files[f"{cls}/{name}"] = cls
    with open(os.path.join(root, "rose", "notes.txt"), "w") as f:
        f.write("ignored: not an image extension\n")
    return files


def read_shards(pattern, compression=""):
    files = sorted(tf.io.gfile.glob(pattern))
    ds = tf.data.TFRecordDataset(files, compression_type=compression)
    return files, [tf.io.parse_single_example(r, SCHEMA) for r in ds]


def decode(ex):
    data = ex["image/encoded"]
    fmt = ex["image/format"].numpy().decode()
    check(fmt in ("jpeg", "png"), f"format {fmt}")
    return tf.io.decode_jpeg(data) if fmt == "jpeg" else tf.io.decode_png(data)


def check_images(examples, src_root, files, classes):
    seen = set()
    for ex in examples:
        name = ex["image/filename"].numpy().decode()
        seen.add(name)
        label = int(ex["image/class/label"])
        text = ex["image/class/text"].numpy().decode()
        check(name in files, f"unknown file {name}")
        check(text == files[name], f"{name}: class text {text}")
        check(classes[label] == text, f"{name}: label {label} is not {text}")
        ours = decode(ex)
        theirs = tf.io.decode_image(tf.io.read_file(os.path.join(src_root, name)),
                                    expand_animations=False)
        shape = [int(ex["image/height"]), int(ex["image/width"]), int(ex["image/channels"])]
        check(list(ours.shape) == shape, f"{name}: decoded {ours.shape} vs features {shape}")
        check(list(theirs.shape) == shape, f"{name}: source {theirs.shape} vs features {shape}")
        check(np.array_equal(ours.numpy(), theirs.numpy()), f"{name}: pixels differ")
        check(ex["image/encoded"].numpy() ==
              open(os.path.join(src_root, name), "rb").read(), f"{name}: bytes differ")
    check(seen == set(files), f"files converted: {sorted(seen)} vs {sorted(files)}")


def read_labels(path):
    lines = open(path).read().splitlines()
    check(lines[0].startswith("#"), "labels header")
    rows = [line.split("\t") for line in lines[1:]]
    check([int(r[0]) for r in rows] == list(range(len(rows))), "label ids 0..K-1")
    return [r[1] for r in rows], [int(r[2]) for r in rows]


def images_part(sluice, work, rng):
    src = os.path.join(work, "flowers")
    files = make_folder(src, rng)
    out = os.path.join(work, "out")
    p = run([sluice, "convert", "images", src, "--out", out + "/train", "--shards", "3",
             "--shuffle", "--seed", "11", "--index"], 0)
    print(p.stdout.strip())
    classes, counts = read_labels(out + "/train-labels.txt")
    check(classes == sorted({c for c in files.values()}), f"classes {classes}")
    check(counts == [sum(1 for c in files.values() if c == k) for k in classes], "counts")
    shard_files, examples = read_shards(out + "/train-*-of-00003.tfrecord")
    check([os.path.basename(f) for f in shard_files] ==
          [f"train-{i:05d}-of-00003.tfrecord" for i in range(3)], f"names {shard_files}")
    check_images(examples, src, files, classes)
    print(f"images: {len(examples)} examples in {len(shard_files)} shards read by "
          f"tf.data.TFRecordDataset, pixels equal tf.io.decode_image of the sources")

    # GZIP shards, read with compression_type="GZIP".
    run([sluice, "convert", "images", src, "--out", out + "/gz", "--shards", "2", "-c", "gzip"], 0)
    _, gz = read_shards(out + "/gz-*-of-00002.tfrecord.gz", "GZIP")
    check_images(gz, src, files, classes)
    print(f"gzip: {len(gz)} examples read with compression_type='GZIP'")

    # --resize: against TF's own resize + round + encode_jpeg.
    run([sluice, "convert", "images", src, "--out", out + "/small", "--shards", "1", "--resize",
         "24x20", "--quality", "90"], 0)
    _, small = read_shards(out + "/small-00000-of-00001.tfrecord")
    identical, worst = 0, 0
    for ex in small:
        name = ex["image/filename"].numpy().decode()
        check(ex["image/format"].numpy() == b"jpeg", f"{name}: resized to JPEG")
        src_img = tf.io.decode_image(tf.io.read_file(os.path.join(src, name)),
                                     expand_animations=False)
        channels = 1 if src_img.shape[2] <= 2 else 3
        src_img = src_img[..., :1] if channels == 1 else src_img[..., :3]
        resized = tf.image.resize(src_img, [20, 24], method="bilinear", antialias=True)
        pixels = tf.cast(tf.clip_by_value(tf.round(resized), 0, 255), tf.uint8)
        theirs = tf.io.encode_jpeg(pixels, quality=90).numpy()
        ours = ex["image/encoded"].numpy()
        identical += ours == theirs
        diff = np.abs(tf.io.decode_jpeg(ours).numpy().astype(int) -
                      tf.io.decode_jpeg(theirs).numpy().astype(int)).max()
        worst = max(worst, diff)
        check(list(tf.io.decode_jpeg(ours).shape) == [20, 24, channels], f"{name}: resized shape")
        check(diff <= 2, f"{name}: resized pixels differ from TF's by {diff}")
    print(f"resize: {identical} of {len(small)} JPEGs byte-identical to tf.image.resize + "
          f"tf.io.encode_jpeg, largest pixel difference {worst}")

    # A corrupt file is listed and skipped: exit status 3.
    with open(os.path.join(src, "rose", "broken.jpg"), "wb") as f:
        f.write(b"\xff\xd8\xff\xe0 not really")
    p = run([sluice, "convert", "images", src, "--out", out + "/bad", "--shards", "1"], 3)
    check("rose/broken.jpg" in p.stderr, "broken file listed")
    _, bad = read_shards(out + "/bad-00000-of-00001.tfrecord")
    check(len(bad) == len(files), "the others converted")
    print(f"corrupt file: exit 3, listed: {p.stderr.strip().splitlines()[-1].strip()}")


def idx_bytes(magic, dims, data):
    return struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in dims) + data


def idx_part(sluice, work, rng):
    n, rows, cols = 23, 28, 28
    pixels = rng.integers(0, 256, (n, rows, cols), dtype=np.uint8)
    labels = rng.integers(0, 10, n, dtype=np.uint8)
    images_path = os.path.join(work, "train-images-idx3-ubyte.gz")
    labels_path = os.path.join(work, "train-labels-idx1-ubyte.gz")
    with gzip.open(images_path, "wb") as f:
        f.write(idx_bytes(0x803, [n, rows, cols], pixels.tobytes()))
    with gzip.open(labels_path, "wb") as f:
        f.write(idx_bytes(0x801, [n], labels.tobytes()))
    out = os.path.join(work, "fashion", "train")
    run([sluice, "convert", "idx", images_path, labels_path, "--fashion", "--out", out,
         "--shards", "2", "--shuffle", "--seed", "4"], 0)
    names, counts = read_labels(out + "-labels.txt")
    check(names == FASHION, "fashion names")
    check(counts == [int((labels == k).sum()) for k in range(10)], "fashion counts")
    _, examples = read_shards(out + "-*-of-00002.tfrecord")
    check(len(examples) == n, "all IDX images")
    seen = set()
    for ex in examples:
        name = ex["image/filename"].numpy().decode()
        i = int(name.split("-")[1])
        seen.add(i)
        check(name == f"train-{i:05d}", name)
        check(int(ex["image/class/label"]) == labels[i], f"{name}: label")
        check(ex["image/class/text"].numpy().decode() == FASHION[labels[i]], f"{name}: text")
        check(ex["image/format"].numpy() == b"png", f"{name}: png")
        img = tf.io.decode_png(ex["image/encoded"]).numpy()
        check(img.shape == (rows, cols, 1), f"{name}: shape {img.shape}")
        check(np.array_equal(img[..., 0], pixels[i]), f"{name}: pixels")
    check(seen == set(range(n)), "every index once")
    print(f"idx: {n} Fashion-MNIST-style images read back, PNG pixels equal the IDX bytes")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sluice", default="build/tools/sluice", help="the sluice binary")
    args = ap.parse_args()
    sluice = os.path.abspath(args.sluice)
    if not os.access(sluice, os.X_OK):
        sys.exit(f"no sluice binary at {sluice} (build it, or pass --sluice)")
    rng = np.random.default_rng(2024)
    print(f"TensorFlow {tf.__version__}, sluice {sluice}")
    with tempfile.TemporaryDirectory(prefix="sluice-convert-tf-") as work:
        images_part(sluice, work, rng)
        idx_part(sluice, work, rng)
    print(f"OK: {checks} checks passed")


if __name__ == "__main__":
    main()
