"""The tf.data side of scripts/bench-peers.sh: cases 1-4 and the file
formats (text, csv, fixedlength), written as TensorFlow's tutorials, its
API docs and its official ResNet preprocessing write them, timed for
--seconds after --warmup seconds. Prints one JSON line:
  {"system":"tf.data","case":"decode","items_per_s":...}

  python tfdata_cases.py --case decode|fused|folder|read|parse|text|csv|fixedlength
      --files GLOB [--cores N] [--seconds 10] [--warmup 3] [--batch B]
      [--parallel-reads N]

decode: TFRecordDataset -> map(parse_single_example, decode_jpeg,
  sample_distorted_bounding_box + slice, resize 224, random flip,
  normalize; AUTOTUNE) -> batch(128) -> prefetch(AUTOTUNE).
fused: the same with decode_and_crop_jpeg on the sampled window (the
  official ResNet recipe).
folder (case 7): --files is an image folder (DIR/CLASS/NAME.JPEG), read
  as the "Load and preprocess images" tutorial does: list_files(DIR/*/*,
  shuffle=False) -> shuffle(all, reshuffle_each_iteration) -> repeat ->
  map(the label from the class folder's name, read_file, then decode's
  work; AUTOTUNE) -> batch(128) -> prefetch(AUTOTUNE).
read: TFRecordDataset (CRCs are always checked) -> batch(4096).
parse: batch(1024) -> map(tf.io.parse_example, AUTOTUNE).
Image records are read with num_parallel_reads=AUTOTUNE, as the tutorials
do; small records (read, parse) one file at a time, which is 6x faster in
tf.data 2.21 for ~340-byte records (its parallel interleave costs ~6 us
per record). The dataset repeats forever.
text: tf.data.TextLineDataset -> batch(4096) -> prefetch(AUTOTUNE).
csv: tf.data.experimental.CsvDataset(record_defaults=CSV_DEFAULTS,
  header=True) -> batch(4096) -> prefetch(AUTOTUNE); the files of
  `sluice_cases --make-files csv`.
fixedlength: tf.data.FixedLengthRecordDataset(record_bytes=3073, CIFAR-10's
  binary format) -> batch(1024) -> prefetch(AUTOTUNE).
The formats are read one file at a time, as sluice_cases reads them;
--parallel-reads N (-1: AUTOTUNE) sets num_parallel_reads on both sides
(CsvDataset has none: an interleave of one CsvDataset per file with
cycle_length N, as TextLineDataset builds its own).
"""
import argparse
import glob
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

AUTOTUNE = tf.data.AUTOTUNE
# Python lists, not tensors: the eager context must not start before the
# thread counts are set.
MEAN = [123.675, 116.28, 103.53]
STD = [58.395, 57.12, 57.375]
IMAGE_SPEC = {
    "image/encoded": tf.io.FixedLenFeature([], tf.string),
    "image/class/label": tf.io.FixedLenFeature([], tf.int64),
}
# The small Example of cases 3-4 (sluice_cases --make-records).
SMALL_SPEC = {
    "id": tf.io.FixedLenFeature([], tf.int64),
    "label": tf.io.FixedLenFeature([], tf.int64),
    "width": tf.io.FixedLenFeature([], tf.int64),
    "height": tf.io.FixedLenFeature([], tf.int64),
    "bbox": tf.io.FixedLenFeature([4], tf.float32),
    "scores": tf.io.FixedLenFeature([4], tf.float32),
    "tokens": tf.io.FixedLenFeature([8], tf.int64),
    "key": tf.io.FixedLenFeature([], tf.string),
    "text": tf.io.FixedLenFeature([], tf.string),
    "weight": tf.io.FixedLenFeature([], tf.float32),
}


# The columns of the csv case (sluice_cases.cc's CsvSpec): id, label, x, y
# required; weight 1.0 and name "" when empty.
CSV_DEFAULTS = [tf.int64, tf.int32, tf.float32, tf.float32, [1.0], [""]]
FIXED_RECORD_BYTES = 3073  # CIFAR-10: a label byte and 32x32x3 pixels
FORMAT_CASES = ("text", "csv", "fixedlength")


def format_source(case, files, reads):
    """The records of a file-format case, num_parallel_reads=reads (None: one file at a time)."""
    if case == "text":
        return tf.data.TextLineDataset(files, num_parallel_reads=reads)
    if case == "fixedlength":
        return tf.data.FixedLengthRecordDataset(files, FIXED_RECORD_BYTES,
                                                num_parallel_reads=reads)

    def csv(f):
        return tf.data.experimental.CsvDataset(f, CSV_DEFAULTS, header=True)
    if reads is None:
        return csv(files)
    return tf.data.Dataset.from_tensor_slices(files).interleave(
        csv, cycle_length=None if reads == AUTOTUNE else reads, num_parallel_calls=reads)


def sample_window(shape):
    return tf.image.sample_distorted_bounding_box(
        shape, bounding_boxes=tf.constant([[[0.0, 0.0, 1.0, 1.0]]]), min_object_covered=0.1,
        aspect_ratio_range=(3 / 4, 4 / 3), area_range=(0.08, 1.0),
        max_attempts=10, use_image_if_no_bounding_boxes=True)


def finish(image, label):
    image = tf.image.resize(image, [224, 224])
    image = tf.image.random_flip_left_right(image)
    return (image - MEAN) / STD, label


def decode(record):
    f = tf.io.parse_single_example(record, IMAGE_SPEC)
    image = tf.io.decode_jpeg(f["image/encoded"], channels=3)
    begin, size, _ = sample_window(tf.shape(image))
    return finish(tf.slice(image, begin, size), f["image/class/label"])


def fused(record):
    f = tf.io.parse_single_example(record, IMAGE_SPEC)
    shape = tf.image.extract_jpeg_shape(f["image/encoded"])
    begin, size, _ = sample_window(shape)
    y, x, _ = tf.unstack(begin)
    h, w, _ = tf.unstack(size)
    image = tf.image.decode_and_crop_jpeg(
        f["image/encoded"], tf.stack([y, x, h, w]), channels=3)
    return finish(image, f["image/class/label"])


def folder_pipeline(root, batch):
    """Case 7: the tutorial's image-folder pipeline with case 1's work."""
    class_names = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    count = sum(len(os.listdir(os.path.join(root, d))) for d in class_names)
    classes = tf.constant(class_names)

    def process_path(path):
        label = tf.argmax(tf.cast(tf.strings.split(path, os.path.sep)[-2] == classes, tf.int32))
        image = tf.io.decode_jpeg(tf.io.read_file(path), channels=3)
        begin, size, _ = sample_window(tf.shape(image))
        return finish(tf.slice(image, begin, size), label)

    ds = tf.data.Dataset.list_files(os.path.join(root, "*", "*"), shuffle=False)
    ds = ds.shuffle(count, reshuffle_each_iteration=True).repeat()
    return (ds.map(process_path, num_parallel_calls=AUTOTUNE)
            .batch(batch, drop_remainder=True).prefetch(AUTOTUNE))


def pipeline(case, files, batch, parallel_reads=0):
    if parallel_reads:
        reads = AUTOTUNE if parallel_reads < 0 else parallel_reads
    else:
        reads = AUTOTUNE if case in ("decode", "fused") else None
    if reads == 1:
        reads = None
    if case in FORMAT_CASES:
        ds = format_source(case, files, reads).repeat()
        return ds.batch(batch, drop_remainder=True).prefetch(AUTOTUNE)
    ds = tf.data.TFRecordDataset(files, num_parallel_reads=reads).repeat()
    if case in ("decode", "fused"):
        fn = decode if case == "decode" else fused
        return (ds.map(fn, num_parallel_calls=AUTOTUNE)
                .batch(batch, drop_remainder=True).prefetch(AUTOTUNE))
    if case == "read":
        return ds.batch(batch, drop_remainder=True).prefetch(AUTOTUNE)
    if case == "parse":
        return (ds.batch(batch, drop_remainder=True)
                .map(lambda b: tf.io.parse_example(b, SMALL_SPEC),
                     num_parallel_calls=AUTOTUNE)
                .prefetch(AUTOTUNE))
    sys.exit("tfdata_cases: unknown --case " + case)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--case", required=True)
    p.add_argument("--files", required=True)
    p.add_argument("--cores", type=int, default=0)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--warmup", type=float, default=3)
    p.add_argument("--batch", type=int, default=0)
    p.add_argument("--parallel-reads", type=int, default=0)
    a = p.parse_args()
    if a.cores > 0:
        tf.config.threading.set_inter_op_parallelism_threads(a.cores)
        tf.config.threading.set_intra_op_parallelism_threads(a.cores)
    batch = a.batch or {"decode": 128, "fused": 128, "folder": 128, "read": 4096, "parse": 1024, "text": 4096,
                        "csv": 4096, "fixedlength": 1024}[a.case]
    if a.case == "folder":
        it = iter(folder_pipeline(a.files, batch))
    else:
        files = sorted(f for f in glob.glob(a.files)
                       if not f.endswith(".idx") and not f.endswith(".json")
                       and not f.endswith("-labels.txt"))
        if not files:
            sys.exit("tfdata_cases: no files match " + a.files)
        it = iter(pipeline(a.case, files, batch, a.parallel_reads))
    start = time.perf_counter()
    while time.perf_counter() - start < a.warmup:
        next(it)
    items, t0 = 0, time.perf_counter()
    while True:
        b = next(it)
        first = b[0] if isinstance(b, tuple) else (
            next(iter(b.values())) if isinstance(b, dict) else b)
        items += int(first.shape[0])
        elapsed = time.perf_counter() - t0
        if elapsed >= a.seconds:
            break
    print(json.dumps({"system": "tf.data", "case": a.case,
                      "items_per_s": round(items / elapsed, 1), "items": items,
                      "seconds": round(elapsed, 3), "batch": batch,
                      "cores": a.cores, "parallel_reads": a.parallel_reads,
                      "version": tf.__version__}))


if __name__ == "__main__":
    main()
