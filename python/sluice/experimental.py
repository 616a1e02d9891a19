"""tf.data.experimental's names that sluice has (sluice.experimental)."""

from ._tfdata_compat import *  # noqa: F401,F403
from ._tfdata_compat import __all__ as _compat_all
from .dataset import Dataset as _Dataset
from .text import CsvDataset, make_csv_dataset

# tf.data.experimental.sample_from_datasets / choose_from_datasets.
sample_from_datasets = _Dataset.sample_from_datasets
choose_from_datasets = _Dataset.choose_from_datasets

__all__ = ["CsvDataset", "make_csv_dataset", "sample_from_datasets",
           "choose_from_datasets"] + list(_compat_all)
