"""Writes the WebDataset shards of scripts/bench-peers.sh's case 8 from an
image folder (DIR/CLASS/NAME.JPEG, as scripts/make-imagenet-like.sh makes
it), the way WebDataset's docs build them: one uncompressed POSIX tar per
shard, each sample two members, KEY.jpg (the JPEG's bytes) and KEY.cls (the
class index, decimal text), KEY the file's name without its extension.
Images are dealt round-robin over the shards in sorted order; every header
has mtime 0, uid/gid 0 and mode 0644, so the same folder gives the same
bytes. Standard library only.

  python3 make_wds.py --images DIR --out PREFIX [--shards 8]
      -> PREFIX-000000.tar ... PREFIX-00000N.tar (each written as NAME.tmp,
         renamed when whole)
"""
import argparse
import io
import os
import sys
import tarfile


def member(name, data):
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode, info.uid, info.gid = len(data), 0, 0o644, 0, 0
    info.uname = info.gname = ""
    return info, io.BytesIO(data)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--images", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--shards", type=int, default=8)
    a = p.parse_args()
    classes = sorted(d for d in os.listdir(a.images) if os.path.isdir(os.path.join(a.images, d)))
    if not classes:
        sys.exit(f"make_wds: no class folders under {a.images}")
    images = [(os.path.join(a.images, c, f), i) for i, c in enumerate(classes)
              for f in sorted(os.listdir(os.path.join(a.images, c)))]
    for s in range(a.shards):
        path = f"{a.out}-{s:06d}.tar"
        with tarfile.open(path + ".tmp", "w", format=tarfile.USTAR_FORMAT) as tar:
            for image, label in images[s::a.shards]:
                key = os.path.splitext(os.path.basename(image))[0]
                with open(image, "rb") as f:
                    tar.addfile(*member(key + ".jpg", f.read()))
                tar.addfile(*member(key + ".cls", str(label).encode()))
        os.replace(path + ".tmp", path)
    print(f"make_wds: {len(images)} samples in {a.shards} shards: {a.out}-000000.tar ...")


if __name__ == "__main__":
    main()
