"""Iterators: checkpoints, exceptions from Python functions, Ctrl-C, lifetime, stats."""

import gc
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import threading
import time
import traceback

import numpy as np
import pytest

import sluice


def ints(it):
    return [int(x) for x in it]


def pipeline():
    return (sluice.Dataset.range(200)
            .map(lambda x: x * 3, num_parallel_calls=sluice.AUTOTUNE)
            .shuffle(50, seed=4)
            .batch(7)
            .prefetch(2))


def test_save_restore_mid_epoch_yields_exactly_the_rest():
    full = [b.tolist() for b in pipeline()]
    it = pipeline().iterator()
    head = [next(it).tolist() for _ in range(11)]
    state = it.save()
    assert isinstance(state, bytes) and len(state) > 0
    rest = [b.tolist() for b in pipeline().iterator(state=state)]
    assert head + rest == full
    # The state pickles (it is bytes), and state_dict() carries it.
    again = pipeline().iterator(state=pickle.loads(pickle.dumps(it.state_dict())))
    assert [b.tolist() for b in again] == rest


def test_restore_into_another_pipeline_is_refused():
    it = sluice.Dataset.range(10).batch(2).iterator()
    next(it)
    state = it.save()
    with pytest.raises(sluice.InvalidArgumentError):
        sluice.Dataset.range(10).shuffle(3, seed=1).iterator(state=state)
    with pytest.raises(sluice.Error):
        sluice.Dataset.range(10).batch(2).iterator(state=b"garbage")


def test_generator_save_restore_replays():
    def gen():
        for i in range(10):
            yield {"i": i, "word": "w%d" % i}

    sig = {"i": sluice.TensorSpec((), sluice.int64), "word": sluice.TensorSpec((), sluice.string)}
    ds = sluice.Dataset.from_generator(gen, output_signature=sig)
    it = ds.iterator()
    for _ in range(4):
        next(it)
    rest = [(int(e["i"]), e["word"]) for e in ds.iterator(state=it.save())]
    assert rest == [(i, b"w%d" % i) for i in range(4, 10)]


class Boom(RuntimeError):
    pass


def explode(x):
    if int(x) == 5:
        raise Boom(f"bad element {int(x)}")
    return x


@pytest.mark.parametrize("parallel", [None, sluice.AUTOTUNE])
def test_exception_in_map_reaches_the_consumer_as_itself(parallel):
    ds = sluice.Dataset.range(10).map(explode, num_parallel_calls=parallel)
    seen = []
    with pytest.raises(Boom, match="bad element 5") as info:
        for x in ds:
            seen.append(int(x))
    assert seen == [0, 1, 2, 3, 4]
    # Its own traceback reaches into the function, and a note names the stage.
    frames = traceback.extract_tb(info.value.__traceback__)
    assert any(f.name == "explode" for f in frames)
    notes = getattr(info.value, "__notes__", [])
    assert any("map" in n for n in notes)


def test_exception_in_generator_and_ignore_errors():
    def gen():
        yield 1
        raise KeyError("gone")

    with pytest.raises(KeyError, match="gone"):
        list(sluice.Dataset.from_generator(gen, output_signature=sluice.TensorSpec((), sluice.int64)))
    skipped = sluice.Dataset.range(10).map(explode).ignore_errors()
    it = skipped.iterator()
    assert ints(it) == [0, 1, 2, 3, 4, 6, 7, 8, 9]
    stats = it.stats()
    assert any(s.get("errors_ignored", 0) == 1 for s in stats["stages"])


def test_map_returning_an_unconvertible_value_names_the_stage():
    ds = sluice.Dataset.range(3).map(lambda x: object(), name="to_object")
    with pytest.raises(sluice.Error, match="to_object"):
        list(ds)


def test_keyboard_interrupt_during_iteration_stops_cleanly():
    # A child process sends itself SIGINT while its pipeline runs; the loop
    # must end with KeyboardInterrupt, the pipeline must stop, and the
    # process must then go on and exit normally (no hang, no crash).
    code = textwrap.dedent("""
        import os, signal, threading, time
        import sluice
        def slow(x):
            time.sleep(0.01)
            return x
        ds = sluice.Dataset.range(10**9).map(slow, num_parallel_calls=4).prefetch(8)
        threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        n = 0
        try:
            for x in ds:
                n += 1
        except KeyboardInterrupt:
            print("interrupted after", n > 0)
        # The interpreter still works, and a new pipeline runs.
        print("after", sum(int(x) for x in sluice.Dataset.range(5)))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env=os.environ)
    assert out.returncode == 0, out.stderr
    assert "interrupted after True" in out.stdout and "after 10" in out.stdout


def test_keyboard_interrupt_inside_a_generator_reaches_the_consumer():
    def gen():
        yield 1
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        list(sluice.Dataset.from_generator(gen).prefetch(2))


def test_arrays_view_sluices_buffers_and_outlive_iterator_and_dataset():
    ds = sluice.Dataset.from_tensor_slices(np.arange(64, dtype=np.float32).reshape(4, 16)).batch(4)
    it = iter(ds)
    batch = next(it)
    owner = batch.base
    assert isinstance(owner, sluice.Tensor)
    assert batch.ctypes.data == owner.data_ptr  # no copy between sluice and NumPy
    assert owner.shape == (4, 16) and owner.dtype == "float32"
    del it, ds, owner
    gc.collect()
    assert batch.sum() == np.arange(64).sum()  # the bytes are still alive
    view = batch[1:3]
    del batch
    gc.collect()
    assert view[0, 0] == 16


def test_dlpack_into_numpy_without_copy():
    ds = sluice.Dataset.from_tensor_slices({"x": np.ones((3, 5), np.int32)}).batch(3)
    x = next(iter(ds))["x"]
    t = x.base
    y = np.from_dlpack(t)
    assert y.ctypes.data == t.data_ptr and y.dtype == np.int32 and y.shape == (3, 5)
    assert t.__dlpack_device__() == (1, 0)  # kDLCPU, device 0
    # NumPy's own arrays export DLPack too; sluice takes them back without a
    # copy (NumPy marks arrays it imported read-only and exports only
    # writable ones).
    back = sluice.from_dlpack(x)
    assert back.data_ptr == t.data_ptr
    # A capsule nobody consumes is freed by its destructor (no leak, no crash).
    for _ in range(100):
        t.__dlpack__()


def test_bfloat16_and_bool_tensors():
    ds = sluice.Dataset.from_tensor_slices(np.array([True, False, True])).batch(3)
    b = next(iter(ds))
    assert b.dtype == np.bool_ and b.tolist() == [True, False, True]


def test_prefetch_to_device_on_the_host_backend():
    ds = sluice.Dataset.from_tensor_slices(np.arange(12, dtype=np.float32).reshape(6, 2)).batch(2)
    on_dev = ds.prefetch_to_device("cpu:0", 2)
    out = [np.from_dlpack(t) for t in on_dev]
    assert [o.tolist() for o in out] == [b.tolist() for b in ds]
    it = on_dev.iterator()
    next(it)
    rest = [np.from_dlpack(t).tolist() for t in on_dev.iterator(state=it.save())]
    assert rest == [b.tolist() for b in ds][1:]


def test_many_iterators_dropped_mid_epoch_do_not_hang_or_leak_threads():
    before = threading.active_count()
    for _ in range(30):
        it = iter(sluice.Dataset.range(10**6).map(lambda x: x, num_parallel_calls=2).prefetch(4))
        next(it)
        del it
    gc.collect()
    assert threading.active_count() <= before + 2


def test_stats_and_trace(tmp_path):
    it = sluice.Dataset.range(100).map(lambda x: x, name="ident").batch(10).iterator()
    ints_ = [b.shape[0] for b in it]
    assert ints_ == [10] * 10
    stats = it.stats()
    names = [s["name"] for s in stats["stages"]]
    assert "ident" in names and stats["elements"] == 10
    it.write_trace(str(tmp_path / "trace.json"))
    import json
    json.loads((tmp_path / "trace.json").read_text())
    it.close()
    with pytest.raises(ValueError, match="closed"):
        it.save()


def test_iteration_releases_the_gil():
    # While one thread iterates a pipeline of built-in stages, another
    # thread's Python code keeps running: the ticker's clock readings fall
    # inside the time the iterating thread spends in next(), which they
    # could not if next() held the GIL (with a short switch interval the
    # ticker gets it back at once when next() returns).
    ds = sluice.Dataset.range(400_000).batch(200_000)  # each next(): 200k elements in C++
    stamps = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            stamps.append(time.perf_counter())

    old = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    calls = []
    try:
        t = threading.Thread(target=ticker)
        t.start()
        it = iter(ds)
        while True:
            t0 = time.perf_counter()
            try:
                next(it)
            except StopIteration:
                break
            calls.append((t0, time.perf_counter()))
        done.set()
        t.join()
    finally:
        sys.setswitchinterval(old)
    assert len(calls) == 2
    margin = 0.002
    inside = [s for s in stamps for a, b in calls if a + margin < s < b - margin]
    assert max(b - a for a, b in calls) > 3 * margin, calls  # next() took long enough to tell
    assert len(inside) > 10


def test_distribute_gives_each_rank_its_exact_share():
    ds = sluice.Dataset.range(10)
    shares = [ints(ds.distribute((r, 3))) for r in range(3)]
    assert all(len(s) == 3 for s in shares)  # 10 // 3 each, one left over
    flat = sorted(x for s in shares for x in s)
    assert len(set(flat)) == 9
    assert "RECORD" in ds.plan_distribution((0, 3))
    padded = [list(ds.distribute((r, 3), pad_for_eval=True)) for r in range(3)]
    weights = [float(e[1]) for s in padded for e in s]
    assert len(weights) == 12 and sum(weights) == 10
    with pytest.raises(sluice.InvalidArgumentError):
        ds.distribute((3, 3))


def test_distribute_reads_ranks_from_the_environment(monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "29500")
    ctx = sluice.InputContext.from_environment()
    assert (ctx.input_pipeline_id, ctx.num_input_pipelines) == (1, 2)
    assert ints(sluice.Dataset.range(6).distribute()) == [1, 3, 5]


def test_restore_on_another_number_of_ranks_continues_the_global_order():
    ds = sluice.Dataset.range(24).global_shuffle(seed=3)
    order = ints(ds)
    # Two ranks read 4 steps of one element each, then save.
    its = [ds.distribute((r, 2)).iterator() for r in range(2)]
    seen = [int(next(it)) for _ in range(4) for it in its]
    state = its[0].save()
    # Three ranks restore the same state and read the rest.
    rest = [ints(ds.distribute((r, 3)).iterator(state=state)) for r in range(3)]
    # Global positions 8, 9, 10 ... go to ranks 0, 1, 2 in turn; the 16
    # left make 5 steps of 3 (one left over, as distribute drops it).
    assert seen == order[:8]
    assert [len(r) for r in rest] == [5, 5, 5]
    assert [rest[r][k] for k in range(5) for r in range(3)] == order[8:23]


def _gpu_or_skip():
    try:
        it = sluice.Dataset.range(1).map(lambda x: np.float32(x)).prefetch_to_device("gpu:0", 1).iterator()
        next(it)
    except sluice.Error as e:
        pytest.skip(f"no GPU here ({str(e)[:80]})")


def test_prefetch_to_device_exports_cuda_dlpack_on_a_gpu():
    _gpu_or_skip()
    ds = sluice.Dataset.from_tensor_slices(np.arange(8, dtype=np.float32).reshape(4, 2)).batch(2)
    t = next(iter(ds.prefetch_to_device("gpu:0", 2)))
    assert isinstance(t, sluice.Tensor) and t.device == "gpu:0"
    assert t.__dlpack_device__() == (2, 0)  # kDLCUDA, device 0
    with pytest.raises(TypeError, match="DLPack"):
        np.asarray(t)  # device memory never reaches NumPy
    back = sluice.from_dlpack(t)  # through a kDLCUDA capsule and back
    assert back.device == "gpu:0" and back.data_ptr == t.data_ptr and back.shape == (2, 2)
