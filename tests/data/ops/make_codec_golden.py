#!/usr/bin/env python3
"""Writes the image-codec golden files for sluice's ops tests.

Usage (from the repository root):

    bash tests/data/make_golden.sh   # once, to create the TF virtualenv
    ~/.cache/sluice/tf-venv/bin/python tests/data/ops/make_codec_golden.py tests/data/ops/codec

TensorFlow encodes small synthetic images (JPEG and PNG) and decodes them, and
decodes hand-made PNGs (palette, low bit depths, tRNS, Adam7, gAMA, sRGB) and
JPEGs TF cannot encode: CMYK, YCCK, 4:2:2, 4:4:0, 4:1:1 (written by
make_libjpeg_jpegs.c, compiled here against the system libjpeg). The C++
tests read only the committed outputs:

  *.jpg, *.png     the inputs
  decoded.bin      every decoded tensor (and the raw source images of the
                   encoder cases), concatenated; uint16 samples little-endian
  manifest.txt     one case per line: space-separated key=value pairs:
                   op, input, the op's parameters, shape, dtype, offset and
                   nbytes of the expected output inside decoded.bin

Deterministic: the images come from integer formulas, not a random generator.
"""

import os
import struct
import subprocess
import sys
import tempfile
import zlib

import numpy as np
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))


# --------------------------------------------------------------------------
# Synthetic images: smooth gradients plus deterministic "noise".
# --------------------------------------------------------------------------

def noise(h, w, c, salt):
    y, x, ch = np.meshgrid(np.arange(h), np.arange(w), np.arange(c), indexing="ij")
    v = (x * 73856093) ^ (y * 19349663) ^ (ch * 83492791) ^ (salt * 2654435761)
    return (v % 61) - 30


def photo(h, w, c, salt=0):
    """Gradient + noise in [0, 255], shape [h, w, c], uint8."""
    y, x, ch = np.meshgrid(np.arange(h), np.arange(w), np.arange(c), indexing="ij")
    base = (x * 255 // max(w - 1, 1)) * (ch % 3 != 1) + (y * 255 // max(h - 1, 1)) * (ch % 3 == 1)
    base = np.where(ch == 2, 255 - base, base)
    return np.clip(base + noise(h, w, c, salt), 0, 255).astype(np.uint8)


def photo16(h, w, c, salt=0):
    """As photo() but 16-bit, with low bytes that matter."""
    hi = photo(h, w, c, salt).astype(np.uint16)
    lo = (noise(h, w, c, salt + 7) + 30) * 4
    return (hi * 256 + lo).astype(np.uint16)


# --------------------------------------------------------------------------
# A minimal PNG writer for what tf.io.encode_png cannot make.
# --------------------------------------------------------------------------

def chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def pack_row(samples, bit_depth):
    """Packs one row of samples (ints) into bytes at bit_depth."""
    if bit_depth == 16:
        return b"".join(struct.pack(">H", int(s)) for s in samples)
    if bit_depth == 8:
        return bytes(int(s) for s in samples)
    out = bytearray()
    per_byte = 8 // bit_depth
    for i in range(0, len(samples), per_byte):
        byte = 0
        for j in range(per_byte):
            s = int(samples[i + j]) if i + j < len(samples) else 0
            byte |= s << (8 - bit_depth * (j + 1))
        out.append(byte)
    return bytes(out)


ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]


def make_png(samples, bit_depth, color_type, plte=None, trns=None, gama=None, srgb=False,
             interlace=False):
    """samples: [h, w, channels] ints (palette indices for color type 3)."""
    h, w, _ = samples.shape
    out = b"\x89PNG\r\n\x1a\n"
    out += chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, bit_depth, color_type, 0, 0, 1 if interlace else 0))
    if gama is not None:
        out += chunk(b"gAMA", struct.pack(">I", gama))
    if srgb:
        out += chunk(b"sRGB", b"\x00")
    if plte is not None:
        out += chunk(b"PLTE", b"".join(bytes(c) for c in plte))
    if trns is not None:
        out += chunk(b"tRNS", trns)
    raw = bytearray()
    passes = ADAM7 if interlace else [(0, 0, 1, 1)]
    for x0, y0, dx, dy in passes:
        sub = samples[y0::dy, x0::dx, :]
        if sub.shape[0] == 0 or sub.shape[1] == 0:
            continue
        for row in sub:
            raw += b"\x00" + pack_row(row.reshape(-1), bit_depth)
    out += chunk(b"IDAT", zlib.compress(bytes(raw), 9))
    out += chunk(b"IEND", b"")
    return out


def handmade_pngs(h, w):
    pngs = {}
    idx = (np.arange(h * w).reshape(h, w, 1) * 7) % 40
    plte = [((i * 37) % 256, (i * 91) % 256, (255 - i * 5) % 256) for i in range(40)]
    pngs["pal8.png"] = make_png(idx, 8, 3, plte=plte)
    pngs["pal8_trns.png"] = make_png(idx, 8, 3, plte=plte, trns=bytes((i * 23) % 256 for i in range(25)))
    pngs["pal4_adam7.png"] = make_png(idx % 16, 4, 3, plte=plte[:16], interlace=True)
    gray = photo(h, w, 1, 3).astype(np.int64)
    pngs["gray1.png"] = make_png(gray >> 7, 1, 0)
    pngs["gray2.png"] = make_png(gray >> 6, 2, 0)
    pngs["gray4_trns.png"] = make_png(gray >> 4, 4, 0, trns=struct.pack(">H", 9))
    rgb = photo(h, w, 3, 4).astype(np.int64)
    rgb[2, 3] = rgb[5, 6] = (10, 200, 30)
    pngs["rgb8_trns.png"] = make_png(rgb, 8, 2, trns=struct.pack(">HHH", 10, 200, 30))
    pngs["rgb8_adam7.png"] = make_png(rgb, 8, 2, interlace=True)
    # Gamma matters to TF (libpng) only when converting color to gray.
    pngs["rgb8_gama.png"] = make_png(rgb, 8, 2, gama=45455)
    pngs["rgb8_gama1.png"] = make_png(rgb, 8, 2, gama=100000)
    pngs["rgb8_srgb.png"] = make_png(rgb, 8, 2, srgb=True)
    pngs["pal8_gama.png"] = make_png(idx, 8, 3, plte=plte, gama=45455)
    rgb16 = photo16(h, w, 3, 5).astype(np.int64)
    rgb16[1, 1] = (1000, 2000, 3000)
    pngs["rgb16_trns.png"] = make_png(rgb16, 16, 2, trns=struct.pack(">HHH", 1000, 2000, 3000))
    pngs["rgb16_gama.png"] = make_png(rgb16, 16, 2, gama=45455)
    ga16 = np.concatenate([photo16(h, w, 1, 6), photo16(h, w, 1, 8)], axis=2).astype(np.int64)
    pngs["ga16_adam7.png"] = make_png(ga16, 16, 4, interlace=True)
    return pngs


# --------------------------------------------------------------------------
# Output collection
# --------------------------------------------------------------------------

class Golden:
    def __init__(self, out):
        self.out = out
        self.blob = bytearray()
        self.lines = []

    def add(self, array, **params):
        array = np.asarray(array)
        dtype = {np.dtype(np.uint8): "uint8", np.dtype(np.uint16): "uint16"}[array.dtype]
        data = array.astype(array.dtype.newbyteorder("<")).tobytes()
        params["shape"] = ",".join(str(d) for d in array.shape)
        params["dtype"] = dtype
        params["offset"] = len(self.blob)
        params["nbytes"] = len(data)
        self.blob += data
        self.lines.append(" ".join(f"{k}={v}" for k, v in params.items()))

    def write_file(self, name, data):
        with open(os.path.join(self.out, name), "wb") as f:
            f.write(data)

    def finish(self):
        self.write_file("decoded.bin", bytes(self.blob))
        with open(os.path.join(self.out, "manifest.txt"), "w") as f:
            f.write("# Generated by tests/data/ops/make_codec_golden.py with tensorflow-cpu %s\n" % tf.__version__)
            for line in self.lines:
                f.write(line + "\n")


DCTS = ["INTEGER_FAST", "INTEGER_ACCURATE"]


def jpeg_cases(g):
    rgb = photo(23, 37, 3)
    gray = photo(23, 37, 1, 1)
    big = photo(48, 64, 3, 2)
    encodes = {
        "rgb420_q90.jpg": (rgb, dict(quality=90)),
        "rgb444_q90.jpg": (rgb, dict(quality=90, chroma_downsampling=False)),
        "gray_q90.jpg": (gray, dict(quality=90)),
        "rgb420_prog.jpg": (rgb, dict(quality=90, progressive=True)),
        "rgb420_q95.jpg": (rgb, dict()),
        "big420_q85.jpg": (big, dict(quality=85)),
    }
    files = {}
    for name, (img, kw) in encodes.items():
        data = tf.io.encode_jpeg(img, **kw).numpy()
        files[name] = data
        g.write_file(name, data)
        g.add(img, op="encode_jpeg", output=name, quality=kw.get("quality", 95),
              chroma=420 if kw.get("chroma_downsampling", True) else 444,
              progressive=int(kw.get("progressive", False)))

    def decode(name, data, channels=0, dct="", ratio=1, fancy=True, **extra):
        out = tf.io.decode_jpeg(data, channels=channels, ratio=ratio, fancy_upscaling=fancy,
                                dct_method=dct, **extra)
        g.add(out.numpy(), op="decode_jpeg", input=name, channels=channels,
              dct=dct or "default", ratio=ratio, fancy=int(fancy),
              recover=int(extra.get("try_recover_truncated", False)),
              fraction=extra.get("acceptable_fraction", 1), truncate=len(data))

    # The full option matrix on one 4:2:0 file.
    data = files["rgb420_q90.jpg"]
    decode("rgb420_q90.jpg", data)
    for channels in (1, 3):
        for dct in DCTS:
            for ratio in (1, 2, 4, 8):
                for fancy in (True, False):
                    decode("rgb420_q90.jpg", data, channels, dct, ratio, fancy)
    # A smaller matrix on the others.
    for name in ("rgb444_q90.jpg", "gray_q90.jpg", "rgb420_prog.jpg", "cmyk_adobe.jpg",
                 "cmyk_plain.jpg", "ycck_adobe.jpg", "rgb422.jpg", "rgb440.jpg", "rgb411.jpg"):
        data = files[name] if name in files else open(os.path.join(g.out, name), "rb").read()
        decode(name, data)
        channel_set = (3,) if name.startswith(("cmyk", "ycck")) else (1, 3)
        for channels in channel_set:
            for dct in DCTS:
                for ratio in (1, 2):
                    decode(name, data, channels, dct, ratio)

    big_data = files["big420_q85.jpg"]
    for channels in (1, 3):
        for dct in DCTS:
            decode("big420_q85.jpg", big_data, channels, dct)

    # Crops (TF's decode_and_crop_jpeg), default settings.
    for window in ((0, 0, 48, 64), (5, 7, 30, 40), (16, 16, 16, 32), (17, 33, 20, 30),
                   (47, 63, 1, 1), (30, 0, 10, 64), (1, 1, 46, 62)):
        for channels in ((1, 3) if window[0] == 5 else (3,)):
            out = tf.image.decode_and_crop_jpeg(big_data, window, channels=channels)
            g.add(out.numpy(), op="decode_and_crop_jpeg", input="big420_q85.jpg",
                  channels=channels, crop=",".join(map(str, window)))

    # Truncation: recovered, and partial with acceptable_fraction.
    cut = big_data[: len(big_data) * 6 // 10]
    decode("big420_q85.jpg", cut, 3, try_recover_truncated=True)
    decode("big420_q85.jpg", cut, 3, acceptable_fraction=0.25)
    try:
        tf.io.decode_jpeg(cut, channels=3)
        raise AssertionError("TF decoded a truncated JPEG without recovery")
    except tf.errors.InvalidArgumentError:
        pass


def png_cases(g):
    h, w = 9, 13
    pngs = {}
    for c, kind in ((1, "gray"), (2, "ga"), (3, "rgb"), (4, "rgba")):
        pngs[f"{kind}8.png"] = tf.io.encode_png(photo(h, w, c, 10 + c)).numpy()
        pngs[f"{kind}16.png"] = tf.io.encode_png(photo16(h, w, c, 20 + c)).numpy()
    pngs.update(handmade_pngs(h, w))
    for name, data in sorted(pngs.items()):
        g.write_file(name, data)
        for channels in (0, 1, 3, 4):
            wide = "16" in name or name in ("gray1.png", "pal8_trns.png", "rgb8.png")
            for dtype, bits in ((tf.uint8, 8), (tf.uint16, 16)) if wide else ((tf.uint8, 8),):
                out = tf.io.decode_png(data, channels=channels, dtype=dtype)
                g.add(out.numpy(), op="decode_png", input=name, channels=channels, bits=bits)


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "make_libjpeg_jpegs")
        subprocess.run(["cc", "-O1", "-o", exe, os.path.join(HERE, "make_libjpeg_jpegs.c"), "-ljpeg"],
                       check=True)
        subprocess.run([exe, out], check=True)
    g = Golden(out)
    jpeg_cases(g)
    png_cases(g)
    g.finish()
    total = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
    print(f"wrote {len(g.lines)} cases, {total} bytes in {out}")


if __name__ == "__main__":
    main(sys.argv)
