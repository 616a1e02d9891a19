"""sluice.NumpyDataset and sluice.FixedLengthRecordDataset against NumPy's own reading."""
import gzip
import zlib

import numpy as np
import pytest

import sluice


def rows(ds):
    return list(ds)


def test_npy_rows_match_numpy(tmp_path):
    arrays = {
        "f32.npy": np.arange(30, dtype="<f4").reshape(10, 3) / 7,
        "be_i4.npy": (np.arange(12, dtype=">i4") - 5).reshape(6, 2),
        "f16.npy": np.linspace(-2, 2, 12, dtype="<f2").reshape(3, 2, 2),
        "u8.npy": np.arange(5, dtype="u1"),
        "b.npy": np.arange(6) % 3 == 0,
        "i8.npy": np.arange(7, dtype="<i8") * -3,
    }
    for name, a in arrays.items():
        path = tmp_path / name
        np.save(path, a)
        want = np.load(path)
        ds = sluice.NumpyDataset(str(path))
        assert ds.cardinality() == len(want)
        got = rows(ds)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            g = np.asarray(g)
            assert g.shape == w.shape
            assert g.dtype == w.dtype.newbyteorder("=")
            np.testing.assert_array_equal(g, w)


def test_npy_header_versions_and_widened_tokens(tmp_path):
    a = np.arange(20, dtype="<i4")
    for version in [(1, 0), (2, 0), (3, 0)]:
        path = tmp_path / f"v{version[0]}.npy"
        with open(path, "wb") as f:
            np.lib.format.write_array(f, a, version=version)
        np.testing.assert_array_equal(np.stack(rows(sluice.NumpyDataset(str(path)))), np.load(path))
    tokens = (np.arange(1000) * 37 % 50257).astype(np.uint16)
    np.save(tmp_path / "tokens.npy", tokens)
    ds = sluice.NumpyDataset(str(tmp_path / "tokens.npy"), sequence_length=64)
    want = [tokens[i * 64:i * 64 + 65].astype(np.int32) for i in range((1000 - 1) // 64)]
    assert ds.cardinality() == len(want)
    got = rows(ds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.int32
        np.testing.assert_array_equal(g, w)


def test_token_windows_global_shuffle_is_exact_and_resumable(tmp_path):
    tokens = np.arange(2001, dtype=np.int32)
    np.save(tmp_path / "t.npy", tokens)
    ds = sluice.NumpyDataset(str(tmp_path / "t.npy"), sequence_length=16).global_shuffle(seed=3)
    full = [int(np.asarray(w)[0]) // 16 for w in ds]
    assert sorted(full) == list(range(125))
    # reshuffle_each_iteration: each pass another order, each a permutation.
    assert sorted(int(np.asarray(w)[0]) // 16 for w in ds) == list(range(125))
    it = ds.iterator()
    head = [int(np.asarray(next(it))[0]) // 16 for _ in range(40)]
    state = it.save()
    rest = [int(np.asarray(w)[0]) // 16 for w in ds.iterator(state)]
    assert sorted(head + rest) == list(range(125))
    assert len(rest) == 85
    again = ds.iterator(state)
    assert [int(np.asarray(w)[0]) // 16 for w in again] == rest


def test_npz_stored_and_compressed(tmp_path):
    x = np.arange(30, dtype=np.float32).reshape(10, 3)
    y = np.arange(10, dtype=np.int64) * 2
    z = np.arange(4, dtype=np.int32)
    np.savez(tmp_path / "s.npz", x=x, y=y, z=z)
    np.savez_compressed(tmp_path / "c.npz", x=x, y=y)
    for name in ["s.npz", "c.npz"]:
        want = np.load(tmp_path / name)
        got = rows(sluice.NumpyDataset(str(tmp_path / name), keys=["x", "y"]))
        assert len(got) == 10
        for i, e in enumerate(got):
            assert set(e) == {"x", "y"}
            np.testing.assert_array_equal(e["x"], want["x"][i])
            np.testing.assert_array_equal(e["y"], want["y"][i])
    with pytest.raises(sluice.InvalidArgumentError, match="10 and 4 rows"):
        sluice.NumpyDataset(str(tmp_path / "s.npz"))
    with pytest.raises(sluice.NotFoundError, match="it has: x, y, z"):
        sluice.NumpyDataset(str(tmp_path / "s.npz"), keys="w")
    with pytest.raises(sluice.ResourceExhaustedError, match="over the limit"):
        sluice.NumpyDataset(str(tmp_path / "c.npz"), keys="x", max_inflated_bytes=16)


def test_unsupported_arrays_are_refused(tmp_path):
    np.save(tmp_path / "f.npy", np.asfortranarray(np.ones((3, 2), np.float32)))
    with pytest.raises(sluice.InvalidArgumentError, match="Fortran order"):
        sluice.NumpyDataset(str(tmp_path / "f.npy"))
    np.save(tmp_path / "o.npy", np.array([1, "a"], dtype=object), allow_pickle=True)
    with pytest.raises(sluice.InvalidArgumentError, match="object arrays"):
        sluice.NumpyDataset(str(tmp_path / "o.npy"))
    (tmp_path / "bad.npy").write_bytes(b"\x93NUMPY\x01\x00\xff\xff{'descr'")
    with pytest.raises(sluice.DataLossError, match="bad.npy: offset 8"):
        sluice.NumpyDataset(str(tmp_path / "bad.npy"))


def test_fixed_length_records(tmp_path):
    header, footer, rb = b"HEAD", b"FT", 6
    body = bytes(range(6 * 9))
    raw = header + body + footer
    (tmp_path / "r.bin").write_bytes(raw)
    (tmp_path / "r.gz").write_bytes(gzip.compress(raw))
    (tmp_path / "r.z").write_bytes(zlib.compress(raw))
    want = [body[i:i + rb] for i in range(0, len(body), rb)]
    for name, comp in [("r.bin", None), ("r.gz", "GZIP"), ("r.z", "ZLIB")]:
        ds = sluice.FixedLengthRecordDataset(str(tmp_path / name), rb, header_bytes=4,
                                             footer_bytes=2, compression_type=comp)
        assert [bytes(r) for r in ds] == want
        assert ds.cardinality() == (9 if comp is None else sluice.UNKNOWN_CARDINALITY)
    shuffled = sluice.FixedLengthRecordDataset(str(tmp_path / "r.bin"), rb, 4, 2).global_shuffle(seed=1)
    assert sorted(bytes(r) for r in shuffled) == want
    (tmp_path / "p.bin").write_bytes(raw + b"x")
    with pytest.raises(sluice.InvalidArgumentError, match="not a multiple of record_bytes"):
        list(sluice.FixedLengthRecordDataset(str(tmp_path / "p.bin"), rb, 4, 2))
