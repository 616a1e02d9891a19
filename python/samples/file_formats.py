"""Reading the formats data is already in, with tf.data's names.

Each part writes a small file the way its own tools do (Python's open, csv,
tarfile and numpy), then reads it with sluice:

1. a text log, line by line (TextLineDataset);
2. a CSV table with a header, as batches of columns and a label
   (experimental.make_csv_dataset), and row by row with typed defaults
   (CsvDataset);
3. WebDataset tar shards (an image and its class per sample), listed with a
   brace pattern, indexed for random access, globally shuffled;
4. a NumPy token corpus read as language-model windows of sequence_length + 1
   tokens at positions a global shuffle picks, saved mid-epoch and resumed
   exactly.

    python file_formats.py               # in a temporary folder
    python file_formats.py --dir /tmp/ff # keep the files
"""

import argparse
import csv
import io
import os
import tarfile
import tempfile

import numpy as np

import sluice


def text_lines(folder):
    path = os.path.join(folder, "server.log")
    with open(path, "w", newline="") as f:
        f.write("GET /a 200\r\nGET /b 404\nPOST /c 200\n")  # CRLF and LF, as logs mix them
    lines = [bytes(line) for line in sluice.TextLineDataset(path)]
    print(f"text: {len(lines)} lines, the first {lines[0]!r}")
    errors = sum(1 for line in lines if line.split()[-1] != b"200")
    print(f"text: {errors} request(s) failed")


def csv_table(folder):
    path = os.path.join(folder, "passengers.csv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["survived", "age", "fare", "name"])
        for i in range(10):
            w.writerow([i % 2, 20 + i, 7.25 * (i + 1), f"passenger, {i}"])  # quoted commas
    ds = sluice.experimental.make_csv_dataset(path, batch_size=4, label_name="survived",
                                              num_epochs=1, shuffle=False)
    features, label = next(iter(ds))
    print(f"csv: batch of {len(label)}: columns {sorted(features)}, labels {[int(v) for v in label]}")
    rows = sluice.experimental.CsvDataset(path, [np.int32, np.float32, 0.0, ""], header=True)
    last = list(rows)[-1]
    print(f"csv: {len(list(rows))} rows; the last: age {last[1]}, name {bytes(last[3])!r}")


def tar_shards(folder):
    rng = np.random.default_rng(0)
    for s in range(2):
        with tarfile.open(os.path.join(folder, f"shard-{s:06d}.tar"), "w",
                          format=tarfile.PAX_FORMAT) as t:
            for i in range(5):
                key = f"sample{s * 5 + i:04d}"
                for ext, payload in (("jpg", rng.bytes(64)), ("cls", str(i % 3).encode())):
                    info = tarfile.TarInfo(f"{key}.{ext}")
                    info.size = len(payload)
                    t.addfile(info, io.BytesIO(payload))
    pattern = os.path.join(folder, "shard-{000000..000001}.tar")
    files = [bytes(f).decode() for f in sluice.Dataset.list_files(pattern)]
    for f in files:
        sluice.webdataset.build_index(f)  # random access: global shuffle, record shards
    ds = sluice.WebDatasetDataset(files, extensions=["jpg", "cls"])
    print(f"webdataset: {len(files)} shards, {ds.cardinality()} samples")
    keys = [bytes(s["__key__"]).decode() for s in ds.global_shuffle(seed=7).take(3)]
    print(f"webdataset: shuffled, first keys {keys}")


def token_windows(folder):
    path = os.path.join(folder, "tokens.npy")
    tokens = np.arange(10_000, dtype=np.int32)
    np.save(path, tokens)
    L = 128
    ds = sluice.NumpyDataset(path, sequence_length=L).global_shuffle(seed=1).batch(8)
    it = ds.iterator()
    first = next(it)
    x, y = first[:, :-1], first[:, 1:]  # inputs and next-token targets
    assert x.shape == (8, L) and (y == x + 1).all()
    state = it.save()  # mid-epoch
    want = next(it)
    got = next(ds.iterator(state=state))
    assert (got == want).all()
    print(f"numpy: {ds.cardinality()} batches of 8 windows of {L + 1} tokens; "
          f"resumed at batch 2 exactly (starts {[int(v) for v in got[:3, 0]]})")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dir", help="where to write the files (default: a temporary folder)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.dir or tmp
        os.makedirs(folder, exist_ok=True)
        text_lines(folder)
        csv_table(folder)
        tar_shards(folder)
        token_windows(folder)


if __name__ == "__main__":
    main()
