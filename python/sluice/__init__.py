"""sluice: tf.data's Python API over sluice's C++ input pipeline.

    import sluice
    ds = (sluice.TFRecordDataset(files, num_parallel_reads=sluice.AUTOTUNE)
          .map(sluice.io.parse_example(features), num_parallel_calls=sluice.AUTOTUNE)
          .shuffle(10_000, seed=7)
          .batch(128, drop_remainder=True)
          .prefetch(sluice.AUTOTUNE))
    for batch in ds:          # dicts of NumPy arrays viewing sluice's buffers
        train_step(batch)

Tensors reach torch, JAX and NumPy through DLPack without a copy
(torch.from_dlpack(array)); errors are sluice.Error subclasses named as
tf.errors names them. docs/python.md has the whole guide.
"""

from . import _sluice
from . import dtypes
from . import errors
from . import experimental, image, io
from .text import CsvDataset, TextLineDataset, make_csv_dataset
from .webdataset import WebDatasetDataset
from .dataset import (AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset, InputContext,
                      Options, TensorSpec, TFRecordDataset)
from .npy import FixedLengthRecordDataset, NumpyDataset
from .parquet import ParquetDataset, parquet_available
from .dtypes import (DType, as_dtype, bfloat16, bool, float16, float32, float64, int32, int64,  # noqa: A004
                     string, uint8)
from .errors import (CancelledError, DataLossError, Error, FailedPreconditionError, InternalError,
                     InvalidArgumentError, NotFoundError, OutOfRangeError, ResourceExhaustedError,
                     UnavailableError, UnknownError)

Tensor = _sluice.Tensor
MapFunction = _sluice.MapFunction
Iterator = _sluice.Iterator


def from_dlpack(x):
    """A sluice.Tensor sharing the memory of a DLPack producer (a torch/JAX/NumPy array)."""
    return _sluice._from_dlpack(x)


def as_tensor(x):
    """A sluice.Tensor holding x (a copy of a NumPy array; bytes/str as a string scalar)."""
    return _sluice._as_tensor(x)


__version__ = "0.1.0"
