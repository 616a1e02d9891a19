"""tf.data.experimental's names that sluice has (sluice.experimental)."""

from .dataset import Dataset as _Dataset
from .text import CsvDataset, make_csv_dataset

# tf.data.experimental.sample_from_datasets / choose_from_datasets.
sample_from_datasets = _Dataset.sample_from_datasets
choose_from_datasets = _Dataset.choose_from_datasets

__all__ = ["CsvDataset", "make_csv_dataset", "sample_from_datasets", "choose_from_datasets"]
