"""The Grain side of scripts/bench-peers.sh: case 7 (folder), an image
classification training loader over an ImageFolder-style directory, written
with Grain's Dataset API as its README and tutorials write a training
pipeline. Prints one JSON line:
  {"system":"grain","case":"folder","items_per_s":...}

  python grain_cases.py --case folder --images DIR [--cores N]
      [--seconds 10] [--warmup 3] [--batch 128]

MapDataset.source((path, label) list).seed(0).shuffle().repeat()
.random_map(load).batch(batch, drop_remainder=True)
.to_iter_dataset(ReadOptions(num_threads=1, prefetch_buffer_size=1))
.mp_prefetch(MultiprocessingOptions(num_workers=N)): N spawned worker
processes, each building whole batches on one thread, one batch ahead,
handed to this process through shared memory. load decodes with PIL
(Image.open().convert("RGB")), crops and resizes in one PIL bilinear resize
to 224x224 (torchvision's RandomResizedCrop sampling, drawn from Grain's
per-element RNG), flips half the images and normalizes to float32 in numpy;
batch stacks them into (N,224,224,3) float32 plus int64 labels.
"""
import argparse
import json
import math
import os
import sys
import time
from importlib.metadata import version

import grain
import numpy as np
from PIL import Image

MEAN = np.array([0.485, 0.456, 0.406], np.float32) * 255
INV_STD = 1 / (np.array([0.229, 0.224, 0.225], np.float32) * 255)


def list_folder(root):
    """(path, label) for every file, label = index of its class folder."""
    classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    return [(os.path.join(root, c, f), label) for label, c in enumerate(classes)
            for f in sorted(os.listdir(os.path.join(root, c)))]


def crop_box(width, height, rng, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
    """torchvision RandomResizedCrop.get_params: (x, y, w, h)."""
    area = width * height
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(10):
        target = area * rng.uniform(*scale)
        aspect = math.exp(rng.uniform(*log_ratio))
        w = round(math.sqrt(target * aspect))
        h = round(math.sqrt(target / aspect))
        if 0 < w <= width and 0 < h <= height:
            return int(rng.integers(0, width - w + 1)), int(rng.integers(0, height - h + 1)), w, h
    in_ratio = width / height
    if in_ratio < ratio[0]:
        w, h = width, round(width / ratio[0])
    elif in_ratio > ratio[1]:
        w, h = round(height * ratio[1]), height
    else:
        w, h = width, height
    return (width - w) // 2, (height - h) // 2, w, h


def load(item, rng):
    path, label = item
    with Image.open(path) as im:
        im = im.convert("RGB")
    x, y, w, h = crop_box(im.width, im.height, rng)
    im = im.resize((224, 224), Image.BILINEAR, box=(x, y, x + w, y + h))
    pixels = np.asarray(im)
    if rng.random() < 0.5:
        pixels = pixels[:, ::-1]
    image = np.subtract(pixels, MEAN, dtype=np.float32)
    image *= INV_STD
    return image, np.int64(label)


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
        sys.exit("grain_cases: only --case folder has a Grain peer")
    workers = max(1, a.cores)
    ds = (
        grain.MapDataset.source(list_folder(a.images))
        .seed(0)
        .shuffle()
        .repeat()
        .random_map(load)
        .batch(a.batch, drop_remainder=True)
        .to_iter_dataset(grain.ReadOptions(num_threads=1, prefetch_buffer_size=1))
        .mp_prefetch(grain.MultiprocessingOptions(num_workers=workers))
    )
    it = iter(ds)
    try:
        images, labels = next(it)
        print("grain_cases: first batch", images.shape, images.dtype, labels.shape,
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
    finally:
        images = labels = None  # drop our view of the last shared-memory batch
        it.close()
    print(json.dumps({"system": "grain", "case": a.case,
                      "items_per_s": round(items / elapsed, 1), "items": items,
                      "seconds": round(elapsed, 3), "batch": a.batch, "cores": a.cores,
                      "workers": workers, "threads": 1,
                      "version": "Grain %s" % version("grain")}))


if __name__ == "__main__":
    main()
