"""sluice.Dataset.sample_from_datasets / choose_from_datasets (tf.data's mixing)."""

import numpy as np
import pytest

import sluice


def values(ds):
    return [int(np.asarray(x)) for x in ds]


def inputs(*sizes):
    return [sluice.Dataset.range(100 * j, 100 * j + n) for j, n in enumerate(sizes)]


def assert_merge_of(got, sizes):
    nxt = {}
    for v in got:
        j = v // 100
        assert v == 100 * j + nxt.get(j, 0), "out of order within input %d" % j
        nxt[j] = nxt.get(j, 0) + 1
    assert [nxt.get(j, 0) for j in range(len(sizes))] == list(sizes)


def test_sample_doc_example():
    ds = sluice.Dataset.sample_from_datasets(inputs(3, 3), weights=[0.5, 0.5], seed=1)
    assert ds.cardinality() == 6
    assert_merge_of(values(ds), [3, 3])


def test_sample_seed_and_weights():
    a = values(sluice.Dataset.sample_from_datasets(inputs(50, 50, 50), seed=4))
    assert a == values(sluice.Dataset.sample_from_datasets(inputs(50, 50, 50), seed=4))
    assert a != values(sluice.Dataset.sample_from_datasets(inputs(50, 50, 50), seed=5))
    ds = sluice.Dataset.sample_from_datasets(
        [sluice.Dataset.range(0, 1).repeat(), sluice.Dataset.range(1, 2).repeat()],
        weights=np.array([0.9, 0.1]), seed=3)
    assert ds.cardinality() == sluice.INFINITE_CARDINALITY
    got = values(ds.take(20000))
    assert abs(sum(got) / 20000 - 0.1) < 0.01


def test_sample_exhaustion():
    assert_merge_of(values(sluice.Dataset.sample_from_datasets(inputs(5, 40), [0.9, 0.1], seed=8)),
                    [5, 40])
    stop = values(sluice.Dataset.sample_from_datasets(inputs(5, 40), [0.9, 0.1], seed=8,
                                                      stop_on_empty_dataset=True))
    assert len(stop) < 45 and sum(1 for v in stop if v < 100) == 5


def test_sample_weights_dataset():
    w = sluice.Dataset.from_tensor_slices(np.array([[1, 0], [0, 1], [0, 1], [1, 0], [0, 2]],
                                                   dtype=np.float32))
    assert values(sluice.Dataset.sample_from_datasets(inputs(10, 10), w)) == [0, 100, 101, 1, 102]


def test_sample_rerandomize_each_iteration():
    ds = sluice.Dataset.sample_from_datasets(inputs(20, 20), seed=2,
                                             rerandomize_each_iteration=True).repeat(2)
    v = values(ds)
    assert v[:40] != v[40:]
    assert_merge_of(v[40:], [20, 20])


def test_sample_bad_arguments():
    with pytest.raises(sluice.InvalidArgumentError, match="no datasets"):
        sluice.Dataset.sample_from_datasets([])
    with pytest.raises(sluice.InvalidArgumentError, match="1 weights for 2"):
        sluice.Dataset.sample_from_datasets(inputs(3, 3), [1.0])
    with pytest.raises(sluice.InvalidArgumentError, match="non-negative"):
        sluice.Dataset.sample_from_datasets(inputs(3, 3), [1.0, -1.0])
    with pytest.raises(sluice.InvalidArgumentError, match="finite"):
        sluice.Dataset.sample_from_datasets(inputs(3, 3), [1.0, float("nan")])
    with pytest.raises(sluice.InvalidArgumentError, match="no positive weight"):
        sluice.Dataset.sample_from_datasets(inputs(3, 3), [0, 0])
    with pytest.raises(sluice.InvalidArgumentError, match=r"datasets\[1\]"):
        sluice.Dataset.sample_from_datasets([sluice.Dataset.range(3),
                                             sluice.Dataset.from_tensors(1.5)])


def test_restore_with_new_weights_continues_every_input():
    def mix(w):
        return sluice.Dataset.sample_from_datasets(inputs(90, 90, 90), w, seed=3)

    it = mix([1, 1, 1]).iterator()
    head = [int(np.asarray(next(it))) for _ in range(30)]
    state = it.save()
    tail = values_of(mix([0, 0, 1]).iterator(state=state))
    assert all(v // 100 == 2 for v in tail)
    assert_continues(head, tail)
    assert len(tail) == 90 - sum(1 for v in head if v // 100 == 2)
    # Other weights: every input continues; all elements in the end.
    tail = values_of(mix([0.1, 0.3, 0.6]).iterator(state=state))
    assert_continues(head, tail)
    assert len(head) + len(tail) == 270
    # The same weights: exactly the rest of the saved mixture.
    assert head + values_of(mix([1, 1, 1]).iterator(state=state)) == values(mix([1, 1, 1]))
    # A mixture of another number of inputs: an error.
    other = sluice.Dataset.sample_from_datasets(inputs(9, 9), seed=3)
    with pytest.raises(sluice.InvalidArgumentError, match="of 3 datasets"):
        other.iterator(state=state)


def values_of(it):
    return [int(np.asarray(x)) for x in it]


def assert_continues(head, tail):
    nxt = {}
    for v in head:
        nxt[v // 100] = v % 100 + 1
    for v in tail:
        assert v % 100 == nxt.get(v // 100, 0), "input %d did not continue" % (v // 100)
        nxt[v // 100] = v % 100 + 1


def test_random_access_mixture_shards():
    ds = sluice.Dataset.sample_from_datasets(inputs(40, 25, 31), [0.5, 0.2, 0.3], seed=17)
    whole = values(ds)
    for num in (1, 2, 3):
        shards = [values(ds.shard(num, i)) for i in range(num)]
        joined = [shards[i % num][i // num] for i in range(len(whole))]
        assert joined == whole


def test_choose_doc_example():
    datasets = [sluice.Dataset.from_tensors(w).repeat() for w in (b"foo", b"bar", b"baz")]
    choice = sluice.Dataset.range(3).repeat(3)
    got = list(sluice.Dataset.choose_from_datasets(datasets, choice))
    assert got == [b"foo", b"bar", b"baz"] * 3
    got = list(sluice.experimental.choose_from_datasets(datasets, choice))
    assert got == [b"foo", b"bar", b"baz"] * 3


def test_choose_exhaustion_and_errors():
    choice = sluice.Dataset.from_tensor_slices(np.array([0, 1, 0, 1, 0, 1, 1]))
    assert values(sluice.Dataset.choose_from_datasets(inputs(2, 5), choice)) == [0, 100, 1, 101]
    assert values(sluice.Dataset.choose_from_datasets(inputs(2, 5), choice,
                                                      stop_on_empty_dataset=False)) == \
        [0, 100, 1, 101, 102, 103]
    bad = sluice.Dataset.choose_from_datasets(inputs(2, 2), sluice.Dataset.range(5))
    with pytest.raises(sluice.InvalidArgumentError, match="choice 2 is 2"):
        values(bad)


def test_experimental_aliases():
    ds = sluice.experimental.sample_from_datasets(inputs(3, 3), seed=1)
    assert_merge_of(values(ds), [3, 3])


def test_distribute_over_a_random_access_mixture():
    # RECORD policy: every rank reads its own positions of the one global
    # order, whatever the number of ranks.
    ds = sluice.Dataset.sample_from_datasets(inputs(40, 25, 31), [0.5, 0.2, 0.3], seed=17)
    whole = values(ds)
    for world in (1, 2, 3):
        shares = [values(ds.distribute((rank, world), policy="RECORD")) for rank in range(world)]
        per = len(whole) // world
        assert all(len(s) == per for s in shares)
        assert [shares[i % world][i // world] for i in range(per * world)] == whole[:per * world]
