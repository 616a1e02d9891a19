"""Dataset.save / Dataset.load / Dataset.snapshot and sluice.experimental.snapshot:
round trips, compression, shard_func and reader_func, errors, and snapshot's
write-once-read-later behaviour (pipeline/snapshot.h, docs/pipeline.md)."""

import json
import os

import numpy as np
import pytest

import sluice


def as_list(ds):
    out = []
    for e in ds:
        if isinstance(e, dict):
            out.append({k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in e.items()})
        elif isinstance(e, tuple):
            out.append(tuple(v.tolist() if hasattr(v, "tolist") else v for v in e))
        else:
            out.append(e.tolist() if hasattr(e, "tolist") else e)
    return out


@pytest.mark.parametrize("make", [
    lambda: sluice.Dataset.range(10),
    lambda: sluice.Dataset.from_tensor_slices(np.array([b"a", b"", b"xyz"], dtype=object)),
    lambda: sluice.Dataset.from_tensor_slices((np.arange(6).reshape(3, 2), np.array([1.5, 2.5, 3.5],
                                                                                 np.float32))),
    lambda: sluice.Dataset.from_tensor_slices({"id": np.arange(4), "w": np.ones(4, np.float32)}),
])
def test_save_load_round_trip(tmp_path, make):
    ds = make()
    ds.save(str(tmp_path / "saved"))
    back = sluice.Dataset.load(str(tmp_path / "saved"))
    assert as_list(back) == as_list(ds)
    assert back.cardinality() == len(as_list(ds))
    assert back.element_spec == ds.element_spec
    meta = json.loads((tmp_path / "saved" / "snapshot.metadata").read_text())
    assert meta["complete"] is True and meta["num_elements"] == len(as_list(ds))


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_compression(tmp_path, compression):
    sluice.Dataset.range(50).save(tmp_path, compression=compression)
    assert as_list(sluice.Dataset.load(tmp_path)) == list(range(50))
    assert as_list(sluice.Dataset.load(tmp_path, compression=compression)) == list(range(50))
    with pytest.raises(sluice.errors.InvalidArgumentError):
        sluice.Dataset.load(tmp_path, compression="")


def test_shard_func_and_reader_func(tmp_path):
    sluice.Dataset.range(6).save(tmp_path, shard_func=lambda x: x % 2)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("shard")) == [
        "shard-00000.tfrecord", "shard-00001.tfrecord"]
    assert as_list(sluice.Dataset.load(tmp_path)) == [0, 1, 2, 3, 4, 5]

    def reader(datasets):
        assert len(datasets) == 2
        return datasets[1].concatenate(datasets[0])
    assert as_list(sluice.Dataset.load(tmp_path, reader_func=reader)) == [1, 3, 5, 0, 2, 4]
    # tf.data's idioms on the Dataset of Datasets.
    tf_style = sluice.Dataset.load(
        tmp_path, reader_func=lambda datasets: datasets.interleave(lambda x: x, cycle_length=2))
    assert as_list(tf_style) == [0, 1, 2, 3, 4, 5]
    flat = sluice.Dataset.load(tmp_path, reader_func=lambda ds: ds.flat_map(lambda x: x))
    assert as_list(flat) == [0, 2, 4, 1, 3, 5]
    with pytest.raises(TypeError):
        sluice.Dataset.load(tmp_path, reader_func=3)


def test_element_spec_given_to_load(tmp_path):
    sluice.Dataset.range(3).save(tmp_path)
    spec = sluice.TensorSpec([], sluice.int64)
    assert as_list(sluice.Dataset.load(tmp_path, element_spec=spec)) == [0, 1, 2]
    with pytest.raises(sluice.errors.InvalidArgumentError):
        sluice.Dataset.load(tmp_path, element_spec=sluice.TensorSpec([], sluice.float32))


def test_errors(tmp_path):
    with pytest.raises(sluice.errors.NotFoundError, match="snapshot.metadata"):
        sluice.Dataset.load(tmp_path / "nothing")
    with pytest.raises(ValueError):
        sluice.Dataset.range(3).save(tmp_path, shard_func=lambda x: "three")
    with pytest.raises(NotImplementedError):
        sluice.Dataset.range(3).save(tmp_path, checkpoint_args={"checkpoint_interval": 1})

    def bad_shard(x):
        raise ValueError("no shard for you")
    with pytest.raises(ValueError, match="no shard for you"):
        sluice.Dataset.range(3).save(tmp_path / "b", shard_func=bad_shard)
    # The failed save is incomplete: load refuses it.
    with pytest.raises(sluice.errors.FailedPreconditionError):
        sluice.Dataset.load(tmp_path / "b")
    # A truncated shard names the file.
    sluice.Dataset.range(10).save(tmp_path / "t")
    shard = tmp_path / "t" / "shard-00000.tfrecord"
    shard.write_bytes(shard.read_bytes()[:-5])
    with pytest.raises(sluice.errors.DataLossError, match="shard-00000.tfrecord"):
        as_list(sluice.Dataset.load(tmp_path / "t"))


def test_snapshot_writes_once_then_reads(tmp_path):
    calls = []

    def f(x):
        calls.append(1)
        return x * 2

    ds = sluice.Dataset.range(8).map(f).snapshot(tmp_path)
    assert as_list(ds) == [2 * i for i in range(8)]
    assert len(calls) == 8
    assert as_list(ds) == [2 * i for i in range(8)]
    assert len(calls) == 8  # read from the snapshot
    runs = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert len(runs) == 1 and len(runs[0].name) == 16
    assert as_list(sluice.Dataset.load(runs[0])) == [2 * i for i in range(8)]


def test_snapshot_interrupted_write_is_restarted(tmp_path):
    ds = sluice.Dataset.range(20).snapshot(tmp_path, compression="GZIP")
    it = iter(ds)
    assert [next(it) for _ in range(5)] == list(range(5))
    it.close()
    del it
    run = next(p for p in tmp_path.iterdir() if p.is_dir())
    assert json.loads((run / "snapshot.metadata").read_text())["complete"] is False
    assert not [p for p in os.listdir(run) if ".tmp-" in p]
    assert as_list(ds) == list(range(20))
    assert json.loads((run / "snapshot.metadata").read_text())["complete"] is True


def test_snapshot_save_restore_mid_read_and_mid_write(tmp_path):
    ds = sluice.Dataset.range(12).snapshot(tmp_path / "s", shard_func=lambda x: x % 3)
    for _ in range(2):  # the first pass writes, the second reads
        it = ds.iterator()
        head = [next(it) for _ in range(5)]
        state = it.save()
        rest = list(it)
        assert head + rest == list(range(12))
        assert list(ds.iterator(state=state)) == rest


def test_experimental_snapshot_with_apply(tmp_path):
    ds = sluice.Dataset.range(5).apply(
        sluice.experimental.snapshot(str(tmp_path), reader_func=lambda d: d[0]))
    assert as_list(ds) == [0, 1, 2, 3, 4]
    # The reader_func's dataset: shard 0 only (elements 0 and 4 of 4 shards).
    assert as_list(ds) == [0, 4]
    sluice.experimental.save(sluice.Dataset.range(3), str(tmp_path / "e"))
    assert as_list(sluice.experimental.load(str(tmp_path / "e"))) == [0, 1, 2]
