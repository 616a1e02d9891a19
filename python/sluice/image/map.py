"""sluice.image's ops as map functions over one component of an element.

Each function here has the name and arguments of the eager op in
sluice.image, without the image itself, plus where to find it and put the
result:

- ``key``: the component the op reads: its name (a dict element's key, such
  as "image/encoded") or its index (default 0: the first component, the
  record of a TFRecordDataset).
- ``output_key``: the name of the result. The result takes the input's
  place (the input is dropped: ``key="image/encoded",
  output_key="image"`` turns the encoded bytes into the image); None keeps
  the input's name. If another component already has that name, the
  result replaces it.
- ``keep_input=True``: the input stays and the result is stored under
  ``output_key`` (replacing a component of that name, else added last).
- ``seed`` (random ops): None draws from the stage's seed (set it with
  ``Options(seed=...)``); an int s makes element i draw from the stream
  (s, i), so it equals the eager op with ``seed=(s, i)``. Either way an
  element's result does not depend on the map's parallelism or timing.
- ``name``: the map function's name (in stats and errors).

The result is a sluice.MapFunction: Dataset.map runs it in C++ without the
GIL, ``f.then(g)`` chains several into one map stage, and calling it on an
element applies it eagerly. Ops that can write into a preallocated tensor
(the decoders, resize, crop_to_bounding_box, flips, normalize and the fused
ops) write straight into the element's row of the batch when the map feeds
``batch(n)`` (map-and-batch fusion).

Errors name the op and the component; the pipeline adds the stage and the
element's origin (file and record).
"""

from . import (_decode_and_crop_jpeg_op, _decode_crop_resize_op, _decode_image_op,
               _decode_jpeg_op, _decode_png_op, _decode_random_crop_resize_op, _encode_jpeg_op,
               _encode_png_op, _extract_jpeg_shape_op, _floats, _map_seed,
               _random_resized_crop_op, _resize_op)
from . import _ops

__all__ = [
    "decode_jpeg", "decode_and_crop_jpeg", "decode_png", "decode_image", "extract_jpeg_shape",
    "encode_jpeg", "encode_png", "resize", "crop_to_bounding_box", "central_crop", "random_crop",
    "random_resized_crop", "flip_left_right", "flip_up_down", "random_flip_left_right",
    "random_flip_up_down", "rot90", "convert_image_dtype", "per_image_standardization",
    "normalize", "decode_random_crop_resize", "decode_crop_resize",
]


def _fn(op, key, output_key, keep_input, name, seed=None):
    return op.map_function(key, output_key, bool(keep_input), _map_seed(seed), name or "")


# ---- Codecs -----------------------------------------------------------------------

def decode_jpeg(channels=0, ratio=1, fancy_upscaling=True, try_recover_truncated=False,
                acceptable_fraction=1, dct_method="", strict=False, max_pixels=None, *, key=0,
                output_key=None, keep_input=False, name=None):
    """sluice.image.decode_jpeg on component ``key`` (encoded bytes)."""
    op = _decode_jpeg_op(channels, ratio, fancy_upscaling, try_recover_truncated,
                         acceptable_fraction, dct_method, strict, max_pixels)
    return _fn(op, key, output_key, keep_input, name)


def decode_and_crop_jpeg(crop_window, channels=0, ratio=1, fancy_upscaling=True,
                         try_recover_truncated=False, acceptable_fraction=1, dct_method="",
                         strict=False, max_pixels=None, *, key=0, output_key=None,
                         keep_input=False, name=None):
    """sluice.image.decode_and_crop_jpeg on component ``key``."""
    op = _decode_and_crop_jpeg_op(crop_window, channels, ratio, fancy_upscaling,
                                  try_recover_truncated, acceptable_fraction, dct_method, strict,
                                  max_pixels)
    return _fn(op, key, output_key, keep_input, name)


def decode_png(channels=0, dtype="uint8", max_pixels=None, *, key=0, output_key=None,
               keep_input=False, name=None):
    """sluice.image.decode_png on component ``key``."""
    return _fn(_decode_png_op(channels, dtype, max_pixels), key, output_key, keep_input, name)


def decode_image(channels=None, dtype="uint8", max_pixels=None, *, key=0, output_key=None,
                 keep_input=False, name=None):
    """sluice.image.decode_image on component ``key``."""
    return _fn(_decode_image_op(channels, dtype, max_pixels), key, output_key, keep_input, name)


def extract_jpeg_shape(output_type="int32", *, key=0, output_key=None, keep_input=False,
                       name=None):
    """sluice.image.extract_jpeg_shape on component ``key``."""
    return _fn(_extract_jpeg_shape_op(output_type), key, output_key, keep_input, name)


def encode_jpeg(format="", quality=95, progressive=False, optimize_size=False,  # noqa: A002
                chroma_downsampling=True, restart_interval=0, *, key=0, output_key=None,
                keep_input=False, name=None):
    """sluice.image.encode_jpeg on component ``key`` (its result: bytes)."""
    op = _encode_jpeg_op(format, quality, progressive, optimize_size, chroma_downsampling,
                         restart_interval)
    return _fn(op, key, output_key, keep_input, name)


def encode_png(compression=-1, *, key=0, output_key=None, keep_input=False, name=None):
    """sluice.image.encode_png on component ``key``."""
    return _fn(_encode_png_op(compression), key, output_key, keep_input, name)


# ---- Geometry -----------------------------------------------------------------------

def resize(size, method="bilinear", preserve_aspect_ratio=False, antialias=False, *, key=0,
           output_key=None, keep_input=False, name=None):
    """sluice.image.resize on component ``key``."""
    op = _resize_op(size, method, preserve_aspect_ratio, antialias)
    return _fn(op, key, output_key, keep_input, name)


def crop_to_bounding_box(offset_height, offset_width, target_height, target_width, *, key=0,
                         output_key=None, keep_input=False, name=None):
    """sluice.image.crop_to_bounding_box on component ``key``."""
    op = _ops.crop_to_bounding_box(int(offset_height), int(offset_width), int(target_height),
                                   int(target_width))
    return _fn(op, key, output_key, keep_input, name)


def central_crop(central_fraction, *, key=0, output_key=None, keep_input=False, name=None):
    """sluice.image.central_crop on component ``key``."""
    return _fn(_ops.central_crop(float(central_fraction)), key, output_key, keep_input, name)


def random_crop(size, seed=None, *, key=0, output_key=None, keep_input=False, name=None):
    """sluice.image.random_crop on component ``key``."""
    return _fn(_ops.random_crop([int(s) for s in size]), key, output_key, keep_input, name, seed)


def random_resized_crop(size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                        method="bilinear", antialias=False, seed=None, *, key=0,
                        output_key=None, keep_input=False, name=None):
    """sluice.image.random_resized_crop on component ``key``."""
    op = _random_resized_crop_op(size, scale, ratio, method, antialias)
    return _fn(op, key, output_key, keep_input, name, seed)


def flip_left_right(*, key=0, output_key=None, keep_input=False, name=None):
    """sluice.image.flip_left_right on component ``key``."""
    return _fn(_ops.flip(True), key, output_key, keep_input, name)


def flip_up_down(*, key=0, output_key=None, keep_input=False, name=None):
    """sluice.image.flip_up_down on component ``key``."""
    return _fn(_ops.flip(False), key, output_key, keep_input, name)


def random_flip_left_right(seed=None, *, key=0, output_key=None, keep_input=False, name=None):
    """sluice.image.random_flip_left_right on component ``key``."""
    return _fn(_ops.random_flip(True), key, output_key, keep_input, name, seed)


def random_flip_up_down(seed=None, *, key=0, output_key=None, keep_input=False, name=None):
    """sluice.image.random_flip_up_down on component ``key``."""
    return _fn(_ops.random_flip(False), key, output_key, keep_input, name, seed)


def rot90(k=1, *, key=0, output_key=None, keep_input=False, name=None):
    """sluice.image.rot90 on component ``key``."""
    return _fn(_ops.rot90(int(k)), key, output_key, keep_input, name)


# ---- Values -----------------------------------------------------------------------

def convert_image_dtype(dtype, saturate=False, *, key=0, output_key=None, keep_input=False,
                        name=None):
    """sluice.image.convert_image_dtype on component ``key``."""
    from .. import dtypes
    op = _ops.convert_image_dtype(dtypes.as_dtype(dtype).name, bool(saturate))
    return _fn(op, key, output_key, keep_input, name)


def per_image_standardization(*, key=0, output_key=None, keep_input=False, name=None):
    """sluice.image.per_image_standardization on component ``key``."""
    return _fn(_ops.per_image_standardization(), key, output_key, keep_input, name)


def normalize(mean, stddev, *, key=0, output_key=None, keep_input=False, name=None):
    """sluice.image.normalize on component ``key``."""
    return _fn(_ops.normalize(_floats(mean), _floats(stddev)), key, output_key, keep_input, name)


# ---- The fused decode-crop-resize ----------------------------------------------------------

def decode_random_crop_resize(size=(224, 224), scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                              channels=3, method="bilinear", dct_method="", fused=True,
                              mirror="never", mean=None, stddev=None, seed=None, max_pixels=None,
                              *, key=0, output_key=None, keep_input=False, name=None):
    """sluice.image.decode_random_crop_resize on component ``key`` (encoded bytes).

    Feeding batch(n), each image is decoded straight into its row of the
    batch (MapContext::AllocateOutput + DecodeRandomCropResizeInto).
    """
    op = _decode_random_crop_resize_op(size, scale, ratio, channels, method, dct_method, fused,
                                       mirror, mean, stddev, max_pixels)
    return _fn(op, key, output_key, keep_input, name, seed)


def decode_crop_resize(crop_window, size=(224, 224), channels=3, method="bilinear",
                       dct_method="", fused=True, mirror="never", mean=None, stddev=None,
                       max_pixels=None, *, key=0, output_key=None, keep_input=False, name=None):
    """sluice.image.decode_crop_resize on component ``key``."""
    op = _decode_crop_resize_op(crop_window, size, channels, method, dct_method, fused, mirror,
                                mean, stddev, max_pixels)
    return _fn(op, key, output_key, keep_input, name)
