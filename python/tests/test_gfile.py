"""sluice.io.gfile on local paths, and the remote cache's settings.

The same calls on s3:// URIs against a real S3-compatible server are in
test_objstore.py.
"""
import pytest

import sluice


def test_write_publishes_at_close_and_reads_back(tmp_path):
    path = tmp_path / "notes.txt"
    with sluice.io.gfile.GFile(path, "w") as f:
        f.write("hello\n")
        assert not sluice.io.gfile.exists(path)
        f.write("world\n")
    assert sluice.io.gfile.exists(path)
    with sluice.io.gfile.GFile(path) as f:
        assert f.readlines() == ["hello\n", "world\n"]
    with sluice.io.gfile.GFile(path, "rb") as f:
        assert f.read(5) == b"hello"
        assert f.read() == b"\nworld\n"
    st = sluice.io.gfile.stat(path)
    assert st.length == 12 and not st.is_directory and st.mtime_nsec > 0


def test_a_failed_with_block_writes_nothing(tmp_path):
    path = tmp_path / "x.bin"
    with pytest.raises(RuntimeError):
        with sluice.io.gfile.GFile(path, "wb") as f:
            f.write(b"partial")
            raise RuntimeError("stop")
    assert not sluice.io.gfile.exists(path)
    assert list(tmp_path.iterdir()) == []


def test_folders_listing_glob_and_remove(tmp_path):
    sluice.io.gfile.makedirs(tmp_path / "a" / "b")
    for name in ("a/one.tfrecord", "a/two.tfrecord", "a/b/three.tfrecord"):
        with sluice.io.gfile.GFile(tmp_path / name, "wb") as f:
            f.write(b"12")
    assert sluice.io.gfile.isdir(tmp_path / "a")
    assert sluice.io.gfile.listdir(tmp_path / "a") == ["b", "one.tfrecord", "two.tfrecord"]
    assert [p for p, _ in sluice.io.gfile.walk(tmp_path / "a")] == [
        str(tmp_path / "a/b/three.tfrecord"), str(tmp_path / "a/one.tfrecord"),
        str(tmp_path / "a/two.tfrecord")]
    assert sluice.io.gfile.glob(str(tmp_path / "a/*.tfrecord")) == [
        str(tmp_path / "a/one.tfrecord"), str(tmp_path / "a/two.tfrecord")]
    assert sluice.io.gfile.glob(str(tmp_path / "a/*.nothing")) == []
    sluice.io.gfile.remove(tmp_path / "a/one.tfrecord")
    sluice.io.gfile.remove(tmp_path / "a/one.tfrecord")  # already gone: fine
    assert not sluice.io.gfile.exists(tmp_path / "a/one.tfrecord")


def test_errors_name_the_path(tmp_path):
    with pytest.raises(sluice.errors.NotFoundError, match="missing"):
        sluice.io.gfile.GFile(tmp_path / "missing")
    with pytest.raises(sluice.errors.NotFoundError):
        sluice.io.gfile.stat(tmp_path / "missing")
    with pytest.raises(ValueError):
        sluice.io.gfile.GFile(tmp_path / "x", "a")
    with pytest.raises(sluice.errors.InvalidArgumentError, match="ftp://"):
        sluice.io.gfile.exists("ftp://host/x")


def test_object_store_uris_say_when_the_build_lacks_them():
    if sluice.io.remote_filesystems_available():
        pytest.skip("this build has the object stores (test_objstore.py tests them)")
    with pytest.raises(sluice.errors.FailedPreconditionError, match="Arrow"):
        sluice.io.gfile.exists("s3://bucket/key")


def test_remote_cache_settings(tmp_path):
    try:
        sluice.io.set_remote_cache(tmp_path / "cache", "64M", fill="on_open")
        assert sluice.io.gfile.isdir(tmp_path / "cache")
        stats = sluice.io.remote_cache_stats()
        assert set(stats) >= {"hits", "misses", "filled", "evicted", "bytes_read_from_cache"}
        with pytest.raises(ValueError, match="fill"):
            sluice.io.set_remote_cache(tmp_path / "cache", 100, fill="sometimes")
        with pytest.raises(sluice.errors.InvalidArgumentError, match="byte size"):
            sluice.io.set_remote_cache(tmp_path / "cache", "12X")
        with pytest.raises(sluice.errors.InvalidArgumentError, match="local disk"):
            sluice.io.set_remote_cache("s3://b/cache", 100)
    finally:
        sluice.io.set_remote_cache(None, 0)
