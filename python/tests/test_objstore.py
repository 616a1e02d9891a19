"""Object stores from Python: TFRecord shards on s3:// (moto on loopback,
the s3_server fixture of conftest.py) and sluice.io's remote settings."""
import pytest

import sluice
from sluice import errors
from sluice import io as sio


def _write_shards(n_shards=3, n_records=200):
    names = []
    for s in range(n_shards):
        name = f"s3://data/train/train-{s}-of-{n_shards}.tfrecord"
        with sio.TFRecordWriter(name) as w:
            for i in range(n_records):
                w.write(f"shard {s} record {i}".encode())
        names.append(name)
    return names


def test_tfrecord_shards_on_s3(s3_server):
    names = _write_shards()
    sio.reset_remote_stats()
    got = [bytes(r.numpy() if hasattr(r, "numpy") else r) for r in sluice.TFRecordDataset(names)]
    assert len(got) == 600
    assert got[0] == b"shard 0 record 0"
    assert got[-1] == b"shard 2 record 199"
    stats = sio.remote_stats()
    assert stats["files_opened"] >= 3
    assert stats["bytes_read"] > 0
    listed = [bytes(f.numpy() if hasattr(f, "numpy") else f).decode()
              for f in sluice.Dataset.list_files("s3://data/train/train-*.tfrecord")]
    assert listed == names
    # As docs/objstore.md shows it: list_files, then interleave the shards.
    mixed = sluice.Dataset.list_files("s3://data/train/train-*.tfrecord").interleave(
        sluice.TFRecordDataset, cycle_length=3)
    got = [bytes(r.numpy() if hasattr(r, "numpy") else r) for r in mixed]
    assert len(got) == 600
    assert got[:3] == [b"shard 0 record 0", b"shard 1 record 0", b"shard 2 record 0"]


def test_missing_object_is_not_found_naming_it(s3_server):
    with pytest.raises(errors.NotFoundError, match="s3://data/no/such/key"):
        sio.read_file("s3://data/no/such/key")


def test_remote_options_round_trip_and_validation():
    try:
        sio.set_remote_options(request_bytes=1 << 20, read_ahead=2, request_timeout_s=3.5)
        o = sio.remote_options()
        assert o["request_bytes"] == 1 << 20
        assert o["read_ahead"] == 2
        assert o["request_timeout_s"] == 3.5
        with pytest.raises(errors.InvalidArgumentError, match="request_bytes"):
            sio.set_remote_options(request_bytes=10)
        assert sio.remote_options()["request_bytes"] == 1 << 20
    finally:
        sio.reset_remote_options()
    assert sio.remote_options()["read_ahead"] == 4
    assert set(sio.remote_stats()) >= {"requests", "bytes_read", "retries", "throttled",
                                       "timeouts", "errors"}
