"""tf.data.experimental's names that sluice has (sluice.experimental)."""

from .text import CsvDataset, make_csv_dataset

__all__ = ["CsvDataset", "make_csv_dataset", "snapshot", "save", "load"]


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
