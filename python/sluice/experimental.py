"""tf.data.experimental's names that sluice has (sluice.experimental)."""

from .text import CsvDataset, make_csv_dataset

__all__ = ["CsvDataset", "make_csv_dataset", "pack_sequences"]


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
