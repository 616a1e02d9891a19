"""Parquet files as datasets (C++: pipeline/parquet_dataset.h; docs/parquet.md)."""

from . import _sluice
from .dataset import Dataset, _count

__all__ = ["ParquetDataset", "parquet_available"]


def parquet_available():
    """True when this build of sluice reads Parquet (it was built with Apache Arrow C++)."""
    return bool(_sluice._parquet_available())


def _files(filenames):
    files = [filenames] if isinstance(filenames, (str, bytes)) else list(filenames)
    return [f.decode() if isinstance(f, bytes) else str(f) for f in files]


class ParquetDataset(Dataset):
    """Rows of Parquet files as dicts of NumPy arrays, read by Arrow C++'s libparquet.

    ``columns``: the top-level columns read, in this order (None: all); only
    their column chunks are read. Each element is one row, or, with
    ``batch_rows`` N, up to N rows cut from one row group with no copy (a
    batch never crosses a row group: the last batch of a row group may be
    shorter). Numbers, booleans, strings and binary are tensors (strings and
    binary as bytes); fixed-size lists are shaped arrays; variable lists are
    their values, with ``"<name>.row_lengths"`` beside them in batches (as
    VarLen features); structs are flattened to ``"a.b"``; Hugging Face's
    image column (``struct<bytes, path>``) is the encoded image bytes.

    A null is the row's error (InvalidArgumentError naming the file, row
    group, column and row: ``ignore_errors()`` skips the row) unless
    ``fill_nulls``: then 0, False or b"". A null list is an empty list.
    Cardinality is exact (from the files' footers) and rows are read at
    random: ``global_shuffle``, ``shard`` and checkpoints pick rows exactly.

    ``max_row_group_bytes`` (None: 1 GiB) caps what decoding one row group
    may hold; a row group that needs more is a ResourceExhaustedError naming
    the file, row group and column (hostile files cannot allocate more).
    """

    __slots__ = ()

    def __init__(self, filenames, columns=None, batch_rows=None, fill_nulls=False,
                 buffer_size=None, num_parallel_reads=None, name=None, max_row_group_bytes=None):
        if isinstance(columns, str):
            columns = [columns]
        super().__init__(_sluice._parquet_dataset(
            _files(filenames), [str(c) for c in (columns or [])], _count(batch_rows, 0),
            bool(fill_nulls), _count(buffer_size, 0), _count(num_parallel_reads, 1), name or "",
            _count(max_row_group_bytes, 0)))
