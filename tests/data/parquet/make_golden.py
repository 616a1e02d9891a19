"""Writes the Parquet golden files of tests/data/parquet/ with pyarrow.

    python3 -m venv /tmp/venv-pa && /tmp/venv-pa/bin/pip install pyarrow==26.0.1 numpy pillow
    /tmp/venv-pa/bin/python tests/data/parquet/make_golden.py

Every value is a formula of the row number i (below), which the tests
(tests/records/parquet_file_test.cc, python/tests/test_parquet.py) check.

types.parquet       10 rows, row groups of 4 (4, 4, 2), snappy. Columns:
  i8 = i - 5 (int8), i16 = 1000 i - 3000 (int16), i32 = 100000 i (int32),
  i64 = 10**12 i - 7, u8 = 25 i, u16 = 60000 + i, u32 = 4000000000 + i,
  u64 = 2**62 + i, f16 = i / 2 (float16), f32 = 1.5 i, f64 = i / 4, b = i % 3 == 0,
  s = "row-i" ("" for i = 7), bin = bytes([i, 0, 255]),
  fsl = [i, i + .25, i + .5] (fixed_size_list<float32, 3>),
  fsl2 = [[i, i+1], [i+2, i+3]] (fixed_size_list<fixed_size_list<int32, 2>, 2>),
  vl = [0, 1, .., i % 4 - 1] (list<int64>), vls = ["wi"] * (i % 3) (list<string>),
  st = {a: 2 i (int32), b: {c: i / 10, d: "di"}}, ts = timestamp[us] i * 10**6,
  d32 = date32 19000 + i.
nulls.parquet       8 rows, row groups of 4, zstd: x = i (null at 2), s = "si" (null
  at 5), vl = [i, i] (null list at 1, [3, null] at 3), st = {a: i} (null struct
  at 4), ok = i (int32, no nulls).
image.parquet       Hugging Face's Image feature: image = struct<bytes, path>, label =
  i; row 0 a 4x3 PNG, row 1 an 8x8 JPEG, row 2 a 2x2 PNG (images/ holds the same
  files); the "huggingface" schema metadata as `datasets` writes it.
dict_zstd.parquet   1000 rows, row groups of 300, zstd: word =
  ["alpha", "beta", "gamma", "delta"][i % 4] as dictionary<int32, string>,
  plain = the same as a string column (dictionary-encoded pages), n = i (int32).
map.parquet         m = map<string, int32> (no tensor form: an error).
corrupt_rg1.parquet 12 rows, row groups of 4, no compression: x = i (int64),
  s = "si"; row group 1's first page header overwritten with 0xff bytes (pyarrow
  fails on it and reads row groups 0 and 2).
bomb.parquet        1024 rows, one row group, zstd, a few KiB on disk: rep = "r" * 4096
  (string, dictionary-encoded: the footer says ~4 KiB, it decodes to 4 MiB),
  zeros = 4096 zero bytes (binary, plain: the footer says ~4 MiB uncompressed).
  The tests read it under a 1 MiB max_row_group_bytes.
"""
import io
import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))


def out(name):
    return os.path.join(HERE, name)


def types():
    n = 10
    i = np.arange(n)
    cols = {
        "i8": pa.array(i - 5, pa.int8()),
        "i16": pa.array(1000 * i - 3000, pa.int16()),
        "i32": pa.array(100000 * i, pa.int32()),
        "i64": pa.array(10**12 * i - 7, pa.int64()),
        "u8": pa.array(25 * i, pa.uint8()),
        "u16": pa.array(60000 + i, pa.uint16()),
        "u32": pa.array(4000000000 + i, pa.uint32()),
        "u64": pa.array([2**62 + k for k in range(n)], pa.uint64()),
        "f16": pa.array((i / 2).astype(np.float16), pa.float16()),
        "f32": pa.array(1.5 * i, pa.float32()),
        "f64": pa.array(i / 4, pa.float64()),
        "b": pa.array([k % 3 == 0 for k in range(n)], pa.bool_()),
        "s": pa.array(["" if k == 7 else f"row-{k}" for k in range(n)], pa.string()),
        "bin": pa.array([bytes([k, 0, 255]) for k in range(n)], pa.binary()),
        "fsl": pa.array([[k, k + 0.25, k + 0.5] for k in range(n)], pa.list_(pa.float32(), 3)),
        "fsl2": pa.array([[[k, k + 1], [k + 2, k + 3]] for k in range(n)],
                         pa.list_(pa.list_(pa.int32(), 2), 2)),
        "vl": pa.array([list(range(k % 4)) for k in range(n)], pa.list_(pa.int64())),
        "vls": pa.array([[f"w{k}"] * (k % 3) for k in range(n)], pa.list_(pa.string())),
        "st": pa.array([{"a": 2 * k, "b": {"c": k / 10, "d": f"d{k}"}} for k in range(n)],
                       pa.struct([("a", pa.int32()),
                                  ("b", pa.struct([("c", pa.float64()), ("d", pa.string())]))])),
        "ts": pa.array([k * 10**6 for k in range(n)], pa.timestamp("us")),
        "d32": pa.array([19000 + k for k in range(n)], pa.date32()),
    }
    pq.write_table(pa.table(cols), out("types.parquet"), row_group_size=4, compression="snappy")


def nulls():
    n = 8
    x = [None if k == 2 else k for k in range(n)]
    s = [None if k == 5 else f"s{k}" for k in range(n)]
    vl = [[k, k] for k in range(n)]
    vl[1] = None
    vl[3] = [3, None]
    st = [{"a": k} for k in range(n)]
    st[4] = None
    t = pa.table({
        "x": pa.array(x, pa.int64()),
        "s": pa.array(s, pa.string()),
        "vl": pa.array(vl, pa.list_(pa.int32())),
        "st": pa.array(st, pa.struct([("a", pa.int32())])),
        "ok": pa.array(range(n), pa.int32()),
    })
    pq.write_table(t, out("nulls.parquet"), row_group_size=4, compression="zstd")


def image_bytes(fmt, w, h, color):
    buf = io.BytesIO()
    Image.new("RGB", (w, h), color).save(buf, format=fmt)
    return buf.getvalue()


def image():
    imgs = [("png", image_bytes("PNG", 4, 3, (255, 0, 0))),
            ("jpg", image_bytes("JPEG", 8, 8, (0, 128, 255))),
            ("png", image_bytes("PNG", 2, 2, (0, 255, 0)))]
    os.makedirs(out("images"), exist_ok=True)
    rows = []
    for k, (ext, data) in enumerate(imgs):
        name = f"image_{k}.{ext}"
        with open(os.path.join(out("images"), name), "wb") as f:
            f.write(data)
        rows.append({"bytes": data, "path": name})
    schema = pa.schema([("image", pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
                        ("label", pa.int64())])
    hf = {"info": {"features": {"image": {"_type": "Image"},
                                "label": {"dtype": "int64", "_type": "Value"}}}}
    schema = schema.with_metadata({"huggingface": json.dumps(hf)})
    t = pa.table({"image": rows, "label": list(range(3))}, schema=schema)
    pq.write_table(t, out("image.parquet"), compression="snappy")


def dict_zstd():
    n = 1000
    words = ["alpha", "beta", "gamma", "delta"]
    plain = [words[k % 4] for k in range(n)]
    t = pa.table({
        "word": pa.array(plain, pa.string()).dictionary_encode(),
        "plain": pa.array(plain, pa.string()),
        "n": pa.array(range(n), pa.int32()),
    })
    pq.write_table(t, out("dict_zstd.parquet"), row_group_size=300, compression="zstd",
                   use_dictionary=True)


def map_file():
    t = pa.table({"m": pa.array([[("a", 1)], [("b", 2)]], pa.map_(pa.string(), pa.int32()))})
    pq.write_table(t, out("map.parquet"))


def corrupt():
    n = 12
    t = pa.table({"x": pa.array(range(n), pa.int64()),
                  "s": pa.array([f"s{k}" for k in range(n)], pa.string())})
    path = out("corrupt_rg1.parquet")
    pq.write_table(t, path, row_group_size=4, compression="none", use_dictionary=False)
    md = pq.ParquetFile(path).metadata
    at = md.row_group(1).column(0).data_page_offset
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(b"\xff" * 16)
    pf = pq.ParquetFile(path)
    assert pf.read_row_group(0).column("x").to_pylist() == [0, 1, 2, 3]
    assert pf.read_row_group(2).column("x").to_pylist() == [8, 9, 10, 11]
    try:
        pf.read_row_group(1)
    except Exception:  # noqa: BLE001 - any error is the point
        pass
    else:
        raise SystemExit("row group 1 still reads")


def bomb():
    n = 1024
    t = pa.table({"rep": pa.array(["r" * 4096] * n, pa.string()),
                  "zeros": pa.array([bytes(4096)] * n, pa.binary())})
    path = out("bomb.parquet")
    pq.write_table(t, path, compression="zstd", use_dictionary=["rep"])
    md = pq.ParquetFile(path).metadata.row_group(0)
    assert md.column(0).total_uncompressed_size < 64 << 10, md.column(0)
    assert md.column(1).total_uncompressed_size > 4 << 20, md.column(1)
    assert os.path.getsize(path) < 64 << 10


if __name__ == "__main__":
    types()
    nulls()
    image()
    dict_zstd()
    map_file()
    corrupt()
    bomb()
    print("pyarrow", pa.__version__, "wrote", HERE)
