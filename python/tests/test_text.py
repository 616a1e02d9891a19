"""sluice.TextLineDataset, sluice.experimental.CsvDataset and make_csv_dataset."""

import gzip

import numpy as np
import pytest

import sluice


def test_text_lines_as_tensorflow(tmp_path):
    p = tmp_path / "a.txt"
    p.write_bytes(b"one\r\ntwo\n\nthr\ree")
    g = tmp_path / "b.txt.gz"
    g.write_bytes(gzip.compress(b"x\ny\n"))
    got = [bytes(x) for x in sluice.TextLineDataset([str(p), str(g)])]
    assert got == [b"one", b"two", b"", b"three", b"x", b"y"]
    got = [bytes(x) for x in sluice.TextLineDataset([str(p), str(g)], num_parallel_reads=2)]
    assert got == [b"one", b"x", b"two", b"y", b"", b"three"]
    assert [bytes(x) for x in sluice.TextLineDataset(str(g), compression_type="GZIP")] == [b"x", b"y"]


def test_text_line_too_long_is_skipped_by_ignore_errors(tmp_path):
    p = tmp_path / "long.txt"
    p.write_bytes(b"a\n" + b"x" * 10000 + b"\nb\n")
    ds = sluice.TextLineDataset(str(p), buffer_size=4096, max_line_size=5000)
    with pytest.raises(sluice.InvalidArgumentError, match="line 2 at offset 2"):
        list(ds)
    assert [bytes(x) for x in ds.ignore_errors()] == [b"a", b"b"]


def test_csv_dataset_typing_and_defaults(tmp_path):
    p = tmp_path / "d.csv"
    p.write_bytes(b'id,x,name\n1,2.5,"a,b"\n2,,"say ""hi"""\n')
    ds = sluice.experimental.CsvDataset(
        str(p), [sluice.int64, [0.5], ""], header=True)
    rows = list(ds)
    assert [int(r[0]) for r in rows] == [1, 2]
    assert [float(r[1]) for r in rows] == [2.5, 0.5]
    assert rows[0][1].dtype == np.float32
    assert [bytes(r[2]) for r in rows] == [b"a,b", b'say "hi"']
    assert sluice.CsvDataset is sluice.experimental.CsvDataset


def test_csv_errors_name_file_line_column(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_bytes(b"1,2\n3,x\n5,6\n")
    ds = sluice.experimental.CsvDataset(str(p), [np.int32, np.int32])
    with pytest.raises(sluice.InvalidArgumentError, match=r"bad\.csv:2: column 2: 'x' is not a valid int32"):
        list(ds)
    assert [int(r[0]) for r in ds.ignore_errors()] == [1, 5]
    with pytest.raises(sluice.InvalidArgumentError, match="strictly increasing"):
        sluice.experimental.CsvDataset(str(p), [np.int32, np.int32], select_cols=[1, 0])


def test_csv_select_cols(tmp_path):
    p = tmp_path / "s.csv"
    p.write_bytes(b"1,2,3\n4,5,6\n")
    rows = list(sluice.experimental.CsvDataset(str(p), [np.int64, np.int64], select_cols=[0, 2]))
    assert [(int(a), int(b)) for a, b in rows] == [(1, 3), (4, 6)]


def test_make_csv_dataset(tmp_path):
    (tmp_path / "m0.csv").write_bytes(b"survived,age,fare,name\n1,22,7.25,a\n0,38,71.5,b\n1,,8.05,c\n")
    (tmp_path / "m1.csv").write_bytes(b"survived,age,fare,name\n0,35,53.1,d\n")
    ds = sluice.experimental.make_csv_dataset(str(tmp_path / "m*.csv"), batch_size=3,
                                              label_name="survived", num_epochs=1, shuffle=False)
    batches = list(ds)
    assert len(batches) == 2
    features, label = batches[0]
    assert list(features) == ["age", "fare", "name"]
    assert features["age"].dtype == np.int32 and features["fare"].dtype == np.float32
    assert list(np.asarray(features["age"])) == [22, 38, 0]
    assert list(np.asarray(label)) == [1, 0, 1]
    assert len(batches[1][1]) == 1
    plain = sluice.experimental.make_csv_dataset(str(tmp_path / "m0.csv"), batch_size=2,
                                                 select_columns=["name", "age"], shuffle=True,
                                                 shuffle_seed=3)
    batch = next(iter(plain))
    assert sorted(batch) == ["age", "name"] and len(batch["age"]) == 2
    with pytest.raises(sluice.InvalidArgumentError, match="label_name"):
        sluice.experimental.make_csv_dataset(str(tmp_path / "m0.csv"), 2, label_name="nope")
