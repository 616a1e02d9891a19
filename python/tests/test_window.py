"""Dataset.window, group_by_window, bucket_by_sequence_length and
sluice.experimental.group_by_reducer: tf.data's documented examples."""

import numpy as np
import pytest

import sluice


def values(ds):
    return [np.asarray(x).tolist() for x in ds]


def test_window_flat_map_batch():
    ds = sluice.Dataset.range(7).window(3, 1).flat_map(lambda w: w.batch(3))
    assert values(ds) == [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5], [4, 5, 6], [5, 6], [6]]
    ds = sluice.Dataset.range(7).window(3, 5).flat_map(lambda w: w.batch(3))
    assert values(ds) == [[0, 1, 2], [5, 6]]
    ds = sluice.Dataset.range(7).window(3, 1, 2, drop_remainder=True)
    assert ds.cardinality() == 3
    assert values(ds.flat_map(lambda w: w.batch(3))) == [[0, 2, 4], [1, 3, 5], [2, 4, 6]]
    # Iterated directly, a window is its rows stacked (tf.data yields datasets).
    assert values(sluice.Dataset.range(5).window(2)) == [[0, 1], [2, 3], [4]]


def test_window_passes_through_take_and_interleave():
    ds = sluice.Dataset.range(10).window(4).take(2).flat_map(lambda w: w)
    assert values(ds) == list(range(8))
    ds = sluice.Dataset.range(6).window(3).interleave(lambda w: w, cycle_length=2)
    assert values(ds) == [0, 3, 1, 4, 2, 5]


def test_window_structures():
    ds = sluice.Dataset.from_tensor_slices({"a": np.arange(4), "b": np.arange(4) * 10})

    def per_dict(w):
        assert set(w) == {"a", "b"}
        return sluice.Dataset.zip((w["a"].batch(2), w["b"].batch(2)))
    out = list(ds.window(2).flat_map(per_dict))
    assert [(a.tolist(), b.tolist()) for a, b in out] == [([0, 1], [0, 10]), ([2, 3], [20, 30])]

    tup = sluice.Dataset.from_tensor_slices((np.arange(3), np.array([b"x", b"y", b"z"])))
    out = list(tup.window(3).flat_map(lambda a, s: sluice.Dataset.zip((a, s))))
    assert [(int(a), s) for a, s in out] == [(0, b"x"), (1, b"y"), (2, b"z")]


def test_window_bad_arguments():
    with pytest.raises(sluice.InvalidArgumentError):
        sluice.Dataset.range(3).window(0)
    with pytest.raises(sluice.InvalidArgumentError):
        sluice.Dataset.range(3).window(2, stride=0)


def test_group_by_window_documented_example():
    ds = sluice.Dataset.range(10).group_by_window(
        key_func=lambda x: x % 2, reduce_func=lambda key, d: d.batch(5), window_size=5)
    assert values(ds) == [[0, 2, 4, 6, 8], [1, 3, 5, 7, 9]]


def test_group_by_window_size_func_and_key():
    seen = []

    def reduce(key, d):
        seen.append(int(key))
        return d.batch(5)
    ds = sluice.Dataset.range(10).group_by_window(
        lambda x: x % 2, reduce, window_size_func=lambda k: k + 1)
    assert values(ds) == [[0], [2], [1, 3], [4], [6], [5, 7], [8], [9]]
    assert seen == [0, 0, 1, 0, 0, 1, 0, 1]
    with pytest.raises(ValueError):
        sluice.Dataset.range(3).group_by_window(lambda x: x, lambda k, d: d)
    with pytest.raises(ValueError):
        sluice.Dataset.range(3).group_by_window(lambda x: x, lambda k, d: d, 2, lambda k: 2)


def test_group_by_window_key_errors():
    ds = sluice.Dataset.range(3).group_by_window(lambda x: "a", lambda k, d: d, 2)
    with pytest.raises(sluice.InvalidArgumentError, match="integer"):
        list(ds)


def test_group_by_reducer_documented_example():
    reducer = sluice.experimental.Reducer(
        init_func=lambda _: np.int64(0),
        reduce_func=lambda state, value: state + value,
        finalize_func=lambda state: state)
    ds = sluice.Dataset.range(10).apply(
        sluice.experimental.group_by_reducer(lambda x: x % 2, reducer))
    assert values(ds) == [20, 25]


def test_group_by_reducer_state_tuple():
    reducer = sluice.experimental.Reducer(
        init_func=lambda k: (np.int64(0), np.int64(0)),
        reduce_func=lambda s, v: (s[0] + v, s[1] + 1),
        finalize_func=lambda total, count: total // count)
    ds = sluice.Dataset.range(9).apply(
        sluice.experimental.group_by_reducer(lambda x: 2 - x % 3, reducer))
    assert values(ds) == [5, 4, 3]


ELEMENTS = [[0], [1, 2, 3, 4], [5, 6, 7], [7, 8, 9, 10, 11], [13, 14, 15, 16, 19, 20], [21, 22]]


def sequences():
    return sluice.Dataset.from_generator(
        lambda: (np.array(e, np.int64) for e in ELEMENTS),
        output_signature=sluice.TensorSpec(shape=(None,), dtype=sluice.int64))


def test_bucket_by_sequence_length_documented_examples():
    ds = sequences().bucket_by_sequence_length(
        element_length_func=lambda elem: elem.shape[0],
        bucket_boundaries=[3, 5], bucket_batch_sizes=[2, 2, 2])
    assert values(ds) == [[[1, 2, 3, 4], [5, 6, 7, 0]],
                          [[7, 8, 9, 10, 11, 0], [13, 14, 15, 16, 19, 20]],
                          [[0, 0], [21, 22]]]
    ds = sequences().apply(sluice.experimental.bucket_by_sequence_length(
        element_length_func=lambda elem: elem.shape[0],
        bucket_boundaries=[4, 7], bucket_batch_sizes=[2, 2, 2],
        pad_to_bucket_boundary=True, padding_values=-1))
    assert values(ds) == [[[0, -1, -1], [5, 6, 7]],
                          [[1, 2, 3, 4, -1, -1], [7, 8, 9, 10, 11, -1]],
                          [[21, 22, -1]],
                          [[13, 14, 15, 16, 19, 20]]]


def test_bucket_by_sequence_length_bad_arguments():
    with pytest.raises(sluice.InvalidArgumentError, match="bucket_batch_sizes"):
        sequences().bucket_by_sequence_length(lambda e: e.shape[0], [3, 5], [2, 2])


def test_window_save_restore():
    ds = sluice.Dataset.range(9).window(3, 2).flat_map(lambda w: w.batch(3))
    it = ds.iterator()
    first = [next(it).tolist() for _ in range(2)]
    state = it.save()
    rest = [x.tolist() for x in it]
    it2 = ds.iterator(state)
    assert [x.tolist() for x in it2] == rest
    assert first + rest == [[0, 1, 2], [2, 3, 4], [4, 5, 6], [6, 7, 8], [8]]


def test_bucket_by_sequence_length_dict_elements():
    def gen():
        for i, n in enumerate([1, 4, 2, 5, 3]):
            yield {"tokens": np.arange(n, dtype=np.int64), "label": np.int64(i)}
    ds = sluice.Dataset.from_generator(gen, output_signature={
        "tokens": sluice.TensorSpec(shape=(None,), dtype=sluice.int64),
        "label": sluice.TensorSpec(shape=(), dtype=sluice.int64)})
    out = list(ds.bucket_by_sequence_length(
        lambda e: len(e["tokens"]), [3], [2, 2],
        padded_shapes={"tokens": [None], "label": []},
        padding_values={"tokens": -1, "label": 0}, pad_to_bucket_boundary=False))
    assert [b["label"].tolist() for b in out] == [[0, 2], [1, 3], [4]]
    assert out[0]["tokens"].tolist() == [[0, -1], [0, 1]]
    assert out[1]["tokens"].tolist() == [[0, 1, 2, 3, -1], [0, 1, 2, 3, 4]]
