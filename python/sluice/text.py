"""Text files as datasets: TextLineDataset, CsvDataset, make_csv_dataset (tf.data's)."""

import numpy as np

from . import _sluice
from . import dtypes as _dtypes
from .dataset import AUTOTUNE, Dataset, _count

__all__ = ["TextLineDataset", "CsvDataset", "make_csv_dataset"]


def _files(filenames):
    files = [filenames] if isinstance(filenames, (str, bytes)) else list(filenames)
    return [f.decode() if isinstance(f, bytes) else str(f) for f in files]


class TextLineDataset(Dataset):
    """The lines of text files as bytes, without "\\n" (tf.data.TextLineDataset).

    As TensorFlow, every "\\r" is dropped (so "\\r\\n" endings read as "\\n").
    compression_type: None (told from the first bytes), "", "GZIP" or "ZLIB".
    num_parallel_reads files are read at once, line by line in turn.
    """

    __slots__ = ()

    def __init__(self, filenames, compression_type=None, buffer_size=None, num_parallel_reads=None,
                 name=None, max_line_size=256 << 20):
        super().__init__(_sluice._text_line_dataset(
            _files(filenames), compression_type, _count(buffer_size, 0),
            _count(num_parallel_reads, 1), int(max_line_size), name or ""))


def _csv_default(value, what):
    """(dtype name, default or None) of one record_defaults entry."""
    if isinstance(value, _dtypes.DType) or (isinstance(value, type) and issubclass(value, np.generic)) \
            or isinstance(value, np.dtype):
        return (_dtypes.as_dtype(value).name, None)
    if isinstance(value, np.ndarray):
        if value.size == 0:
            return (_dtypes.as_dtype(value.dtype).name, None)
        if value.size != 1:
            raise ValueError(f"{what}: one default per column, got {value.size}")
        return _csv_default(value.reshape(()).item() if value.dtype.kind in "SUO"
                            else value.reshape(())[()], what)
    if isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise ValueError(f"{what}: a default is one value in a list ([0.0]) or a dtype, "
                             f"got {value!r}")
        return _csv_default(value[0], what)
    if isinstance(value, np.generic):
        return (_dtypes.as_dtype(value.dtype).name, value.item())
    if isinstance(value, bool):
        raise TypeError(f"{what}: bool is not a CSV column type")
    if isinstance(value, int):
        return ("int32", value)
    if isinstance(value, float):
        return ("float32", value)
    if isinstance(value, bytes):
        return ("string", value.decode("utf-8", "surrogateescape"))
    if isinstance(value, str):
        return ("string", value)
    raise TypeError(f"{what}: expected a dtype or a default value, got {value!r}")


class CsvDataset(Dataset):
    """Rows of CSV files, one scalar per column (tf.data.experimental.CsvDataset).

    record_defaults: per column read, a dtype (the column is required) or a
    default value ([0.0], "", np.int64(0)...). Errors name the file, line
    and column: "data.csv:12: column 3: ...".
    """

    __slots__ = ()

    def __init__(self, filenames, record_defaults, compression_type=None, buffer_size=None,
                 header=False, field_delim=",", use_quote_delim=True, na_value="",
                 select_cols=None, exclude_cols=None, name=None, num_parallel_reads=None,
                 max_record_size=256 << 20):
        defaults = [_csv_default(d, f"record_defaults[{i}]") for i, d in enumerate(record_defaults)]
        super().__init__(_sluice._csv_dataset(
            _files(filenames), defaults, compression_type, _count(buffer_size, 0), bool(header),
            str(field_delim), bool(use_quote_delim), str(na_value),
            [int(c) for c in (select_cols or [])], [int(c) for c in (exclude_cols or [])],
            _count(num_parallel_reads, 1), int(max_record_size), name or ""))


class _FeaturesAndLabel(Dataset):
    """make_csv_dataset with label_name: (features dict, label) pairs."""

    __slots__ = ("_label",)

    def __init__(self, ds, label):
        super().__init__(ds)
        self._label = label

    def __iter__(self):
        for batch in self._ds.iterator():
            label = batch.pop(self._label)
            yield batch, label

    as_numpy_iterator = __iter__


def make_csv_dataset(file_pattern, batch_size, column_names=None, column_defaults=None,
                     label_name=None, select_columns=None, field_delim=",", use_quote_delim=True,
                     na_value="", header=True, num_epochs=None, shuffle=True,
                     shuffle_buffer_size=10000, shuffle_seed=None, prefetch_buffer_size=None,
                     num_parallel_reads=None, sloppy=False, num_rows_for_inference=100,
                     compression_type=None, ignore_errors=False, encoding="utf-8"):
    """Batches of CSV rows as dicts of column name -> values
    (tf.data.experimental.make_csv_dataset); with label_name, (dict, label).

    Column names come from the header unless given; types are inferred from
    the first num_rows_for_inference rows (int32, int64, float32, float64,
    string) unless column_defaults are given. num_epochs=None repeats
    forever (and every batch is full).
    """
    del prefetch_buffer_size, sloppy, encoding  # sluice prefetches with AUTOTUNE; order is fixed
    names = [str(n) for n in column_names] if column_names is not None else []
    select = []
    for c in select_columns or []:
        if isinstance(c, int):
            if not names:
                raise ValueError("select_columns by index needs column_names")
            c = names[c]
        select.append(str(c))
    defaults = [_csv_default(d, f"column_defaults[{i}]") for i, d in enumerate(column_defaults or [])]
    ds = _sluice._make_csv_dataset(
        str(file_pattern), int(batch_size), names, defaults, label_name or "", select,
        str(field_delim), bool(use_quote_delim), str(na_value), bool(header),
        -1 if num_epochs is None else int(num_epochs), bool(shuffle), int(shuffle_buffer_size),
        shuffle_seed, AUTOTUNE if num_parallel_reads == AUTOTUNE else _count(num_parallel_reads, 1),
        int(num_rows_for_inference), compression_type, bool(ignore_errors))
    return _FeaturesAndLabel(ds, label_name) if label_name else Dataset(ds)
