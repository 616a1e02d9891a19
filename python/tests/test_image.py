"""sluice.image: the eager ops against TensorFlow's golden outputs (tests/data/ops), the
map-function forms against the eager ones, randomness under parallelism, errors."""

import pathlib

import numpy as np
import pytest

import sluice
from sluice import image as simg
from sluice import io as sio

DATA = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "ops"
CODEC = DATA / "codec"
MEAN = [123.675, 116.28, 103.53]
STD = [58.395, 57.12, 57.375]


# ---- Golden data ---------------------------------------------------------------------

def load_image_golden():
    blob = (DATA / "image_golden.bin").read_bytes()
    tensors, cases = {}, []
    for line in (DATA / "image_golden.txt").read_text().splitlines():
        f = line.split()
        if not f or f[0].startswith("#"):
            continue
        if f[0] == "tensor":
            name, dtype, dims, offset, nbytes = f[1], f[2], f[3], int(f[4]), int(f[5])
            if dtype == "bfloat16":  # NumPy has none (the cast cases to bfloat16 are skipped)
                continue
            shape = () if dims == "-" else tuple(int(d) for d in dims.split(","))
            a = np.frombuffer(blob, np.dtype(dtype).newbyteorder("<"), offset=offset,
                              count=nbytes // np.dtype(dtype).itemsize)
            tensors[name] = a.reshape(shape)
        else:
            cases.append(f)
    return tensors, cases


def load_codec_golden():
    blob = (CODEC / "decoded.bin").read_bytes()
    cases = []
    for line in (CODEC / "manifest.txt").read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        c = dict(kv.split("=", 1) for kv in line.split())
        dtype = np.dtype("<u2") if c["dtype"] == "uint16" else np.uint8
        shape = tuple(int(d) for d in c["shape"].split(","))
        c["expected"] = np.frombuffer(blob, dtype, offset=int(c["offset"]),
                                      count=int(c["nbytes"]) // np.dtype(dtype).itemsize
                                      ).reshape(shape)
        cases.append(c)
    return cases


@pytest.fixture(scope="module")
def image_golden():
    return load_image_golden()


@pytest.fixture(scope="module")
def codec_golden():
    return load_codec_golden()


def read(name):
    return (CODEC / name).read_bytes()


def of(cases, op):
    return [c for c in cases if c[0] == op]


def photo(h=240, w=320, seed=0):
    """A smooth synthetic RGB image (JPEG-friendly)."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    r = np.random.RandomState(seed)
    img = np.stack([127 + 120 * np.sin(x / (17 + 5 * r.rand()) + y / 31),
                    127 + 120 * np.cos(y / (13 + 5 * r.rand())),
                    (x + y) * 255 / (h + w)], axis=-1)
    return np.clip(img, 0, 255).astype(np.uint8)


# ---- Codecs against TensorFlow ----------------------------------------------------------

def test_decode_jpeg_equals_tensorflow(codec_golden):
    cases = [c for c in codec_golden if c["op"] == "decode_jpeg" and c["recover"] != "1"]
    assert len(cases) > 60
    for c in cases:
        data = read(c["input"])[:int(c["truncate"])]
        got = simg.decode_jpeg(data, channels=int(c["channels"]), ratio=int(c["ratio"]),
                               fancy_upscaling=c["fancy"] == "1",
                               dct_method="" if c["dct"] == "default" else c["dct"],
                               acceptable_fraction=float(c["fraction"]))
        assert got.dtype == np.uint8 and got.shape == c["expected"].shape, c
        np.testing.assert_array_equal(got, c["expected"], err_msg=str(c))


def png_low_alpha(data):
    """TF fills alpha of <8-bit PNGs without tRNS with libpng's filler, not opaque."""
    bit_depth = data[24]
    return bit_depth < 8 and b"tRNS" not in data


def test_decode_png_equals_tensorflow(codec_golden):
    cases = [c for c in codec_golden if c["op"] == "decode_png"]
    assert len(cases) > 80
    for c in cases:
        data = read(c["input"])
        bits = int(c["bits"])
        got = simg.decode_png(data, channels=int(c["channels"]),
                              dtype="uint8" if bits == 8 else "uint16")
        assert got.dtype == (np.uint8 if bits == 8 else np.int32), c
        want = c["expected"].astype(np.int64)
        got = got.astype(np.int64)
        assert got.shape == want.shape, c
        if png_low_alpha(data) and want.shape[2] == 4:
            np.testing.assert_array_equal(got[..., :3], want[..., :3], err_msg=str(c))
            assert (got[..., 3] == (255 if bits == 8 else 65535)).all()
        else:
            np.testing.assert_array_equal(got, want, err_msg=str(c))


def test_decode_and_crop_jpeg_is_the_crop_of_the_full_decode(codec_golden):
    cases = [c for c in codec_golden if c["op"] == "decode_and_crop_jpeg"]
    assert len(cases) == 8
    for c in cases:
        data = read(c["input"])
        y, x, h, w = (int(v) for v in c["crop"].split(","))
        ch = int(c["channels"])
        got = simg.decode_and_crop_jpeg(data, [y, x, h, w], channels=ch)
        np.testing.assert_array_equal(got, simg.decode_jpeg(data, channels=ch)[y:y + h, x:x + w])
        # TF's crop differs by a few levels at the window's borders (docs/ops.md).
        assert np.abs(got.astype(int) - c["expected"].astype(int)).max() <= 7


def test_encode_jpeg_bytes_equal_tensorflows(codec_golden):
    cases = [c for c in codec_golden if c["op"] == "encode_jpeg"]
    assert len(cases) == 6
    for c in cases:
        got = simg.encode_jpeg(np.array(c["expected"]), quality=int(c["quality"]),
                               chroma_downsampling=c["chroma"] == "420",
                               progressive=c["progressive"] == "1")
        assert isinstance(got, bytes) and got == read(c["output"]), c


def test_decode_image_extract_shape_encode_png():
    jpeg, png = read("rgb420_q90.jpg"), read("rgba8.png")
    np.testing.assert_array_equal(simg.decode_image(jpeg), simg.decode_jpeg(jpeg))
    np.testing.assert_array_equal(simg.decode_image(png, channels=3),
                                  simg.decode_png(png, channels=3))
    as_float = simg.decode_image(jpeg, dtype=sluice.float32)
    np.testing.assert_array_equal(as_float,
                                  simg.convert_image_dtype(simg.decode_jpeg(jpeg), "float32"))
    assert simg.extract_jpeg_shape(jpeg).tolist() == [23, 37, 3]
    assert simg.extract_jpeg_shape(jpeg).dtype == np.int32
    assert sio.extract_jpeg_shape(read("gray_q90.jpg"), output_type=sluice.int64).tolist() == \
        [23, 37, 1]
    img = simg.decode_png(png)
    again = simg.decode_png(simg.encode_png(img, compression=9))
    np.testing.assert_array_equal(again, img)
    with pytest.raises(ValueError, match="1 channel"):
        simg.encode_jpeg(photo(8, 8), format="grayscale")


# ---- Image ops against TensorFlow -----------------------------------------------------------

def test_resize_equals_tensorflow(image_golden):
    tensors, cases = image_golden
    cases = of(cases, "resize")
    assert len(cases) > 100
    for _, inp, method, antialias, preserve, h, w, out in cases:
        got = simg.resize(tensors[inp], (int(h), int(w)), method=method,
                          antialias=antialias == "1", preserve_aspect_ratio=preserve == "1")
        want = tensors[out]
        assert got.dtype == want.dtype and got.shape == want.shape, out
        if method == "nearest":
            np.testing.assert_array_equal(got, want, err_msg=out)
        else:
            scale = max(1.0, float(np.abs(want.astype(np.float64)).max()))
            assert np.abs(got.astype(np.float64) - want).max() <= 2e-6 * scale, out


def test_crops_flips_rot90_equal_tensorflow(image_golden):
    tensors, cases = image_golden
    n = 0
    for c in cases:
        if c[0] == "crop":
            got = simg.crop_to_bounding_box(tensors[c[1]], *(int(v) for v in c[2:6]))
            want = tensors[c[6]]
        elif c[0] == "central_crop":
            got, want = simg.central_crop(tensors[c[1]], float(c[2])), tensors[c[3]]
        elif c[0] == "rot90":
            got, want = simg.rot90(tensors[c[1]], int(c[2])), tensors[c[3]]
        elif c[0] == "flip_left_right":
            got, want = simg.flip_left_right(tensors[c[1]]), tensors[c[2]]
        elif c[0] == "flip_up_down":
            got, want = simg.flip_up_down(tensors[c[1]]), tensors[c[2]]
        else:
            continue
        n += 1
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want, err_msg=" ".join(c))
    assert n >= 30


def test_convert_and_standardize_equal_tensorflow(image_golden):
    tensors, cases = image_golden
    n = 0
    for _, inp, dtype, saturate, out in of(cases, "convert"):
        if inp not in tensors or out not in tensors:
            continue
        x = tensors[inp]
        # The documented differences (docs/ops.md): float -> uint8 without
        # saturate (TF wraps some elements) and float -> int32 saturation.
        if x.dtype.kind == "f" and dtype in ("uint8", "int32"):
            continue
        got = simg.convert_image_dtype(x, dtype, saturate=saturate == "1")
        np.testing.assert_array_equal(got, tensors[out], err_msg=out)
        n += 1
    assert n >= 20
    for _, inp, out in of(cases, "standardize"):
        got, want = simg.per_image_standardization(tensors[inp]), tensors[out]
        assert got.dtype == np.float32
        assert np.abs(got - want).max() <= 2e-6 * max(1.0, float(np.abs(want).max())), out


def test_normalize():
    img = photo(6, 5)
    got = simg.normalize(img, MEAN, STD)
    want = (img.astype(np.float32) - np.float32(MEAN)) / np.float32(STD)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_array_equal(simg.normalize(img.astype(np.float32), MEAN, STD), got)
    assert simg.normalize(img, 127.5, 2.0).dtype == np.float32
    with pytest.raises(sluice.InvalidArgumentError, match="stddev"):
        simg.normalize(img, MEAN, [1.0, 0.0, 1.0])


# ---- Randomness ------------------------------------------------------------------------

def test_random_ops_are_fixed_by_seed_and_stream():
    img = photo(40, 50)
    a = simg.random_crop(img, (20, 30, 3), seed=5)
    assert a.shape == (20, 30, 3)
    np.testing.assert_array_equal(a, simg.random_crop(img, (20, 30, 3), seed=(5, 0)))
    crops = {simg.random_crop(img, (20, 30, 3), seed=(5, i)).tobytes() for i in range(8)}
    assert len(crops) > 1  # the stream changes the draw
    flips = [simg.random_flip_left_right(img, seed=(1, i)) for i in range(16)]
    kinds = {0 if np.array_equal(f, img) else 1 for f in flips}
    assert kinds == {0, 1}
    for f in flips:
        assert np.array_equal(f, img) or np.array_equal(f, img[:, ::-1])
    r = simg.random_resized_crop(img, (16, 16), seed=3)
    assert r.shape == (16, 16, 3) and r.dtype == np.float32
    # The input is never changed (even by the in-place flip).
    assert np.array_equal(img, photo(40, 50))


def test_fused_op_unfused_path_equals_the_chain_of_ops():
    jpeg = simg.encode_jpeg(photo(), quality=90)
    full = simg.decode_jpeg(jpeg, channels=3)
    for i in range(6):
        got = simg.decode_random_crop_resize(jpeg, size=(64, 48), fused=False, seed=(9, i))
        want = simg.random_resized_crop(full, (64, 48), seed=(9, i))
        np.testing.assert_array_equal(got, want)
        norm = simg.decode_random_crop_resize(jpeg, size=(64, 48), fused=False, seed=(9, i),
                                              mean=MEAN, stddev=STD)
        np.testing.assert_array_equal(norm, simg.normalize(want, MEAN, STD))
        # The crop-window decode: close to the full decode (DCT-scaled).
        fused = simg.decode_random_crop_resize(jpeg, size=(64, 48), seed=(9, i))
        assert fused.shape == (64, 48, 3)
        assert np.abs(fused - want).mean() < 8
    mirrored = simg.decode_random_crop_resize(jpeg, size=(32, 32), fused=False, mirror="always",
                                              seed=1)
    plain = simg.decode_random_crop_resize(jpeg, size=(32, 32), fused=False, seed=1)
    np.testing.assert_array_equal(mirrored, plain[:, ::-1])
    window = simg.decode_crop_resize(jpeg, [10, 20, 100, 80], size=(50, 40), fused=False)
    np.testing.assert_allclose(window, simg.resize(full[10:110, 20:100], (50, 40)), atol=1e-4)


# ---- Map functions --------------------------------------------------------------------------

def images(n=6, h=30, w=40):
    return np.stack([photo(h, w, seed=i) for i in range(n)])


DETERMINISTIC = [
    (simg.resize, simg.map.resize, dict(size=(17, 23), antialias=True)),
    (simg.resize, simg.map.resize, dict(size=(8, 9), method="nearest")),
    (simg.crop_to_bounding_box, simg.map.crop_to_bounding_box,
     dict(offset_height=2, offset_width=3, target_height=10, target_width=12)),
    (simg.central_crop, simg.map.central_crop, dict(central_fraction=0.5)),
    (simg.flip_left_right, simg.map.flip_left_right, {}),
    (simg.flip_up_down, simg.map.flip_up_down, {}),
    (simg.rot90, simg.map.rot90, dict(k=3)),
    (simg.convert_image_dtype, simg.map.convert_image_dtype, dict(dtype=sluice.float32)),
    (simg.per_image_standardization, simg.map.per_image_standardization, {}),
    (simg.normalize, simg.map.normalize, dict(mean=MEAN, stddev=STD)),
]


@pytest.mark.parametrize("eager,mapped,kw", DETERMINISTIC,
                         ids=[f"{d[1].__name__}{i}" for i, d in enumerate(DETERMINISTIC)])
def test_map_function_equals_the_eager_op(eager, mapped, kw):
    imgs = images()
    labels = np.arange(len(imgs))
    ds = sluice.Dataset.from_tensor_slices({"image": imgs, "label": labels})
    fn = mapped(**kw, key="image")
    assert isinstance(fn, sluice.MapFunction)
    for par in (1, sluice.AUTOTUNE):
        out = list(ds.map(fn, num_parallel_calls=par))
        assert len(out) == len(imgs)
        for e, img, label in zip(out, imgs, labels):
            assert list(e) == ["image", "label"] and e["label"] == label
            np.testing.assert_array_equal(e["image"], eager(img, **kw))
    # Fed to batch (map-and-batch fusion): the same rows.
    batch = next(iter(ds.map(fn, num_parallel_calls=2).batch(len(imgs))))
    np.testing.assert_array_equal(batch["image"], np.stack([eager(i, **kw) for i in imgs]))
    # Called eagerly on one element.
    np.testing.assert_array_equal(fn({"image": imgs[0], "label": 0})["image"],
                                  eager(imgs[0], **kw))


RANDOM = [
    (simg.random_crop, simg.map.random_crop, dict(size=(11, 13, 3))),
    (simg.random_flip_left_right, simg.map.random_flip_left_right, {}),
    (simg.random_flip_up_down, simg.map.random_flip_up_down, {}),
    (simg.random_resized_crop, simg.map.random_resized_crop, dict(size=(12, 14))),
]


@pytest.mark.parametrize("eager,mapped,kw", RANDOM, ids=[d[1].__name__ for d in RANDOM])
def test_random_map_function_with_a_seed_equals_the_eager_op_on_its_stream(eager, mapped, kw):
    imgs = images(12)
    ds = sluice.Dataset.from_tensor_slices(imgs)
    out = list(ds.map(mapped(**kw, seed=21), num_parallel_calls=sluice.AUTOTUNE))
    for i, (e, img) in enumerate(zip(out, imgs)):
        np.testing.assert_array_equal(e, eager(img, **kw, seed=(21, i)))
    assert len({e.tobytes() for e in out}) > 1


def test_same_seed_same_crops_under_any_parallelism():
    jpegs = [simg.encode_jpeg(photo(120, 160, seed=i)) for i in range(16)]
    fn = simg.map.decode_random_crop_resize(size=(32, 32), mirror="random", mean=MEAN,
                                            stddev=STD)

    def run(par, seed):
        ds = (sluice.Dataset.from_tensor_slices(np.array(jpegs, dtype=object))
              .map(fn, num_parallel_calls=par).batch(4)
              .with_options(sluice.Options(seed=seed, map_and_batch_fusion=par != 1)))
        return np.concatenate([b for b in ds])

    a = run(1, 7)
    np.testing.assert_array_equal(a, run(sluice.AUTOTUNE, 7))
    np.testing.assert_array_equal(a, run(3, 7))
    assert not np.array_equal(a, run(sluice.AUTOTUNE, 8))
    # Each element differs from the others (its own stream).
    assert len({x.tobytes() for x in a}) == 16


def write_image_records(path, n=10):
    jpegs = [simg.encode_jpeg(photo(96 + 8 * i, 128, seed=i), quality=85) for i in range(n)]
    with sio.TFRecordWriter(str(path)) as w:
        for i, j in enumerate(jpegs):
            w.write(sio.serialize_example({"image/encoded": j, "image/class/label": i}))
    return jpegs


SPEC = {"image/encoded": sio.FixedLenFeature([], sluice.string),
        "image/class/label": sio.FixedLenFeature([], sluice.int64)}


@pytest.mark.parametrize("fused", [False, True])
def test_bench_pipeline_shape_parse_then_fused_decode_into_batch_rows(tmp_path, fused):
    """Case 1 / case 2 of bench/peers: parse + decode_random_crop_resize as one map stage
    feeding batch (each image decoded into its batch row)."""
    path = tmp_path / "img.tfrecord"
    jpegs = write_image_records(path)
    fn = sio.parse_example(SPEC).then(simg.map.decode_random_crop_resize(
        size=(56, 48), fused=fused, mirror="random", mean=MEAN, stddev=STD, seed=11,
        key="image/encoded", output_key="image"))
    assert fn.name == "parse_example+decode_random_crop_resize"

    def run(par, fusion):
        ds = (sluice.TFRecordDataset(str(path)).map(fn, num_parallel_calls=par)
              .batch(5, drop_remainder=True).prefetch(2)
              .with_options(sluice.Options(map_and_batch_fusion=fusion)))
        return list(ds)

    got = run(sluice.AUTOTUNE, True)
    assert [list(b) for b in got] == [["image", "image/class/label"]] * 2
    assert got[0]["image"].shape == (5, 56, 48, 3) and got[0]["image"].dtype == np.float32
    images_ = np.concatenate([b["image"] for b in got])
    assert np.concatenate([b["image/class/label"] for b in got]).tolist() == list(range(10))
    for other in (run(1, True), run(2, False)):
        np.testing.assert_array_equal(np.concatenate([b["image"] for b in other]), images_)
    for i, j in enumerate(jpegs):
        want = simg.decode_random_crop_resize(j, size=(56, 48), fused=fused, mirror="random",
                                              mean=MEAN, stddev=STD, seed=(11, i))
        np.testing.assert_array_equal(images_[i], want)


def test_component_selection_and_naming():
    img = photo(10, 12)
    e = {"a": np.int64(1), "img": img, "b": b"x"}
    flip = simg.map.flip_left_right
    out = flip(key="img")(e)
    assert list(out) == ["a", "img", "b"]
    np.testing.assert_array_equal(out["img"], img[:, ::-1])
    # output_key renames in place; the input goes.
    out = flip(key="img", output_key="flipped")(e)
    assert list(out) == ["a", "flipped", "b"]
    # keep_input keeps it and adds the result last.
    out = flip(key="img", output_key="flipped", keep_input=True)(e)
    assert list(out) == ["a", "img", "b", "flipped"]
    np.testing.assert_array_equal(out["img"], img)
    # An output_key naming another component replaces that one.
    out = flip(key="img", output_key="a")(e)
    assert list(out) == ["a", "b"] and out["a"].shape == img.shape
    # By index (negative from the end), on tuples and single values.
    t = flip(key=1)((np.int64(5), img))
    assert isinstance(t, tuple) and t[0] == 5
    np.testing.assert_array_equal(t[1], img[:, ::-1])
    np.testing.assert_array_equal(flip(key=-1)((np.int64(5), img))[1], img[:, ::-1])
    np.testing.assert_array_equal(flip()(img), img[:, ::-1])
    with pytest.raises(sluice.NotFoundError, match="'nope'.*img|img.*nope"):
        flip(key="nope")(e)
    with pytest.raises(sluice.InvalidArgumentError, match="component 5"):
        flip(key=5)(e)
    with pytest.raises(ValueError, match="output_key"):
        flip(key="img", keep_input=True)
    with pytest.raises(TypeError, match="key"):
        flip(key=1.5)


def test_decoders_as_map_functions_equal_eager():
    jpeg, png = read("rgb420_q90.jpg"), read("rgb8.png")
    ds = sluice.Dataset.from_tensor_slices({"j": np.array([jpeg], dtype=object),
                                            "p": np.array([png], dtype=object)})
    fn = (simg.map.decode_jpeg(channels=1, key="j")
          .then(simg.map.decode_png(key="p", output_key="png_pixels"))
          .then(simg.map.encode_jpeg(quality=80, key="j", output_key="again", keep_input=True)))
    e = next(iter(ds.map(fn)))
    assert list(e) == ["j", "png_pixels", "again"]
    np.testing.assert_array_equal(e["j"], simg.decode_jpeg(jpeg, channels=1))
    np.testing.assert_array_equal(e["png_pixels"], simg.decode_png(png))
    assert e["again"] == simg.encode_jpeg(simg.decode_jpeg(jpeg, channels=1), quality=80)


# ---- Errors ---------------------------------------------------------------------------

def test_corrupt_input_errors_name_the_op_component_and_origin(tmp_path):
    with pytest.raises(sluice.InvalidArgumentError, match="(?i)jpeg"):
        simg.decode_jpeg(b"\xff\xd8\xff not a jpeg at all")
    jpeg = read("rgb420_q90.jpg")
    with pytest.raises(sluice.InvalidArgumentError):
        simg.decode_jpeg(jpeg[:len(jpeg) // 2], strict=True)
    with pytest.raises(sluice.InvalidArgumentError, match="(?i)unsupported image format|GIF"):
        simg.decode_image(b"GIF89a" + b"\x00" * 20)
    with pytest.raises(sluice.ResourceExhaustedError):
        simg.decode_jpeg(simg.encode_jpeg(photo(64, 64)), max_pixels=1000)
    with pytest.raises(sluice.InvalidArgumentError, match="decode it first|string"):
        simg.resize(np.array([b"x"], dtype=object), (2, 2))
    path = tmp_path / "bad.tfrecord"
    with sio.TFRecordWriter(str(path)) as w:
        w.write(sio.serialize_example({"image/encoded": simg.encode_jpeg(photo(16, 16)),
                                       "image/class/label": 0}))
        w.write(sio.serialize_example({"image/encoded": b"\x89PNG\r\n\x1a\n broken",
                                       "image/class/label": 1}))
    ds = sluice.TFRecordDataset(str(path)).map(sio.parse_example(SPEC).then(
        simg.map.decode_random_crop_resize(size=(8, 8), key="image/encoded", output_key="image")),
        name="augment")
    it = iter(ds)
    assert next(it)["image"].shape == (8, 8, 3)
    with pytest.raises(sluice.InvalidArgumentError) as e:
        next(it)
    msg = str(e.value)
    for part in ("decode_random_crop_resize", "image/encoded", "augment", "bad.tfrecord",
                 "record 1"):
        assert part in msg, (part, msg)


def test_bad_arguments():
    img = photo(10, 10)
    with pytest.raises(sluice.InvalidArgumentError):
        simg.crop_to_bounding_box(img, 5, 5, 10, 10)
    with pytest.raises(sluice.InvalidArgumentError):
        simg.central_crop(img, 1.5)
    with pytest.raises(ValueError, match="method|bilinear"):
        simg.resize(img, (4, 4), method="sideways")
    with pytest.raises(ValueError, match="mirror"):
        simg.map.decode_random_crop_resize(mirror="sometimes")
    with pytest.raises(ValueError, match="size"):
        simg.resize(img, 4)
    with pytest.raises(ValueError, match="one int"):
        simg.map.random_crop((2, 2, 3), seed=(1, 2))
