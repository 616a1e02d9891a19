"""tf.data.experimental's names that sluice has (sluice.experimental)."""

from .dataset import Dataset as _Dataset
from .text import CsvDataset, make_csv_dataset

__all__ = ["CsvDataset", "make_csv_dataset", "Counter", "RandomDataset", "rejection_resample",
           "scan", "take_while", "unique"]


# ---- Scans, uniques and other small stages: transformations for apply() ----
def scan(initial_state, scan_func):
    """tf.data.experimental.scan: ds.apply(scan(s, f)) == ds.scan(s, f)."""
    return lambda ds: ds.scan(initial_state, scan_func)


def take_while(predicate):
    """tf.data.experimental.take_while: for Dataset.apply."""
    return lambda ds: ds.take_while(predicate)


def unique():
    """tf.data.experimental.unique: for Dataset.apply."""
    return lambda ds: ds.unique()


def rejection_resample(class_func, target_dist, initial_dist=None, seed=None):
    """tf.data.experimental.rejection_resample: for Dataset.apply."""
    return lambda ds: ds.rejection_resample(class_func, target_dist, initial_dist, seed)


def Counter(start=0, step=1, dtype="int64"):  # noqa: N802 (tf.data's name)
    """tf.data.experimental.Counter: Dataset.counter."""
    return _Dataset.counter(start, step, dtype)


def RandomDataset(seed=None):  # noqa: N802 (tf.data's name)
    """tf.data.experimental.RandomDataset: Dataset.random."""
    return _Dataset.random(seed)
