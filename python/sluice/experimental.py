"""tf.data.experimental's names that sluice has (sluice.experimental)."""

from ._tfdata_compat import *  # noqa: F401,F403
from ._tfdata_compat import __all__ as _compat_all
from .text import CsvDataset, make_csv_dataset

__all__ = ["CsvDataset", "make_csv_dataset"] + list(_compat_all)
