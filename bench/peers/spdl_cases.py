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
import json
import random
import sys
from importlib.metadata import version

import numpy as np
import spdl.io
from spdl.pipeline import PipelineBuilder

from peer_common import crop_box, image_args, list_folder, timed

MEAN = np.array([0.485, 0.456, 0.406], np.float32) * 255
INV_STD = 1 / (np.array([0.229, 0.224, 0.225], np.float32) * 255)


def endless(items, seed=0):
    rng, items = random.Random(seed), list(items)
    while True:
        rng.shuffle(items)
        yield from items


def decode(item):
    path, label = item
    packets = spdl.io.demux_image(path)
    x, y, w, h = crop_box(packets.width, packets.height, random.uniform, random.randint)
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
    a = image_args("spdl_cases").parse_args()
    if not a.images:
        sys.exit("spdl_cases: --case folder needs --images DIR")
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
        items, elapsed = timed(it, a.seconds, a.warmup)
    print(json.dumps({"system": "spdl", "case": a.case,
                      "items_per_s": round(items / elapsed, 1), "items": items,
                      "seconds": round(elapsed, 3), "batch": a.batch, "cores": a.cores,
                      "threads": threads, "version": "SPDL %s" % version("spdl")}))


if __name__ == "__main__":
    main()
