"""Golden files for TextLineDataset and CsvDataset, made with TensorFlow.

Run with a Python that has tensorflow-cpu (tests/data/README.md):

    python tests/data/text/make_golden.py

Writes the input files into this folder (inputs/) and what tf.data reads
from them into golden.json: for each case the file, the options, and either
the elements (bytes as hex, a line over 64 bytes as its size and zlib
CRC-32; floats as float.hex() of the value, which is
exact for float32 too) or the elements read before an error and the error.
"""
import gzip
import json
import os
import zlib

import numpy as np
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
INPUTS = os.path.join(HERE, "inputs")

TEXT = {
    "lines.txt": b"first\nsecond\n\nfourth\n",
    "no_newline.txt": b"a\nb",
    "crlf.txt": b"a\r\nb\r\n\r\nc",
    "lone_cr.txt": b"a\rb\nc\r",
    "cr_last.txt": b"a\n\r",
    "empty.txt": b"",
    "newline_only.txt": b"\n",
    "blank_lines.txt": b"\n\n\nx\n\n",
    "cr_cr_lf.txt": b"x\r\r\ny",
    "binary.txt": bytes(range(256)) + b"\n\x00\xff\n",
    "long.txt": b"".join(b"%d:" % i + b"x" * (i * 397 % 6000) + b"\n" for i in range(30)),
}

S, I32, I64, F32, F64 = "string", "int32", "int64", "float32", "float64"


def req(dtype):
    return {"dtype": dtype, "default": None}


def opt(dtype, value):
    return {"dtype": dtype, "default": value}


CSV = [
    # name, bytes, defaults, options
    ("basic", b"1,2.5,x\n-3,1e3,yy\n", [req(I32), req(F32), req(S)], {}),
    ("types", b"2147483647,-9223372036854775808,0.1,0.1,s\n", [req(I32), req(I64), req(F32), req(F64), req(S)], {}),
    ("quoted", b'a,"b\nc",d\n1,"x""y",3\r\n"",",",""""\n', [opt(S, "z")] * 3, {}),
    ("crlf", b"a,b\r\nc,d", [req(S), req(S)], {}),
    ("lone_cr", b'a,"b\rc"\rd,e\r', [req(S), req(S)], {}),
    ("defaults", b"1,,NA\n,7,\n", [opt(I32, 5), opt(I64, 6), opt(F64, 7.5)], {"na_value": "NA"}),
    ("na_quoted", b'NA,"NA"\n', [opt(S, "z"), opt(S, "y")], {"na_value": "NA"}),
    ("blank_line_default", b"a\n\nb\n", [opt(S, "z")], {}),
    ("tabs", b"a\tb c\n", [req(S), req(S)], {"field_delim": "\t"}),
    ("no_quote_delim", b'a,"b"\n"c""d,e\n', [req(S), req(S)], {"use_quote_delim": False}),
    ("header", b"h1,h2\n1,2\n3,4\n", [req(I64), req(I64)], {"header": True}),
    ("header_only", b"h1,h2\n", [req(I64), req(I64)], {"header": True}),
    ("select", b"1,2,3\n4,5,6\n", [req(I64), req(I64)], {"select_cols": [0, 2]}),
    ("select_prefix", b"1,2,3\n4,5,6\n", [req(I64)], {"select_cols": [1]}),
    ("exclude", b"1,2,3\n4,5,6\n", [req(I64), req(I64)], {"exclude_cols": [1]}),
    ("spaces", b" 1 ,\t2.5 , a \n", [req(I64), req(F32), req(S)], {}),
    ("floats", b".5,5.,-.5e1,0x1p3,inf,-Infinity,1e400,1e-50\n", [req(F64)] * 6 + [req(F32)] * 2, {}),
    ("plus", b"+1,+2.5\n", [req(I64), req(F64)], {}),
    ("empty_file", b"", [req(S)], {}),
    ("multiline_quoted", b'"a\n\nb"\nc\n', [req(S)], {}),
    # Errors: the rows before, then the error.
    ("err_missing", b"1,2\n3,\n", [req(I64), req(I64)], {}),
    ("err_blank_line", b"a,b\n\nc,d\n", [req(S), req(S)], {}),
    ("err_too_many", b"1,2\n1,2,3\n", [req(I64), req(I64)], {}),
    ("err_too_few", b"1,2\n1\n", [req(I64), req(I64)], {}),
    ("err_int", b"1\nx\n", [req(I32)], {}),
    ("err_int_range", b"99999999999\n", [req(I32)], {}),
    ("err_int_float", b"1.5\n", [req(I64)], {}),
    ("err_float", b"1.5f\n", [req(F32)], {}),
    ("err_quote_in_unquoted", b"ok,1\na,b\"c\n", [req(S), req(S)], {}),
    ("err_after_quote", b'a,"b"c\n', [req(S), req(S)], {}),
    ("err_open_quote", b'ok,1\na,"b\nc\n', [req(S), req(S)], {}),
    ("err_na_required", b"NA\n", [req(S)], {"na_value": "NA"}),
]

COMPRESSED_TEXT = ["lines.txt", "crlf.txt", "long.txt"]
COMPRESSED_CSV = ["quoted", "basic"]


def tf_default(d):
    dtype = tf.as_dtype(d["dtype"])
    if d["default"] is None:
        return dtype
    return tf.constant([d["default"]], dtype=dtype)


def value_json(t):
    v = t.numpy()
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, (np.floating,)):
        return float(v).hex()
    return int(v)


def line_json(b):
    # Lines over 64 bytes as their length and zlib CRC-32, to keep this file small.
    return b.hex() if len(b) <= 64 else {"size": len(b), "crc32": zlib.crc32(b)}


def read(make):
    out = []
    try:
        for el in make():
            out.append(el)
        return out, None
    except tf.errors.OpError as e:
        return out, {"class": type(e).__name__, "message": e.message.split("}}")[-1].strip()}


def write(name, data, compression):
    if compression == "GZIP":
        data = gzip.compress(data, mtime=0)
        name += ".gz"
    elif compression == "ZLIB":
        data = zlib.compress(data)
        name += ".zlib"
    with open(os.path.join(INPUTS, name), "wb") as f:
        f.write(data)
    return name


def main():
    os.makedirs(INPUTS, exist_ok=True)
    golden = {"tensorflow": tf.__version__, "text": [], "csv": []}
    for name, data in TEXT.items():
        for comp in [""] + (["GZIP", "ZLIB"] if name in COMPRESSED_TEXT else []):
            fname = write(name, data, comp)
            path = os.path.join(INPUTS, fname)
            els, err = read(lambda: tf.data.TextLineDataset(path, compression_type=comp))
            golden["text"].append({"file": fname, "compression": comp,
                                   "lines": [line_json(e.numpy()) for e in els], "error": err})
    for name, data, defaults, opts in CSV:
        for comp in [""] + (["GZIP", "ZLIB"] if name in COMPRESSED_CSV else []):
            fname = write(name + ".csv", data, comp)
            path = os.path.join(INPUTS, fname)
            kw = dict(opts)
            els, err = read(lambda: tf.data.experimental.CsvDataset(
                path, [tf_default(d) for d in defaults], compression_type=comp, **kw))
            golden["csv"].append({
                "file": fname, "compression": comp, "defaults": defaults, "options": opts,
                "rows": [[value_json(t) for t in e] for e in els], "error": err})
    with open(os.path.join(HERE, "golden.json"), "w") as f:
        json.dump(golden, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
