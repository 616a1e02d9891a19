"""sluice.torch: zero-copy torch tensors, structure, ranks, epochs and state_dict resume.

Skipped where torch is not installed (CI does not install it).
"""

import gc
import os
import types

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import sluice  # noqa: E402
import sluice.torch as st  # noqa: E402

N = 40


def records(n=N):
    """Random-access records (RECORD policy): an id and a feature row each."""
    return sluice.Dataset.from_tensor_slices({
        "id": np.arange(n, dtype=np.int64),
        "x": np.arange(n * 3, dtype=np.float32).reshape(n, 3),
    })


def ids(batches):
    return [b["id"].tolist() for b in batches]


def flat(batches):
    return [i for b in ids(batches) for i in b]


def test_tensors_share_sluice_buffers():
    e = next(iter(records().batch(4)))
    t = st.to_torch(e)
    for k in ("id", "x"):
        assert isinstance(t[k], torch.Tensor)
        assert t[k].data_ptr() == e[k].ctypes.data == e[k].base.data_ptr
    # The loader yields the same kind of tensors: equal values, sluice-owned memory.
    b = next(iter(st.DataLoader(records(), batch_size=4)))
    assert b["x"].dtype == torch.float32 and b["x"].shape == (4, 3)
    assert b["id"].tolist() == [0, 1, 2, 3]


def test_tensors_outlive_loader_iterator_and_dataset():
    loader = st.DataLoader(records().map(lambda e: {"id": e["id"], "x": e["x"] * 2}), batch_size=8)
    it = iter(loader)
    batch = next(it)
    del it, loader
    gc.collect()
    assert batch["x"][1].tolist() == [6.0, 8.0, 10.0]


def test_structure_and_dtypes():
    tup = sluice.Dataset.from_tensor_slices((np.arange(6, dtype=np.int32),
                                            np.array([True, False] * 3),
                                            np.arange(6, dtype=np.uint8)))
    a, b, c = next(iter(st.DataLoader(tup, batch_size=3)))
    assert (a.dtype, b.dtype, c.dtype) == (torch.int32, torch.bool, torch.uint8)
    assert b.tolist() == [True, False, True]
    single = next(iter(st.DataLoader(sluice.Dataset.range(5), batch_size=5)))
    assert isinstance(single, torch.Tensor) and single.tolist() == [0, 1, 2, 3, 4]
    scalar = next(iter(st.DataLoader(sluice.Dataset.range(5))))
    assert scalar.shape == () and scalar.dtype == torch.int64
    # torch has no strings: they stay bytes / NumPy object arrays.
    d = sluice.Dataset.from_tensor_slices({"name": [b"a", b"b"], "v": [1.0, 2.0]})
    e = next(iter(st.DataLoader(d, batch_size=2)))
    assert e["name"].tolist() == [b"a", b"b"] and e["v"].dtype == torch.float32
    assert next(iter(st.DataLoader(d)))["name"] == b"a"


def test_read_only_arrays_convert_without_a_copy():
    a = np.arange(4.0)
    a.flags.writeable = False
    assert st.to_torch(a).data_ptr() == a.ctypes.data


def test_len_and_epochs_reshuffle():
    ds = records().shuffle(N, seed=5)
    loader = st.DataLoader(ds, batch_size=8)
    assert len(loader) == 5
    e0, e1 = flat(loader), flat(loader)
    assert sorted(e0) == sorted(e1) == list(range(N)) and e0 != e1
    # Epoch e's order depends on (seed, e) only: a new loader set to epoch 1 agrees.
    again = st.DataLoader(records().shuffle(N, seed=5), batch_size=8)
    again.set_epoch(1)
    assert flat(again) == e1


def test_state_dict_mid_epoch_resumes_with_the_next_batch():
    def make():
        return st.DataLoader(records().global_shuffle(seed=3).map(lambda e: e), batch_size=6)

    loader = make()
    full_epoch0, full_epoch1 = ids(loader), ids(loader)

    loader = make()
    it = iter(loader)
    seen = [next(it) for _ in range(3)]
    state = loader.state_dict()
    assert state["epoch"] == 0 and state["steps"] == 3
    assert ids(seen) == full_epoch0[:3]

    resumed = make()
    resumed.load_state_dict(state)
    assert resumed.state_dict()["sluice_iterator_state"] == state["sluice_iterator_state"]
    assert ids(resumed) == full_epoch0[3:]
    assert ids(resumed) == full_epoch1  # later epochs as the uninterrupted run's
    # The original loader goes on unaffected by the save.
    assert ids(it) == full_epoch0[3:]


def test_state_at_an_epoch_end_starts_the_next_epoch():
    loader = st.DataLoader(records().shuffle(N, seed=1), batch_size=10)
    epoch0 = ids(loader)
    state = loader.state_dict()
    assert state["epoch"] == 1 and state["sluice_iterator_state"] is None
    epoch1 = ids(loader)
    other = st.DataLoader(records().shuffle(N, seed=1), batch_size=10)
    other.load_state_dict(state)
    assert ids(other) == epoch1 != epoch0
    # A loop that takes exactly len() batches and stops: the same.
    counted = st.DataLoader(records().shuffle(N, seed=1), batch_size=10)
    it = iter(counted)
    for _ in range(len(counted)):
        next(it)
    assert counted.state_dict()["epoch"] == 1


def test_explicit_ranks_get_disjoint_exact_shares():
    shares = [flat(st.DataLoader(records(41), batch_size=4, rank=r, world_size=2))
              for r in range(2)]
    assert len(shares[0]) == len(shares[1]) == 20  # floor(41 / 2), one left over
    assert not set(shares[0]) & set(shares[1])
    assert sorted(shares[0] + shares[1]) == list(range(40))
    with pytest.raises(ValueError, match="both"):
        st.DataLoader(records(), rank=1)


@pytest.fixture
def launcher_env(monkeypatch):
    for k in list(os.environ):
        if k.startswith(("OMPI_", "PMI_", "SLURM_", "MPI_")) or k in (
                "TF_CONFIG", "SLUICE_CLUSTER_CONFIG"):
            monkeypatch.delenv(k)

    def set_rank(rank, world_size):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", str(world_size))
        monkeypatch.setenv("LOCAL_RANK", str(rank))
        monkeypatch.setenv("LOCAL_WORLD_SIZE", str(world_size))
    return set_rank


def test_ranks_from_torchrun_environment(launcher_env):
    shares = []
    for r in range(2):
        launcher_env(r, 2)
        assert st.world() == (r, 2)
        shares.append(flat(st.DataLoader(records(), batch_size=5)))
    assert len(shares[0]) == len(shares[1]) == N // 2
    assert sorted(shares[0] + shares[1]) == list(range(N))


def test_torch_distributed_wins_over_the_environment(launcher_env, tmp_path):
    dist = torch.distributed
    if not dist.is_available():
        pytest.skip("torch.distributed is not available")
    launcher_env(1, 2)
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0,
                            world_size=1)
    try:
        assert st.world() == (0, 1)
        assert flat(st.DataLoader(records(), batch_size=8)) == list(range(N))
    finally:
        dist.destroy_process_group()


def test_state_resumes_on_another_number_of_ranks():
    src = records(48).global_shuffle(seed=11)
    order = flat(st.DataLoader(src, batch_size=48, rank=0, world_size=1))

    def loader(r, w):
        return st.DataLoader(src, batch_size=2, rank=r, world_size=w, policy="RECORD")

    old = [loader(r, 2) for r in range(2)]
    its = [iter(x) for x in old]
    seen = [i for it in its for _ in range(3) for i in next(it)["id"].tolist()]
    assert sorted(seen) == sorted(order[:12])  # 3 steps x 2 per batch x 2 ranks
    state = old[1].state_dict()  # any old rank's

    rest = []
    for r in range(3):
        new = loader(r, 3)
        new.load_state_dict(state)
        rest.append(flat(new))
    # The 36 records left go 12 to each new rank, positions 12 + r, 12 + r + 3, ...
    for r in range(3):
        assert rest[r] == order[12 + r::3]
    assert sorted(seen + sum(rest, [])) == list(range(48))


def test_dataset_function_places_distribute_itself():
    def per_rank(ctx):
        return records().distribute(ctx).shuffle(8, seed=2)

    shares = [flat(st.DataLoader(per_rank, batch_size=4, rank=r, world_size=2)) for r in range(2)]
    assert sorted(shares[0] + shares[1]) == list(range(N))
    with pytest.raises(TypeError, match="not a sluice.Dataset"):
        iter(st.DataLoader(lambda ctx: [1, 2], rank=0, world_size=1))


def test_iterable_dataset_in_torch_dataloader():
    ds = st.IterableDataset(records().batch(8), rank=0, world_size=1)
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=0)
    batches = list(loader)
    assert len(batches) == 5 and batches[0]["x"].shape == (8, 3)
    assert flat(batches) == list(range(N))
    # Stateful: state taken through the dataset resumes with the next batch.
    it = iter(loader)
    next(it), next(it)
    state = ds.state_dict()
    again = st.IterableDataset(records().batch(8), rank=0, world_size=1)
    again.load_state_dict(state)
    assert flat(torch.utils.data.DataLoader(again, batch_size=None)) == list(range(16, N))


@pytest.mark.filterwarnings("ignore:Got pickle error")
def test_iterable_dataset_refuses_worker_processes(monkeypatch):
    ds = st.IterableDataset(records().batch(8), rank=0, world_size=1)
    # Inside a worker (as torch's fork workers see it; not forked here: this
    # process runs sluice's and maybe JAX's threads).
    info = types.SimpleNamespace(id=0, num_workers=2, seed=0, dataset=ds)
    monkeypatch.setattr(torch.utils.data, "get_worker_info", lambda: info)
    with pytest.raises(RuntimeError, match="num_workers=0"):
        iter(ds)
    monkeypatch.undo()
    # Worker processes that get the dataset pickled (spawn, forkserver): the same advice.
    spawned = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=1,
                                          multiprocessing_context="spawn")
    with pytest.raises(TypeError, match="num_workers=0"):
        list(spawned)


def test_pin_memory():
    if torch.cuda.is_available():
        b = next(iter(st.DataLoader(records(), batch_size=4, pin_memory=True)))
        assert b["x"].is_pinned()
    else:
        with pytest.warns(UserWarning, match="no CUDA device"):
            loader = st.DataLoader(records(), batch_size=4, pin_memory=True)
        assert not next(iter(loader))["x"].is_pinned()


def test_device_rejects_other_kinds():
    with pytest.raises(ValueError, match="cpu or cuda"):
        st.DataLoader(records(), device="meta")
    b = next(iter(st.DataLoader(records(), batch_size=2, device="cpu")))
    assert b["x"].device.type == "cpu"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_batches_come_from_prefetch_to_device():
    loader = st.DataLoader(records().map(lambda e: e), batch_size=8, device="cuda:0")
    out = list(loader)
    assert out[0]["x"].device == torch.device("cuda", 0)
    assert out[0]["id"].dtype == torch.int64
    assert flat([{"id": b["id"].cpu()} for b in out]) == list(range(N))
    torch.cuda.synchronize()


@pytest.mark.filterwarnings("ignore:'set_vital' is deprecated")
def test_torchdata_stateful_dataloader_checkpoints_the_dataset():
    sdl = pytest.importorskip("torchdata.stateful_dataloader")

    def make():
        ds = st.IterableDataset(records().shuffle(N, seed=4).batch(8), rank=0, world_size=1)
        return sdl.StatefulDataLoader(ds, batch_size=None, num_workers=0)

    full = ids(make())
    loader = make()
    it = iter(loader)
    head = [next(it) for _ in range(2)]
    state = loader.state_dict()
    resumed = make()
    resumed.load_state_dict(state)
    assert ids(head) + ids(resumed) == full
