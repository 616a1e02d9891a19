#!/usr/bin/env python3
"""Writes TensorFlow golden files for sluice's C++ tests.

Run through tests/data/make_golden.sh, which provides a virtualenv with
tensorflow-cpu and the "tfrecord" package. Usage:

    make_golden.py OUTPUT_DIR

Everything written is deterministic: re-running with the same TensorFlow,
protobuf and zlib versions gives byte-identical files. See tests/data/README.md
for what each file contains and what it taught us about TF's semantics.

Conventions used in the JSON files (chosen so C++ can compare exactly):
  * int64 values are plain JSON integers (exact, up to +-2^63);
  * float32 values are their IEEE-754 bit patterns as "0x%08x" strings, so
    nan, -0.0, denormals and infinities compare bit-exactly;
  * bytes/string values are lowercase hex strings ("" for empty);
  * dense tensors are {"dtype", "shape", "values"} with row-major flat values;
  * sparse tensors are {"indices", "values", "dense_shape"}, each a dense tensor.
"""

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zlib

import numpy as np
import tensorflow as tf
from google.protobuf import json_format

# Note: the "tfrecord" package must not be imported into this process: its
# __init__ registers its own copy of tensorflow/core/example/*.proto and
# protobuf then refuses the duplicate symbols. Its tfrecord2idx tool is run as
# a subprocess instead (see write_raw_records).

# --------------------------------------------------------------------------
# Raw TFRecord payloads
# --------------------------------------------------------------------------

# Record i has LENGTHS[i] bytes; byte j is (i * 31 + j * 7) & 0xff.
# 70000 crosses a 64 KiB buffer boundary; 0 checks empty records.
LENGTHS = [0, 1, 11, 100, 1000, 65536, 3, 70000]

COMPRESSIONS = {"none": "", "zlib": "ZLIB", "gzip": "GZIP"}


def payload(i):
    """The bytes of raw record i (see LENGTHS)."""
    return bytes((i * 31 + j * 7) & 0xFF for j in range(LENGTHS[i]))


def write_tfrecord(path, records, compression_type):
    """Writes records with tf.io.TFRecordWriter and the given compression."""
    options = tf.io.TFRecordOptions(compression_type=compression_type)
    with tf.io.TFRecordWriter(path, options) as writer:
        for rec in records:
            writer.write(rec)


def read_tfrecord(path, compression_type):
    """Reads a TFRecord file back with tf.data (used as a self-check)."""
    ds = tf.data.TFRecordDataset(path, compression_type=compression_type)
    return [r.numpy() for r in ds]


def write_raw_records(out):
    records = [payload(i) for i in range(len(LENGTHS))]
    for name, ctype in COMPRESSIONS.items():
        path = os.path.join(out, f"records_{name}.tfrecord")
        write_tfrecord(path, records, ctype)
        assert read_tfrecord(path, ctype) == records, path

    # Two GZIP TFRecord files concatenated byte-wise: a multi-member gzip
    # stream. TF's reader must (and does) continue into the second member.
    tmp = tempfile.mkdtemp(prefix="sluice-golden-")
    try:
        parts = []
        for k, chunk in enumerate((records[:4], records[4:])):
            part = os.path.join(tmp, f"part{k}.tfrecord.gz")
            write_tfrecord(part, chunk, "GZIP")
            with open(part, "rb") as f:
                parts.append(f.read())
    finally:
        shutil.rmtree(tmp)
    concat = os.path.join(out, "records_gzip_concat.tfrecord")
    with open(concat, "wb") as f:
        f.write(b"".join(parts))
    assert read_tfrecord(concat, "GZIP") == records, concat

    # Index in the "offset length\n" format of tfrecord2idx / NVIDIA DALI.
    none_path = os.path.join(out, "records_none.tfrecord")
    idx_path = none_path + ".idx"
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from tfrecord.tools.tfrecord2idx import create_index; "
            "create_index(sys.argv[1], sys.argv[2])",
            none_path,
            idx_path,
        ],
        check=True,
    )
    check_index(idx_path, records)


def check_index(idx_path, records):
    """Asserts what the index "length" column means: the whole framed record
    (8-byte length + 4-byte length CRC + payload + 4-byte payload CRC)."""
    offset = 0
    with open(idx_path) as f:
        lines = f.read().splitlines()
    assert len(lines) == len(records)
    for line, rec in zip(lines, records):
        off, length = map(int, line.split())
        assert off == offset and length == 12 + len(rec) + 4, (line, len(rec))
        offset += length


def compare_with_python_zlib(out):
    """Prints whether TF's GZIP/ZLIB output equals Python zlib's one-shot
    deflate of the same framed bytes. Informational only; writes nothing."""
    with open(os.path.join(out, "records_none.tfrecord"), "rb") as f:
        framed = f.read()
    for name, wbits in (("gzip", 31), ("zlib", 15)):
        with open(os.path.join(out, f"records_{name}.tfrecord"), "rb") as f:
            tf_bytes = f.read()
        c = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, wbits, 9)
        py_bytes = c.compress(framed) + c.flush()
        hdr = 10 if name == "gzip" else 2
        print(
            f"  {name}: tf={len(tf_bytes)}B python-zlib={len(py_bytes)}B "
            f"identical={tf_bytes == py_bytes} "
            f"identical_after_header={tf_bytes[hdr:] == py_bytes[hdr:]} "
            f"tf_header={tf_bytes[:hdr].hex()} py_header={py_bytes[:hdr].hex()}"
        )


# --------------------------------------------------------------------------
# JSON encoding of tensors
# --------------------------------------------------------------------------


def f32_bits(x):
    """IEEE-754 float32 bit pattern of x, as "0x%08x"."""
    return "0x%08x" % int(np.asarray(x, dtype="<f4").view("<u4"))


def encode_dense(t):
    dtype = t.dtype
    shape = [int(d) for d in t.shape]
    if dtype == tf.int64:
        values = [int(v) for v in t.numpy().reshape(-1)]
    elif dtype == tf.float32:
        bits = t.numpy().reshape(-1).astype("<f4").view("<u4")
        values = ["0x%08x" % int(v) for v in bits]
    elif dtype == tf.string:
        # tf.reshape, not numpy: a scalar string comes back as plain bytes, and
        # numpy's fixed-width bytes dtype would drop trailing NUL bytes.
        values = [bytes(v).hex() for v in tf.reshape(t, [-1]).numpy().tolist()]
    else:
        raise TypeError(f"unexpected dtype {dtype}")
    return {"dtype": dtype.name, "shape": shape, "values": values}


def encode_tensor(t):
    if isinstance(t, tf.SparseTensor):
        return {
            "sparse": True,
            "indices": encode_dense(t.indices),
            "values": encode_dense(t.values),
            "dense_shape": encode_dense(t.dense_shape),
        }
    return encode_dense(t)


def encode_outputs(outputs):
    """Encodes a {name: Tensor|SparseTensor} dict with sorted keys."""
    return {k: encode_tensor(outputs[k]) for k in sorted(outputs)}


def describe_spec(spec):
    """A JSON description of a feature spec, for readers of the golden files."""
    desc = {}
    for name in sorted(spec):
        f = spec[name]
        d = {"type": type(f).__name__, "dtype": f.dtype.name}
        if hasattr(f, "shape"):
            d["shape"] = list(f.shape)
        if getattr(f, "allow_missing", False):
            d["allow_missing"] = True
        if hasattr(f, "default_value"):
            v = f.default_value
            if isinstance(v, bytes):
                v = v.hex()
            elif isinstance(v, float):
                v = f32_bits(v)
            d["default_value"] = v
        desc[name] = d
    return desc


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=False, ensure_ascii=True)
        f.write("\n")


# --------------------------------------------------------------------------
# tf.train.Example
# --------------------------------------------------------------------------

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def int64_feature(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def float_feature(values):
    return tf.train.Feature(float_list=tf.train.FloatList(value=values))


def bytes_feature(values):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=values))


def make_example(**features):
    """Builds a tf.train.Example; a None feature is left out entirely."""
    ex = tf.train.Example()
    for name, feat in features.items():
        if feat is not None:
            ex.features.feature[name].CopyFrom(feat)
    return ex


def make_examples():
    nan, inf = float("nan"), float("inf")
    return [
        # 0: plain values, float edge cases 0.1 / -0.0 / 1e-38 (a float32
        #    denormal), 2 frames.
        make_example(
            label=int64_feature([7]),
            scores=float_feature([0.1, -0.0, 1e-38]),
            name=bytes_feature([b"alpha"]),
            tags=int64_feature([1, -2, 3]),
            frames=float_feature([0.5, 1.5, 2.5, 3.5]),
        ),
        # 1: int64 min, inf/-inf/nan, non-UTF-8 name, "tags" present but
        #    empty (zero values), 1 frame.
        make_example(
            label=int64_feature([INT64_MIN]),
            scores=float_feature([inf, -inf, nan]),
            name=bytes_feature([b"\xff\xfe\x00bin"]),
            tags=int64_feature([]),
            frames=float_feature([-1.0, 1.0]),
        ),
        # 2: int64 max, "name" and "tags" absent entirely, 3 frames.
        make_example(
            label=int64_feature([INT64_MAX]),
            scores=float_feature([1.0, 2.0, 3.0]),
            tags=None,
            frames=float_feature([1, 2, 3, 4, 5, 6]),
        ),
        # 3: "label" absent (FixedLen default applies), empty name, 4 tags
        #    with int64 extremes, "frames" absent entirely.
        make_example(
            scores=float_feature([-1.5, 3.4028234663852886e38, 1.401298464324817e-45]),
            name=bytes_feature([b""]),
            tags=int64_feature([INT64_MIN, INT64_MAX, -1, 0]),
        ),
        # 4: negative label, invalid UTF-8 name, "frames" present with zero
        #    values (k = 0).
        make_example(
            label=int64_feature([-42]),
            scores=float_feature([0.25, -0.1, 100.0]),
            name=bytes_feature([b"\xc3\x28"]),
            tags=int64_feature([5]),
            frames=float_feature([]),
        ),
        # 5: zero label, UTF-8 name, a nan inside frames, an unrelated extra
        #    feature (which parsing must ignore).
        make_example(
            label=int64_feature([0]),
            scores=float_feature([-0.0, 0.0, -1e-38]),
            name=bytes_feature(["caf\u00e9 \u2603".encode("utf-8")]),
            tags=int64_feature([10, -20]),
            frames=float_feature([nan, 0.0, -2.0, 2.0]),
            extra=bytes_feature([b"ignored", b"also ignored"]),
        ),
    ]


def example_spec():
    return {
        "label": tf.io.FixedLenFeature([], tf.int64, default_value=-1),
        "scores": tf.io.FixedLenFeature([3], tf.float32),
        "name": tf.io.FixedLenFeature([], tf.string, default_value=b"?"),
        "tags": tf.io.VarLenFeature(tf.int64),
        "frames": tf.io.FixedLenSequenceFeature(
            [2], tf.float32, allow_missing=True, default_value=0.0
        ),
    }


def write_examples(out):
    examples = make_examples()
    serialized = [ex.SerializeToString(deterministic=True) for ex in examples]
    write_tfrecord(os.path.join(out, "examples.tfrecord"), serialized, "")

    # One canonical protobuf-JSON line per example (camelCase field names,
    # int64 as strings, bytes as base64, NaN/Infinity as strings). Map keys
    # are sorted so the output does not depend on map iteration order.
    with open(os.path.join(out, "examples.jsonl"), "w") as f:
        for ex in examples:
            f.write(json_format.MessageToJson(ex, indent=None, sort_keys=True))
            f.write("\n")

    spec = example_spec()
    batch = tf.io.parse_example(tf.constant(serialized), spec)
    single = tf.io.parse_single_example(tf.constant(serialized[0]), spec)
    write_json(
        os.path.join(out, "examples_parsed.json"),
        {
            "spec": describe_spec(spec),
            "serialized_hex": [s.hex() for s in serialized],
            "parse_example": encode_outputs(batch),
            "parse_single_example_0": encode_outputs(single),
        },
    )


# --------------------------------------------------------------------------
# Parse errors and edge-case semantics
# --------------------------------------------------------------------------


def core_message(message):
    """The kernel's own error text: drops eager mode's "{{function_node ...}} "
    prefix and " [Op:ParseExampleV2]" suffix, which the op framework adds."""
    message = re.sub(r"^\{\{function_node [^}]*\}\} ", "", message)
    return re.sub(r" \[Op:[A-Za-z0-9]+\]( name: .*)?$", "", message)


def run_parse(fn):
    """Runs a parse call; returns its encoded outputs or its error."""
    try:
        return {"ok": True, "outputs": encode_outputs(fn())}
    except tf.errors.OpError as e:
        return {
            "ok": False,
            "error_type": type(e).__name__,
            "error_code": e.error_code,
            "core_message": core_message(e.message),
            "message": e.message,
        }
    except (ValueError, TypeError) as e:  # raised in Python before the op
        return {"ok": False, "error_type": type(e).__name__, "message": str(e)}


def error_cases():
    """(description, example, spec) triples for parse_errors.json."""
    good = make_example(
        label=int64_feature([1]), scores=float_feature([1.0, 2.0, 3.0])
    )
    empty_kind = make_example(label=tf.train.Feature())
    empty_list = make_example(label=int64_feature([]))
    return [
        (
            "required_fixedlen_missing",
            "FixedLen feature without default is absent from the example",
            make_example(scores=float_feature([1.0, 2.0, 3.0])),
            {"label": tf.io.FixedLenFeature([], tf.int64)},
        ),
        (
            "dtype_mismatch_fixedlen",
            "'label' is an int64_list but is requested as float32",
            good,
            {"label": tf.io.FixedLenFeature([], tf.float32)},
        ),
        (
            "dtype_mismatch_varlen",
            "'label' is an int64_list but is requested as VarLen string",
            good,
            {"label": tf.io.VarLenFeature(tf.string)},
        ),
        (
            "wrong_value_count",
            "'scores' has 3 values but is requested with shape [2]",
            good,
            {"scores": tf.io.FixedLenFeature([2], tf.float32)},
        ),
        (
            "wrong_value_count_with_default",
            "'scores' has 3 values, requested with shape [2] and a default",
            good,
            {"scores": tf.io.FixedLenFeature([2], tf.float32, default_value=[0.0, 0.0])},
        ),
        (
            "fixedlenseq_not_multiple",
            "'frames' has 3 values; FixedLenSequence item shape is [2]",
            make_example(frames=float_feature([1.0, 2.0, 3.0])),
            {
                "frames": tf.io.FixedLenSequenceFeature(
                    [2], tf.float32, allow_missing=True, default_value=0.0
                )
            },
        ),
        (
            "empty_feature_fixedlen_with_default",
            "'label' is an empty tf.train.Feature() (no kind set)",
            empty_kind,
            {"label": tf.io.FixedLenFeature([], tf.int64, default_value=-1)},
        ),
        (
            "empty_feature_fixedlen_no_default",
            "'label' is an empty tf.train.Feature() (no kind set)",
            empty_kind,
            {"label": tf.io.FixedLenFeature([], tf.int64)},
        ),
        (
            "empty_feature_varlen",
            "'label' is an empty tf.train.Feature() (no kind set)",
            empty_kind,
            {"label": tf.io.VarLenFeature(tf.int64)},
        ),
        (
            "empty_feature_varlen_string",
            "'label' is an empty tf.train.Feature(), VarLen of another dtype",
            empty_kind,
            {"label": tf.io.VarLenFeature(tf.string)},
        ),
        (
            "empty_feature_fixedlenseq",
            "'label' is an empty tf.train.Feature() (no kind set)",
            empty_kind,
            {
                "label": tf.io.FixedLenSequenceFeature(
                    [], tf.int64, allow_missing=True, default_value=0
                )
            },
        ),
        (
            "empty_list_fixedlen_with_default",
            "'label' is an int64_list with zero values; FixedLen with default",
            empty_list,
            {"label": tf.io.FixedLenFeature([], tf.int64, default_value=-1)},
        ),
        (
            "empty_list_fixedlen_no_default",
            "'label' is an int64_list with zero values; FixedLen, no default",
            empty_list,
            {"label": tf.io.FixedLenFeature([], tf.int64)},
        ),
    ]


def write_parse_errors(out):
    cases = []
    for key, what, example, spec in error_cases():
        ser = example.SerializeToString(deterministic=True)
        cases.append(
            {
                "case": key,
                "description": what,
                "serialized_hex": ser.hex(),
                "spec": describe_spec(spec),
                # Batch of one example, and the same example on its own.
                "parse_example": run_parse(
                    lambda: tf.io.parse_example(tf.constant([ser]), spec)
                ),
                "parse_single_example": run_parse(
                    lambda: tf.io.parse_single_example(tf.constant(ser), spec)
                ),
            }
        )
    write_json(os.path.join(out, "parse_errors.json"), {"cases": cases})


# --------------------------------------------------------------------------
# tf.train.SequenceExample
# --------------------------------------------------------------------------


def make_sequence_example(length, seq_id, tokens, vec):
    se = tf.train.SequenceExample()
    se.context.feature["length"].CopyFrom(int64_feature([length]))
    se.context.feature["id"].CopyFrom(bytes_feature([seq_id]))
    for step in tokens:
        se.feature_lists.feature_list["tokens"].feature.add().CopyFrom(
            int64_feature(step)
        )
    for step in vec:
        se.feature_lists.feature_list["vec"].feature.add().CopyFrom(
            float_feature(step)
        )
    return se


def make_sequence_examples():
    return [
        make_sequence_example(
            3, b"seq-0", [[1, 2], [3], [4, 5, 6]],
            [[0.1, 0.2], [-0.0, 1e-38], [float("inf"), -1.0]],
        ),
        # An empty step in "tokens", a non-UTF-8 id, int64 extremes.
        make_sequence_example(
            2, b"\x00\xffseq-1", [[], [INT64_MIN, INT64_MAX, -7]],
            [[float("nan"), 2.0], [3.0, -4.0]],
        ),
        make_sequence_example(1, b"seq-2", [[9, 8, 7, 6, 5]], [[5.5, 6.5]]),
    ]


def write_sequence_examples(out):
    seqs = make_sequence_examples()
    serialized = [s.SerializeToString(deterministic=True) for s in seqs]
    write_tfrecord(os.path.join(out, "sequence_examples.tfrecord"), serialized, "")

    context_spec = {
        "length": tf.io.FixedLenFeature([], tf.int64),
        "id": tf.io.FixedLenFeature([], tf.string),
    }
    sequence_spec = {
        "tokens": tf.io.VarLenFeature(tf.int64),
        "vec": tf.io.FixedLenSequenceFeature([2], tf.float32),
    }
    parsed = []
    for i, ser in enumerate(serialized):
        ctx, seq = tf.io.parse_single_sequence_example(
            tf.constant(ser),
            context_features=context_spec,
            sequence_features=sequence_spec,
        )
        parsed.append(
            {
                "index": i,
                "context": encode_outputs(ctx),
                "sequence": encode_outputs(seq),
            }
        )
    write_json(
        os.path.join(out, "sequence_parsed.json"),
        {
            "context_spec": describe_spec(context_spec),
            "sequence_spec": describe_spec(sequence_spec),
            "serialized_hex": [s.hex() for s in serialized],
            "parse_single_sequence_example": parsed,
        },
    )


# --------------------------------------------------------------------------


def main(argv):
    if len(argv) != 2:
        sys.exit(f"usage: {argv[0]} OUTPUT_DIR")
    out = argv[1]
    os.makedirs(out, exist_ok=True)

    write_raw_records(out)
    write_examples(out)
    write_parse_errors(out)
    write_sequence_examples(out)

    versions = {
        pkg: importlib.metadata.version(pkg)
        for pkg in ("tensorflow-cpu", "tfrecord", "protobuf", "numpy")
    }
    versions["tf.__version__"] = tf.__version__
    versions["python zlib"] = zlib.ZLIB_RUNTIME_VERSION
    print("make_golden: versions:", json.dumps(versions))
    print("make_golden: TF compressed output vs one-shot Python zlib:")
    compare_with_python_zlib(out)
    for name in sorted(os.listdir(out)):
        print(f"  {os.path.getsize(os.path.join(out, name)):8d}  {name}")


if __name__ == "__main__":
    main(sys.argv)
