"""sluice from Python, the peer row "sluice-python" of scripts/bench-peers.sh:
the cases of sluice_cases.cc built with sluice's Python API exactly as
sluice_cases builds them in C++, timed the same way (--seconds after
--warmup seconds; the batch that ends the warm-up is not counted). Prints
one JSON line:
  {"system":"sluice-python","case":"decode","items_per_s":...,"items":...,"seconds":...}

  PYTHONPATH=build/python python python_cases.py
      --case decode|fused|folder|wds|read|parse|text|csv|fixedlength --files GLOB [--cores N] [--seconds 10] [--warmup 3] [--batch B]
      [--parallel-reads N] [--fusion 0|1] [--parallelism N] [--cpu-budget N]
      [--max-threads N] [--cache 1] [--stats 1|2]

decode: TFRecordDataset(num_parallel_reads=AUTOTUNE) -> repeat -> map(parse
  the record + decode_random_crop_resize(fused=False: full decode, random
  resized crop 224, random mirror, normalize), AUTOTUNE) -> batch(128,
  drop_remainder) -> prefetch(AUTOTUNE). The map is one stage, as the C++
  lambda is: parse_example(spec).then(image.map.decode_random_crop_resize
  (...)), the decode writing each image into its row of the batch.
fused: the same with fused=True (the crop-window decode).
folder (case 7): --files is an image folder (DIR/CLASS/NAME.JPEG; labels
  the class folders' sorted order) -> from_tensor_slices({filename, label})
  -> shuffle(all) -> repeat -> map(read_file, then decode's op) ->
  batch(128) -> prefetch.
wds (case 8): WebDatasetDataset(tars, extensions=[jpg, cls],
  num_parallel_reads=AUTOTUNE) -> repeat -> map(decode's op on "jpg") ->
  batch(128) -> prefetch (the cls bytes batched as they are).
read: the records batched by 4096 (each batch reaches Python as a NumPy
  object array of bytes: Python's per-record cost counts here).
parse: map(parse_example(small spec)).batch(1024) (parsed after batching).
text: TextLineDataset -> batch(4096) -> prefetch (lines reach Python as a
  NumPy object array of bytes, as in read).
csv: CsvDataset(record_defaults=CSV_DEFAULTS, header=True) -> batch(4096)
  -> prefetch (a tuple of NumPy arrays; the name column of bytes objects).
fixedlength: FixedLengthRecordDataset(record_bytes=3073) -> batch(1024) ->
  prefetch (an object array of 3,073-byte bytes).
The formats, the read and the parse case read one file at a time
(--parallel-reads N, -1: AUTOTUNE, overrides).
Flags mean what they mean to sluice_cases; --stats 1 adds the image map's
parallelism to the line, --stats 2 also prints the iterator's stats.
"""
import argparse
import glob
import json
import resource
import sys
import time

import numpy as np
import sluice

from peer_common import list_folder

MEAN = [123.675, 116.28, 103.53]
STD = [58.395, 57.12, 57.375]
IMAGE_SPEC = {
    "image/encoded": sluice.io.FixedLenFeature([], sluice.string),
    "image/class/label": sluice.io.FixedLenFeature([], sluice.int64),
}
SMALL_SPEC = {
    "id": sluice.io.FixedLenFeature([], sluice.int64),
    "label": sluice.io.FixedLenFeature([], sluice.int64),
    "width": sluice.io.FixedLenFeature([], sluice.int64),
    "height": sluice.io.FixedLenFeature([], sluice.int64),
    "bbox": sluice.io.FixedLenFeature([4], sluice.float32),
    "scores": sluice.io.FixedLenFeature([4], sluice.float32),
    "tokens": sluice.io.FixedLenFeature([8], sluice.int64),
    "key": sluice.io.FixedLenFeature([], sluice.string),
    "text": sluice.io.FixedLenFeature([], sluice.string),
    "weight": sluice.io.FixedLenFeature([], sluice.float32),
}

# The csv case's columns (sluice_cases.cc's CsvSpec, tfdata_cases.py's CSV_DEFAULTS).
CSV_DEFAULTS = [sluice.int64, sluice.int32, sluice.float32, sluice.float32, [1.0], [""]]
FIXED_RECORD_BYTES = 3073


def image_augment(fused):
    """The map function of case 1 (fused=False) and case 2 (fused=True)."""
    return sluice.io.parse_example(IMAGE_SPEC).then(
        sluice.image.map.decode_random_crop_resize(
            size=(224, 224), fused=fused, mirror="random", mean=MEAN, stddev=STD,
            key="image/encoded", output_key="image"))


IMAGE_CASES = ("decode", "fused", "folder", "wds")


def augment_file():
    """Case 7's map function: the file's bytes, then case 1's work."""
    return sluice.io.map.read_file(key="filename", output_key="image").then(
        sluice.image.map.decode_random_crop_resize(
            size=(224, 224), fused=False, mirror="random", mean=MEAN, stddev=STD,
            key="image", output_key="image"))


def pipeline(a, files):
    reads = a.parallel_reads or (sluice.AUTOTUNE if a.case in IMAGE_CASES else 1)
    if a.case == "folder":
        files = list_folder(a.files)
        names, labels = [f for f, _ in files], np.array([i for _, i in files], np.int64)
        records = sluice.Dataset.from_tensor_slices({"filename": names, "label": labels})
        records = records.shuffle(len(names))
    elif a.case == "wds":
        records = sluice.WebDatasetDataset(files, extensions=["jpg", "cls"],
                                           num_parallel_reads=reads)
    elif a.case == "text":
        records = sluice.TextLineDataset(files, num_parallel_reads=reads)
    elif a.case == "csv":
        records = sluice.experimental.CsvDataset(files, CSV_DEFAULTS, header=True,
                                                 num_parallel_reads=reads)
    elif a.case == "fixedlength":
        records = sluice.FixedLengthRecordDataset(files, FIXED_RECORD_BYTES,
                                                  num_parallel_reads=reads)
    else:
        records = sluice.TFRecordDataset(files, num_parallel_reads=reads)
    if a.cache:
        records = records.cache()
    records = records.repeat()
    if a.case in IMAGE_CASES:
        batch = a.batch or 128
        if a.case == "folder":
            fn = augment_file()
        elif a.case == "wds":
            fn = sluice.image.map.decode_random_crop_resize(
                size=(224, 224), fused=False, mirror="random", mean=MEAN, stddev=STD, key="jpg",
                output_key="image")
        else:
            fn = image_augment(a.case == "fused")
        ds = (records.map(fn,
                          num_parallel_calls=a.parallelism or sluice.AUTOTUNE, name=a.case)
              .batch(batch, drop_remainder=True).prefetch(sluice.AUTOTUNE))
    elif a.case == "read":
        batch = a.batch or 4096
        ds = records if batch == 1 else records.batch(batch, drop_remainder=True).prefetch(
            sluice.AUTOTUNE)
    elif a.case == "parse":
        batch = a.batch or 1024
        ds = (records.map(sluice.io.parse_example(SMALL_SPEC), num_parallel_calls=sluice.AUTOTUNE,
                          name="parse")
              .batch(batch, drop_remainder=True).prefetch(sluice.AUTOTUNE))
    elif a.case in ("text", "csv", "fixedlength"):
        batch = a.batch or (1024 if a.case == "fixedlength" else 4096)
        ds = records.batch(batch, drop_remainder=True).prefetch(sluice.AUTOTUNE)
    else:
        sys.exit(f"python_cases: unknown --case {a.case} "
                 "(decode, fused, folder, wds, read, parse, text, csv, fixedlength)")
    options = sluice.Options(map_and_batch_fusion=bool(a.fusion))
    if a.cores > 0:
        options.cpu_budget = a.cores
    if a.cpu_budget > 0:
        options.cpu_budget = a.cpu_budget
    if a.max_threads > 0:
        options.max_threads = a.max_threads
    return ds.with_options(options), batch, options


def count(b):
    first = next(iter(b.values())) if isinstance(b, dict) else (b[0] if isinstance(b, tuple) else b)
    shape = getattr(first, "shape", ())
    return 1 if len(shape) == 0 else int(shape[0])


def usage():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime, r.ru_nvcsw, r.ru_nivcsw, r.ru_minflt


def map_stats(s0, s1, seconds):
    """--stats 1: the image map's parallelism and busy threads between two snapshots."""
    for a, b in zip(s0.get("stages", []), s1.get("stages", [])):
        if b.get("kind") == "map":
            busy = (b.get("busy_ns", 0) - a.get("busy_ns", 0)) * 1e-9 / seconds
            return {"map_parallelism": b.get("parallelism"),
                    "map_parallelism_t0": a.get("parallelism"), "map_busy": round(busy, 2)}
    return {}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--case", required=True)
    p.add_argument("--files", required=True)
    p.add_argument("--cores", type=int, default=0)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--warmup", type=float, default=3)
    p.add_argument("--batch", type=int, default=0)
    p.add_argument("--parallel-reads", type=int, default=0)
    p.add_argument("--fusion", type=int, default=1)
    p.add_argument("--parallelism", type=int, default=0)
    p.add_argument("--cpu-budget", type=int, default=0)
    p.add_argument("--max-threads", type=int, default=0)
    p.add_argument("--cache", type=int, default=0)
    p.add_argument("--stats", type=int, default=0)
    a = p.parse_args()
    files = [a.files] if a.case == "folder" else sorted(
        f for f in glob.glob(a.files) if not f.endswith(".idx") and not f.endswith(".json")
        and not f.endswith("-labels.txt"))
    if not files:
        sys.exit("python_cases: no files match " + a.files)
    ds, batch, options = pipeline(a, files)
    it = iter(ds)
    start = time.perf_counter()
    t0 = None
    items, elapsed = 0, 0.0
    while True:
        b = next(it)
        now = time.perf_counter()
        if t0 is None:
            if now - start >= a.warmup:
                t0, u0 = now, usage()
                s0 = it.stats() if a.stats else None
            continue
        items += count(b)
        elapsed = now - t0
        if elapsed >= a.seconds:
            break
    u1 = usage()
    line = {"system": "sluice-python", "case": a.case, "items_per_s": round(items / elapsed, 1),
            "items": items, "seconds": round(elapsed, 3), "batch": batch, "cores": a.cores,
            "parallelism": a.parallelism, "cpu_budget": options.cpu_budget or 0,
            "max_threads": options.max_threads or 0, "cache": a.cache,
            "cpus": round((u1[0] - u0[0]) / elapsed, 2),
            "vcsw_per_s": round((u1[1] - u0[1]) / elapsed),
            "ivcsw_per_s": round((u1[2] - u0[2]) / elapsed),
            "minflt_per_s": round((u1[3] - u0[3]) / elapsed)}
    if a.stats:
        s1 = it.stats()
        line.update(map_stats(s0, s1, elapsed))
        if a.stats > 1:
            print(json.dumps(s1, indent=1), file=sys.stderr)
    print(json.dumps(line))
    it.close()


if __name__ == "__main__":
    main()
