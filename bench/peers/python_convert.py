"""Case 5's peer: the conversion loop of TensorFlow's TFRecord tutorial
(read each file, build a tf.train.Example, TFRecordWriter.write), over a
folder with one subfolder per class, into --shards files written one
after another. Prints one JSON line:
  {"system":"python","case":"convert","items_per_s":...}

  python python_convert.py --images DIR --out PREFIX [--shards 16]
      [--shape header|decode]

The tutorial takes the height and width from tf.io.decode_jpeg(...).shape
(--shape decode); the default reads them from the header with
tf.image.extract_jpeg_shape, as `sluice convert images` does, so both
sides do the same work.
"""
import argparse
import json
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402


def _bytes(v):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[v]))


def _int64(v):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[v]))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--images", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--shards", type=int, default=16)
    p.add_argument("--shape", choices=["header", "decode"], default="header")
    a = p.parse_args()
    classes = sorted(d for d in os.listdir(a.images)
                     if os.path.isdir(os.path.join(a.images, d)))
    files = [(os.path.join(a.images, c, f), label, c)
             for label, c in enumerate(classes)
             for f in sorted(os.listdir(os.path.join(a.images, c)))]
    t0 = time.perf_counter()
    per_shard = (len(files) + a.shards - 1) // a.shards
    for s in range(a.shards):
        name = "%s-%05d-of-%05d.tfrecord" % (a.out, s, a.shards)
        with tf.io.TFRecordWriter(name) as writer:
            for path, label, text in files[s * per_shard:(s + 1) * per_shard]:
                image_string = open(path, "rb").read()
                if a.shape == "decode":
                    shape = tf.io.decode_jpeg(image_string).shape
                else:
                    shape = tf.image.extract_jpeg_shape(image_string).numpy()
                feature = {
                    "image/encoded": _bytes(image_string),
                    "image/format": _bytes(b"jpeg"),
                    "image/height": _int64(int(shape[0])),
                    "image/width": _int64(int(shape[1])),
                    "image/channels": _int64(int(shape[2])),
                    "image/class/label": _int64(label),
                    "image/class/text": _bytes(text.encode()),
                    "image/filename": _bytes(os.path.relpath(path, a.images).encode()),
                }
                example = tf.train.Example(features=tf.train.Features(feature=feature))
                writer.write(example.SerializeToString())
    elapsed = time.perf_counter() - t0
    print(json.dumps({"system": "python", "case": "convert",
                      "items_per_s": round(len(files) / elapsed, 1), "items": len(files),
                      "seconds": round(elapsed, 3), "shape": a.shape}))


if __name__ == "__main__":
    main()
