"""sluice.io.gfile: files on local disks and object stores (tf.io.gfile).

Every function takes a path or a URI: ``s3://bucket/key``, ``gs://``,
``az://`` (in a build with Apache Arrow: sluice.io.remote_filesystems_available();
see docs/objstore.md), or a local
path. The same URIs work everywhere sluice reads or writes a file: the
datasets, ``cache(filename)``, checkpoints, ``sluice convert --out``.

    if not sluice.io.gfile.exists("s3://bucket/train"):
        ...
    with sluice.io.gfile.GFile("s3://bucket/run/notes.txt", "w") as f:
        f.write("hello")
    shards = sluice.io.gfile.glob("s3://bucket/train/part-*.tfrecord")

Differences from tf.io.gfile: a GFile opened for writing publishes the
file whole at close() (a hidden temporary name on disk, a completed upload
on a store); until then readers see the old file, and a GFile dropped
without close() (or a ``with`` block left by an exception) writes nothing.
Reading mode reads the whole file at open. There is no append mode.
"""

import collections as _collections

from .. import _sluice

__all__ = ["exists", "isdir", "listdir", "glob", "makedirs", "remove", "stat", "walk",
           "GFile"]

_fs = _sluice.fs_ops

StatResult = _collections.namedtuple("StatResult", ["path", "is_directory", "length", "mtime_nsec"])


def exists(path):
    """Whether a file or folder (on a store: any key under it) is at ``path``."""
    return _fs.exists(str(path))


def stat(path):
    """A StatResult (path, is_directory, length, mtime_nsec); NotFoundError if nothing is there."""
    info = _fs.stat(str(path))
    if info is None:
        from ..errors import NotFoundError
        raise NotFoundError(f"{path}: no such file or folder")
    return StatResult(*info)


def isdir(path):
    """Whether ``path`` is a folder (on a store: a prefix some key is under)."""
    info = _fs.stat(str(path))
    return info is not None and info[1]


def listdir(path):
    """The names (not paths) of the entries directly in the folder ``path``, sorted."""
    out = []
    for p, _, _, _ in _fs.list(str(path), False):
        out.append(p.rstrip("/").rsplit("/", 1)[-1])
    return out


def walk(top):
    """Every file under ``top``: (path, length) pairs, sorted by path (a store lists keys)."""
    return [(p, size) for p, _, size, _ in _fs.list(str(top), True)]


def glob(pattern):
    """The paths matching a glob pattern (with brace expansion), sorted, as list_files sees them."""
    from ..dataset import Dataset
    from ..errors import NotFoundError
    try:
        files = Dataset.list_files(str(pattern), shuffle=False)
    except NotFoundError:  # no match: an empty list, as tf.io.gfile.glob gives
        return []
    return [x.decode() if isinstance(x, bytes) else str(x) for x in files.as_numpy_iterator()]


def makedirs(path):
    """Makes the folder and its parents (nothing to do on an object store)."""
    _fs.makedirs(str(path))


def remove(path):
    """Removes a file or object; nothing happens if it is not there."""
    _fs.remove(str(path))


class GFile:
    """A file opened for reading ("r", "rb") or writing ("w", "wb"), local or on a store."""

    def __init__(self, name, mode="r"):
        if mode not in ("r", "rb", "w", "wb"):
            raise ValueError(f"GFile mode must be 'r', 'rb', 'w' or 'wb', not {mode!r}")
        self.name = str(name)
        self.mode = mode
        self._binary = "b" in mode
        if mode.startswith("r"):
            self._data = _fs.read(self.name)
            self._pos = 0
            self._writer = None
        else:
            self._writer = _fs.Writable(self.name)

    def read(self, n=-1):
        if self._writer is not None:
            raise ValueError(f"{self.name} is open for writing")
        end = len(self._data) if n is None or n < 0 else min(len(self._data), self._pos + n)
        chunk = self._data[self._pos:end]
        self._pos = end
        return chunk if self._binary else chunk.decode()

    def readlines(self):
        text = self.read()
        return text.splitlines(keepends=True)

    def __iter__(self):
        return iter(self.readlines())

    def write(self, data):
        if self._writer is None:
            raise ValueError(f"{self.name} is open for reading")
        self._writer.write(data.encode() if isinstance(data, str) else bytes(data))

    def close(self):
        if self._writer is not None:
            self._writer.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if self._writer is None:
            return False
        if exc_type is None:
            self._writer.close()
        else:
            self._writer.discard()
        return False
