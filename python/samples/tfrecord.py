"""The tutorials' TFRecord chapter with sluice: write an image folder as TFRecords, read them back.

The steps are the tutorial's:

1. list the training images and their labels (train/cats: 0, train/dogs: 1);
2. write each as a tf.train.Example {"image": the file's bytes, "label":
   int64} to train.tfrecords (with an index, FILE.idx, so sluice can
   shuffle globally and give each rank its exact share);
3. read the file with sluice.TFRecordDataset, parse each Example with the
   feature description {"image": FixedLen [] string, "label": FixedLen []
   int64}, decode the image;
4. shuffle, batch, and feed a model (PyTorch's, through sluice.torch, where
   torch is installed).

Writing and parsing use sluice.io (TFRecordWriter, serialize_example,
parse_example) where the installed sluice has it; otherwise the records are
written by the `sluice write` command (Examples as JSON lines; --sluice, or
$SLUICE_BUILD_DIR/tools/sluice, or `sluice` on PATH) and parsed by
parse_single_example below, a small reader of the Example wire format.

    python tfrecord.py                     # the built-in image folder
    python tfrecord.py --data-dir ~/datasets/cats_vs_dogs --out /tmp/train.tfrecords
"""

import argparse
import base64
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

import sluice

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sample_images  # noqa: E402

try:
    import sluice.io as sluice_io
except ImportError:
    sluice_io = None


# ---- Writing -----------------------------------------------------------------

def write_tfrecords(path, filenames, labels, sluice_cli):
    """Each image as an Example {"image": bytes, "label": int64}."""
    if sluice_io is not None:
        with sluice_io.TFRecordWriter(path, write_index=True) as writer:
            for filename, label in zip(filenames, labels):
                with open(filename, "rb") as f:
                    image = f.read()
                writer.write(sluice_io.serialize_example({"image": image, "label": label}))
        return
    # The Examples as protobuf's JSON, one per line, into `sluice write --index`.
    lines = []
    for filename, label in zip(filenames, labels):
        with open(filename, "rb") as f:
            image = base64.b64encode(f.read()).decode()
        lines.append(json.dumps({"features": {"feature": {
            "image": {"bytesList": {"value": [image]}},
            "label": {"int64List": {"value": [str(label)]}}}}}))
    subprocess.run([sluice_cli, "write", "--index", path], input="\n".join(lines).encode(),
                   check=True)


def find_sluice_cli(given):
    candidates = [given, os.path.join(os.environ.get("SLUICE_BUILD_DIR", ""), "tools", "sluice"),
                  shutil.which("sluice")]
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


# ---- Parsing without sluice.io -------------------------------------------------

def _varint(buf, pos):
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos


def _fields(buf):
    """(field number, wire type, value) of a protobuf message."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        wire = key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 2:
            n, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        else:
            raise ValueError(f"malformed Example: wire type {wire}")
        yield key >> 3, wire, value


def _feature_values(feature):
    """A Feature's values: bytes (1: BytesList), float (2: FloatList), int64 (3: Int64List)."""
    for kind, _, values in _fields(feature):
        out = []
        for _, wire, v in _fields(values):
            if kind == 1:
                out.append(bytes(v))
            elif kind == 2:
                out += struct.unpack(f"<{len(v) // 4}f", v) if wire == 2 else struct.unpack("<f", v)
            else:
                vs = [v] if wire == 0 else []
                pos = 0
                while wire == 2 and pos < len(v):
                    x, pos = _varint(v, pos)
                    vs.append(x)
                out += [x - (1 << 64) if x >= 1 << 63 else x for x in vs]
        return out
    return []


def parse_single_example(serialized, feature_description):
    """tf.io.parse_single_example for scalar FixedLen features: {name: (dtype, default)}."""
    found = {}
    for number, _, features in _fields(bytes(serialized)):
        if number != 1:
            continue
        for _, _, entry in _fields(features):
            key, value = None, b""
            for n, _, v in _fields(entry):
                key, value = (bytes(v).decode(), value) if n == 1 else (key, v)
            found[key] = _feature_values(value)
    out = {}
    for name, (dtype, default) in feature_description.items():
        values = found.get(name) or ([] if default is None else [default])
        if len(values) != 1:
            raise ValueError(f"feature {name!r}: {len(values)} values, the description has 1")
        out[name] = values[0] if dtype == "string" else np.array(values[0], dtype=dtype)
    return out


# ---- Reading -----------------------------------------------------------------

def make_dataset(path, image_size, batch_size, seed):
    raw_dataset = sluice.TFRecordDataset(path)
    if sluice_io is not None:
        feature_description = {
            "image": sluice_io.FixedLenFeature([], sluice.string),
            "label": sluice_io.FixedLenFeature([], sluice.int64),
        }
        dataset = raw_dataset.map(sluice_io.parse_example(feature_description))
    else:
        feature_description = {"image": ("string", None), "label": ("int64", None)}
        dataset = raw_dataset.map(lambda record: parse_single_example(record, feature_description))

    def _decode(example):
        image = sample_images.decode_image(example["image"])
        return sample_images.resize(image, (image_size, image_size)) / 255.0, example["label"]

    return (dataset.global_shuffle(seed=seed)  # the index makes the file random-access
            .map(_decode, num_parallel_calls=sluice.AUTOTUNE)
            .batch(batch_size)
            .prefetch(sluice.AUTOTUNE))


def train_torch(dataset, epochs, seed):
    import torch
    from torch import nn

    import sluice.torch

    torch.manual_seed(seed)
    model = nn.Sequential(nn.Conv2d(3, 16, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(),
                          nn.Linear(16 * 16, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loader = sluice.torch.DataLoader(dataset, rank=0, world_size=1)
    for epoch in range(epochs):
        total, correct = 0, 0
        for images, labels in loader:
            logits = model(images.permute(0, 3, 1, 2))
            loss = nn.functional.cross_entropy(logits, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            correct += (logits.argmax(1) == labels).sum().item()
            total += len(labels)
        print(f"epoch {epoch + 1}/{epochs}: loss {loss.item():.4f}, "
              f"accuracy {correct / total:.4f} ({total} images)")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", help="folder with train/{cats,dogs} "
                   "(default: a small one made in a temporary folder)")
    p.add_argument("--out", help="the TFRecord file to write (default: in a temporary folder)")
    p.add_argument("--sluice", help="the sluice command, to write records without sluice.io")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--image-size", type=int, default=64)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args(argv)

    sluice_cli = None
    if sluice_io is None:
        sluice_cli = find_sluice_cli(args.sluice)
        if sluice_cli is None:
            print("this sluice has no sluice.io and no `sluice` command was found "
                  "(--sluice PATH): cannot write TFRecords", file=sys.stderr)
            return 2

    with tempfile.TemporaryDirectory() as tmp:
        data_dir = args.data_dir or sample_images.make_cats_vs_dogs(tmp, seed=args.seed)
        path = args.out or os.path.join(tmp, "train.tfrecords")
        filenames, labels = sample_images.list_images(data_dir, "train")
        write_tfrecords(path, filenames, labels, sluice_cli)
        print(f"wrote {len(filenames)} Examples to {path} ({os.path.getsize(path)} bytes)")

        dataset = make_dataset(path, args.image_size, args.batch_size, args.seed)
        images, labels = dataset.take(1).get_single_element()
        print(f"{dataset.cardinality()} batches; the first: images {images.shape} "
              f"{images.dtype}, labels {labels[:8].tolist()}...")
        try:
            import torch  # noqa: F401
        except ImportError:
            print("torch is not installed: skipping training")
            return 0
        train_torch(dataset, args.epochs, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
