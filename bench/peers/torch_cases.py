"""The PyTorch side of scripts/bench-peers.sh: case 7 (folder) as
torchvision's ImageNet example writes it, and case 8 (wds) with the
webdataset package as its docs write it (PyTorch has no TFRecord reader,
so cases 1-4 have no torch peer, and it has no crop-window decode, so case
2 neither). Prints one JSON line:
  {"system":"torch","case":"folder","items_per_s":...}
  (system "webdataset" for case 8)

  python torch_cases.py --case folder --images DIR [--cores N]
      [--seconds 10] [--warmup 3] [--batch 128] [--repeat K]
  python torch_cases.py --case wds --files GLOB [--cores N] ...

folder: ImageFolder (PIL decode) -> RandomResizedCrop(224) ->
RandomHorizontalFlip -> ToTensor -> Normalize, DataLoader(batch 128,
num_workers=N, persistent_workers), cycled forever. --repeat K makes one
epoch K passes over the folder (a small folder on many workers would
otherwise leave most of them idle at every epoch's end, which a longer
dataset would not).
wds: webdataset.WebDataset(tars, resampled=True: shards drawn endlessly) ->
shuffle(1000) -> decode("pil") -> to_tuple("jpg", "cls") -> map_tuple(the
same transforms, int) -> WebLoader(batch 128, num_workers=N): the shards
are split over the workers.
"""
import glob
import json
import sys

import torch
import torchvision
from torchvision import datasets, transforms

from peer_common import image_args, timed


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
    p = image_args("torch_cases", cases=("folder", "wds"))
    p.add_argument("--repeat", type=int, default=1, help="passes over the folder per epoch")
    a = p.parse_args()
    if not (a.images if a.case == "folder" else a.files):
        sys.exit("torch_cases: --case folder needs --images DIR, --case wds --files GLOB")
    torch.set_num_threads(1)
    tf = transforms.Compose([
        transforms.RandomResizedCrop(224),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    ])
    system, version = "torch", "torch %s, torchvision %s" % (torch.__version__,
                                                              torchvision.__version__)
    if a.case == "wds":
        import webdataset as wds
        system, version = "webdataset", "webdataset %s, %s" % (
            getattr(wds, "__version__", "?"), version)
        urls = sorted(glob.glob(a.files))
        if not urls:
            sys.exit("torch_cases: no files match " + a.files)
        ds = (wds.WebDataset(urls, resampled=True, shardshuffle=False).shuffle(1000)
              .decode("pil").to_tuple("jpg", "cls").map_tuple(tf, int))
        loader = wds.WebLoader(ds, batch_size=a.batch, num_workers=max(1, a.cores),
                               persistent_workers=True, prefetch_factor=4)
    else:
        ds = datasets.ImageFolder(a.images, transform=tf)
        if a.repeat > 1:
            ds = Repeated(ds, a.repeat)
        loader = torch.utils.data.DataLoader(
            ds, batch_size=a.batch, shuffle=True, drop_last=True,
            num_workers=max(1, a.cores), persistent_workers=True, prefetch_factor=4)
    it = batches(loader)
    items, elapsed = timed(it, a.seconds, a.warmup)
    print(json.dumps({"system": system, "case": a.case,
                      "items_per_s": round(items / elapsed, 1), "items": items,
                      "seconds": round(elapsed, 3), "batch": a.batch, "cores": a.cores,
                      "repeat": a.repeat, "version": version}))


if __name__ == "__main__":
    main()
