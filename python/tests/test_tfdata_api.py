"""tf.data.experimental's compositions and assert_cardinality / at (sluice.experimental)."""

import numpy as np
import pytest

import sluice
from sluice import experimental as exp
from sluice.errors import FailedPreconditionError, InvalidArgumentError, OutOfRangeError


def values(ds):
    return [np.asarray(x).tolist() for x in ds]


def hidden(n):
    """range(n) whose cardinality is unknown until read."""
    return sluice.Dataset.range(n).filter(lambda x: True)


def test_assert_cardinality_reports_and_checks():
    ds = hidden(5)
    assert ds.cardinality() == sluice.UNKNOWN_CARDINALITY
    checked = ds.apply(exp.assert_cardinality(5))
    assert checked.cardinality() == 5 and len(checked) == 5
    assert values(checked) == [0, 1, 2, 3, 4]
    with pytest.raises(FailedPreconditionError, match="expected to contain 7 elements but "
                                                      "contained only 5 elements"):
        list(ds.assert_cardinality(7))
    with pytest.raises(FailedPreconditionError, match="at least 4 elements"):
        list(ds.assert_cardinality(3))
    with pytest.raises(FailedPreconditionError, match="known when built"):
        sluice.Dataset.range(3).assert_cardinality(4)


def test_at_reads_one_element_of_a_random_access_dataset():
    ds = sluice.Dataset.range(100).map(lambda x: x * 3)
    assert ds.random_access
    assert exp.at(ds, 7).tolist() == 21
    shuffled = sluice.Dataset.range(20).global_shuffle(seed=5)
    assert [shuffled.at(i).tolist() for i in range(20)] == values(shuffled)
    with pytest.raises(OutOfRangeError):
        ds.at(100)
    with pytest.raises(FailedPreconditionError, match="random access"):
        hidden(4).at(0)


def test_shuffle_and_repeat_is_shuffle_then_repeat():
    ds = sluice.Dataset.range(10).apply(exp.shuffle_and_repeat(10, count=2, seed=3))
    out = values(ds)
    assert len(out) == 20 and sorted(out[:10]) == list(range(10)) and sorted(out[10:]) == list(range(10))
    assert out == values(sluice.Dataset.range(10).shuffle(10, seed=3).repeat(2))


def test_map_and_batch_and_parallel_interleave():
    ds = sluice.Dataset.range(7).apply(exp.map_and_batch(lambda x: x + 1, 3, drop_remainder=True))
    assert values(ds) == [[1, 2, 3], [4, 5, 6]]
    with pytest.raises(ValueError):
        exp.map_and_batch(lambda x: x, 2, num_parallel_batches=1, num_parallel_calls=2)
    inter = sluice.Dataset.range(1, 4).apply(exp.parallel_interleave(
        lambda x: sluice.Dataset.from_tensors(x).repeat(2), cycle_length=2, block_length=1))
    assert values(inter) == [1, 2, 1, 2, 3, 3]


def test_enumerate_unbatch_ignore_errors_get_single_element():
    assert values(sluice.Dataset.range(2).apply(exp.enumerate_dataset(5))) == [[5, 0], [6, 1]]
    assert values(sluice.Dataset.range(4).batch(2).apply(exp.unbatch())) == [0, 1, 2, 3]
    assert exp.get_single_element(sluice.Dataset.range(1)).tolist() == 0
    assert exp.cardinality(sluice.Dataset.range(9)) == 9


def test_from_list_stacks_or_generates():
    ds = exp.from_list([(1, "a"), (2, "b")])
    assert [(int(a), b) for a, b in ds] == [(1, b"a"), (2, b"b")]
    d = exp.from_list([{"x": [1, 2]}, {"x": [3, 4]}])
    assert [e["x"].tolist() for e in d] == [[1, 2], [3, 4]]
    ragged = exp.from_list([[1], [2, 3], [4, 5, 6]])
    assert [e.tolist() for e in ragged] == [[1], [2, 3], [4, 5, 6]]
    with pytest.raises(ValueError, match="empty"):
        exp.from_list([])
    with pytest.raises(ValueError, match="element 1"):
        exp.from_list([(1, 2), (1,)])


def write_examples(path, rows):
    with sluice.io.TFRecordWriter(str(path)) as w:
        for x, label in rows:
            w.write(sluice.io.serialize_example({"x": np.array([x, x + 1], np.float32),
                                                 "label": np.array([label], np.int64)}))


def test_make_batched_features_dataset(tmp_path):
    write_examples(tmp_path / "a.tfrecord", [(0.0, 0), (2.0, 1)])
    write_examples(tmp_path / "b.tfrecord", [(4.0, 2)])
    features = {"x": sluice.io.FixedLenFeature([2], sluice.float32),
                "label": sluice.io.FixedLenFeature([], sluice.int64)}
    ds = exp.make_batched_features_dataset(str(tmp_path / "*.tfrecord"), 2, features,
                                           label_key="label", num_epochs=1, shuffle=False)
    batches = list(ds)
    assert len(batches) == 2
    first = batches[0]
    assert list(first) == ["x", "label"]  # the label last (sluice's elements are flat)
    assert first["x"].tolist() == [[0.0, 1.0], [2.0, 3.0]]
    assert first["label"].tolist() == [0, 1] and batches[1]["label"].tolist() == [2]
    shuffled = exp.make_batched_features_dataset(str(tmp_path / "*.tfrecord"), 3, features,
                                                 num_epochs=2, shuffle_seed=1)
    labels = sorted(v for b in shuffled for v in b["label"].tolist())
    assert labels == [0, 0, 1, 1, 2, 2]
    with pytest.raises(ValueError, match="label_key"):
        exp.make_batched_features_dataset("x", 1, features, label_key="nope")


def test_parse_example_dataset(tmp_path):
    write_examples(tmp_path / "a.tfrecord", [(1.0, 7)])
    features = {"label": sluice.io.FixedLenFeature([], sluice.int64)}
    ds = sluice.TFRecordDataset(str(tmp_path / "a.tfrecord")).batch(1).apply(
        exp.parse_example_dataset(features))
    assert [b["label"].tolist() for b in ds] == [[7]]
