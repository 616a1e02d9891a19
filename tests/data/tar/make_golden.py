"""Golden WebDataset tar shards for sluice's tar reader (tests/records/tar_test.cc).

Run with a Python that has the `webdataset` package:

    /work/venv-wds/bin/python tests/data/tar/make_golden.py tests/data/tar

Writes tar files with Python's `tarfile` (ustar, pax and GNU formats, a
gzip-compressed one; folders, a symlink and long names among the members)
and, for each, `<file>.json`: the samples that webdataset's own grouping
(`webdataset.tariterators.tarfile_samples`) yields, as a list of
{"__key__": key, "<ext>": {"size": n, "sha256": hex, "crc32": n}} in order
(crc32 is zlib's, for the C++ tests, which have no SHA-256). Output is
deterministic (fixed mtimes, gzip mtime 0).
"""
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile
import zlib

from webdataset import tariterators


def payload(i, ext):
    # Sizes around block boundaries (0, 1, 511, 512, 513, ...).
    sizes = [0, 1, 511, 512, 513, 1023, 1024, 3000]
    n = sizes[i % len(sizes)] + (7 * i) % 5
    return bytes((i * 31 + j * 7 + len(ext)) % 256 for j in range(n))


def members(kind):
    """(name, bytes or None for a folder, 'sym' for a symlink) in order."""
    out = []
    if kind == "ustar":
        out.append(("train/", None))
        for i in range(5):
            for ext in ("jpg", "cls", "json"):
                out.append((f"train/{i:06d}.{ext}", payload(i, ext)))
        out.append(("train/sub/", None))
        out.append(("train/sub/000005.seg.png", payload(5, "seg.png")))
        out.append(("train/sub/000005.TXT", payload(5, "txt")))  # webdataset lower-cases
        out.append(("train/link.jpg", "sym"))
        out.append(("__meta__", b"skipped by webdataset"))
        out.append(("000006.cls", payload(6, "cls")))
        # A ustar name split into prefix and name (longer than 100).
        deep = "d" * 60 + "/" + "e" * 60 + "/000007"
        out.append((deep + ".jpg", payload(7, "jpg")))
        out.append((deep + ".cls", payload(7, "cls")))
    else:
        long_dir = "very-long-folder-name-" * 8  # 176 characters
        for i in range(4):
            for ext in ("jpg", "txt"):
                out.append((f"{long_dir}/{i:06d}.{ext}", payload(i + 10, ext)))
        out.append(("a.b/c.d.e", payload(20, "d.e")))
        out.append(("x/.txt", payload(21, "txt")))  # key "x/", as webdataset splits it
        out.append(("ünïcödé/000009.jpg", payload(22, "jpg")))
        out.append(("ünïcödé/000009.json", payload(23, "json")))
    return out


def write_tar(path, kind, fmt, compress=False):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tf:
        for name, data in members(kind):
            info = tarfile.TarInfo(name)
            info.mtime = 1700000000
            info.uname = info.gname = "sluice"
            if data is None:
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                tf.addfile(info)
            elif data == "sym":
                info.type = tarfile.SYMTYPE
                info.linkname = "000000.jpg"
                tf.addfile(info)
            else:
                info.size = len(data)
                info.mode = 0o644
                tf.addfile(info, io.BytesIO(data))
    raw = buf.getvalue()
    if compress:
        out = io.BytesIO()
        with gzip.GzipFile(fileobj=out, mode="wb", mtime=0, filename="") as gz:
            gz.write(raw)
        raw = out.getvalue()
    with open(path, "wb") as f:
        f.write(raw)


def expected(path):
    samples = []
    for s in tariterators.tarfile_samples([{"url": path}]):
        entry = {"__key__": s["__key__"]}
        for k, v in s.items():
            if k.startswith("__"):
                continue
            entry[k] = {"size": len(v), "sha256": hashlib.sha256(v).hexdigest(),
                        "crc32": zlib.crc32(v)}
        samples.append(entry)
    return samples


def main(out_dir):
    files = [
        ("ustar.tar", "ustar", tarfile.USTAR_FORMAT, False),
        ("pax.tar", "long", tarfile.PAX_FORMAT, False),
        ("gnu.tar", "long", tarfile.GNU_FORMAT, False),
        ("pax.tar.gz", "long", tarfile.PAX_FORMAT, True),
    ]
    for name, kind, fmt, compress in files:
        path = os.path.join(out_dir, name)
        write_tar(path, kind, fmt, compress)
        with open(path + ".json", "w") as f:
            json.dump(expected(path), f, indent=1, sort_keys=True, ensure_ascii=False)
            f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
