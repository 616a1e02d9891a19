"""Training data in an object store, with sluice:

1. TFRecord shards of tf.train.Examples written under PREFIX: a folder, or
   an s3://, gs://, az:// URI (the same code: every sluice reader and writer
   takes URIs; docs/objstore.md);
2. listed with a glob, read for two epochs through the local cache of
   remote shards (the second epoch reads from disk);
3. half an epoch read, the iterator's state written beside the data with
   sluice.io.gfile, and resumed from it.

    python object_store.py /tmp/demo
    AWS_ENDPOINT_URL_S3=http://127.0.0.1:9000 python object_store.py s3://bucket/demo
"""

import argparse
import os
import shutil
import tempfile

import numpy as np

import sluice

SHARDS, PER_SHARD = 4, 256


def write_shards(prefix):
    rng = np.random.default_rng(7)
    for s in range(SHARDS):
        path = f"{prefix.rstrip('/')}/train-{s:05d}-of-{SHARDS:05d}.tfrecord"
        with sluice.io.TFRecordWriter(path) as w:  # the object appears whole at close
            for i in range(PER_SHARD):
                w.write(sluice.io.serialize_example({
                    "payload": rng.bytes(2048), "label": s * PER_SHARD + i}))


def pipeline(files):
    spec = {"payload": sluice.io.FixedLenFeature([], sluice.string),
            "label": sluice.io.FixedLenFeature([], sluice.int64)}
    return (sluice.TFRecordDataset(files, num_parallel_reads=2)
            .map(sluice.io.parse_example(spec))
            .batch(64))


def drain(it):
    n = total = 0
    for batch in it:
        n += len(batch["label"])
        total += int(batch["label"].sum())
    return n, total


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prefix", nargs="?", default="object-store-demo",
                        help="folder or URI to write the shards under")
    parser.add_argument("--cache-dir", help="local folder for the cache of remote shards")
    args = parser.parse_args()
    remote = "://" in args.prefix and not args.prefix.startswith("file://")
    if remote:
        cache = args.cache_dir or os.path.join(tempfile.gettempdir(), "sluice-object-store-py")
        shutil.rmtree(cache, ignore_errors=True)
        sluice.io.set_remote_cache(cache, "64M")

    sluice.io.gfile.makedirs(args.prefix)
    write_shards(args.prefix)
    files = sluice.io.gfile.glob(f"{args.prefix.rstrip('/')}/train-*.tfrecord")
    print(f"wrote {SHARDS} shards of {PER_SHARD} examples under {args.prefix}; "
          f"glob matched {len(files)}")

    for epoch in (1, 2):
        before = sluice.io.remote_cache_stats()
        n, total = drain(pipeline(files))
        line = f"epoch {epoch}: {n} examples, label sum {total}"
        if remote:
            after = sluice.io.remote_cache_stats()
            line += (f" (remote cache: {after['misses'] - before['misses']} opens from the store, "
                     f"{after['hits'] - before['hits']} from disk)")
        print(line)

    it = pipeline(files).iterator()
    for _ in range(8):
        next(it)
    state_path = f"{args.prefix.rstrip('/')}/iterator.state"
    with sluice.io.gfile.GFile(state_path, "wb") as f:
        f.write(it.save())
    with sluice.io.gfile.GFile(state_path, "rb") as f:
        resumed = pipeline(files).iterator(state=f.read())
    rest, expected = drain(resumed), drain(it)
    same = "the same as without the checkpoint" if rest == expected else "DIFFERENT"
    print(f"resumed from {state_path}: {rest[0]} examples left, {same}")
    return 0 if rest == expected else 1


if __name__ == "__main__":
    raise SystemExit(main())
