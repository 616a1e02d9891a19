"""A small cats_vs_dogs-shaped image folder, and the NumPy image helpers the samples use.

The tutorials' data set (train/cats, train/dogs, valid/cats, valid/dogs,
JPEG files) is large; make_cats_vs_dogs writes one of the same layout in
a few milliseconds: binary PPM images of random sizes, "cats" with a
bright horizontal band and "dogs" with a vertical one, so that a small
model learns them in an epoch or two.

decode_image reads binary PPM with NumPy, and JPEG / PNG with
sluice.image.decode_image where the installed sluice has sluice.image.
"""

import os

import numpy as np

CLASSES = ("cats", "dogs")


def make_cats_vs_dogs(root, train_per_class=48, valid_per_class=16, seed=0):
    """Writes root/{train,valid}/{cats,dogs}/NNNN.ppm; returns root."""
    rng = np.random.default_rng(seed)
    for split, n in (("train", train_per_class), ("valid", valid_per_class)):
        for label, name in enumerate(CLASSES):
            folder = os.path.join(root, split, name)
            os.makedirs(folder, exist_ok=True)
            for i in range(n):
                h, w = rng.integers(48, 97, size=2)
                image = rng.integers(0, 96, size=(h, w, 3), dtype=np.uint8)
                if label == 0:
                    image[h // 3: 2 * h // 3, :, :] += 128
                else:
                    image[:, w // 3: 2 * w // 3, :] += 128
                with open(os.path.join(folder, f"{i:04d}.ppm"), "wb") as f:
                    f.write(b"P6\n%d %d\n255\n" % (w, h) + image.tobytes())
    return root


def list_images(root, split):
    """(filenames, labels) of root/split/cats then root/split/dogs, as the tutorial lists them."""
    filenames, labels = [], []
    for label, name in enumerate(CLASSES):
        folder = os.path.join(root, split, name)
        names = sorted(os.listdir(folder))
        filenames += [os.path.join(folder, n) for n in names]
        labels += [label] * len(names)
    return filenames, labels


def _decode_ppm(contents):
    # "P6", width, height, maxval, each followed by one whitespace byte.
    fields, pos = [], 0
    while len(fields) < 4:
        while contents[pos:pos + 1].isspace():
            pos += 1
        if contents[pos:pos + 1] == b"#":
            pos = contents.index(b"\n", pos) + 1
            continue
        end = pos
        while not contents[end:end + 1].isspace():
            end += 1
        fields.append(contents[pos:end])
        pos = end
    w, h, maxval = int(fields[1]), int(fields[2]), int(fields[3])
    if maxval != 255:
        raise ValueError(f"PPM with maxval {maxval}: only 8-bit PPM is read here")
    pixels = np.frombuffer(contents, np.uint8, count=h * w * 3, offset=pos + 1)
    return pixels.reshape(h, w, 3)


def decode_image(contents):
    """An HxWx3 uint8 image from PPM, JPEG or PNG bytes."""
    contents = bytes(contents)
    if contents[:2] == b"P6":
        return _decode_ppm(contents)
    try:
        import sluice.image as sluice_image
    except ImportError:
        raise ValueError("this sluice has no sluice.image to decode JPEG or PNG; "
                         "the samples' own data is PPM") from None
    return np.asarray(sluice_image.decode_image(contents, channels=3))


def resize(image, size):
    """Bilinear resize of an HxWxC image to size=(height, width) as float32
    (tf.image.resize's default: half-pixel centers, no antialiasing)."""
    h, w = image.shape[:2]
    out_h, out_w = size

    def taps(n_in, n_out):
        x = (np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5
        x = np.clip(x, 0, n_in - 1)
        lo = np.floor(x).astype(np.int64)
        hi = np.minimum(lo + 1, n_in - 1)
        return lo, hi, (x - lo).astype(np.float32)

    y0, y1, fy = taps(h, out_h)
    x0, x1, fx = taps(w, out_w)
    img = image.astype(np.float32)
    top = img[y0] * (1 - fy)[:, None, None] + img[y1] * fy[:, None, None]
    return top[:, x0] * (1 - fx)[None, :, None] + top[:, x1] * fx[None, :, None]
