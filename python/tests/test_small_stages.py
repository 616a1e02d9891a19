"""scan, take_while, unique, rebatch, random, counter, rejection_resample:
tf.data's Python signatures and documented examples, experimental aliases."""

import numpy as np
import pytest

import sluice
import sluice.experimental as exp


def values(ds):
    return [np.asarray(x).tolist() for x in ds]


def test_scan_cumulative_sum_as_tf_data_documents():
    ds = sluice.Dataset.range(10).scan(np.int64(0), lambda state, i: (state + i, state + i))
    assert values(ds) == [0, 1, 3, 6, 10, 15, 21, 28, 36, 45]
    assert values(sluice.Dataset.range(10).apply(
        exp.scan(0, lambda s, i: (s + i, s + i)))) == values(ds)


def test_scan_state_tuple_and_dict():
    # A tuple state (count, sum), a dict state, and a tuple element passed as one argument.
    ds = sluice.Dataset.range(1, 5).scan((0, 0), lambda s, x: ((s[0] + 1, s[1] + x), s[1] + x))
    assert values(ds) == [1, 3, 6, 10]
    ds = sluice.Dataset.range(3).scan({"n": np.int64(0)}, lambda s, x: ({"n": s["n"] + x}, s["n"]))
    assert values(ds) == [0, 0, 1]
    pairs = sluice.Dataset.zip(sluice.Dataset.range(3), sluice.Dataset.range(10, 13))
    ds = pairs.scan(np.int64(0), lambda s, e: (s + e[1], e[0] + s))
    assert values(ds) == [0, 11, 23]
    one = sluice.Dataset.range(3).scan((np.int64(5),), lambda s, x: ((s[0] + x,), s[0]))
    assert values(one) == [5, 5, 6]


def test_scan_state_of_another_dtype_is_invalid_argument():
    ds = sluice.Dataset.range(5).scan(np.int64(0), lambda s, x: (np.float32(1.5), x))
    with pytest.raises(sluice.InvalidArgumentError, match="failed on element 0"):
        list(ds)
    bad = sluice.Dataset.range(5).scan(0, lambda s, x: s)
    with pytest.raises(sluice.InvalidArgumentError, match="new_state, output_element"):
        list(bad)


def test_scan_state_is_saved_with_the_iterator():
    ds = sluice.Dataset.range(10).scan(np.int64(0), lambda s, i: (s + i, s + i))
    it = iter(ds.iterator())
    head = [next(it).tolist() for _ in range(4)]
    state = it.save()
    assert head == [0, 1, 3, 6]
    assert [x.tolist() for x in ds.iterator(state=state)] == [10, 15, 21, 28, 36, 45]


def test_take_while_as_tf_data_documents():
    ds = sluice.Dataset.range(10).take_while(lambda x: x < 5)
    assert values(ds) == [0, 1, 2, 3, 4]
    assert values(sluice.Dataset.range(10).apply(exp.take_while(lambda x: x < 5))) == \
        [0, 1, 2, 3, 4]
    assert values(sluice.Dataset.counter().take_while(lambda x: np.bool_(x < 3))) == [0, 1, 2]
    with pytest.raises(sluice.InvalidArgumentError, match="must return a bool"):
        list(sluice.Dataset.range(3).take_while(lambda x: "yes"))


def test_unique_as_tf_data_documents():
    ds = sluice.Dataset.from_tensor_slices(np.array([1, 37, 2, 37, 2, 1])).unique()
    assert sorted(values(ds)) == [1, 2, 37]
    assert values(ds) == [1, 37, 2]
    words = sluice.Dataset.from_tensor_slices(np.array([b"a", b"b", b"a"], dtype=object))
    assert list(words.apply(exp.unique())) == [b"a", b"b"]
    with pytest.raises(sluice.InvalidArgumentError, match="int32, int64 or string"):
        sluice.Dataset.from_tensor_slices(np.array([1.0, 2.0])).unique()


def test_rebatch_as_tf_data_documents():
    assert values(sluice.Dataset.range(6).batch(2).rebatch(3)) == [[0, 1, 2], [3, 4, 5]]
    assert values(sluice.Dataset.range(7).batch(4).rebatch(2)) == [[0, 1], [2, 3], [4, 5], [6]]
    assert values(sluice.Dataset.range(7).batch(2).rebatch(3, drop_remainder=True)) == \
        [[0, 1, 2], [3, 4, 5]]
    assert values(sluice.Dataset.range(8).batch(4).rebatch([2, 1, 1])) == \
        [[0, 1], [2], [3], [4, 5], [6], [7]]
    with pytest.raises(sluice.InvalidArgumentError, match=">= 1"):
        sluice.Dataset.range(8).batch(4).rebatch(0)


def test_counter_as_tf_data_documents():
    assert values(sluice.Dataset.counter().take(5)) == [0, 1, 2, 3, 4]
    assert values(sluice.Dataset.counter(start=2).take(5)) == [2, 3, 4, 5, 6]
    assert values(sluice.Dataset.counter(start=2, step=5).take(5)) == [2, 7, 12, 17, 22]
    assert values(sluice.Dataset.counter(start=2, step=-1).take(5)) == [2, 1, 0, -1, -2]
    x = next(iter(sluice.Dataset.counter(dtype=sluice.int32)))
    assert x.dtype == np.int32
    assert values(exp.Counter(3).take(2)) == [3, 4]
    assert sluice.Dataset.counter().cardinality() == sluice.INFINITE_CARDINALITY


def test_random():
    a = values(sluice.Dataset.random(seed=4).take(100))
    assert a == values(sluice.Dataset.random(seed=4).take(100))
    assert a != values(sluice.Dataset.random(seed=5).take(100))
    assert all(0 <= v < 2**32 for v in a)
    assert values(exp.RandomDataset(seed=4).take(100)) == a
    # Positional: element i does not depend on the ones before.
    assert values(sluice.Dataset.random(seed=4).skip(40).take(10)) == a[40:50]
    same = values(sluice.Dataset.random(seed=1).take(3).repeat(2))
    assert same[:3] == same[3:]
    fresh = values(sluice.Dataset.random(seed=1, rerandomize_each_iteration=True).take(3).repeat(2))
    assert fresh[:3] != fresh[3:]


def test_rejection_resample_reaches_the_target():
    # 1 in 10 elements is class 1; resampled to 50/50. Fixed seed: not flaky.
    ds = sluice.Dataset.range(40000).rejection_resample(
        lambda x: x % 10 == 0, target_dist=[0.5, 0.5], seed=3)
    classes = np.array([c for c, _ in ds])
    assert abs(classes.mean() - 0.5) < 0.02
    out = list(sluice.Dataset.range(20).apply(exp.rejection_resample(
        lambda x: np.int32(x % 2), [0.5, 0.5], initial_dist=[0.5, 0.5], seed=1)))
    assert [(int(c), int(x)) for c, x in out] == [(i % 2, i) for i in range(20)]
    again = sluice.Dataset.range(1000).rejection_resample(lambda x: x % 10 == 0, [0.5, 0.5], seed=9)
    assert [x.tolist() for _, x in again] == [x.tolist() for _, x in again]


def test_rejection_resample_as_tf_data_documents():
    initial_dist = [0.6, 0.4]
    n = 1000
    elems = np.random.default_rng(0).choice(len(initial_dist), size=n, p=initial_dist)
    dataset = sluice.Dataset.from_tensor_slices(elems)
    zero, one = np.bincount(list(dataset.as_numpy_iterator())) / n
    assert abs(zero - 0.6) < 0.05 and abs(one - 0.4) < 0.05
    dataset = dataset.rejection_resample(class_func=lambda x: x, target_dist=[0.5, 0.5],
                                         initial_dist=initial_dist, seed=0)
    dataset = dataset.map(lambda class_func_result, data: data)
    out = list(dataset.as_numpy_iterator())
    zero, one = np.bincount(out) / len(out)
    assert abs(zero - 0.5) < 0.06 and abs(one - 0.5) < 0.06


def test_rejection_resample_bad_arguments():
    with pytest.raises(sluice.InvalidArgumentError, match="sums to"):
        sluice.Dataset.range(3).rejection_resample(lambda x: 0, [0.5, 0.2])
    ds = sluice.Dataset.range(3).rejection_resample(lambda x: 5, [0.5, 0.5], seed=1)
    with pytest.raises(sluice.InvalidArgumentError, match="outside"):
        list(ds)
