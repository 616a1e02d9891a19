"""sluice.jax: jax arrays on local devices, zero-copy on the CPU, sharding, ranks, state.

Skipped where JAX is not installed (CI does not install it).
"""

import gc

import numpy as np
import pytest

jax = pytest.importorskip("jax")

# Four CPU devices for the sharding test, if JAX has not started its backend yet.
try:
    jax.config.update("jax_num_cpu_devices", 4)
except Exception:  # noqa: BLE001 - an older JAX, or a backend already running
    pass

import sluice  # noqa: E402
import sluice.jax as sj  # noqa: E402

N = 32


def records(n=N):
    return sluice.Dataset.from_tensor_slices({
        "id": np.arange(n, dtype=np.int32),
        "x": np.arange(n * 2, dtype=np.float32).reshape(n, 2),
        "ok": np.arange(n) % 3 == 0,
    })


def ids(it):
    return [i for b in it for i in np.asarray(b["id"]).tolist()]


def test_cpu_arrays_alias_sluice_buffers():
    e = next(iter(records().batch(8)))
    a = sj.to_jax(e)
    for k in ("id", "x", "ok"):
        assert isinstance(a[k], jax.Array)
        if jax.devices()[0].platform == "cpu":
            assert a[k].unsafe_buffer_pointer() == e[k].ctypes.data == e[k].base.data_ptr
    assert a["ok"].dtype == np.bool_ and a["x"].dtype == np.float32


def test_arrays_outlive_the_iterator():
    it = sj.iterator(records().map(lambda e: {"id": e["id"], "x": e["x"] + 1}).batch(4))
    b = next(it)
    del it
    gc.collect()
    assert np.asarray(b["x"])[1].tolist() == [3.0, 4.0]


def test_structure():
    t = next(sj.iterator(sluice.Dataset.from_tensor_slices((np.arange(4, dtype=np.int32),
                                                            np.ones(4, np.float32))).batch(2)))
    assert isinstance(t, tuple) and np.asarray(t[0]).tolist() == [0, 1]
    s = next(sj.iterator(sluice.Dataset.from_tensor_slices(np.arange(3, dtype=np.int32))))
    assert isinstance(s, jax.Array) and s.shape == ()
    d = next(sj.iterator(sluice.Dataset.from_tensor_slices({"n": [b"a", b"b"], "v": [1, 2]})
                         .batch(2)))
    assert d["n"].tolist() == [b"a", b"b"] and isinstance(d["v"], jax.Array)


def test_save_resumes_with_the_next_element():
    ds = records().global_shuffle(seed=3).batch(4)
    full = ids(sj.iterator(ds))
    it = sj.iterator(ds)
    head = ids([next(it), next(it), next(it)])
    state = it.save()
    assert head + ids(sj.iterator(ds, state=state)) == full
    assert ids(sj.iterator(ds, state=it.state_dict())) == full[12:]


def test_explicit_ranks_get_disjoint_exact_shares():
    shares = [ids(sj.iterator(records(33).batch(4), rank=r, world_size=2)) for r in range(2)]
    assert len(shares[0]) == len(shares[1]) == 16
    assert sorted(shares[0] + shares[1]) == list(range(32))
    # One process: jax.process_count() is 1, so all of it.
    assert sorted(ids(sj.iterator(records().batch(4)))) == list(range(N))


def test_shard_splits_a_batch_across_local_devices():
    n = jax.local_device_count()
    if n < 2:
        pytest.skip("one local device (JAX's backend started before the test set four)")
    it = sj.iterator(records().batch(2 * n, drop_remainder=True), shard=True)
    b = next(it)
    assert b["x"].shape == (2 * n, 2)
    assert len(b["x"].sharding.device_set) == n
    assert [s.data.shape for s in b["x"].addressable_shards] == [(2, 2)] * n
    assert np.asarray(b["id"]).tolist() == list(range(2 * n))
    with pytest.raises(ValueError, match="not both"):
        sj.iterator(records(), device=jax.devices()[0], shard=True)
