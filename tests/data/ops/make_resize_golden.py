#!/usr/bin/env python3
"""Writes TensorFlow golden data for sluice's resize and image-op tests.

Usage (with the virtualenv that tests/data/make_golden.sh creates):

    ~/.cache/sluice/tf-venv/bin/python tests/data/ops/make_resize_golden.py \
        tests/data/ops

Writes two files into the output folder:

  image_golden.bin  every tensor's raw bytes, little-endian, row-major,
                    concatenated (each starts at a multiple of 8);
  image_golden.txt  the manifest: one line per tensor and one per case.

Manifest lines (fields separated by single spaces, '#' starts a comment):

  tensor NAME DTYPE DIMS OFFSET NBYTES   DIMS is "17,23,3" ("-" for a scalar)
  resize INPUT METHOD ANTIALIAS PRESERVE_ASPECT HEIGHT WIDTH OUTPUT
  central_crop INPUT FRACTION OUTPUT     FRACTION printed with repr()
  crop INPUT Y X HEIGHT WIDTH OUTPUT     tf.image.crop_to_bounding_box
  rot90 INPUT K OUTPUT
  flip_left_right INPUT OUTPUT
  flip_up_down INPUT OUTPUT
  convert INPUT DTYPE SATURATE OUTPUT    tf.image.convert_image_dtype
  cast INPUT DTYPE OUTPUT                tf.cast
  standardize INPUT OUTPUT               tf.image.per_image_standardization

Deterministic: the inputs come from numpy's legacy RandomState (stable across
numpy versions) and fixed formulas, and TensorFlow's CPU kernels used here are
single-threaded per element, so re-running gives byte-identical files for the
same TensorFlow version.
"""

import os
import sys

import numpy as np
import tensorflow as tf

DTYPES = {
    np.dtype("bool"): "bool",
    np.dtype("uint8"): "uint8",
    np.dtype("int32"): "int32",
    np.dtype("int64"): "int64",
    np.dtype("float16"): "float16",
    np.dtype("float32"): "float32",
    np.dtype("float64"): "float64",
}
TF_DTYPES = {
    "bool": tf.bool,
    "uint8": tf.uint8,
    "int32": tf.int32,
    "int64": tf.int64,
    "float16": tf.float16,
    "bfloat16": tf.bfloat16,
    "float32": tf.float32,
    "float64": tf.float64,
}


class Writer:
    def __init__(self):
        self.blob = bytearray()
        self.lines = []
        self.names = set()

    def tensor(self, name, value):
        """Stores a numpy array or tf.Tensor under `name` and returns name."""
        if isinstance(value, tf.Tensor):
            if value.dtype == tf.bfloat16:
                dtype_name = "bfloat16"
                value = tf.bitcast(value, tf.uint16).numpy()
            else:
                value = value.numpy()
                dtype_name = DTYPES[value.dtype]
        else:
            dtype_name = DTYPES[value.dtype]
        assert name not in self.names, name
        self.names.add(name)
        value = np.ascontiguousarray(value)
        data = value.astype(value.dtype.newbyteorder("<")).tobytes()
        while len(self.blob) % 8:
            self.blob.append(0)
        dims = ",".join(str(d) for d in value.shape) if value.ndim else "-"
        self.lines.append(f"tensor {name} {dtype_name} {dims} {len(self.blob)} {len(data)}")
        self.blob += data
        return name

    def case(self, *fields):
        self.lines.append(" ".join(str(f) for f in fields))

    def save(self, out_dir):
        os.makedirs(out_dir, exist_ok=True)
        with open(os.path.join(out_dir, "image_golden.bin"), "wb") as f:
            f.write(bytes(self.blob))
        header = [
            "# Golden data for tests/ops/{resize,image_ops}_test.cc, made by",
            "# tests/data/ops/make_resize_golden.py with tensorflow " + tf.__version__ + ".",
            "# Format: see the script's docstring.",
        ]
        with open(os.path.join(out_dir, "image_golden.txt"), "w") as f:
            f.write("\n".join(header + self.lines) + "\n")


def make_inputs():
    rs = np.random.RandomState(1234)
    inputs = {}
    # 17x23x3 uint8: a diagonal gradient plus noise, and a few hard edges.
    y, x, c = np.meshgrid(np.arange(17), np.arange(23), np.arange(3), indexing="ij")
    grad = (y * 9 + x * 5 + c * 60) % 256
    noise = rs.randint(-40, 41, size=grad.shape)
    img = np.clip(grad + noise, 0, 255)
    img[5:9, 3:7, :] = 255
    img[12, :, 1] = 0
    inputs["u8_17x23x3"] = img.astype(np.uint8)
    # 9x7x1 float32 with negative and fractional values.
    inputs["f32_9x7x1"] = (rs.standard_normal((9, 7, 1)) * 40.0 + 20.0).astype(np.float32)
    # 64x48x3 uint8 for downsampling: smooth background plus a fine checkerboard
    # (aliases without antialiasing).
    y, x, c = np.meshgrid(np.arange(64), np.arange(48), np.arange(3), indexing="ij")
    smooth = 128 + 100 * np.sin(y / 9.0 + c) * np.cos(x / 7.0)
    checker = np.where(((y // 2) + (x // 3)) % 2 == 0, 25, -25)
    inputs["u8_64x48x3"] = np.clip(smooth + checker, 0, 255).astype(np.uint8)
    # One row / one column.
    inputs["u8_1x13x3"] = rs.randint(0, 256, size=(1, 13, 3)).astype(np.uint8)
    inputs["u8_11x1x2"] = rs.randint(0, 256, size=(11, 1, 2)).astype(np.uint8)
    # A batch of two float images.
    inputs["f32_2x5x6x2"] = rs.uniform(-1.0, 2.0, size=(2, 5, 6, 2)).astype(np.float32)
    # For dtype conversions: floats around [0, 1], some outside.
    inputs["f32_convert"] = np.concatenate([
        np.linspace(-0.25, 1.25, 61, dtype=np.float32),
        np.array([0.0, 1.0, 0.5, 1 / 255.0, 254.5 / 255.5, 255 / 255.5, -0.0], np.float32),
    ]).reshape(4, 17, 1)
    inputs["u8_all"] = np.arange(256, dtype=np.uint8).reshape(16, 16, 1)
    inputs["i32_convert"] = np.array(
        [0, 1, 255, 256, 8388607, 8388608, 2**31 - 1, -1, -8388608, -(2**31), 123456789, 2**24 + 1],
        np.int32).reshape(2, 6, 1)
    inputs["f64_convert"] = np.linspace(-0.1, 1.1, 25).reshape(5, 5, 1)
    inputs["f32_cast"] = np.array(
        [0.0, -0.0, 0.4, 0.5, 0.6, 1.5, 2.5, -0.4, -0.5, -1.5, -2.5, 254.9, 255.0, 255.5, 256.0, 300.7,
         -1.0, -300.7, 65504.0, 65520.0, 1e5, 3e9, -3e9, 1e20, -1e20, float("inf"), float("-inf"),
         float("nan"), 2147483520.0, 2147483648.0, -2147483648.0, 1.0000001, 1e-8, 6e-8, 3.4e38,
         0.1],
        np.float32).reshape(36)
    inputs["i64_cast"] = np.array(
        [0, 1, -1, 255, 256, -256, 2**31, 2**31 - 1, -(2**31) - 1, 2**40 + 5, -(2**53) - 1,
         2**63 - 1, -(2**63), 16777217],
        np.int64).reshape(14)
    inputs["u8_const"] = np.full((4, 5, 3), 77, np.uint8)
    return inputs


FULL_SIZES = {
    "u8_17x23x3": [(25, 37), (8, 11), (17, 23), (1, 23), (17, 1), (40, 9), (5, 50)],
    "f32_9x7x1": [(20, 15), (4, 3), (1, 1), (9, 7), (3, 14)],
    "u8_64x48x3": [(23, 17), (10, 37), (7, 5), (31, 23)],
    "u8_1x13x3": [(1, 5), (3, 29), (2, 13)],
    "u8_11x1x2": [(4, 3), (30, 1)],
    "f32_2x5x6x2": [(7, 9), (3, 4)],
}
SMALL_SIZES = {
    "u8_17x23x3": [(8, 11)],
    "f32_9x7x1": [(20, 15), (4, 3)],
    "u8_64x48x3": [(23, 17), (7, 5)],
    "u8_1x13x3": [(3, 29)],
}


def main(out_dir):
    w = Writer()
    inputs = make_inputs()
    for name, value in inputs.items():
        w.tensor(name, value)

    def resize(inp, method, antialias, preserve, h, wd):
        out = tf.image.resize(inputs[inp], [h, wd], method=method, antialias=antialias,
                              preserve_aspect_ratio=preserve)
        name = f"resize_{inp}_{method}_{int(antialias)}{'_p' if preserve else ''}_{h}x{wd}"
        w.tensor(name, out)
        w.case("resize", inp, method, int(antialias), int(preserve), h, wd, name)

    for method in ["bilinear", "bicubic", "nearest", "area"]:
        for antialias in [False, True]:
            if antialias and method in ("nearest", "area"):
                # TF ignores antialias for these; one case checks that.
                resize("u8_64x48x3", method, True, False, 23, 17)
                continue
            for inp, sizes in FULL_SIZES.items():
                for h, wd in sizes:
                    resize(inp, method, antialias, False, h, wd)
    for method in ["lanczos3", "lanczos5", "gaussian", "mitchellcubic"]:
        for antialias in [False, True]:
            for inp, sizes in SMALL_SIZES.items():
                for h, wd in sizes:
                    resize(inp, method, antialias, False, h, wd)
    resize("u8_17x23x3", "bilinear", False, True, 30, 30)
    resize("u8_64x48x3", "area", False, True, 20, 100)
    resize("f32_9x7x1", "bicubic", True, True, 5, 5)

    for frac in [0.5, 0.3, 0.9, 0.77, 1.0, 0.05]:
        out = w.tensor(f"central_crop_u8_17x23x3_{frac}", tf.image.central_crop(inputs["u8_17x23x3"], frac))
        w.case("central_crop", "u8_17x23x3", repr(frac), out)
    out = w.tensor("central_crop_f32_2x5x6x2_0.6", tf.image.central_crop(inputs["f32_2x5x6x2"], 0.6))
    w.case("central_crop", "f32_2x5x6x2", repr(0.6), out)
    for (y, x, h, wd) in [(0, 0, 17, 23), (3, 4, 5, 6), (16, 22, 1, 1), (0, 10, 17, 13)]:
        out = w.tensor(f"crop_u8_17x23x3_{y}_{x}_{h}_{wd}",
                       tf.image.crop_to_bounding_box(inputs["u8_17x23x3"], y, x, h, wd))
        w.case("crop", "u8_17x23x3", y, x, h, wd, out)
    out = w.tensor("crop_f32_2x5x6x2", tf.image.crop_to_bounding_box(inputs["f32_2x5x6x2"], 1, 2, 3, 4))
    w.case("crop", "f32_2x5x6x2", 1, 2, 3, 4, out)

    for k in range(-5, 6):
        out = w.tensor(f"rot90_u8_17x23x3_{k}", tf.image.rot90(inputs["u8_17x23x3"], k))
        w.case("rot90", "u8_17x23x3", k, out)
    for k in [1, 2, 3]:
        out = w.tensor(f"rot90_f32_2x5x6x2_{k}", tf.image.rot90(inputs["f32_2x5x6x2"], k))
        w.case("rot90", "f32_2x5x6x2", k, out)
    for inp in ["u8_17x23x3", "f32_2x5x6x2"]:
        out = w.tensor(f"flip_lr_{inp}", tf.image.flip_left_right(inputs[inp]))
        w.case("flip_left_right", inp, out)
        out = w.tensor(f"flip_ud_{inp}", tf.image.flip_up_down(inputs[inp]))
        w.case("flip_up_down", inp, out)

    conversions = [
        ("u8_all", "float32"), ("u8_all", "float64"), ("u8_all", "float16"), ("u8_all", "bfloat16"),
        ("u8_all", "int32"), ("u8_all", "int64"), ("f32_convert", "uint8"), ("f32_convert", "int32"),
        ("f32_convert", "float16"), ("f32_convert", "float64"), ("i32_convert", "uint8"),
        ("i32_convert", "float32"), ("i32_convert", "int64"), ("f64_convert", "uint8"),
        ("f64_convert", "float32"), ("f32_convert", "float32"),
    ]
    for inp, dtype in conversions:
        for saturate in [False, True]:
            out = w.tensor(f"convert_{inp}_{dtype}_{int(saturate)}",
                           tf.image.convert_image_dtype(inputs[inp], TF_DTYPES[dtype], saturate=saturate))
            w.case("convert", inp, dtype, int(saturate), out)

    for inp, dtype in [("f32_cast", "uint8"), ("f32_cast", "int32"), ("f32_cast", "int64"),
                       ("f32_cast", "bool"), ("f32_cast", "float16"), ("f32_cast", "bfloat16"),
                       ("f32_cast", "float64"), ("i64_cast", "int32"), ("i64_cast", "uint8"),
                       ("i64_cast", "float32"), ("i64_cast", "float16"), ("u8_all", "bool"),
                       ("i32_convert", "uint8"), ("i32_convert", "float32")]:
        out = w.tensor(f"cast_{inp}_{dtype}", tf.cast(inputs[inp], TF_DTYPES[dtype]))
        w.case("cast", inp, dtype, out)

    for inp in ["u8_17x23x3", "f32_9x7x1", "f32_2x5x6x2", "u8_const", "u8_1x13x3"]:
        out = w.tensor(f"standardize_{inp}", tf.image.per_image_standardization(inputs[inp]))
        w.case("standardize", inp, out)

    w.save(out_dir)
    print(f"wrote {len(w.blob)} bytes, {len(w.lines)} manifest lines to {out_dir}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
