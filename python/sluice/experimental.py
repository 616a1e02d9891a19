"""tf.data.experimental's names that sluice has (sluice.experimental)."""

from .text import CsvDataset, make_csv_dataset

__all__ = ["CsvDataset", "make_csv_dataset"]
