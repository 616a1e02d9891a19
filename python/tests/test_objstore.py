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


def test_wrong_secret_is_permission_denied(tmp_path):
    """A real access key with a wrong secret: moto checks signatures once its
    first three (unauthenticated) calls have made the IAM user, its key and
    a policy allowing everything; the right secret then reaches the store
    (NotFound), the wrong one is refused."""
    from conftest import aws_environment, moto_server
    boto3 = pytest.importorskip("boto3")
    with moto_server(env={"INITIAL_NO_AUTH_ACTION_COUNT": "3"}) as server:
        iam = boto3.client("iam", endpoint_url=server.endpoint_url, region_name="us-east-1",
                           aws_access_key_id="x", aws_secret_access_key="x")
        iam.create_user(UserName="trainer")
        key = iam.create_access_key(UserName="trainer")["AccessKey"]
        iam.put_user_policy(UserName="trainer", PolicyName="all", PolicyDocument=(
            '{"Version": "2012-10-17", "Statement": '
            '[{"Effect": "Allow", "Action": "*", "Resource": "*"}]}'))
        uri = f"s3://data/x.tfrecord?endpoint_override=127.0.0.1:{server.port}&scheme=http"
        with aws_environment(AWS_ACCESS_KEY_ID=key["AccessKeyId"],
                             AWS_SECRET_ACCESS_KEY=key["SecretAccessKey"]):
            with pytest.raises(errors.NotFoundError, match="no such bucket"):
                sio.read_file(uri)
        with aws_environment(AWS_ACCESS_KEY_ID=key["AccessKeyId"],
                             AWS_SECRET_ACCESS_KEY=key["SecretAccessKey"] + "-wrong"):
            with pytest.raises(errors.FailedPreconditionError, match="permission denied") as e:
                sio.read_file(uri)
        assert uri in str(e.value)


def test_gfile_on_s3(s3_server):
    gfile = sio.gfile
    with gfile.GFile("s3://data/g/notes.txt", "w") as f:
        f.write("hello\n")
        assert not gfile.exists("s3://data/g/notes.txt")  # published at close
    assert gfile.exists("s3://data/g/notes.txt")
    assert gfile.isdir("s3://data/g")
    with gfile.GFile("s3://data/g/notes.txt") as f:
        assert f.read() == "hello\n"
    assert gfile.stat("s3://data/g/notes.txt").length == 6
    with pytest.raises(RuntimeError):
        with gfile.GFile("s3://data/g/failed.bin", "wb") as f:
            f.write(b"partial")
            raise RuntimeError("stop")
    assert not gfile.exists("s3://data/g/failed.bin")  # the upload was aborted
    with gfile.GFile("s3://data/g/b.txt", "w") as f:
        f.write("b")
    assert gfile.listdir("s3://data/g") == ["b.txt", "notes.txt"]
    assert gfile.glob("s3://data/g/*.txt") == ["s3://data/g/b.txt", "s3://data/g/notes.txt"]
    gfile.remove("s3://data/g/b.txt")
    assert gfile.glob("s3://data/g/*.txt") == ["s3://data/g/notes.txt"]


def test_parquet_from_s3_equals_the_local_read(s3_server):
    import os
    local = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "parquet",
                         "types.parquet")
    with open(local, "rb") as src, sio.gfile.GFile("s3://data/pq/types.parquet", "wb") as dst:
        dst.write(src.read())
    if not getattr(sluice, "ParquetDataset", None):
        pytest.skip("no ParquetDataset")
    try:
        here = list(sluice.ParquetDataset(local, columns=["i64"]).as_numpy_iterator())
    except errors.FailedPreconditionError:
        pytest.skip("this build has no Parquet")
    there = list(sluice.ParquetDataset("s3://data/pq/types.parquet",
                                       columns=["i64"]).as_numpy_iterator())
    assert len(there) == len(here) > 0
    for a, b in zip(here, there):
        assert a["i64"] == b["i64"]


def test_remote_cache_serves_the_second_epoch_from_disk(s3_server, tmp_path):
    names = [f"s3://data/cached/part-{s}.tfrecord" for s in range(2)]
    for s, name in enumerate(names):
        with sio.TFRecordWriter(name) as w:
            for i in range(100):
                w.write(f"{s}:{i}".encode() * 50)
    try:
        sio.set_remote_cache(tmp_path / "cache", "16M")
        first = sio.remote_cache_stats()
        epoch1 = [bytes(r) for r in sluice.TFRecordDataset(names).as_numpy_iterator()]
        second = sio.remote_cache_stats()
        epoch2 = [bytes(r) for r in sluice.TFRecordDataset(names).as_numpy_iterator()]
        third = sio.remote_cache_stats()
    finally:
        sio.set_remote_cache(None, 0)
    assert epoch1 == epoch2 and len(epoch1) == 200
    assert second["filled"] - first["filled"] == 2
    assert third["misses"] == second["misses"]  # epoch 2 never went to the store
    assert third["hits"] - second["hits"] >= 2
    assert third["bytes_read_from_cache"] - second["bytes_read_from_cache"] > 0


def test_object_store_sample_on_s3(s3_server):
    import os
    import subprocess
    import sys
    sample = os.path.join(os.path.dirname(__file__), "..", "samples", "object_store.py")
    env = dict(os.environ)
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(sluice.__file__)))
    env["PYTHONPATH"] = os.pathsep.join([package_root, env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, sample, "s3://data/sample"], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "glob matched 4" in r.stdout
    assert "epoch 2: 1024 examples, label sum 523776 (remote cache: 0 opens from the store" \
        in r.stdout
    assert "512 examples left, the same as without the checkpoint" in r.stdout
