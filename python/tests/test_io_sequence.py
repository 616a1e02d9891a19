"""sluice.io's SparseFeature, RaggedFeature, parse_sequence_example and
parse_single_sequence_example against TensorFlow's outputs (golden files
made by tests/data/composite/make_golden.py), eager and as map functions."""

import json
import pathlib

import numpy as np
import pytest

import sluice
from sluice import errors
from sluice import io as sio

DATA = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "composite"


@pytest.fixture(scope="module")
def golden():
    return json.loads((DATA / "parsed.json").read_text())


def array(t):
    if t["dtype"] == "float32":
        a = np.array([int(v, 16) for v in t["values"]], np.uint32).view(np.float32)
    elif t["dtype"] in ("int64", "int32"):
        a = np.array(t["values"], t["dtype"])
    else:
        a = np.empty(len(t["values"]), object)
        a[:] = [bytes.fromhex(v) for v in t["values"]]
    return a.reshape(t["shape"])


def same(got, want):
    got = np.asarray(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype == np.float32:
        assert got.dtype == np.float32
        assert got.view(np.uint32).tolist() == want.view(np.uint32).tolist()
    elif want.dtype == object:
        assert [bytes(x) for x in got.reshape(-1).tolist()] == want.reshape(-1).tolist()
    else:
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
        assert got.tolist() == want.tolist()


def check(out, components):
    """out (a dict) equals the golden [[name, tensor], ...] list, in order."""
    assert list(out) == [name for name, _ in components]
    for name, t in components:
        same(out[name], array(t))


R = sio.RaggedFeature


def spec_of(js):
    out = {}
    for key, f in js.items():
        t = f["type"]
        if t == "FixedLenFeature":
            default = f.get("default_value")
            if default is not None:
                default = np.array([int(v, 16) for v in default], np.uint32).view(np.float32)
            out[key] = sio.FixedLenFeature(f["shape"], f["dtype"], default)
        elif t == "VarLenFeature":
            out[key] = sio.VarLenFeature(f["dtype"])
        elif t == "FixedLenSequenceFeature":
            out[key] = sio.FixedLenSequenceFeature(f["shape"], f["dtype"], f["allow_missing"])
        elif t == "SparseFeature":
            idx = f["index_keys"][0] if len(f["index_keys"]) == 1 else f["index_keys"]
            size = f["size"][0] if len(f["size"]) == 1 else f["size"]
            out[key] = sio.SparseFeature(idx, f["value_key"], f["dtype"], size,
                                         f["already_sorted"])
        else:
            parts = [R.UniformRowLength(p["length"]) if p["kind"] == "UniformRowLength"
                     else getattr(R, p["kind"])(p["key"]) for p in f["partitions"]]
            out[key] = R(f["dtype"], f["value_key"], parts, f["row_splits_dtype"])
    return out


def serialized(section):
    return [bytes.fromhex(h) for h in section["serialized"]]


def test_feature_classes_mirror_tf_io():
    f = R(sluice.int64, partitions=[R.RowLengths("n"), R.UniformRowLength(2)])
    assert f.row_splits_dtype == sluice.int32 and f.value_key is None
    assert f.partitions[0].key == "n" and f.partitions[1].length == 2
    s = sio.SparseFeature("i", "v", sluice.float32, 10)
    assert s.already_sorted is False and s.size == 10


def test_composite_features_match_tf(golden):
    g = golden["examples"]
    spec = spec_of(g["spec"])
    records = serialized(g)
    for s, want in zip(records, g["single"]):
        check(sio.parse_single_example(s, spec), want)
    check(sio.parse_example(records, spec), g["batch"])
    # As map functions: per record, and on batched records.
    ds = sluice.TFRecordDataset(str(DATA / "examples.tfrecord"))
    for e, want in zip(ds.map(sio.parse_example(spec), num_parallel_calls=2), g["single"]):
        check(e, want)
    (batch,) = list(ds.batch(3).map(sio.parse_example(spec)))
    check(batch, g["batch"])


def test_parse_sequence_example_matches_tf(golden):
    g = golden["sequence_examples"]
    context, sequence = spec_of(g["context_spec"]), spec_of(g["sequence_spec"])
    records = serialized(g)
    for s, want in zip(records, g["single"]):
        ctx, lists = sio.parse_single_sequence_example(s, context, sequence)
        check({**ctx, **lists}, want)
    ctx, lists, lengths = sio.parse_sequence_example(records, context, sequence)
    merged = dict(ctx)
    for key, value in lists.items():
        merged[key] = value
    for key, value in lengths.items():
        merged[key + ".length"] = value
    want = dict((name, t) for name, t in g["batch"])
    assert set(merged) == set(want)
    for name, t in want.items():
        same(merged[name], array(t))


def test_parse_sequence_example_as_map_function(golden):
    g = golden["sequence_examples"]
    context, sequence = spec_of(g["context_spec"]), spec_of(g["sequence_spec"])
    ds = sluice.TFRecordDataset(str(DATA / "sequence_examples.tfrecord"))
    parse = sio.parse_sequence_example(context_features=context, sequence_features=sequence)
    assert isinstance(parse, sluice.MapFunction) and parse.name == "parse_sequence_example"
    assert isinstance(sio.parse_single_sequence_example(context, sequence), sluice.MapFunction)
    for e, want in zip(ds.map(parse, num_parallel_calls=2), g["single"]):
        check(e, want)
    (batch,) = list(ds.batch(3).map(parse))
    check(batch, g["batch"])


def test_errors_name_the_feature(golden):
    spec = {"sp": sio.SparseFeature("i", "v", sluice.float32, 4)}
    bad = sio.serialize_example({"i": [1, 4], "v": np.array([1.0, 2.0], np.float32)})
    with pytest.raises(errors.InvalidArgumentError, match="SparseFeature 'sp'.*out of range"):
        sio.parse_single_example(bad, spec)
    ragged = {"r": R(sluice.int64, "v", [R.RowLengths("n")])}
    bad = sio.serialize_example({"v": [1, 2, 3], "n": [1, -1]})
    with pytest.raises(errors.InvalidArgumentError, match="RaggedFeature 'r'.*negative"):
        sio.parse_example([bad], ragged)
    with pytest.raises(errors.InvalidArgumentError, match="UniformRowLength"):
        sio.parse_example({"r": R(sluice.int64, "v", [R.UniformRowLength(0)])})
    with pytest.raises(errors.InvalidArgumentError, match="'k'"):
        sio.parse_sequence_example(context_features={"k": sio.VarLenFeature(sluice.int64)},
                                   sequence_features={"k": sio.VarLenFeature(sluice.int64)})
    with pytest.raises(TypeError):
        sio.parse_example({"r": R(sluice.int64, "v", ["not a partition"])})
