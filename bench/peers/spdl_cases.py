"""The SPDL side of scripts/bench-peers.sh: case 7 (folder), an image
classification training loader over an ImageFolder-style directory, written
the way SPDL's docs write one (spdl.pipeline with spdl.io decoding). Prints
one JSON line:
  {"system":"spdl","case":"folder","items_per_s":...}

  python spdl_cases.py --case folder --images DIR [--cores N]
      [--seconds 10] [--warmup 3] [--batch 128]

PipelineBuilder: source (the (path, label) list, reshuffled every epoch,
forever) -> pipe(decode, concurrency=N) -> aggregate(batch, drop_last) ->
pipe(collate) -> sink(3), on a thread pool of N threads. decode is
spdl.io.demux_image + decode_packets (FFmpeg, one decoder thread) with a
per-image filter graph in FFmpeg's order, as SPDL's own filter
descriptions put it (the pixel format last): crop to a RandomResizedCrop
box (torchvision's sampling; exact=1 keeps odd offsets on YUV 4:2:0),
scale=224:224 bilinear, hflip on half the images, format=rgb24 (only the
224x224 output is converted to RGB; converting the whole image first costs
SPDL ~35% of its rate here). collate merges the frames with convert_frames
into one (N,224,224,3) uint8 array and normalizes it to float32 in numpy.
"""
import argparse
import json
import math
import os
import random
import sys
import time
from importlib.metadata import version

import numpy as np
import spdl.io
from spdl.pipeline import PipelineBuilder

MEAN = np.array([0.485, 0.456, 0.406], np.float32) * 255
INV_STD = 1 / (np.array([0.229, 0.224, 0.225], np.float32) * 255)


def list_folder(root):
    """(path, label) for every file, label = index of its class folder."""
    classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    return [(os.path.join(root, c, f), label) for label, c in enumerate(classes)
            for f in sorted(os.listdir(os.path.join(root, c)))]


def endless(items, seed=0):
    rng, items = random.Random(seed), list(items)
    while True:
        rng.shuffle(items)
        yield from items


def crop_box(width, height, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
    """torchvision RandomResizedCrop.get_params: (x, y, w, h)."""
    area = width * height
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(10):
        target = area * random.uniform(*scale)
        aspect = math.exp(random.uniform(*log_ratio))
        w = round(math.sqrt(target * aspect))
        h = round(math.sqrt(target / aspect))
        if 0 < w <= width and 0 < h <= height:
            return random.randint(0, width - w), random.randint(0, height - h), w, h
    in_ratio = width / height
    if in_ratio < ratio[0]:
        w, h = width, round(width / ratio[0])
    elif in_ratio > ratio[1]:
        w, h = round(height * ratio[1]), height
    else:
        w, h = width, height
    return (width - w) // 2, (height - h) // 2, w, h


def decode(item):
    path, label = item
    packets = spdl.io.demux_image(path)
    x, y, w, h = crop_box(packets.width, packets.height)
    flip = ",hflip" if random.random() < 0.5 else ""
    frames = spdl.io.decode_packets(
        packets,
        filter_desc=f"crop={w}:{h}:{x}:{y}:exact=1,scale=224:224:flags=bilinear{flip},format=rgb24")
    return frames, label


def collate(items):
    frames, labels = zip(*items)
    pixels = spdl.io.to_numpy(spdl.io.convert_frames(list(frames)))  # (N,224,224,3) uint8
    images = np.subtract(pixels, MEAN, dtype=np.float32)
    images *= INV_STD
    return images, np.array(labels, np.int64)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--case", required=True)
    p.add_argument("--images", required=True)
    p.add_argument("--cores", type=int, default=1)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--warmup", type=float, default=3)
    p.add_argument("--batch", type=int, default=128)
    a = p.parse_args()
    if a.case != "folder":
        sys.exit("spdl_cases: only --case folder has an SPDL peer")
    threads = max(1, a.cores)
    pipeline = (
        PipelineBuilder()
        .add_source(endless(list_folder(a.images)))
        .pipe(decode, concurrency=threads)
        .aggregate(a.batch, drop_last=True)
        .pipe(collate)
        .add_sink(3)
        .build(num_threads=threads)
    )
    with pipeline.auto_stop():
        it = iter(pipeline)
        images, labels = next(it)
        print("spdl_cases: first batch", images.shape, images.dtype, labels.shape,
              labels.dtype, file=sys.stderr)
        start = time.perf_counter()
        while time.perf_counter() - start < a.warmup:
            next(it)
        items, t0 = 0, time.perf_counter()
        while True:
            images, _ = next(it)
            items += images.shape[0]
            elapsed = time.perf_counter() - t0
            if elapsed >= a.seconds:
                break
    print(json.dumps({"system": "spdl", "case": a.case,
                      "items_per_s": round(items / elapsed, 1), "items": items,
                      "seconds": round(elapsed, 3), "batch": a.batch, "cores": a.cores,
                      "threads": threads, "version": "SPDL %s" % version("spdl")}))


if __name__ == "__main__":
    main()
