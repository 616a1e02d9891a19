"""sluice.Dataset: sources, transformations, structure, spec, errors."""

import numpy as np
import pytest

import sluice


def values(ds):
    return [np.asarray(x).tolist() for x in ds]


def test_range_like_python():
    assert values(sluice.Dataset.range(5)) == [0, 1, 2, 3, 4]
    assert values(sluice.Dataset.range(2, 10, 3)) == [2, 5, 8]
    assert values(sluice.Dataset.range(5, 0, -2)) == [5, 3, 1]
    x = next(iter(sluice.Dataset.range(1)))
    assert isinstance(x, np.ndarray) and x.dtype == np.int64 and x.shape == ()


def test_from_tensor_slices_structures():
    ds = sluice.Dataset.from_tensor_slices((np.arange(3), np.array([1.5, 2.5, 3.5])))
    out = list(ds)
    assert [tuple(v.tolist() for v in e) for e in out] == [(0, 1.5), (1, 2.5), (2, 3.5)]
    assert out[0][1].dtype == np.float64  # a NumPy array keeps its dtype

    d = sluice.Dataset.from_tensor_slices({"x": [[1, 2], [3, 4]], "name": [b"a", "b"]})
    e = list(d)
    assert e[0]["x"].tolist() == [1, 2] and e[1]["name"] == b"b"
    assert list(e[0].keys()) == ["x", "name"]
    # Python floats are float32, as tf.constant makes them.
    assert next(iter(sluice.Dataset.from_tensor_slices([0.5, 1.5]))).dtype == np.float32


def test_element_spec():
    ds = sluice.Dataset.from_tensor_slices({"a": np.zeros((4, 3), np.float32), "b": np.arange(4)})
    spec = ds.element_spec
    assert spec == {"a": sluice.TensorSpec((3,), sluice.float32, "a"),
                    "b": sluice.TensorSpec((), sluice.int64, "b")}
    assert ds.batch(2).element_spec["a"].shape == (None, 3)
    assert ds.batch(2, drop_remainder=True).element_spec["a"].shape == (2, 3)
    assert sluice.Dataset.range(3).element_spec == sluice.TensorSpec((), sluice.int64)
    assert sluice.int64 == "int64" and sluice.int64 == np.int64


def test_map_gets_tuple_components_as_arguments_and_dicts_whole():
    ds = sluice.Dataset.from_tensor_slices((np.arange(4), np.arange(4) * 10))
    assert values(ds.map(lambda a, b: a + b)) == [0, 11, 22, 33]
    d = sluice.Dataset.from_tensor_slices({"a": np.arange(3)})
    out = list(d.map(lambda e: {"a": e["a"], "sq": e["a"] ** 2}))
    assert [e["sq"].tolist() for e in out] == [0, 1, 4]
    # A tuple result becomes several components; the order is kept under parallelism.
    par = ds.map(lambda a, b: (b, a), num_parallel_calls=sluice.AUTOTUNE)
    assert [tuple(int(v) for v in e) for e in par] == [(0, 0), (10, 1), (20, 2), (30, 3)]


def test_filter_batch_shuffle_repeat_take_skip_shard():
    ds = sluice.Dataset.range(20).filter(lambda x: x % 2 == 0)
    assert values(ds) == list(range(0, 20, 2))
    assert values(sluice.Dataset.range(7).batch(3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert values(sluice.Dataset.range(7).batch(3, drop_remainder=True)) == [[0, 1, 2], [3, 4, 5]]
    s1 = values(sluice.Dataset.range(100).shuffle(50, seed=3))
    s2 = values(sluice.Dataset.range(100).shuffle(50, seed=3))
    assert s1 == s2 and sorted(s1) == list(range(100)) and s1 != list(range(100))
    assert values(sluice.Dataset.range(3).repeat(2)) == [0, 1, 2, 0, 1, 2]
    assert values(sluice.Dataset.range(10).skip(2).take(3)) == [2, 3, 4]
    assert values(sluice.Dataset.range(10).shard(3, 1)) == [1, 4, 7]
    assert sluice.Dataset.range(10).repeat().cardinality() == sluice.INFINITE_CARDINALITY
    assert len(sluice.Dataset.range(10).batch(4)) == 3


def test_global_shuffle_is_a_permutation_fixed_by_seed():
    a = values(sluice.Dataset.range(50).global_shuffle(seed=9))
    assert sorted(a) == list(range(50)) and a == values(sluice.Dataset.range(50).global_shuffle(seed=9))
    with pytest.raises(sluice.FailedPreconditionError):
        list(sluice.Dataset.range(5).filter(lambda x: True).global_shuffle(seed=1))


def test_padded_batch_unbatch_concatenate_enumerate_zip():
    ds = sluice.Dataset.range(1, 4).map(lambda n: np.arange(n))
    b = list(ds.padded_batch(3))
    assert b[0].tolist() == [[0, 0, 0], [0, 1, 0], [0, 1, 2]]
    b = list(ds.padded_batch(3, padded_shapes=(4,), padding_values=-1))
    assert b[0].tolist()[0] == [0, -1, -1, -1]
    assert values(sluice.Dataset.range(4).batch(2).unbatch()) == [0, 1, 2, 3]
    assert values(sluice.Dataset.range(2).concatenate(sluice.Dataset.range(5, 7))) == [0, 1, 5, 6]
    e = list(sluice.Dataset.range(3, 5).enumerate())
    assert [(int(i), int(x)) for i, x in e] == [(0, 3), (1, 4)]
    z = list(sluice.Dataset.zip(sluice.Dataset.range(3), sluice.Dataset.range(10, 20)))
    assert [(int(a), int(b)) for a, b in z] == [(0, 10), (1, 11), (2, 12)]


def test_interleave_and_flat_map_take_python_functions_returning_datasets():
    ds = sluice.Dataset.range(3).interleave(lambda x: sluice.Dataset.range(x * 10, x * 10 + 2),
                                            cycle_length=3, block_length=1)
    assert values(ds) == [0, 10, 20, 1, 11, 21]
    fm = sluice.Dataset.range(3).flat_map(lambda x: sluice.Dataset.range(x))
    assert values(fm) == [0, 0, 1]


def test_from_generator_with_signature_and_python_objects():
    def gen():
        for i in range(4):
            yield {"id": i, "text": f"item {i}", "v": [float(i)] * 2}

    sig = {"id": sluice.TensorSpec((), sluice.int32), "text": sluice.TensorSpec((), sluice.string),
           "v": sluice.TensorSpec((2,), sluice.float64)}
    ds = sluice.Dataset.from_generator(gen, output_signature=sig)
    out = list(ds)
    assert [e["id"].tolist() for e in out] == [0, 1, 2, 3]
    assert out[0]["id"].dtype == np.int32 and out[2]["v"].dtype == np.float64
    assert out[3]["text"] == b"item 3"
    assert list(ds.element_spec) == ["id", "text", "v"]
    # A dict's keys in another order than the signature's: each value gets
    # its own key's dtype, and the components come out in the signature's order.
    def swapped():
        yield {"text": "a", "v": [1.0, 2.0], "id": 7}

    e = next(iter(sluice.Dataset.from_generator(swapped, output_signature=sig)))
    assert list(e) == ["id", "text", "v"] and e["id"].dtype == np.int32 and e["text"] == b"a"
    with pytest.raises(TypeError, match="not its call"):
        sluice.Dataset.from_generator(gen(), output_signature=sig)


def test_reduce_cache_and_options():
    assert int(sluice.Dataset.range(5).reduce(np.int64(0), lambda s, x: s + x)) == 10
    ds = sluice.Dataset.range(4).map(lambda x: x * 2).cache()
    assert values(ds.repeat(2)) == [0, 2, 4, 6] * 2
    opts = sluice.Options(deterministic=True, seed=5, cpu_budget=1)
    a = values(sluice.Dataset.range(30).shuffle(30).with_options(opts))
    b = values(sluice.Dataset.range(30).shuffle(30).with_options(opts))
    assert a == b
    assert values(sluice.Dataset.range(30).shuffle(30).with_options(deterministic=True, seed=5,
                                                                    cpu_budget=1)) == a
    with pytest.raises(TypeError, match="no field"):
        sluice.Options(nonsense=1)


def test_strings_and_byte_arrays():
    ds = sluice.Dataset.from_tensor_slices(np.array([b"ab", b"", b"xyz"], dtype=object)).batch(3)
    b = next(iter(ds))
    assert b.dtype == object and b.tolist() == [b"ab", b"", b"xyz"]


def test_build_errors_raise_where_written():
    with pytest.raises(sluice.InvalidArgumentError):
        sluice.Dataset.range(3).batch(0)
    with pytest.raises(sluice.NotFoundError):
        sluice.Dataset.list_files("/nonexistent-sluice-dir/*.tfrecord")
    with pytest.raises(ValueError, match="no sluice dtype"):
        sluice.Dataset.from_tensor_slices(np.zeros(3, np.int16))


def test_get_single_element():
    assert int(sluice.Dataset.range(5).skip(2).take(1).get_single_element()) == 2
    with pytest.raises(sluice.InvalidArgumentError, match="empty"):
        sluice.Dataset.range(0).get_single_element()
    with pytest.raises(sluice.InvalidArgumentError, match="more than one"):
        sluice.Dataset.range(2).get_single_element()


def test_repr_and_apply():
    ds = sluice.Dataset.range(4).apply(lambda d: d.map(lambda x: x + 1)).batch(2)
    assert "range" in repr(ds) and "batch" in repr(ds)
    assert values(ds) == [[1, 2], [3, 4]]
