"""Golden files for FixedLengthRecordDataset, read by TensorFlow.

Run with a Python that has tensorflow-cpu (tests/data/make_golden.sh makes
one):  python tests/data/fixed_length/make_golden.py
Writes small files beside this script and golden.json: for each case, the
file, its parameters, the records tf.data.FixedLengthRecordDataset yields
(hex) and, where reading ends in an error, the error's class and message
(TF reads the records before the error of a compressed file first).
"""
import gzip
import json
import os
import zlib

import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))


def payload(n, seed):
    return bytes((seed * 31 + j * 7) & 0xFF for j in range(n))


def write(name, data, compression):
    if compression == "GZIP":
        data = gzip.compress(data, mtime=0)
    elif compression == "ZLIB":
        data = zlib.compress(data)
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)


def body(header, record_bytes, n, footer, extra=b""):
    return (payload(header, 1) + payload(record_bytes * n, 2) + extra +
            payload(footer, 3))


CASES = [
    # name, file, stream bytes, record, header, footer
    ("basic", "basic.bin", body(5, 7, 12, 3), 7, 5, 3),
    ("no_header_footer", "plain16.bin", body(0, 16, 4, 0), 16, 0, 0),
    ("many", "many.bin", body(10, 40, 200, 6), 40, 10, 6),
    ("partial_tail", "partial.bin", body(5, 7, 3, 3, b"abcd"), 7, 5, 3),
    ("header_footer_only", "header_only.bin", body(5, 7, 0, 3), 7, 5, 3),
    ("empty", "empty.bin", b"", 7, 0, 0),
]


def read(path, rb, hb, fb, comp):
    out = []
    try:
        ds = tf.data.FixedLengthRecordDataset(path, rb, header_bytes=hb, footer_bytes=fb,
                                              compression_type=comp)
        for r in ds:
            out.append(r.numpy().hex())
        return out, None
    except tf.errors.OpError as e:
        return out, {"class": type(e).__name__, "message": e.message}


def main():
    cases = []
    for name, fname, data, rb, hb, fb in CASES:
        for comp, suffix in (("", ""), ("GZIP", ".gz"), ("ZLIB", ".zlib")):
            if name in ("many", "empty") and comp == "ZLIB":
                continue
            f = fname + suffix
            write(f, data, comp)
            records, error = read(os.path.join(HERE, f), rb, hb, fb, comp)
            if error:
                error["message"] = error["message"].replace(HERE + "/", "")
            cases.append({"name": name, "file": f, "record_bytes": rb, "header_bytes": hb,
                          "footer_bytes": fb, "compression": comp, "records": records,
                          "error": error})
    with open(os.path.join(HERE, "golden.json"), "w") as f:
        json.dump({"tensorflow": tf.__version__, "cases": cases}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
