"""Fixed-length records and NumPy arrays as datasets (C++: pipeline/fixed_length_record_dataset.h,
pipeline/numpy_dataset.h)."""

from . import _sluice
from .dataset import Dataset, _count

__all__ = ["FixedLengthRecordDataset", "NumpyDataset"]


def _files(filenames):
    files = [filenames] if isinstance(filenames, (str, bytes)) else list(filenames)
    return [f.decode() if isinstance(f, bytes) else str(f) for f in files]


class FixedLengthRecordDataset(Dataset):
    """Records of record_bytes bytes each, as bytes (tf.data.FixedLengthRecordDataset).

    Each file is header_bytes, then records, then footer_bytes.
    compression_type: None or "" (none), "ZLIB" or "GZIP". Uncompressed files
    are read at random: exact cardinality, global_shuffle and record-level
    sharding. As TensorFlow: an uncompressed file whose body is not a
    multiple of record_bytes is an InvalidArgumentError before any record; a
    compressed one gives its whole records, then a DataLossError.
    """

    __slots__ = ()

    def __init__(self, filenames, record_bytes, header_bytes=None, footer_bytes=None,
                 buffer_size=None, compression_type=None, num_parallel_reads=None, name=None):
        super().__init__(_sluice._fixed_length_record_dataset(
            _files(filenames), int(record_bytes), _count(header_bytes, 0),
            _count(footer_bytes, 0), compression_type or "", _count(buffer_size, 0),
            _count(num_parallel_reads, 1), name or ""))


class NumpyDataset(Dataset):
    """Rows of NumPy arrays (.npy files, .npz members) as NumPy arrays.

    Element i is row i along the first axis. From .npz archives, the members
    named in ``keys`` (all if None; their first dimensions must agree) give
    one dict per row. With ``sequence_length`` L, a 1-D token array of n
    tokens gives (n - 1) // L windows, element i = tokens[i*L : i*L + L + 1]
    (nanoGPT's input and target). Cardinality is exact and every element can
    be read at random, so global_shuffle(seed) picks positions exactly and
    resumably. int8, int16 and uint16 arrive as int32 and uint32 as int64;
    other dtypes as they are (bool, uint8, int32, int64, float16/32/64).
    Deflated .npz members (np.savez_compressed) are inflated into memory, up
    to max_inflated_bytes each.
    """

    __slots__ = ()

    def __init__(self, filenames, keys=None, sequence_length=None, buffer_size=None,
                 num_parallel_reads=None, max_inflated_bytes=2 << 30, name=None):
        if isinstance(keys, str):
            keys = [keys]
        super().__init__(_sluice._numpy_dataset(
            _files(filenames), [str(k) for k in (keys or [])], _count(sequence_length, 0),
            int(max_inflated_bytes), _count(buffer_size, 0), _count(num_parallel_reads, 1),
            name or ""))
