"""sluice.image: tf.image's ops on NumPy arrays and bytes, run by sluice's C++ kernels.

Every op here works eagerly on one value (an image array, or the encoded
bytes for the decoders) and returns a NumPy array (bytes for the
encoders)::

    img = sluice.image.decode_jpeg(open("cat.jpg", "rb").read(), channels=3)
    small = sluice.image.resize(img, (224, 224), antialias=True)

and, under the same name in ``sluice.image.map``, as a map function over
one component of a pipeline's elements, run in C++ without the GIL::

    ds = ds.map(sluice.image.map.decode_random_crop_resize(
        size=(224, 224), key="image/encoded", output_key="image", mirror="random",
        mean=[123.675, 116.28, 103.53], stddev=[58.395, 57.12, 57.375]),
        num_parallel_calls=sluice.AUTOTUNE)

Names, arguments and defaults are tf.image's (and tf.io's for the codecs).
Images are [height, width, channels] arrays; the ops that say so also take
a batch [batch, height, width, channels]. Inputs are copied into sluice
tensors; results are arrays viewing sluice's buffers (no copy).

Random ops take ``seed``: None draws a fresh seed (as tf.image does with no
seed); an int s uses the random stream (s, 0); a pair (s, i) the stream
(s, i), like tf.image's stateless_random_* ops. In a pipeline, element i of
``map.random_*(..., seed=s)`` draws from (s, i), so it equals the eager op
with seed=(s, i); without seed the map uses the stage's own seed (from
``Options(seed=...)``). Either way an element's result does not depend on
the map's parallelism.

Errors: undecodable bytes and bad arguments raise InvalidArgumentError
naming the op; an image over ``max_pixels`` (checked from the header before
anything is allocated) ResourceExhaustedError.

Sluice's additions to tf.image: ``normalize`` (per-channel mean/stddev),
``random_resized_crop`` (torchvision's RandomResizedCrop window),
``decode_random_crop_resize`` and ``decode_crop_resize`` (decode only the
crop window's blocks at a reduced DCT scale, then resize, mirror and
normalize in one pass: the ImageNet training recipe), and ``strict`` JPEG
decoding. decode_png(dtype=uint16) returns int32 arrays (values 0..65535):
sluice has no uint16.
"""

import random as _random

from .. import _sluice
from .. import dtypes as _dtypes

__all__ = [
    "ResizeMethod", "decode_jpeg", "decode_and_crop_jpeg", "decode_png", "decode_image",
    "extract_jpeg_shape", "encode_jpeg", "encode_png", "resize", "crop_to_bounding_box",
    "central_crop", "random_crop", "random_resized_crop", "flip_left_right", "flip_up_down",
    "random_flip_left_right", "random_flip_up_down", "rot90", "convert_image_dtype",
    "per_image_standardization", "normalize", "decode_random_crop_resize", "decode_crop_resize",
    "map",
]

_ops = _sluice.image_ops
_MASK = (1 << 64) - 1
_DEFAULT_MAX_PIXELS = 1 << 27


class ResizeMethod:
    """tf.image.ResizeMethod's names."""

    BILINEAR = "bilinear"
    NEAREST_NEIGHBOR = "nearest"
    BICUBIC = "bicubic"
    AREA = "area"
    LANCZOS3 = "lanczos3"
    LANCZOS5 = "lanczos5"
    GAUSSIAN = "gaussian"
    MITCHELLCUBIC = "mitchellcubic"


# ---- Argument helpers (shared with sluice.image.map) ---------------------------------

def _hw(size, what="size"):
    try:
        h, w = (int(x) for x in size)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be (height, width), got {size!r}") from None
    return h, w


def _pair(v, what):
    try:
        a, b = (float(x) for x in v)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a pair of numbers, got {v!r}") from None
    return [a, b]


def _floats(v):
    if v is None:
        return []
    if isinstance(v, (int, float)):
        return [float(v)]
    return [float(x) for x in v]


def _window(w):
    try:
        out = [int(x) for x in w]
    except (TypeError, ValueError):
        out = []
    if len(out) != 4:
        raise ValueError("crop_window must be [offset_height, offset_width, height, width], "
                         f"got {w!r}")
    return out


def _max_pixels(m):
    return _DEFAULT_MAX_PIXELS if m is None else int(m)


def _mirror(m):
    if m is True:
        return "always"
    if m is False or m is None:
        return "never"
    return str(m)


def _method(m):
    return "bilinear" if m is None else str(m)


def _eager_seed(seed):
    """(seed, stream) of an eager random op's seed argument."""
    if seed is None:
        return _random.SystemRandom().getrandbits(64), 0
    if isinstance(seed, (tuple, list)):
        if len(seed) != 2:
            raise ValueError(f"seed must be an int or a pair (seed, stream), got {seed!r}")
        return int(seed[0]) & _MASK, int(seed[1]) & _MASK
    return int(seed) & _MASK, 0


def _map_seed(seed):
    """The seed of a map function (an int, or None: the stage's seed)."""
    if seed is None:
        return None
    if isinstance(seed, (tuple, list)):
        raise ValueError("a map function's seed is one int: element i draws from the stream "
                         "(seed, i)")
    return int(seed) & _MASK


def _run(op, value, seed=None):
    if op.random:
        s, stream = _eager_seed(seed)
        return op(value, s, stream)
    return op(value)


# ---- Op factories: one per op, used by both forms ---------------------------------------

def _decode_jpeg_op(channels=0, ratio=1, fancy_upscaling=True, try_recover_truncated=False,
                    acceptable_fraction=1, dct_method="", strict=False, max_pixels=None):
    return _ops.decode_jpeg(int(channels), int(ratio), bool(fancy_upscaling),
                            bool(try_recover_truncated), float(acceptable_fraction),
                            str(dct_method or ""), bool(strict), _max_pixels(max_pixels))


def _decode_and_crop_jpeg_op(crop_window, channels=0, ratio=1, fancy_upscaling=True,
                             try_recover_truncated=False, acceptable_fraction=1, dct_method="",
                             strict=False, max_pixels=None):
    return _ops.decode_and_crop_jpeg(_window(crop_window), int(channels), int(ratio),
                                     bool(fancy_upscaling), bool(try_recover_truncated),
                                     float(acceptable_fraction), str(dct_method or ""),
                                     bool(strict), _max_pixels(max_pixels))


def _png_bits(dtype):
    name = dtype if isinstance(dtype, str) else getattr(dtype, "name", None)
    if name is None:
        import numpy as np
        name = np.dtype(dtype).name
    if name == "uint8":
        return 8
    if name == "uint16":
        return 16
    raise ValueError(f"decode_png: dtype must be uint8 or uint16, got {dtype!r}")


def _decode_png_op(channels=0, dtype="uint8", max_pixels=None):
    return _ops.decode_png(int(channels), _png_bits(dtype), _max_pixels(max_pixels))


def _decode_image_op(channels=None, dtype="uint8", max_pixels=None):
    return _ops.decode_image(int(channels or 0), _dtypes.as_dtype(dtype).name,
                             _max_pixels(max_pixels))


def _extract_jpeg_shape_op(output_type="int32"):
    return _ops.extract_jpeg_shape(_dtypes.as_dtype(output_type).name)


def _encode_jpeg_op(format="", quality=95, progressive=False, optimize_size=False,  # noqa: A002
                    chroma_downsampling=True, restart_interval=0):
    if format not in ("", "grayscale", "rgb"):
        raise ValueError(f"encode_jpeg: format must be '', 'grayscale' or 'rgb', got {format!r}")
    return _ops.encode_jpeg(int(quality), bool(progressive), bool(optimize_size),
                            bool(chroma_downsampling), int(restart_interval))


def _check_format(image, format):  # noqa: A002
    if format:
        channels = {"grayscale": 1, "rgb": 3}[format]
        shape = getattr(image, "shape", None)
        if shape is not None and len(shape) == 3 and shape[-1] != channels:
            raise ValueError(f"encode_jpeg: format={format!r} needs {channels} channel(s), "
                             f"the image has {shape[-1]}")


def _encode_png_op(compression=-1):
    return _ops.encode_png(int(compression))


def _resize_op(size, method="bilinear", preserve_aspect_ratio=False, antialias=False):
    h, w = _hw(size)
    return _ops.resize(h, w, _method(method), bool(antialias), bool(preserve_aspect_ratio))


def _random_resized_crop_op(size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                            method="bilinear", antialias=False):
    h, w = _hw(size)
    return _ops.random_resized_crop(h, w, _pair(scale, "scale"), _pair(ratio, "ratio"),
                                    _method(method), bool(antialias))


def _fused_args(size, channels, method, dct_method, fused, mirror, mean, stddev, max_pixels):
    h, w = _hw(size)
    return (h, w, int(channels), _method(method), str(dct_method or ""), bool(fused),
            _mirror(mirror), _floats(mean), _floats(stddev), _max_pixels(max_pixels))


def _decode_random_crop_resize_op(size=(224, 224), scale=(0.08, 1.0),
                                  ratio=(3.0 / 4.0, 4.0 / 3.0), channels=3, method="bilinear",
                                  dct_method="", fused=True, mirror="never", mean=None,
                                  stddev=None, max_pixels=None):
    h, w, c, m, dct, f, mir, mn, sd, mp = _fused_args(size, channels, method, dct_method, fused,
                                                      mirror, mean, stddev, max_pixels)
    return _ops.decode_random_crop_resize(h, w, _pair(scale, "scale"), _pair(ratio, "ratio"), c,
                                          m, dct, f, mir, mn, sd, mp)


def _decode_crop_resize_op(crop_window, size=(224, 224), channels=3, method="bilinear",
                           dct_method="", fused=True, mirror="never", mean=None, stddev=None,
                           max_pixels=None):
    h, w, c, m, dct, f, mir, mn, sd, mp = _fused_args(size, channels, method, dct_method, fused,
                                                      mirror, mean, stddev, max_pixels)
    return _ops.decode_crop_resize(_window(crop_window), h, w, c, m, dct, f, mir, mn, sd, mp)


# ---- Codecs -----------------------------------------------------------------------

def decode_jpeg(contents, channels=0, ratio=1, fancy_upscaling=True, try_recover_truncated=False,
                acceptable_fraction=1, dct_method="", strict=False, max_pixels=None, name=None):
    """A JPEG's pixels, uint8 [height, width, channels] (tf.io.decode_jpeg).

    channels 0 (as stored), 1 or 3; ratio 1, 2, 4 or 8 (DCT scaling);
    dct_method "" / "INTEGER_FAST" (TF's default) or "INTEGER_ACCURATE".
    Pixels equal TensorFlow's for the same options. strict=True (sluice)
    refuses what libjpeg would paper over (corrupt data, truncation).
    """
    return _run(_decode_jpeg_op(channels, ratio, fancy_upscaling, try_recover_truncated,
                                acceptable_fraction, dct_method, strict, max_pixels), contents)


def decode_and_crop_jpeg(contents, crop_window, channels=0, ratio=1, fancy_upscaling=True,
                         try_recover_truncated=False, acceptable_fraction=1, dct_method="",
                         strict=False, max_pixels=None, name=None):
    """crop_window [y, x, height, width] of a JPEG, decoding only its blocks
    (tf.image.decode_and_crop_jpeg). Equal to cropping decode_jpeg's result."""
    return _run(_decode_and_crop_jpeg_op(crop_window, channels, ratio, fancy_upscaling,
                                         try_recover_truncated, acceptable_fraction, dct_method,
                                         strict, max_pixels), contents)


def decode_png(contents, channels=0, dtype="uint8", max_pixels=None, name=None):
    """A PNG's pixels (tf.io.decode_png): uint8, or with dtype=uint16 int32 in 0..65535."""
    return _run(_decode_png_op(channels, dtype, max_pixels), contents)


def decode_image(contents, channels=None, dtype="uint8", name=None, expand_animations=True,
                 max_pixels=None):
    """A JPEG or PNG, by its leading bytes (tf.io.decode_image; no GIF, BMP or WebP).

    dtype other than uint8 converts as convert_image_dtype (floats in [0, 1]).
    """
    return _run(_decode_image_op(channels, dtype, max_pixels), contents)


def extract_jpeg_shape(contents, output_type="int32", name=None):
    """[height, width, components] from a JPEG's header (tf.io.extract_jpeg_shape)."""
    return _run(_extract_jpeg_shape_op(output_type), contents)


def encode_jpeg(image, format="", quality=95, progressive=False, optimize_size=False,  # noqa: A002
                chroma_downsampling=True, restart_interval=0, name=None):
    """JPEG bytes of a uint8 [height, width, 1 or 3] image (tf.io.encode_jpeg).

    The bytes equal tf.io.encode_jpeg's for the same options (300 dpi, no
    XMP). restart_interval > 0 (sluice) adds restart markers that let
    decode_and_crop_jpeg and the fused ops skip blocks outside a window.
    """
    _check_format(image, format)
    return _run(_encode_jpeg_op(format, quality, progressive, optimize_size, chroma_downsampling,
                                restart_interval), image)


def encode_png(image, compression=-1, name=None):
    """PNG bytes of a [height, width, 1-4] image: uint8, or int32 0..65535 for 16 bits
    (tf.io.encode_png)."""
    return _run(_encode_png_op(compression), image)


# ---- Geometry -----------------------------------------------------------------------

def resize(images, size, method="bilinear", preserve_aspect_ratio=False, antialias=False,
           name=None):
    """tf.image.resize (TF 2 semantics): float32 out, except "nearest" keeps the dtype."""
    return _run(_resize_op(size, method, preserve_aspect_ratio, antialias), images)


def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """tf.image.crop_to_bounding_box (an image or a batch)."""
    return _run(_ops.crop_to_bounding_box(int(offset_height), int(offset_width),
                                          int(target_height), int(target_width)), image)


def central_crop(image, central_fraction):
    """tf.image.central_crop: the central central_fraction of each side."""
    return _run(_ops.central_crop(float(central_fraction)), image)


def random_crop(value, size, seed=None, name=None):
    """tf.image.random_crop: a ``size``-shaped slice of ``value`` at a random offset."""
    return _run(_ops.random_crop([int(s) for s in size]), value, seed)


def random_resized_crop(image, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                        method="bilinear", antialias=False, seed=None):
    """A random window (torchvision's RandomResizedCrop: area fraction in ``scale``,
    aspect ratio in ``ratio``) resized to ``size``; float32 out."""
    return _run(_random_resized_crop_op(size, scale, ratio, method, antialias), image, seed)


def flip_left_right(image):
    """tf.image.flip_left_right (an image or a batch)."""
    return _run(_ops.flip(True), image)


def flip_up_down(image):
    """tf.image.flip_up_down (an image or a batch)."""
    return _run(_ops.flip(False), image)


def random_flip_left_right(image, seed=None):
    """tf.image.random_flip_left_right: flipped with probability 1/2 (each image of a batch)."""
    return _run(_ops.random_flip(True), image, seed)


def random_flip_up_down(image, seed=None):
    """tf.image.random_flip_up_down."""
    return _run(_ops.random_flip(False), image, seed)


def rot90(image, k=1, name=None):
    """tf.image.rot90: k quarter turns counter-clockwise."""
    return _run(_ops.rot90(int(k)), image)


# ---- Values -----------------------------------------------------------------------

def convert_image_dtype(image, dtype, saturate=False, name=None):
    """tf.image.convert_image_dtype: integers span [0, MAX], floats [0, 1]."""
    return _run(_ops.convert_image_dtype(_dtypes.as_dtype(dtype).name, bool(saturate)), image)


def per_image_standardization(image):
    """tf.image.per_image_standardization: zero mean, unit variance per image; float32."""
    return _run(_ops.per_image_standardization(), image)


def normalize(image, mean, stddev):
    """(image - mean[c]) / stddev[c] per channel (the last dimension), float32.

    mean and stddev hold one value per channel or one for all; values are
    used as they are (for uint8 images, means in 0..255).
    """
    return _run(_ops.normalize(_floats(mean), _floats(stddev)), image)


# ---- The fused decode-crop-resize ----------------------------------------------------------

def decode_random_crop_resize(contents, size=(224, 224), scale=(0.08, 1.0),
                              ratio=(3.0 / 4.0, 4.0 / 3.0), channels=3, method="bilinear",
                              dct_method="", fused=True, mirror="never", mean=None, stddev=None,
                              seed=None, max_pixels=None):
    """Decode, random-resized-crop, resize (and mirror, normalize) in one op.

    The window is random_resized_crop's, drawn from the header's size alone
    (the same window as the unfused ops for the same seed). fused=True
    decodes only the window's JPEG blocks, at the largest DCT scale that
    keeps it at least ``size`` (close to the unfused result with
    antialias); fused=False decodes everything (equal to
    random_resized_crop(decode_image(...))). mirror: "never", "always" or
    "random" (then drawn after the window, as random_flip_left_right);
    mean/stddev: normalize per channel. float32 [height, width, channels]
    out (uint8 for method="nearest").
    """
    op = _decode_random_crop_resize_op(size, scale, ratio, channels, method, dct_method, fused,
                                       mirror, mean, stddev, max_pixels)
    return _run(op, contents, seed)


def decode_crop_resize(contents, crop_window, size=(224, 224), channels=3, method="bilinear",
                       dct_method="", fused=True, mirror="never", mean=None, stddev=None,
                       max_pixels=None):
    """decode_random_crop_resize with a given window [y, x, height, width] (full-resolution
    pixels); mirror "random" is not accepted (no random stream)."""
    op = _decode_crop_resize_op(crop_window, size, channels, method, dct_method, fused, mirror,
                                mean, stddev, max_pixels)
    return _run(op, contents)


from . import map  # noqa: E402,A004
