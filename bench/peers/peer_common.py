"""What the Python peers of scripts/bench-peers.sh share, standard library
only (each peer imports it from its own venv): the image folder's listing,
torchvision's RandomResizedCrop sampling, the peers' command line and the
timed loop that turns batches into the JSON line's numbers.
"""
import argparse
import math
import os
import time


def list_folder(root):
    """(path, label) for every file of DIR/CLASS/NAME, label = the class's sorted index."""
    classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    return [(os.path.join(root, c, f), label) for label, c in enumerate(classes)
            for f in sorted(os.listdir(os.path.join(root, c)))]


def crop_box(width, height, uniform, randint, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
    """torchvision's RandomResizedCrop.get_params: (x, y, w, h). uniform(a, b)
    draws a float in [a, b), randint(a, b) an integer in [a, b]."""
    area = width * height
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(10):
        target = area * uniform(*scale)
        aspect = math.exp(uniform(*log_ratio))
        w = round(math.sqrt(target * aspect))
        h = round(math.sqrt(target / aspect))
        if 0 < w <= width and 0 < h <= height:
            return randint(0, width - w), randint(0, height - h), w, h
    in_ratio = width / height
    if in_ratio < ratio[0]:
        w, h = width, round(width / ratio[0])
    elif in_ratio > ratio[1]:
        w, h = round(height * ratio[1]), height
    else:
        w, h = width, height
    return (width - w) // 2, (height - h) // 2, w, h


def image_args(program, cases=("folder",)):
    """The image peers' flags: --case, --images, --files, --cores, --seconds, --warmup, --batch."""
    p = argparse.ArgumentParser(prog=program)
    p.add_argument("--case", required=True, choices=cases)
    p.add_argument("--images", help="an image folder, DIR/CLASS/NAME")
    p.add_argument("--files", help="a glob of shards")
    p.add_argument("--cores", type=int, default=1)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--warmup", type=float, default=3)
    p.add_argument("--batch", type=int, default=128)
    return p


def timed(batches, seconds, warmup, count=lambda b: len(b[0])):
    """Pulls batches for `warmup` seconds, then counts items (count(batch))
    over at least `seconds`: returns (items, elapsed seconds)."""
    start = time.perf_counter()
    while time.perf_counter() - start < warmup:
        next(batches)
    items, t0 = 0, time.perf_counter()
    while True:
        items += count(next(batches))
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            return items, elapsed
