"""WebDataset tar shards (.tar, .tar.gz) as datasets of dicts of bytes.

    ds = sluice.WebDatasetDataset(sluice.Dataset.list_files("shard-{000000..000127}.tar"),
                                  extensions=["jpg", "cls"])
    for sample in ds:   # {"__key__": b"train/000000", "jpg": b"...", "cls": b"7"}
        ...

Members sharing a key (the path up to the first dot of the base name) form
one sample, as the webdataset package groups them; extensions are
lower-cased. With a SHARD.tar.idx (``sluice index``, or build_index below)
an uncompressed shard allows random access: exact cardinality,
global_shuffle, record-level sharding.
"""

from . import _sluice
from .dataset import Dataset, _count

__all__ = ["WebDatasetDataset", "build_index"]


def _files(filenames):
    if isinstance(filenames, Dataset):
        return [f.decode() if isinstance(f, bytes) else str(f) for f in filenames]
    files = [filenames] if isinstance(filenames, (str, bytes)) else list(filenames)
    return [f.decode() if isinstance(f, bytes) else str(f) for f in files]


class WebDatasetDataset(Dataset):
    """Samples of WebDataset tar shards, one dict of bytes per sample.

    extensions: the members to give, by extension ("jpg", "seg.png"); None:
    those of the first sample of the first file. Each element has
    "__key__" and one entry per extension. missing: "error" (a sample
    without an asked extension raises InvalidArgumentError naming the
    file, offset and key; ignore_errors() skips it) or "empty" (b"").
    num_parallel_reads, buffer_size and use_index are TFRecordDataset's.
    max_sample_size: a larger sample is a DataLossError, and is skipped.
    """

    __slots__ = ()

    def __init__(self, filenames, extensions=None, buffer_size=None, num_parallel_reads=None,
                 use_index=True, max_sample_size=256 << 20, missing="error", name=None):
        if isinstance(extensions, str):
            extensions = [extensions]
        super().__init__(_sluice._webdataset(
            _files(filenames), [str(e) for e in (extensions or [])], _count(buffer_size, 0),
            _count(num_parallel_reads, 1), bool(use_index), int(max_sample_size), str(missing),
            name or ""))


def build_index(path):
    """Writes PATH.idx, the sample index of a tar shard; returns its sample count."""
    return _sluice._build_tar_index(str(path))
