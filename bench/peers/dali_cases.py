"""The NVIDIA DALI side of scripts/bench-peers.sh: the image cases as DALI's
own ImageNet training examples write them, on DALI's CPU pipeline
(device_id=None, every operator on "cpu"). Prints one JSON line:
  {"system":"dali","case":"decode","items_per_s":...,"items":...,"seconds":...}

  python dali_cases.py --case decode|fused|folder|wds (--files GLOB | --images DIR)
      [--cores N] [--seconds 10] [--warmup 3] [--batch 128] [--antialias 1|0]
      [--fast-idct 0|1]

decode: readers.tfrecord(the shards, index_path = each shard's .idx,
  random_shuffle, initial_fill 1024) -> decoders.image(RGB, full decode)
  -> random_resized_crop(224x224, area (0.08,1), ratio (3/4,4/3))
  -> crop_mirror_normalize(FLOAT, CHW, ImageNet mean/std * 255,
  mirror=random.coin_flip()).
fused: the same with decoders.image_random_crop (decodes only the crop
  window) -> resize(224x224) in place of decode + random_resized_crop.
folder: readers.file(--images DIR, random_shuffle) -> as decode.
wds: readers.webdataset(the tars, ext jpg and cls, random_shuffle) -> as
  decode; no index_paths, so DALI indexes the tars itself when it builds.
--antialias 0 turns off the antialiasing filter DALI's resize and
random_resized_crop apply by default when scaling down, and --fast-idct 1
turns on libjpeg-turbo's fast integer IDCT in its decoders (DALI's default
is the accurate one): sluice and tf.data resize bilinearly without such a
filter and decode with the fast IDCT by default, so both flags together
measure DALI doing the same arithmetic as they do.
Pipeline(batch_size=--batch, num_threads=--cores, prefetch_queue_depth 2
(the default), default executor); the readers loop over the data forever.
The pipeline is built and one batch checked before the clock starts; then
pipe.run() for --warmup seconds, and batches counted over at least
--seconds (the batch that ends the warm-up is not counted). The line also
gives threads (num_threads), os_threads (the process's threads at the end),
cpus (CPU seconds per second over the timed window), build_s and
first_batch_s.
"""
import glob
import json
import os
import resource
import sys
import time

import numpy as np
from nvidia import dali
from nvidia.dali import fn, tfrecord, types

from peer_common import image_args

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]
CASES = ("decode", "fused", "folder", "wds")


def read(a):
    """The case's reader: (encoded JPEGs, labels)."""
    if a.case == "folder":
        return fn.readers.file(file_root=a.images, random_shuffle=True, name="reader")
    files = sorted(f for f in glob.glob(a.files)
                   if not f.endswith((".idx", "-labels.txt", "-manifest.json")))
    if not files:
        sys.exit("dali_cases: no files match " + a.files)
    if a.case == "wds":
        return fn.readers.webdataset(paths=files, ext=["jpg", "cls"],
                                     random_shuffle=True, name="reader")
    rec = fn.readers.tfrecord(
        path=files, index_path=[f + ".idx" for f in files], random_shuffle=True,
        features={"image/encoded": tfrecord.FixedLenFeature((), tfrecord.string, ""),
                  "image/class/label": tfrecord.FixedLenFeature([1], tfrecord.int64, -1)},
        name="reader")
    return rec["image/encoded"], rec["image/class/label"]


def build(a):
    pipe = dali.Pipeline(batch_size=a.batch, num_threads=a.cores, device_id=None)
    with pipe:
        jpegs, labels = read(a)
        if a.case == "fused":
            images = fn.decoders.image_random_crop(jpegs, device="cpu", output_type=types.RGB,
                                                   use_fast_idct=bool(a.fast_idct))
            images = fn.resize(images, resize_x=224, resize_y=224, antialias=bool(a.antialias))
        else:
            images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB,
                                       use_fast_idct=bool(a.fast_idct))
            images = fn.random_resized_crop(images, size=[224, 224], antialias=bool(a.antialias))
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW",
                                          mean=MEAN, std=STD, mirror=fn.random.coin_flip())
        pipe.set_outputs(images, labels)
    pipe.build()
    return pipe


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main():
    p = image_args("dali_cases", cases=CASES)
    p.add_argument("--antialias", type=int, default=1, choices=(0, 1))
    p.add_argument("--fast-idct", type=int, default=0, choices=(0, 1))
    a = p.parse_args()
    if (a.case == "folder") != bool(a.images) or (a.case != "folder") != bool(a.files):
        sys.exit("dali_cases: --case folder takes --images DIR, the others --files GLOB")
    a.cores = max(1, a.cores)

    start = time.perf_counter()
    pipe = build(a)
    built = time.perf_counter()
    images = np.asarray(pipe.run()[0].as_tensor())
    first = time.perf_counter()
    if images.shape != (a.batch, 3, 224, 224) or images.dtype != np.float32:
        sys.exit(f"dali_cases: first batch is {images.dtype} {images.shape}")
    print(f"dali_cases: build {built - start:.2f} s, first batch {first - built:.2f} s",
          file=sys.stderr)

    t0, items, elapsed = None, 0, 0.0
    while True:
        out = pipe.run()
        now = time.perf_counter()
        if t0 is None:
            if now - first >= a.warmup:
                t0, c0 = now, cpu_seconds()
            continue
        items += len(out[0])
        elapsed = now - t0
        if elapsed >= a.seconds:
            break
    cpus = (cpu_seconds() - c0) / elapsed
    print(json.dumps({"system": "dali", "case": a.case,
                      "items_per_s": round(items / elapsed, 1), "items": items,
                      "seconds": round(elapsed, 3), "batch": a.batch, "cores": a.cores,
                      "threads": a.cores, "os_threads": len(os.listdir("/proc/self/task")),
                      "cpus": round(cpus, 2), "build_s": round(built - start, 2),
                      "first_batch_s": round(first - built, 2), "antialias": a.antialias,
                      "fast_idct": a.fast_idct,
                      "version": "DALI " + dali.__version__}))


if __name__ == "__main__":
    main()
