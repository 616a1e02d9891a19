"""sluice.io: parse_example (map function and eager), TFRecordWriter, serialize_example,
read_file, against TensorFlow's golden outputs (tests/data/tf) and the sluice CLI."""

import base64
import json
import os
import pathlib
import struct
import subprocess

import numpy as np
import pytest

import sluice
from sluice import io as sio

DATA = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data"
TF = DATA / "tf"


def cli():
    build = os.environ.get("SLUICE_BUILD_DIR")
    path = pathlib.Path(build) / "tools" / "sluice" if build else None
    return str(path) if path is not None and path.exists() else None


needs_cli = pytest.mark.skipif(cli() is None,
                               reason="the sluice CLI is not built (SLUICE_BUILD_DIR/tools/sluice)")


# ---- Golden data helpers ------------------------------------------------------------

def f32(bits):
    if not isinstance(bits, str):
        return float(bits)
    return struct.unpack("<f", struct.pack("<I", int(bits, 16)))[0]


def golden(t):
    """A dense tensor of the golden JSON as a NumPy array."""
    if t["dtype"] == "float32":
        a = np.array([int(v, 16) for v in t["values"]], np.uint32).view(np.float32)
    elif t["dtype"] == "int64":
        a = np.array(t["values"], np.int64)
    else:
        a = np.empty(len(t["values"]), object)
        a[:] = [bytes.fromhex(v) for v in t["values"]]
    return a.reshape(t["shape"])


def spec_of(js):
    out = {}
    for key, f in js.items():
        default = f.get("default_value")
        if default is not None:
            convert = {"float32": f32, "string": bytes.fromhex}.get(f["dtype"], int)
            default = ([convert(d) for d in default] if isinstance(default, list)
                       else convert(default))
        if f["type"] == "FixedLenFeature":
            out[key] = sio.FixedLenFeature(f["shape"], f["dtype"], default)
        elif f["type"] == "VarLenFeature":
            out[key] = sio.VarLenFeature(f["dtype"])
        else:
            out[key] = sio.FixedLenSequenceFeature(f["shape"], f["dtype"], f["allow_missing"],
                                                   default)
    return out


def same(got, want):
    """Exact equality, floats by bit pattern (NaN, -0.0, denormals)."""
    got = np.asarray(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype == np.float32:
        assert got.dtype == np.float32
        assert got.view(np.uint32).tolist() == want.view(np.uint32).tolist()
    elif want.dtype == object:
        assert got.reshape(-1).tolist() == want.reshape(-1).tolist()
    else:
        assert got.dtype == want.dtype and got.tolist() == want.tolist()


@pytest.fixture(scope="module")
def examples():
    return json.loads((TF / "examples_parsed.json").read_text())


def check_batch_against_tf(out, want, n):
    for key in ("frames", "label", "name", "scores"):
        same(out[key], golden(want[key]))
    # VarLen: TF's SparseTensor is sluice's values + row lengths.
    tags = want["tags"]
    same(out["tags"], golden(tags["values"]))
    rows = golden(tags["indices"])[:, 0]
    same(out["tags.row_lengths"], np.bincount(rows, minlength=n).astype(np.int64))


# ---- parse_example ------------------------------------------------------------------

def test_feature_classes_are_tf_io_namedtuples():
    f = sio.FixedLenFeature([3], sluice.float32)
    assert f == (( 3,), sluice.float32, None) and f.shape == (3,) and f.dtype == "float32"
    assert sio.FixedLenFeature(3, "int64").shape == (3,)
    assert sio.VarLenFeature(np.int64).dtype == sluice.int64
    s = sio.FixedLenSequenceFeature([2], sluice.float32, allow_missing=True)
    assert s.allow_missing is True and s.default_value is None
    with pytest.raises(ValueError, match="fully defined"):
        sio.FixedLenFeature([None, 3], sluice.float32)


def test_parse_example_eager_equals_tensorflow(examples):
    serialized = [bytes.fromhex(h) for h in examples["serialized_hex"]]
    spec = spec_of(examples["spec"])
    out = sio.parse_example(serialized, spec)
    assert set(out) == {"frames", "label", "name", "scores", "tags", "tags.row_lengths"}
    check_batch_against_tf(out, examples["parse_example"], len(serialized))
    # Keyword form, and a NumPy object array of the records.
    arr = np.empty(len(serialized), object)
    arr[:] = serialized
    again = sio.parse_example(serialized=arr, features=spec)
    check_batch_against_tf(again, examples["parse_example"], len(serialized))


def test_parse_single_example_eager_equals_tensorflow(examples):
    spec = spec_of(examples["spec"])
    out = sio.parse_single_example(bytes.fromhex(examples["serialized_hex"][0]), spec)
    want = examples["parse_single_example_0"]
    for key in ("frames", "label", "name", "scores"):
        same(out[key], golden(want[key]))
    same(out["tags"], golden(want["tags"]["values"]))  # one Example's VarLen: dense values
    assert out["name"] == b"alpha" and out["label"].shape == ()


def test_parse_example_map_function_in_a_pipeline(examples):
    spec = spec_of(examples["spec"])
    parse = sio.parse_example(spec)
    assert isinstance(parse, sluice.MapFunction) and parse.name == "parse_example"
    assert isinstance(sio.parse_single_example(spec), sluice.MapFunction)
    records = sluice.TFRecordDataset(str(TF / "examples.tfrecord"))
    # Batch first, then parse: the whole batch parsed at once, as tf.io.parse_example.
    batches = list(records.batch(6).map(parse))
    assert len(batches) == 1
    check_batch_against_tf(batches[0], examples["parse_example"], 6)
    # Parse each record, in parallel: each equals the eager single parse.
    serialized = [bytes.fromhex(h) for h in examples["serialized_hex"]]
    elements = list(records.map(parse, num_parallel_calls=sluice.AUTOTUNE))
    assert len(elements) == 6
    for e, s in zip(elements, serialized):
        want = sio.parse_single_example(s, spec)
        assert list(e) == list(want)
        for key in want:
            same(e[key], np.asarray(want[key]))
    # The MapFunction called eagerly on one record.
    direct = parse(serialized[0])
    same(direct["scores"], np.asarray(elements[0]["scores"]))


def test_parse_then_batch_is_fused_and_equal(examples):
    spec = {k: v for k, v in spec_of(examples["spec"]).items() if k in ("label", "scores", "name")}
    records = sluice.TFRecordDataset(str(TF / "examples.tfrecord"))
    parse = sio.parse_example(spec)
    fused = records.map(parse).batch(4)
    # Built as batch(4).map(parse): the records are batched, then parsed at once.
    text = repr(fused)
    assert text.index("batch") < text.index("parse_example"), text
    rows = list(records.map(parse))  # parsed one by one
    got = list(fused)
    assert [len(b["label"]) for b in got] == [4, 2]
    for i, key in enumerate(("label", "scores")):
        stacked = np.stack([np.asarray(r[key]) for r in rows])
        same(np.concatenate([b[key] for b in got]), stacked)
    assert np.concatenate([b["name"] for b in got]).tolist() == [r["name"] for r in rows]
    # A VarLen feature is not fused: the parse then runs per record.
    with_tags = dict(spec, tags=sio.VarLenFeature(sluice.int64))
    text = repr(records.map(sio.parse_example(with_tags)).batch(2))
    assert text.index("parse_example") < text.index("batch"), text


def test_varlen_in_batches_is_values_and_row_lengths(examples):
    spec = {"tags": sio.VarLenFeature(sluice.int64), "label": sio.FixedLenFeature([], "int64", -1)}
    records = sluice.TFRecordDataset(str(TF / "examples.tfrecord"))
    got = list(records.batch(3).map(sio.parse_example(spec)))
    assert [list(b) for b in got] == [["tags", "tags.row_lengths", "label"]] * 2
    # Examples 0-2: tags [1, -2, 3], [] (present, empty), absent.
    assert got[0]["tags"].tolist() == [1, -2, 3] and got[0]["tags.row_lengths"].tolist() == [3, 0, 0]
    assert got[1]["tags.row_lengths"].tolist() == [4, 1, 2]
    rows = np.split(got[1]["tags"], np.cumsum(got[1]["tags.row_lengths"])[:-1])
    assert [r.tolist() for r in rows] == [[-2**63, 2**63 - 1, -1, 0], [5], [10, -20]]


def test_parse_errors_and_edge_cases_match_tensorflow():
    cases = json.loads((TF / "parse_errors.json").read_text())["cases"]
    assert len(cases) >= 13
    for c in cases:
        spec = spec_of(c["spec"])
        serialized = bytes.fromhex(c["serialized_hex"])
        (key,) = c["spec"]
        for form, call in (("parse_example", lambda: sio.parse_example([serialized], spec)),
                           ("parse_single_example",
                            lambda: sio.parse_single_example(serialized, spec))):
            want = c[form]
            if not want["ok"]:
                with pytest.raises(sluice.InvalidArgumentError) as e:
                    call()
                assert key in str(e.value), (c["case"], form, str(e.value))
                continue
            out = call()
            tf_out = want["outputs"][key]
            if form == "parse_example" and tf_out.get("sparse"):
                same(out[key], golden(tf_out["values"]))
                assert out[key + ".row_lengths"].tolist() == [0]
            elif form == "parse_example":
                same(out[key], golden(tf_out))
            elif tf_out.get("sparse"):
                same(out[key], golden(tf_out["values"]))
            else:
                same(out[key], golden(tf_out))


def test_invalid_spec_raises_at_once_naming_the_feature():
    with pytest.raises(sluice.InvalidArgumentError, match="'x'|x"):
        sio.parse_example({"x": sio.FixedLenFeature([2], sluice.int64, default_value=[1, 2, 3])})
    with pytest.raises(sluice.InvalidArgumentError, match="bad"):
        sio.parse_example({"bad": sio.FixedLenFeature([], sluice.int32)})  # int32 has no list
    with pytest.raises(TypeError, match="SparseFeature"):
        sio.parse_example({"x": object()})
    # A scalar default for shape [1] is reshaped, as tf.io does.
    out = sio.parse_single_example(sio.serialize_example({"y": 1}),
                                   {"x": sio.FixedLenFeature([1], sluice.float32, 0.5)})
    assert out["x"].tolist() == [0.5]


def test_malformed_example_is_data_loss_naming_file_and_record(tmp_path):
    good = sio.serialize_example({"label": 1, "image": b"abc"})
    bad = good[:-2]  # cut inside the last feature
    path = str(tmp_path / "m.tfrecord")
    with sio.TFRecordWriter(path) as w:
        for r in (good, good, bad, good):
            w.write(r)
    spec = {"label": sio.FixedLenFeature([], sluice.int64)}
    with pytest.raises(sluice.DataLossError, match="malformed Example at byte"):
        sio.parse_single_example(bad, spec)
    with pytest.raises(sluice.DataLossError, match="malformed Example"):
        sio.parse_example([good, bad], spec)
    ds = sluice.TFRecordDataset(path).map(sio.parse_example(spec), num_parallel_calls=2)
    it = iter(ds)
    assert next(it)["label"] == 1 and next(it)["label"] == 1
    with pytest.raises(sluice.DataLossError) as e:
        next(it)
    msg = str(e.value)
    assert "m.tfrecord" in msg and "record 2" in msg and "malformed Example" in msg, msg
    # ignore_errors skips it.
    assert [int(x["label"]) for x in ds.ignore_errors()] == [1, 1, 1]


def test_wrong_feature_data_names_the_feature_and_origin(tmp_path):
    path = str(tmp_path / "w.tfrecord")
    with sio.TFRecordWriter(path) as w:
        w.write(sio.serialize_example({"label": 1.5}))
    ds = sluice.TFRecordDataset(path).map(
        sio.parse_example({"label": sio.FixedLenFeature([], sluice.int64)}))
    with pytest.raises(sluice.InvalidArgumentError) as e:
        list(ds)
    assert "label" in str(e.value) and "w.tfrecord" in str(e.value), str(e.value)


def test_records_ending_in_zero_bytes_survive_the_eager_batch():
    # An int64 0 last: the serialized Example ends in a 0x00 byte, which a
    # NumPy 'S' array would drop.
    s = sio.serialize_example({"z": 0})
    assert s.endswith(b"\x00")
    out = sio.parse_example([s, s], {"z": sio.FixedLenFeature([], sluice.int64)})
    assert out["z"].tolist() == [0, 0]
    # from_tensor_slices of a list of such records keeps them whole too.
    ds = sluice.Dataset.from_tensor_slices([s, s + b"\x00\x00"])
    assert list(ds) == [s, s + b"\x00\x00"]
    assert [int(e["z"]) for e in ds.take(1).map(
        sio.parse_example({"z": sio.FixedLenFeature([], sluice.int64)}))] == [0]


# ---- TFRecord files ----------------------------------------------------------------

LENGTHS = [0, 1, 11, 100, 1000, 65536, 3, 70000]


def golden_payloads():
    return [bytes((i * 31 + j * 7) & 0xff for j in range(n)) for i, n in enumerate(LENGTHS)]


@pytest.mark.parametrize("options,golden_file", [
    (None, "records_none.tfrecord"),
    ("ZLIB", "records_zlib.tfrecord"),
    ("GZIP", "records_gzip.tfrecord"),
    (sio.TFRecordOptions(compression_type="GZIP"), "records_gzip.tfrecord"),
])
def test_tfrecord_writer_bytes_equal_tensorflows(tmp_path, options, golden_file):
    path = tmp_path / "out.tfrecord"
    with sio.TFRecordWriter(str(path), options) as w:
        for p in golden_payloads():
            w.write(p)
        assert w.records_written == 8
    assert path.read_bytes() == (TF / golden_file).read_bytes()
    back = [bytes(r) for r in sluice.TFRecordDataset(str(path))]
    assert back == golden_payloads()


def test_tfrecord_writer_publishes_only_on_close(tmp_path):
    path = tmp_path / "a.tfrecord"
    w = sio.TFRecordWriter(str(path))
    w.write(b"x")
    w.flush()
    assert not path.exists()  # a hidden temporary file beside it until close()
    hidden = [p for p in tmp_path.iterdir() if p.name != "a.tfrecord"]
    assert len(hidden) == 1 and hidden[0].name.startswith(".")
    w.close()
    w.close()  # harmless
    assert path.exists() and [p.name for p in tmp_path.iterdir()] == ["a.tfrecord"]
    with pytest.raises(sluice.FailedPreconditionError, match="closed"):
        w.write(b"y")
    # An exception in the with block: nothing published, the old file kept.
    with pytest.raises(RuntimeError):
        with sio.TFRecordWriter(str(path)) as w2:
            w2.write(b"new")
            raise RuntimeError("stop")
    assert [bytes(r) for r in sluice.TFRecordDataset(str(path))] == [b"x"]
    assert [p.name for p in tmp_path.iterdir()] == ["a.tfrecord"]
    # discard(), and a writer dropped without close().
    w3 = sio.TFRecordWriter(str(tmp_path / "b.tfrecord"))
    w3.write(b"z")
    w3.discard()
    w4 = sio.TFRecordWriter(str(tmp_path / "c.tfrecord"))
    w4.write(b"z")
    del w4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.tfrecord"]


def test_tfrecord_writer_index_gives_exact_cardinality(tmp_path):
    path = str(tmp_path / "i.tfrecord")
    with sio.TFRecordWriter(path, write_index=True) as w:
        for i in range(5):
            w.write(sio.serialize_example({"i": i}))
    assert os.path.exists(path + ".idx")
    ds = sluice.TFRecordDataset(path)
    assert ds.cardinality() == 5 and ds.random_access()


def test_corrupt_and_truncated_files_are_data_loss_with_file_and_offset(tmp_path):
    path = tmp_path / "c.tfrecord"
    with sio.TFRecordWriter(str(path)) as w:
        for p in golden_payloads()[:4]:
            w.write(p)
    data = bytearray(path.read_bytes())
    # Record 3 (100 bytes) starts after records of 0, 1 and 11 bytes: 16 + 17 + 27.
    offset = 16 + 17 + 27
    data[offset + 12 + 50] ^= 0xff
    path.write_bytes(bytes(data))
    with pytest.raises(sluice.DataLossError) as e:
        list(sluice.TFRecordDataset(str(path)))
    assert "c.tfrecord" in str(e.value) and str(offset) in str(e.value), str(e.value)
    cut = tmp_path / "t.tfrecord"
    cut.write_bytes(bytes(data[:offset + 30]))
    with pytest.raises(sluice.DataLossError) as e:
        list(sluice.TFRecordDataset(str(cut)))
    assert "t.tfrecord" in str(e.value), str(e.value)


# ---- serialize_example ---------------------------------------------------------------

EXAMPLE = {"label": 3, "image": b"\x00\xffjpeg\x00", "v": [1.0, 2.5], "ids": np.arange(4),
           "name": "café", "words": [b"a", b"", b"c"], "flag": True,
           "m": np.array([[1.5, 2.0]], np.float64), "s": np.array(["x", "yz"])}


def test_serialize_example_round_trips_through_the_parser():
    s = sio.serialize_example(EXAMPLE)
    out = sio.parse_single_example(s, {
        "label": sio.FixedLenFeature([], sluice.int64),
        "image": sio.FixedLenFeature([], sluice.string),
        "v": sio.FixedLenFeature([2], sluice.float32),
        "ids": sio.VarLenFeature(sluice.int64),
        "name": sio.FixedLenFeature([], sluice.string),
        "words": sio.VarLenFeature(sluice.string),
        "flag": sio.FixedLenFeature([], sluice.int64),
        "m": sio.FixedLenFeature([2], sluice.float32),
        "s": sio.VarLenFeature(sluice.string)})
    assert out["label"] == 3 and out["image"] == b"\x00\xffjpeg\x00"
    assert out["v"].tolist() == [1.0, 2.5] and out["ids"].tolist() == [0, 1, 2, 3]
    assert out["name"] == "café".encode() and out["words"].tolist() == [b"a", b"", b"c"]
    assert out["flag"] == 1 and out["m"].tolist() == [1.5, 2.0]
    assert out["s"].tolist() == [b"x", b"yz"]


def test_serialize_example_refuses_what_has_no_list():
    with pytest.raises(ValueError, match="empty list"):
        sio.serialize_example({"x": []})
    with pytest.raises(TypeError, match="'x'"):
        sio.serialize_example({"x": {"nested": 1}})
    with pytest.raises(ValueError, match="int64"):
        sio.serialize_example({"x": 2**64})
    assert sio.serialize_example({"x": np.array([], np.int64)})  # an empty Int64List


def example_json(features):
    """protobuf's JSON of a tf.train.Example (what `sluice cat --json` prints)."""
    out = {}
    for k, v in features.items():
        if isinstance(v, int):
            out[k] = {"int64List": {"value": [str(v)]}}
        elif isinstance(v, float):
            out[k] = {"floatList": {"value": [v]}}
        elif isinstance(v, bytes):
            out[k] = {"bytesList": {"value": [base64.b64encode(v).decode()]}}
        elif all(isinstance(x, float) for x in v):
            out[k] = {"floatList": {"value": list(v)}}
        else:
            out[k] = {"int64List": {"value": [str(x) for x in v]}}
    return {"features": {"feature": out}}


ROWS = [{"label": 3, "image": b"\x00\xffjpeg", "v": [1.0, 2.5], "ids": [5, -6]},
        {"label": -1, "image": b"", "v": [0.25, -3.0], "ids": [2**62]}]


@needs_cli
def test_serialize_example_equals_sluice_write(tmp_path):
    path = tmp_path / "cli.tfrecord"
    lines = "".join(json.dumps(example_json(r)) + "\n" for r in ROWS)
    subprocess.run([cli(), "write", str(path)], input=lines.encode(), check=True,
                   capture_output=True)
    written = [bytes(r) for r in sluice.TFRecordDataset(str(path))]
    assert written == [sio.serialize_example(r) for r in ROWS]


@needs_cli
def test_sluice_cat_reads_what_tfrecord_writer_wrote(tmp_path):
    path = tmp_path / "py.tfrecord.gz"
    with sio.TFRecordWriter(str(path), "GZIP") as w:
        for r in ROWS:
            w.write(sio.serialize_example(r))
    out = subprocess.run([cli(), "cat", "--json", str(path)], check=True, capture_output=True)
    got = [json.loads(line) for line in out.stdout.decode().splitlines()]
    assert got == [example_json(r) for r in ROWS]


@needs_cli
def test_parse_example_equals_sluice_cat_on_the_golden_file(examples):
    out = subprocess.run([cli(), "cat", "--json", str(TF / "examples.tfrecord")], check=True,
                         capture_output=True)
    cat = [json.loads(line)["features"]["feature"] for line in out.stdout.decode().splitlines()]
    spec = {"tags": sio.VarLenFeature(sluice.int64), "name": sio.VarLenFeature(sluice.string)}
    parsed = list(sluice.TFRecordDataset(str(TF / "examples.tfrecord")).map(
        sio.parse_example(spec)))
    assert len(parsed) == len(cat) == 6
    for p, c in zip(parsed, cat):
        tags = [int(x) for x in c.get("tags", {}).get("int64List", {}).get("value", [])]
        names = [base64.b64decode(x) for x in c.get("name", {}).get("bytesList", {}).get("value", [])]
        assert p["tags"].tolist() == tags and p["name"].tolist() == names


# ---- read_file ---------------------------------------------------------------------

def test_read_file_eager_and_as_a_map_function(tmp_path):
    files = []
    for i in range(3):
        p = tmp_path / f"f{i}.bin"
        p.write_bytes(bytes(range(i * 7, i * 7 + 50)) + b"\x00")
        files.append(str(p))
    assert sio.read_file(files[1]) == pathlib.Path(files[1]).read_bytes()
    ds = sluice.Dataset.list_files(str(tmp_path / "*.bin")).map(sio.map.read_file(),
                                                                num_parallel_calls=2)
    assert list(ds) == [pathlib.Path(f).read_bytes() for f in files]
    named = sluice.Dataset.from_tensor_slices({"path": files}).map(
        sio.map.read_file(key="path", output_key="bytes", keep_input=True))
    e = next(iter(named))
    assert e["path"] == files[0].encode() and e["bytes"] == pathlib.Path(files[0]).read_bytes()
    with pytest.raises(sluice.NotFoundError, match="nope.bin"):
        sio.read_file(str(tmp_path / "nope.bin"))
    with pytest.raises(sluice.ResourceExhaustedError):
        sio.read_file(files[0], max_bytes=10)
    missing = sluice.Dataset.from_tensor_slices([str(tmp_path / "gone.bin")]).map(
        sio.map.read_file())
    with pytest.raises(sluice.NotFoundError, match="gone.bin"):
        list(missing)


def test_io_has_tf_io_codec_names():
    assert sio.decode_jpeg is sluice.image.decode_jpeg
    assert sio.encode_png is sluice.image.encode_png
