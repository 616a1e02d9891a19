#!/usr/bin/env python3
"""torchvision's GPU JPEG decode on the images gpu_jpeg_bench reads, for comparison.

torchvision.io.decode_jpeg(list_of_encoded, device="cuda") (nvJPEG's batched
decode) on B images at a time, then torch.cuda.synchronize(), for --seconds
per batch size: images/s and host CPU-seconds per second (getrusage, all
threads). "rrc224" adds the usual torchvision training recipe on the GPU
after the decode: per image RandomResizedCrop(224) (bilinear, no antialias,
as sluice's), a random horizontal flip, float32, stacked and normalized with
ImageNet's mean/stddev (torchvision.transforms.functional), the work
gpu_jpeg_bench's decode_rrc224_flip_normalize does.

    python3 bench/gpu/torchvision_jpeg.py --images DIR [--batches 128,256] [--seconds 2]

DIR as gpu_jpeg_bench's --images (*.jpg / *.jpeg / *.JPEG, subfolders too).
Prints one JSON line: {"case": "torchvision_decode_jpeg", "torch": ...,
"torchvision": ..., "device": ..., "images": N, "results": [{"batch": B,
"decode_images_per_s": ..., "decode_host_cores": ..., "rrc224_images_per_s":
..., "rrc224_host_cores": ...}, ...]}, or {"case": ..., "skipped": why} with
exit status 0 when torchvision or a GPU is missing.
"""
import argparse
import json
import os
import resource
import sys
import time


def skip(why):
    print(json.dumps({"case": "torchvision_decode_jpeg", "skipped": why}), flush=True)
    sys.exit(0)


def cpu_seconds():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def read_jpegs(root):
    paths = []
    for d, _, files in os.walk(root):
        for f in files:
            if os.path.splitext(f)[1] in (".jpg", ".jpeg", ".JPEG"):
                paths.append(os.path.join(d, f))
    paths.sort()
    out = []
    for p in paths:
        with open(p, "rb") as f:
            out.append(f.read())
    return out


def measure(batch, seconds, one):
    """one() handles `batch` images; after a warm-up call: (images/s, host cores)."""
    one()
    done = 0
    cpu0, t0 = cpu_seconds(), time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        one()
        done += batch
    wall = time.perf_counter() - t0
    return done / wall, (cpu_seconds() - cpu0) / wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--images", required=True)
    ap.add_argument("--batches", default="128,256")
    ap.add_argument("--seconds", type=float, default=2.0)
    args = ap.parse_args()
    try:
        import torch
        import torchvision
        from torchvision.io import ImageReadMode, decode_jpeg
        from torchvision.transforms import RandomResizedCrop
        from torchvision.transforms import functional as F
    except ImportError as e:
        skip("torch/torchvision not importable: %s" % e)
    if not torch.cuda.is_available():
        skip("no CUDA device for torch")
    jpegs = read_jpegs(args.images)
    if not jpegs:
        print("torchvision_jpeg: no JPEGs under %s" % args.images, file=sys.stderr)
        return 2
    encoded = [torch.frombuffer(bytearray(b), dtype=torch.uint8) for b in jpegs]
    mean = torch.tensor([123.675, 116.28, 103.53], device="cuda").view(1, 3, 1, 1)
    std = torch.tensor([58.395, 57.12, 57.375], device="cuda").view(1, 3, 1, 1)
    g = torch.Generator().manual_seed(1)
    results = []
    for batch in [int(b) for b in args.batches.split(",")]:
        cursor = [0]

        def next_slice():
            s = [encoded[(cursor[0] + i) % len(encoded)] for i in range(batch)]
            cursor[0] += batch
            return s

        def decode_only():
            decode_jpeg(next_slice(), mode=ImageReadMode.RGB, device="cuda")
            torch.cuda.synchronize()

        def rrc224():
            images = decode_jpeg(next_slice(), mode=ImageReadMode.RGB, device="cuda")
            out = []
            for img in images:  # [3, h, w] uint8
                top, left, h, w = RandomResizedCrop.get_params(
                    img, scale=[0.08, 1.0], ratio=[3.0 / 4.0, 4.0 / 3.0])
                x = F.resized_crop(img, top, left, h, w, [224, 224], antialias=False)
                if torch.rand(1, generator=g).item() < 0.5:
                    x = F.hflip(x)
                out.append(x)
            x = torch.stack(out).float()
            ((x - mean) / std).contiguous(memory_format=torch.channels_last)
            torch.cuda.synchronize()

        try:
            d_rate, d_cores = measure(batch, args.seconds, decode_only)
            r_rate, r_cores = measure(batch, args.seconds, rrc224)
        except (RuntimeError, TypeError) as e:  # no nvJPEG in torchvision, or < 0.19 (no lists)
            skip("decode_jpeg(device='cuda') failed: %s" % e)
        results.append({"batch": batch, "decode_images_per_s": round(d_rate),
                        "decode_host_cores": round(d_cores, 2),
                        "rrc224_images_per_s": round(r_rate),
                        "rrc224_host_cores": round(r_cores, 2)})
    print(json.dumps({"case": "torchvision_decode_jpeg", "torch": torch.__version__,
                      "torchvision": torchvision.__version__,
                      "device": torch.cuda.get_device_name(0), "images": len(jpegs),
                      "results": results}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
