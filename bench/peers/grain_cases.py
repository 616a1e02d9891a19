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
import json
import sys
from importlib.metadata import version

import grain
import numpy as np
from PIL import Image

from peer_common import crop_box, image_args, list_folder, timed

MEAN = np.array([0.485, 0.456, 0.406], np.float32) * 255
INV_STD = 1 / (np.array([0.229, 0.224, 0.225], np.float32) * 255)

def load(item, rng):
    path, label = item
    with Image.open(path) as im:
        im = im.convert("RGB")
    x, y, w, h = crop_box(im.width, im.height, rng.uniform,
                          lambda lo, hi: int(rng.integers(lo, hi + 1)))
    im = im.resize((224, 224), Image.BILINEAR, box=(x, y, x + w, y + h))
    pixels = np.asarray(im)
    if rng.random() < 0.5:
        pixels = pixels[:, ::-1]
    image = np.subtract(pixels, MEAN, dtype=np.float32)
    image *= INV_STD
    return image, np.int64(label)

def main():
    a = image_args("grain_cases").parse_args()
    if not a.images:
        sys.exit("grain_cases: --case folder needs --images DIR")
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
        items, elapsed = timed(it, a.seconds, a.warmup)
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
