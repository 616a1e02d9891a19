"""The PyTorch side of scripts/bench-peers.sh: case 1 (decode) as
torchvision's ImageNet example writes it, over the image folder (PyTorch
has no TFRecord reader, so cases 3-4 have no torch peer, and it has no
crop-window decode, so case 2 neither). Prints one JSON line:
  {"system":"torch","case":"decode","items_per_s":...}

  python torch_cases.py --case decode --images DIR [--cores N]
      [--seconds 10] [--warmup 3] [--batch 128] [--repeat K]

ImageFolder (PIL decode) -> RandomResizedCrop(224) -> RandomHorizontalFlip
-> ToTensor -> Normalize, DataLoader(batch 128, num_workers=N,
persistent_workers), cycled forever. --repeat K makes one epoch K passes
over the folder (a small folder on many workers would otherwise leave most
of them idle at every epoch's end, which a longer dataset would not).
"""
import argparse
import json
import sys
import time

import torch
import torchvision
from torchvision import datasets, transforms


def batches(loader):
    while True:
        for b in loader:
            yield b


class Repeated(torch.utils.data.Dataset):
    """`times` passes over `ds` as one dataset: item i is ds[i % len(ds)]."""

    def __init__(self, ds, times):
        self.ds, self.times = ds, times

    def __len__(self):
        return len(self.ds) * self.times

    def __getitem__(self, i):
        return self.ds[i % len(self.ds)]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--case", required=True)
    p.add_argument("--images", required=True)
    p.add_argument("--cores", type=int, default=1)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--warmup", type=float, default=3)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--repeat", type=int, default=1, help="passes over the folder per epoch")
    a = p.parse_args()
    if a.case != "decode":
        sys.exit("torch_cases: only --case decode has a torch peer")
    torch.set_num_threads(1)
    tf = transforms.Compose([
        transforms.RandomResizedCrop(224),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    ])
    ds = datasets.ImageFolder(a.images, transform=tf)
    if a.repeat > 1:
        ds = Repeated(ds, a.repeat)
    loader = torch.utils.data.DataLoader(
        ds, batch_size=a.batch, shuffle=True, drop_last=True,
        num_workers=max(1, a.cores), persistent_workers=True, prefetch_factor=4)
    it = batches(loader)
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
    print(json.dumps({"system": "torch", "case": a.case,
                      "items_per_s": round(items / elapsed, 1), "items": items,
                      "seconds": round(elapsed, 3), "batch": a.batch, "cores": a.cores,
                      "repeat": a.repeat,
                      "version": "torch %s, torchvision %s" % (
                          torch.__version__, torchvision.__version__)}))


if __name__ == "__main__":
    main()
