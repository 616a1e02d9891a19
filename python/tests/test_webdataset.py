"""sluice.WebDatasetDataset against the webdataset package's grouping of the golden
shards (tests/data/tar, made by tests/data/tar/make_golden.py), brace patterns in
list_files, missing members, ignore_errors and random access with the index."""

import hashlib
import json
import pathlib
import shutil

import pytest

import sluice

TAR = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "tar"


def expected(name):
    return json.loads((TAR / (name + ".json")).read_text())


def digest(sample):
    return {k: (v if k == "__key__" else hashlib.sha256(v).hexdigest()) for k, v in sample.items()}


@pytest.mark.parametrize("name", ["ustar.tar", "pax.tar", "gnu.tar", "pax.tar.gz"])
def test_samples_match_webdataset(name):
    want = expected(name)
    exts = sorted({k for s in want for k in s if k != "__key__"})
    ds = sluice.WebDatasetDataset(str(TAR / name), extensions=exts, missing="empty")
    got = [digest(s) for s in ds]
    assert len(got) == len(want)
    empty = hashlib.sha256(b"").hexdigest()
    for g, w in zip(got, want):
        assert set(g) == {"__key__", *exts}
        assert g["__key__"].decode() == w["__key__"]
        for e in exts:
            assert g[e] == (w[e]["sha256"] if e in w else empty), (w["__key__"], e)


def test_extensions_default_to_the_first_sample():
    ds = sluice.WebDatasetDataset(str(TAR / "ustar.tar"))
    first = next(iter(ds))
    assert list(first) == ["__key__", "jpg", "cls", "json"]
    assert first["__key__"] == b"train/000000"
    assert isinstance(first["jpg"], bytes)


def test_missing_member_is_an_error_naming_file_and_key():
    ds = sluice.WebDatasetDataset(str(TAR / "ustar.tar"), extensions=["jpg", "cls"])
    with pytest.raises(sluice.InvalidArgumentError, match=r"ustar\.tar.*train/sub/000005.*jpg"):
        list(ds)
    # ignore_errors skips exactly the samples without both.
    keys = [s["__key__"] for s in ds.ignore_errors()]
    want = [s["__key__"].encode() for s in expected("ustar.tar") if "jpg" in s and "cls" in s]
    assert keys == want


def test_brace_patterns_in_list_files(tmp_path):
    for name in ["ustar.tar", "gnu.tar", "pax.tar"]:
        shutil.copy(TAR / name, tmp_path / name)
    files = sluice.Dataset.list_files(str(tmp_path / "{ustar,gnu}.tar"))
    assert [pathlib.Path(f.decode() if isinstance(f, bytes) else str(f)).name
            for f in files] == ["gnu.tar", "ustar.tar"]
    ds = sluice.WebDatasetDataset(files, extensions=["jpg"], missing="empty")
    assert len(list(ds)) == len(expected("gnu.tar")) + len(expected("ustar.tar"))
    with pytest.raises(sluice.InvalidArgumentError, match="unbalanced"):
        sluice.Dataset.list_files(str(tmp_path / "{ustar,gnu.tar"))


def test_random_access_with_the_index(tmp_path):
    path = tmp_path / "ustar.tar"
    shutil.copy(TAR / "ustar.tar", path)
    want = [s["__key__"].encode() for s in expected("ustar.tar")]
    assert sluice.WebDatasetDataset(str(path), extensions=["cls"],
                                    missing="empty").cardinality() == sluice.UNKNOWN_CARDINALITY
    assert sluice.webdataset.build_index(path) == len(want)
    ds = sluice.WebDatasetDataset(str(path), extensions=["cls"], missing="empty")
    assert ds.cardinality() == len(want)
    shuffled = [s["__key__"] for s in ds.global_shuffle(seed=3)]
    assert sorted(shuffled) == sorted(want) and shuffled != want
    assert [s["__key__"] for s in ds] == want
