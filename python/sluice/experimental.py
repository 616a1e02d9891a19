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

# Windows and groups.
from . import _sluice  # noqa: E402

__all__ += ["Reducer", "group_by_reducer", "bucket_by_sequence_length"]


class Reducer:
    """tf.data.experimental.Reducer: init_func(key) -> state,
    reduce_func(state, element) -> state, finalize_func(state) -> element."""

    def __init__(self, init_func, reduce_func, finalize_func):
        self.init_func = init_func
        self.reduce_func = reduce_func
        self.finalize_func = finalize_func


def group_by_reducer(key_func, reducer):
    """For Dataset.apply: one element per key, finalize_func of the key's state,
    at the end of the input, in increasing key order."""
    from .dataset import Dataset

    def _apply(dataset):
        return Dataset(_sluice.group_by_reducer(dataset._ds, key_func, reducer.init_func,
                                                reducer.reduce_func, reducer.finalize_func))
    return _apply


def bucket_by_sequence_length(element_length_func, bucket_boundaries, bucket_batch_sizes,
                              padded_shapes=None, padding_values=None,
                              pad_to_bucket_boundary=False, no_padding=False,
                              drop_remainder=False):
    """For Dataset.apply: Dataset.bucket_by_sequence_length with these arguments."""
    def _apply(dataset):
        return dataset.bucket_by_sequence_length(
            element_length_func, bucket_boundaries, bucket_batch_sizes, padded_shapes,
            padding_values, pad_to_bucket_boundary, no_padding, drop_remainder)
    return _apply
__all__ += ["Counter", "RandomDataset", "rejection_resample", "scan", "take_while", "unique"]


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
__all__ += ["pack_sequences"]


def pack_sequences(length, algorithm="first_fit", num_packing_bins=16, shuffle_bins=True, seed=0,
                   feature_lengths=None, padding_value=0, truncate=False, name=None):
    """Dataset.pack_sequences as a transformation for Dataset.apply."""

    def _apply(dataset):
        return dataset.pack_sequences(length, algorithm=algorithm,
                                      num_packing_bins=num_packing_bins,
                                      shuffle_bins=shuffle_bins, seed=seed,
                                      feature_lengths=feature_lengths,
                                      padding_value=padding_value, truncate=truncate, name=name)

    return _apply
__all__ += ["snapshot", "save", "load"]


def snapshot(path, compression="AUTO", reader_func=None, shard_func=None):
    """tf.data.experimental.snapshot: for Dataset.apply; see Dataset.snapshot."""
    def _apply(dataset):
        return dataset.snapshot(path, compression=compression, reader_func=reader_func,
                                shard_func=shard_func)
    return _apply


def save(dataset, path, compression=None, shard_func=None, checkpoint_args=None):
    """tf.data.experimental.save: Dataset.save."""
    dataset.save(path, compression=compression, shard_func=shard_func,
                 checkpoint_args=checkpoint_args)


def load(path, element_spec=None, compression=None, reader_func=None):
    """tf.data.experimental.load: Dataset.load."""
    from .dataset import Dataset
    return Dataset.load(path, element_spec=element_spec, compression=compression,
                        reader_func=reader_func)
