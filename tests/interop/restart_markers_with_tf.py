"""Reads shards written by `sluice convert images --restart-interval N` with
real TensorFlow and checks that every image has a DRI marker and decodes
(tf.io.decode_jpeg) to the same pixels as its source file. Not run by CI.

  sluice convert images DIR --out /tmp/rst/train --restart-interval 1
  ~/.cache/sluice/tf-venv/bin/python tests/interop/restart_markers_with_tf.py DIR '/tmp/rst/train-*.tfrecord'
"""
import glob
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def main(root, pattern, limit=300):
    sources = {os.path.relpath(p, root): p for p in glob.glob(os.path.join(root, "*", "*"))}
    by_base = {os.path.basename(k): v for k, v in sources.items()}
    spec = {k: tf.io.FixedLenFeature([], tf.string) for k in ("image/encoded", "image/filename")}
    n = same = with_dri = 0
    for rec in tf.data.TFRecordDataset(sorted(glob.glob(pattern))).take(limit):
        ex = tf.io.parse_single_example(rec, spec)
        enc = ex["image/encoded"].numpy()
        name = ex["image/filename"].numpy().decode()
        src = sources.get(name) or by_base[os.path.basename(name)]
        with_dri += b"\xff\xdd" in enc
        a = tf.io.decode_jpeg(enc).numpy()
        b = tf.io.decode_jpeg(tf.io.read_file(src)).numpy()
        n += 1
        same += a.shape == b.shape and np.array_equal(a, b)
    print(f"tensorflow {tf.__version__}: {n} records, {with_dri} with a DRI marker, "
          f"{same} pixel-identical to their source file")
    return 0 if n > 0 and same == n and with_dri == n else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
