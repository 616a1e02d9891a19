"""sluice.ParquetDataset over pyarrow's golden files (tests/data/parquet/make_golden.py says
what each holds, as formulas of the row number)."""
import pathlib

import numpy as np
import pytest

import sluice

DATA = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "parquet"

pytestmark = pytest.mark.skipif(not sluice.parquet_available(),
                                reason="this build of sluice has no Parquet (no Arrow C++)")


def test_rows_of_every_type():
    ds = sluice.ParquetDataset(str(DATA / "types.parquet"))
    assert ds.cardinality() == 10
    rows = list(ds)
    assert len(rows) == 10
    for i, r in enumerate(rows):
        assert r["i8"] == i - 5 and r["i8"].dtype == np.int32
        assert r["i64"] == 10**12 * i - 7
        assert r["u8"] == 25 * i and r["u8"].dtype == np.uint8
        assert r["u32"] == 4000000000 + i and r["u32"].dtype == np.int64
        assert r["f16"].dtype == np.float16 and float(r["f16"]) == i / 2
        assert r["f64"] == i / 4
        assert bool(r["b"]) == (i % 3 == 0)
        assert r["s"] == (b"" if i == 7 else f"row-{i}".encode())
        assert r["bin"] == bytes([i, 0, 255])
        np.testing.assert_array_equal(r["fsl"], np.array([i, i + .25, i + .5], np.float32))
        np.testing.assert_array_equal(r["fsl2"], np.array([[i, i + 1], [i + 2, i + 3]]))
        np.testing.assert_array_equal(r["vl"], np.arange(i % 4))
        assert list(r["vls"]) == [f"w{i}".encode()] * (i % 3)
        assert r["st.a"] == 2 * i and r["st.b.d"] == f"d{i}".encode()
        assert r["ts"] == i * 10**6 and r["d32"] == 19000 + i


def test_columns_and_batch_rows():
    ds = sluice.ParquetDataset([str(DATA / "types.parquet")], columns=["vl", "i32"],
                               batch_rows=3)
    assert ds.cardinality() == 5  # row groups of 4, 4, 2 rows; batches stay in a row group
    assert list(ds.element_spec.keys()) == ["vl", "vl.row_lengths", "i32"]
    batches = list(ds)
    assert [len(b["i32"]) for b in batches] == [3, 1, 3, 1, 2]
    i32 = np.concatenate([b["i32"] for b in batches])
    np.testing.assert_array_equal(i32, 100000 * np.arange(10))
    lengths = np.concatenate([b["vl.row_lengths"] for b in batches])
    np.testing.assert_array_equal(lengths, np.arange(10) % 4)
    values = np.concatenate([b["vl"] for b in batches])
    np.testing.assert_array_equal(values, np.concatenate([np.arange(k % 4) for k in range(10)]))


def test_dictionary_zstd_and_shuffle():
    ds = sluice.ParquetDataset(str(DATA / "dict_zstd.parquet"), columns="n", batch_rows=100)
    n = np.concatenate([b["n"] for b in ds])
    np.testing.assert_array_equal(n, np.arange(1000))
    words = [b"alpha", b"beta", b"gamma", b"delta"]
    rows = sluice.ParquetDataset(str(DATA / "dict_zstd.parquet"), columns=["word", "n"])
    for r in rows.take(9):
        assert r["word"] == words[int(r["n"]) % 4]
    shuffled = sorted(int(r["n"]) for r in rows.global_shuffle(seed=3))
    assert shuffled == list(range(1000))


def test_image_column_is_encoded_bytes():
    rows = list(sluice.ParquetDataset(str(DATA / "image.parquet")))
    names = ["image_0.png", "image_1.jpg", "image_2.png"]
    for k, r in enumerate(rows):
        assert r["image"] == (DATA / "images" / names[k]).read_bytes()
        assert r["label"] == k


def test_nulls_are_errors_unless_filled():
    ds = sluice.ParquetDataset(str(DATA / "nulls.parquet"), columns=["x"])
    with pytest.raises(sluice.InvalidArgumentError, match=r"column 'x', row 2"):
        list(ds)
    assert [int(r["x"]) for r in ds.ignore_errors()] == [0, 1, 3, 4, 5, 6, 7]
    filled = sluice.ParquetDataset(str(DATA / "nulls.parquet"), fill_nulls=True)
    rows = list(filled)
    assert rows[2]["x"] == 0 and rows[5]["s"] == b"" and len(rows[1]["vl"]) == 0


def test_errors_name_file_and_row_group():
    with pytest.raises(sluice.NotFoundError, match="nope"):
        sluice.ParquetDataset(str(DATA / "types.parquet"), columns=["nope"])
    with pytest.raises(sluice.InvalidArgumentError, match="'m'"):
        sluice.ParquetDataset(str(DATA / "map.parquet"))
    ds = sluice.ParquetDataset(str(DATA / "corrupt_rg1.parquet"), columns=["x"])
    with pytest.raises(sluice.DataLossError, match="corrupt_rg1.parquet: row group 1"):
        list(ds)
    assert [int(r["x"]) for r in ds.ignore_errors()] == [0, 1, 2, 3, 8, 9, 10, 11]


def test_max_row_group_bytes_refuses_a_bomb():
    # bomb.parquet: 37 KB on disk, "rep" decodes to 4 MiB (make_golden.py).
    ds = sluice.ParquetDataset(str(DATA / "bomb.parquet"), columns=["rep"],
                               max_row_group_bytes=1 << 20)
    with pytest.raises(sluice.ResourceExhaustedError,
                       match=r"bomb.parquet: row group 0 .*column 'rep'.*max_row_group_bytes"):
        list(ds)
    rows = list(sluice.ParquetDataset(str(DATA / "bomb.parquet"), columns=["rep"], batch_rows=1024))
    assert len(rows) == 1 and rows[0]["rep"][1023] == b"r" * 4096
