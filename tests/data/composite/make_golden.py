#!/usr/bin/env python3
"""Golden files for SparseFeature, RaggedFeature and parse_sequence_example.

Run with TensorFlow (tensorflow-cpu from PyPI):

    python3 -m venv /tmp/tf && /tmp/tf/bin/pip install tensorflow-cpu
    /tmp/tf/bin/python tests/data/composite/make_golden.py tests/data/composite

It writes:
  examples.tfrecord            tf.train.Examples for the composite features
  sequence_examples.tfrecord   tf.train.SequenceExamples
  parsed.json                  TensorFlow's parse outputs, in sluice's layout

JSON conventions are tests/data/README.md's: int64/int32 as JSON integers,
float32 as "0x%08x" bit patterns, bytes as lowercase hex; a tensor is
{"dtype", "shape", "values"} (row-major). Each output is a list of
[component name, tensor] in sluice's order. TensorFlow's composite results
are written as their components under sluice's names (docs/records.md):

  SparseTensor sp      -> "sp.indices" (sp.indices), "sp" (sp.values),
                          "sp.dense_shape" (sp.dense_shape)
  RaggedTensor rg      -> "rg" (rg.flat_values), "rg.row_splits_<i>"
                          (rg.nested_row_splits[i]); a dense Tensor (a single
                          example's RaggedFeature with no ragged partition)
                          -> "rg" alone
  VarLen SparseTensor  -> "k" (values), "k.row_lengths" (entries per row,
                          counted from its indices over dense_shape's rows)
  parse_sequence_example's lengths dict -> "<key>.length"

For a batch of SequenceExamples, a VarLen feature list's "k.length" (steps
per example) and "k.row_lengths" (values per step) are not recoverable from
tf's 3-D SparseTensor (trailing empty steps leave no trace), so they are
taken from tf.io.parse_single_sequence_example of each example (its
SparseTensor's dense_shape[0] is the step count).
"""

import json
import os
import sys

import numpy as np
import tensorflow as tf


def f32_bits(a):
    return ["0x%08x" % int(v) for v in np.asarray(a, dtype="<f4").reshape(-1).view("<u4")]


def dense(t):
    t = tf.convert_to_tensor(t)
    shape = [int(d) for d in t.shape]
    if t.dtype in (tf.int64, tf.int32):
        values = [int(v) for v in t.numpy().reshape(-1)]
    elif t.dtype == tf.float32:
        values = f32_bits(t.numpy())
    elif t.dtype == tf.string:
        values = [bytes(v).hex() for v in tf.reshape(t, [-1]).numpy().tolist()]
    else:
        raise TypeError(t.dtype)
    return {"dtype": t.dtype.name, "shape": shape, "values": values}


def row_lengths(sp, rows):
    idx = sp.indices.numpy()
    counts = np.bincount(idx[:, 0], minlength=rows) if len(idx) else np.zeros(rows, np.int64)
    return dense(tf.constant(counts.astype(np.int64)))


def components(key, value, batch_rows=None):
    """sluice's components of one tf output."""
    if isinstance(value, tf.SparseTensor):
        return [[key + ".indices", dense(value.indices)], [key, dense(value.values)],
                [key + ".dense_shape", dense(value.dense_shape)]]
    if isinstance(value, tf.RaggedTensor):
        out = [[key, dense(value.flat_values)]]
        for i, s in enumerate(value.nested_row_splits):
            out.append([f"{key}.row_splits_{i}", dense(s)])
        return out
    return [[key, dense(value)]]


def varlen(key, sp, rows):
    return [[key, dense(sp.values)], [key + ".row_lengths", row_lengths(sp, rows)]]


# --------------------------------------------------------------------------
# Examples with SparseFeature / RaggedFeature
# --------------------------------------------------------------------------


def feature(v):
    if isinstance(v, list) and v and isinstance(v[0], bytes):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=v))
    if isinstance(v, list) and v and isinstance(v[0], float):
        return tf.train.Feature(float_list=tf.train.FloatList(value=v))
    return tf.train.Feature(int64_list=tf.train.Int64List(value=v))


def example(d):
    return tf.train.Example(features=tf.train.Features(
        feature={k: feature(v) for k, v in d.items()})).SerializeToString(deterministic=True)


EXAMPLES = [
    dict(label=[1], sp_idx=[3, 0, 7], sp_val=[0.5, 1.5, 2.5], ix0=[1, 0, 1], ix1=[4, 2, 0],
         sv=[b"a", b"b", b"c"], sps_idx=[1, 4], sps_val=[10, 20],
         rv=[1, 2, 3, 4, 5, 6], fv=[0.25, -1.0],
         p_splits=[0, 2, 2, 6], p_len=[2, 0, 4], p_starts=[0, 2, 2], p_limits=[2, 2, 6],
         p_rowids=[0, 0, 2, 2, 2, 2], p_outer=[1, 2], p_len3=[1, 2], p_len4=[2, 0, 3, 1]),
    dict(label=[2], sp_idx=[9], sp_val=[-1.0], sps_idx=[0], sps_val=[5],
         rv=[7, 8, 9, 10], p_splits=[0, 4], p_len=[4], p_starts=[0], p_limits=[4],
         p_rowids=[1, 1, 1, 1], p_outer=[0, 1], p_len3=[2], p_len4=[0, 4]),
    dict(label=[3], ix0=[0], ix1=[1], sv=[b"z"], fv=[3.0], p_splits=[0]),
]

# rg_int64 reads copies of rv / p_len: tf.io rejects one key read with two
# row_splits dtypes.
for _d in EXAMPLES:
    if "rv" in _d:
        _d["rv64"] = _d["rv"]
    if "p_len" in _d:
        _d["p_len64"] = _d["p_len"]

R = tf.io.RaggedFeature
EXAMPLE_SPEC = {
    "label": ("FixedLenFeature", tf.io.FixedLenFeature([], tf.int64)),
    "sp": ("SparseFeature", tf.io.SparseFeature("sp_idx", "sp_val", tf.float32, 10)),
    "sp2": ("SparseFeature", tf.io.SparseFeature(["ix0", "ix1"], "sv", tf.string, [2, 5])),
    "sps": ("SparseFeature", tf.io.SparseFeature("sps_idx", "sps_val", tf.int64, 5,
                                                 already_sorted=True)),
    "rg_plain": ("RaggedFeature", R(tf.float32, value_key="fv")),
    "rg_splits": ("RaggedFeature", R(tf.int64, "rv", partitions=[R.RowSplits("p_splits")])),
    "rg_lengths": ("RaggedFeature", R(tf.int64, "rv", partitions=[R.RowLengths("p_len")])),
    "rg_starts": ("RaggedFeature", R(tf.int64, "rv", partitions=[R.RowStarts("p_starts")])),
    "rg_limits": ("RaggedFeature", R(tf.int64, "rv", partitions=[R.RowLimits("p_limits")])),
    "rg_rowids": ("RaggedFeature", R(tf.int64, "rv", partitions=[R.ValueRowIds("p_rowids")])),
    "rg_uniform": ("RaggedFeature", R(tf.int64, "rv", partitions=[R.UniformRowLength(2)])),
    "rg_nested": ("RaggedFeature", R(tf.int64, "rv", partitions=[R.RowLengths("p_outer"),
                                                                 R.RowLengths("p_len")])),
    "rg_ragged_uniform": ("RaggedFeature", R(tf.int64, "rv", partitions=[
        R.RowLengths("p_len3"), R.UniformRowLength(2)])),
    "rg_uniform_ragged": ("RaggedFeature", R(tf.int64, "rv", partitions=[
        R.UniformRowLength(2), R.RowLengths("p_len4")])),
    "rg_int64": ("RaggedFeature", R(tf.int64, "rv64", partitions=[R.RowLengths("p_len64")],
                                    row_splits_dtype=tf.int64)),
}


def partition_json(p):
    name = type(p).__name__
    if name == "UniformRowLength":
        return {"kind": name, "length": int(p.length)}
    return {"kind": name, "key": p.key}


def spec_json(spec):
    out = {}
    for key, (kind, f) in spec.items():
        if kind == "SparseFeature":
            idx = [f.index_key] if isinstance(f.index_key, str) else list(f.index_key)
            size = [f.size] if isinstance(f.size, int) else list(f.size)
            out[key] = {"type": kind, "dtype": f.dtype.name, "index_keys": idx,
                        "value_key": f.value_key, "size": size,
                        "already_sorted": bool(f.already_sorted)}
        elif kind == "RaggedFeature":
            out[key] = {"type": kind, "dtype": f.dtype.name, "value_key": f.value_key or key,
                        "partitions": [partition_json(p) for p in f.partitions],
                        "row_splits_dtype": f.row_splits_dtype.name}
        elif kind == "VarLenFeature":
            out[key] = {"type": kind, "dtype": f.dtype.name}
        else:
            entry = {"type": kind, "dtype": f.dtype.name, "shape": list(f.shape)}
            if kind == "FixedLenSequenceFeature":
                entry["allow_missing"] = bool(f.allow_missing)
            if f.default_value is not None:
                entry["default_value"] = dense(tf.constant(f.default_value, f.dtype))["values"]
            out[key] = entry
    return out


def example_outputs(parsed, spec, rows):
    out = []
    for key, (kind, _) in spec.items():
        if kind == "VarLenFeature":
            out += varlen(key, parsed[key], rows)
        else:
            out += components(key, parsed[key])
    return out


def make_examples(out_dir):
    serialized = [example(d) for d in EXAMPLES]
    with tf.io.TFRecordWriter(os.path.join(out_dir, "examples.tfrecord")) as w:
        for s in serialized:
            w.write(s)
    features = {k: f for k, (_, f) in EXAMPLE_SPEC.items()}
    single = [example_outputs(tf.io.parse_single_example(s, features), EXAMPLE_SPEC, None)
              for s in serialized]
    batch = example_outputs(tf.io.parse_example(tf.constant(serialized), features), EXAMPLE_SPEC,
                            len(serialized))
    return {"spec": spec_json(EXAMPLE_SPEC), "serialized": [s.hex() for s in serialized],
            "single": single, "batch": batch}


# --------------------------------------------------------------------------
# SequenceExamples
# --------------------------------------------------------------------------


def feature_list(steps):
    return tf.train.FeatureList(feature=[feature(s) if s else tf.train.Feature(
        int64_list=tf.train.Int64List()) for s in steps])


SEQUENCES = [
    (dict(id=[1], ctx_tags=[b"a", b"b"], ctx_vals=[1, 2, 3], ctx_lens=[2, 1]),
     dict(frames=[[0.5, 1.0], [1.5, 2.0], [2.5, 3.0]], tok=[[1, 2], [], [3]], opt=[[7], [8]],
          rtok=[[1, 2, 3], [4]], rlen=[[2, 1], [0, 1]])),
    (dict(id=[2], weight=[0.5, 0.25], ctx_vals=[4], ctx_lens=[0, 1]),
     dict(frames=[[4.0, 4.5]], tok=[[4], [5, 6, 7]], rtok=[[5, 6]], rlen=[[2]])),
    (dict(id=[3], ctx_tags=[b"c"]),
     dict(frames=[], opt=[[9]])),
]

CONTEXT_SPEC = {
    "id": ("FixedLenFeature", tf.io.FixedLenFeature([], tf.int64)),
    "ctx_tags": ("VarLenFeature", tf.io.VarLenFeature(tf.string)),
    "weight": ("FixedLenFeature", tf.io.FixedLenFeature([2], tf.float32,
                                                        default_value=[1.0, 1.0])),
    "ctx_rg": ("RaggedFeature", R(tf.int64, "ctx_vals", partitions=[R.RowLengths("ctx_lens")],
                                  row_splits_dtype=tf.int64)),
}
SEQUENCE_SPEC = {
    "frames": ("FixedLenSequenceFeature", tf.io.FixedLenSequenceFeature([2], tf.float32)),
    "tok": ("VarLenFeature", tf.io.VarLenFeature(tf.int64)),
    "opt": ("FixedLenSequenceFeature", tf.io.FixedLenSequenceFeature([], tf.int64,
                                                                    allow_missing=True)),
    "seq_rg": ("RaggedFeature", R(tf.int64, "rtok", partitions=[R.RowLengths("rlen")])),
    "seq_rg_plain": ("RaggedFeature", R(tf.int64, "rtok")),
}


def sequence_example(context, lists):
    fl = {}
    for k, steps in lists.items():
        if k == "frames":
            fl[k] = tf.train.FeatureList(feature=[tf.train.Feature(
                float_list=tf.train.FloatList(value=s)) for s in steps])
        else:
            fl[k] = tf.train.FeatureList(feature=[tf.train.Feature(
                int64_list=tf.train.Int64List(value=s)) for s in steps])
    ex = tf.train.SequenceExample(
        context=tf.train.Features(feature={k: feature(v) for k, v in context.items()}),
        feature_lists=tf.train.FeatureLists(feature_list=fl))
    return ex.SerializeToString(deterministic=True)


def make_sequences(out_dir):
    serialized = [sequence_example(c, l) for c, l in SEQUENCES]
    with tf.io.TFRecordWriter(os.path.join(out_dir, "sequence_examples.tfrecord")) as w:
        for s in serialized:
            w.write(s)
    ctx = {k: f for k, (_, f) in CONTEXT_SPEC.items()}
    seq = {k: f for k, (_, f) in SEQUENCE_SPEC.items()}
    singles = []
    single_raw = []
    for s in serialized:
        c, f = tf.io.parse_single_sequence_example(s, ctx, seq)
        single_raw.append(f)
        out = []
        for key, (kind, _) in CONTEXT_SPEC.items():
            out += [[key, dense(c[key].values)]] if kind == "VarLenFeature" else components(
                key, c[key])
        for key, (kind, _) in SEQUENCE_SPEC.items():
            if kind == "VarLenFeature":
                out += varlen(key, f[key], int(f[key].dense_shape[0]))
            else:
                out += components(key, f[key])
        singles.append(out)
    c, f, lengths = tf.io.parse_sequence_example(tf.constant(serialized), ctx, seq)
    rows = len(serialized)
    batch = []
    for key, (kind, _) in CONTEXT_SPEC.items():
        batch += varlen(key, c[key], rows) if kind == "VarLenFeature" else components(key, c[key])
    for key, (kind, _) in SEQUENCE_SPEC.items():
        if kind == "VarLenFeature":
            steps = [int(x[key].dense_shape[0]) for x in single_raw]
            per_step = np.concatenate([np.bincount(x[key].indices.numpy()[:, 0], minlength=n)
                                       if n else np.zeros(0, np.int64)
                                       for x, n in zip(single_raw, steps)]).astype(np.int64)
            batch += [[key, dense(f[key].values)],
                      [key + ".row_lengths", dense(tf.constant(per_step))],
                      [key + ".length", dense(tf.constant(steps, tf.int64))]]
        elif kind == "RaggedFeature":
            batch += components(key, f[key])
        else:
            batch += [[key, dense(f[key])], [key + ".length", dense(lengths[key])]]
    return {"context_spec": spec_json(CONTEXT_SPEC), "sequence_spec": spec_json(SEQUENCE_SPEC),
            "serialized": [s.hex() for s in serialized], "single": singles, "batch": batch}


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    golden = {"tensorflow": tf.__version__, "examples": make_examples(out_dir),
              "sequence_examples": make_sequences(out_dir)}
    with open(os.path.join(out_dir, "parsed.json"), "w") as f:
        json.dump(golden, f, indent=None, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
