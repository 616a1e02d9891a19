"""tf.data.experimental's functions that are compositions of sluice stages.

Each returns what tf.data's returns: a transformation for Dataset.apply, or
a value. They are exported from sluice.experimental.
"""

from .dataset import AUTOTUNE, Dataset, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY

__all__ = ["assert_cardinality", "at", "cardinality", "copy_to_device", "enumerate_dataset",
           "from_list", "get_single_element", "ignore_errors", "make_batched_features_dataset",
           "map_and_batch", "parallel_interleave", "parse_example_dataset", "prefetch_to_device",
           "shuffle_and_repeat", "unbatch", "AUTOTUNE", "INFINITE_CARDINALITY",
           "UNKNOWN_CARDINALITY"]


def assert_cardinality(expected_cardinality):
    """ds.apply(assert_cardinality(n)): reports n as the cardinality; reading checks it."""
    return lambda ds: ds.assert_cardinality(expected_cardinality)


def at(dataset, index):
    """Element `index` of a random-access dataset, computed alone."""
    return dataset.at(index)


def cardinality(dataset):
    return dataset.cardinality()


def get_single_element(dataset):
    return dataset.get_single_element()


def enumerate_dataset(start=0):
    return lambda ds: ds.enumerate(start)


def ignore_errors(log_warning=False):
    return lambda ds: ds.ignore_errors(log_warning)


def unbatch():
    return lambda ds: ds.unbatch()


def prefetch_to_device(device, buffer_size=None):
    return lambda ds: ds.prefetch_to_device(device, AUTOTUNE if buffer_size is None else buffer_size)


def copy_to_device(target_device, source_device="/cpu:0"):
    """The elements in `target_device`'s memory: prefetch_to_device with one element
    in flight (sluice copies from host memory only: source_device must be the CPU)."""
    if "cpu" not in str(source_device).lower():
        raise ValueError(f"copy_to_device: sluice copies from host memory, not {source_device!r}")
    return lambda ds: ds.prefetch_to_device(target_device, 1)


def shuffle_and_repeat(buffer_size, count=None, seed=None):
    """shuffle(buffer_size, seed, reshuffle_each_iteration=True).repeat(count), as tf.data's."""
    return lambda ds: ds.shuffle(buffer_size, seed=seed, reshuffle_each_iteration=True).repeat(count)


def map_and_batch(map_func, batch_size, num_parallel_batches=None, drop_remainder=False,
                  num_parallel_calls=None):
    """map(map_func).batch(batch_size): sluice fuses a map followed by batch itself
    (each result is written into its row of the batch)."""
    if num_parallel_batches is not None and num_parallel_calls is not None:
        raise ValueError("map_and_batch: give num_parallel_batches or num_parallel_calls, not both")
    calls = num_parallel_calls
    if num_parallel_batches is not None:
        calls = int(num_parallel_batches) * int(batch_size)
    return lambda ds: ds.map(map_func, num_parallel_calls=calls).batch(
        batch_size, drop_remainder=drop_remainder)


def parallel_interleave(map_func, cycle_length, block_length=1, sloppy=False,
                        buffer_output_elements=None, prefetch_input_elements=None):
    """interleave with cycle_length readers working at once; sloppy=True lets
    elements come in the order they are ready (deterministic=False)."""
    return lambda ds: ds.interleave(map_func, cycle_length=cycle_length,
                                    block_length=block_length, num_parallel_calls=cycle_length,
                                    deterministic=not sloppy)


def parse_example_dataset(features, num_parallel_calls=1, deterministic=None):
    """map(sluice.io.parse_example(features)): parses batches of serialized Examples."""
    from .io import parse_example
    fn = parse_example(features)
    return lambda ds: ds.map(fn, num_parallel_calls=num_parallel_calls,
                             deterministic=deterministic)


def from_list(elements):
    """A dataset of the list's elements, in order (tf.data.experimental.from_list).

    Elements share one structure (a value, a tuple or a dict). When every
    component has the same shape in every element the list is stacked once
    (from_tensor_slices); otherwise the elements are handed out one by one.
    """
    import numpy as np
    elements = list(elements)
    if not elements:
        raise ValueError("from_list: the list is empty (tf.data cannot infer a structure either)")
    first = elements[0]
    if isinstance(first, dict):
        keys = list(first)
        for i, e in enumerate(elements):
            if not isinstance(e, dict) or list(e) != keys:
                raise ValueError(f"from_list: element {i} is not a dict with keys {keys}")
        columns = {k: [np.asarray(e[k]) for e in elements] for k in keys}
    elif isinstance(first, tuple):
        for i, e in enumerate(elements):
            if not isinstance(e, tuple) or len(e) != len(first):
                raise ValueError(f"from_list: element {i} is not a tuple of {len(first)}")
        columns = {j: [np.asarray(e[j]) for e in elements] for j in range(len(first))}
    else:
        columns = {0: [np.asarray(e) for e in elements]}
    for key, values in columns.items():
        for i, v in enumerate(values):
            if v.dtype != values[0].dtype:
                raise ValueError(f"from_list: component {key!r} of element {i} is {v.dtype}, "
                                 f"element 0's is {values[0].dtype}")
    if all(len({v.shape for v in values}) == 1 for values in columns.values()):
        stacked = {k: np.stack(v) for k, v in columns.items()}
        if isinstance(first, dict):
            return Dataset.from_tensor_slices(stacked)
        if isinstance(first, tuple):
            return Dataset.from_tensor_slices(tuple(stacked[j] for j in range(len(first))))
        return Dataset.from_tensor_slices(stacked[0])
    from .dataset import TensorSpec

    def spec(values):
        ndim = values[0].ndim
        if any(v.ndim != ndim for v in values):
            raise ValueError("from_list: a component's rank differs between elements")
        shape = [values[0].shape[d] if all(v.shape[d] == values[0].shape[d] for v in values)
                 else None for d in range(ndim)]
        return TensorSpec(shape, values[0].dtype)

    if isinstance(first, dict):
        signature = {k: spec(v) for k, v in columns.items()}
    elif isinstance(first, tuple):
        signature = tuple(spec(columns[j]) for j in range(len(first)))
    else:
        signature = spec(columns[0])
    return Dataset.from_generator(lambda: iter(elements), output_signature=signature)


def make_batched_features_dataset(file_pattern, batch_size, features, reader=None,
                                  label_key=None, reader_args=None, num_epochs=None, shuffle=True,
                                  shuffle_buffer_size=10000, shuffle_seed=None,
                                  prefetch_buffer_size=None, reader_num_threads=None,
                                  parser_num_threads=None, sloppy_ordering=False,
                                  drop_final_batch=False):
    """Batches of parsed Examples from files (tf.data.experimental's): list_files ->
    interleave(reader) -> shuffle -> repeat(num_epochs; None: forever) -> batch ->
    parse_example -> prefetch.

    sluice's elements are flat (a tuple or a dict of tensors), so with
    label_key the element is the features dict with the label moved to its
    last key, where tf.data gives a (features, label) pair: split it in the
    training step (``label = batch.pop(label_key)``).
    """
    from .dataset import TFRecordDataset
    if label_key is not None and label_key not in features:
        raise ValueError(f"make_batched_features_dataset: label_key {label_key!r} is not one of "
                         f"the features {sorted(features)}")
    reader = TFRecordDataset if reader is None else reader
    args = list(reader_args or [])
    threads = 1 if reader_num_threads is None else reader_num_threads
    files = Dataset.list_files(file_pattern, shuffle=shuffle, seed=shuffle_seed)
    ds = files.interleave(lambda name: reader(name, *args), cycle_length=threads,
                          num_parallel_calls=threads, deterministic=not sloppy_ordering)
    if shuffle:
        ds = ds.shuffle(shuffle_buffer_size, seed=shuffle_seed)
    ds = ds.repeat(num_epochs).batch(batch_size, drop_remainder=drop_final_batch)
    ds = ds.apply(parse_example_dataset(features, num_parallel_calls=parser_num_threads or 1))
    if label_key is not None:
        ds = ds.map(lambda d: {**{k: v for k, v in d.items() if k != label_key},
                               label_key: d[label_key]})
    return ds.prefetch(AUTOTUNE if prefetch_buffer_size is None else prefetch_buffer_size)
