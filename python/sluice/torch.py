"""sluice.torch: a sluice pipeline as PyTorch's input, without copies.

    import sluice, sluice.torch
    ds = (sluice.TFRecordDataset(files).global_shuffle(seed=7)
          .map(sluice.io.parse_example(features), num_parallel_calls=sluice.AUTOTUNE))
    loader = sluice.torch.DataLoader(ds, batch_size=128, drop_last=True)
    for epoch in range(epochs):
        for batch in loader:                    # dicts of torch tensors
            train_step(batch)
    ckpt["loader"] = loader.state_dict()        # mid-epoch is fine
    ...
    loader.load_state_dict(ckpt["loader"])      # resumes with the next batch

Tensors are made with torch.from_dlpack, so they share sluice's buffers
(data_ptr() is sluice's); the structure is the element's: a dict, a tuple
or a single tensor. String components stay bytes / NumPy object arrays
(torch has no strings).

Ranks. Each rank gets its exact share (Dataset.distribute): the rank and
world size come from torch.distributed when it is initialized, else from
the launcher's environment (torchrun's RANK / WORLD_SIZE, mpirun, srun,
TF_CONFIG; sluice.InputContext.from_environment()), else rank 0 of 1. The
loader applies distribute to the dataset it is given, so give it the
unbatched records and a batch_size (the loader batches after distributing),
or pass a function of a sluice.InputContext that returns the dataset with
distribute where you want it (tf.distribute's
distribute_datasets_from_function).

Epochs and checkpoints (torchdata's StatefulDataLoader protocol).
Each iter(loader) is an epoch; epoch e's shuffles depend on (seed, e) only,
not on how many iterators this process made, so a job resumed in a new
process reshuffles later epochs exactly as the uninterrupted one would
have. state_dict() may be taken at any step; load_state_dict() makes the
next iter() continue that epoch with the next batch. Under the RECORD
policy (random-access inputs: indexed TFRecords, range,
from_tensor_slices, global_shuffle and maps over them) a state also
resumes on another number of ranks: every new rank loads the same state
(any old rank's) and the new ranks continue from the global position the
old job reached (docs/distribute.md).

num_workers. sluice.torch.IterableDataset inside a torch DataLoader with
num_workers > 0 refuses to run (RuntimeError) rather than shard across
worker processes: sluice's stages already run in parallel C++ threads
without the GIL, so worker processes would only add a pickle and a
shared-memory copy per batch; each worker would hold its own shuffle
buffer, read-ahead and CPU / RAM budget; torch interleaves workers' outputs
round-robin, which no sluice checkpoint describes; and forking a process
whose pipeline threads are running is unsafe. Use num_workers=0 and
batch_size=None (sluice batches), or sluice.torch.DataLoader.

Import this module explicitly (import sluice.torch); `import sluice` never
imports torch.
"""

import collections
import warnings

import numpy as _np
import torch as _torch
import torch.utils.data as _tud

from . import _sluice
from .dataset import INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset, InputContext

__all__ = ["DataLoader", "IterableDataset", "to_torch", "world"]

_STATE_FORMAT = "sluice.torch/1"


def world(rank=None, world_size=None):
    """(rank, world_size): given, else torch.distributed's, else the launcher's, else (0, 1)."""
    if rank is not None or world_size is not None:
        if rank is None or world_size is None:
            raise ValueError("give both rank and world_size, or neither")
        return int(rank), int(world_size)
    dist = getattr(_torch, "distributed", None)
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    ctx = InputContext.from_environment()
    return ctx.input_pipeline_id, ctx.num_input_pipelines


# ---- Elements to torch -------------------------------------------------------

def _tensor_to_torch(x, pin):
    if isinstance(x, _np.ndarray):
        if x.dtype.kind in "OSU":
            return x  # strings: torch has none
        # NumPy's own DLPack export: it keeps bool as bool (sluice.Tensor's
        # DLPack 0.6 export has no bool and says uint8) and shares the
        # memory, which the array keeps alive through its base, sluice's
        # buffer.
        t = _torch.from_dlpack(x)
    elif isinstance(x, _sluice.Tensor):
        # Device memory (prefetch_to_device) or a dtype NumPy lacks (bfloat16).
        t = _torch.from_dlpack(x)
        if x.dtype == "bool":
            t = t.view(_torch.bool)
    else:
        return x  # bytes: a string scalar
    if pin and t.device.type == "cpu":
        t = t.pin_memory()  # a copy: torch pins its own memory only
    return t


def to_torch(element, pin_memory=False):
    """An element of a sluice Dataset as torch tensors in the same structure (no copy).

    With pin_memory, host tensors are copied into pinned memory instead.
    """
    if isinstance(element, dict):
        return {k: _tensor_to_torch(v, pin_memory) for k, v in element.items()}
    if isinstance(element, tuple):
        return tuple(_tensor_to_torch(v, pin_memory) for v in element)
    return _tensor_to_torch(element, pin_memory)


def _sluice_tensors(element):
    values = element.values() if isinstance(element, dict) else (
        element if isinstance(element, tuple) else (element,))
    return [v for v in values if isinstance(v, _sluice.Tensor)]


class _DeviceKeepAlive:
    """Keeps each device batch's sluice buffers until the consumer's stream has used them.

    prefetch_to_device's blocks go back to sluice's allocator (for its copy
    stream) when the last reference drops, and torch may drop its tensors
    while kernels reading them are still queued on its stream. So on every
    next batch an event is recorded on the current stream for the batch
    before it, whose buffers are released only once that event completed
    (what record_stream does for torch's own allocator).
    """

    def __init__(self, gpu):
        self._gpu = gpu
        self._held = collections.deque()
        self._last = None

    def step(self, tensors):
        if self._last:
            event = _torch.cuda.Event()
            event.record(_torch.cuda.current_stream(self._gpu))
            self._held.append((event, self._last))
        self._last = tensors
        while self._held and self._held[0][0].query():
            self._held.popleft()

    def close(self):
        if self._last or self._held:
            _torch.cuda.current_stream(self._gpu).synchronize()
        self._held.clear()
        self._last = None


# ---- Epochs and state --------------------------------------------------------

class _Feed:
    """The pipeline behind IterableDataset and DataLoader: ranks, epochs, state."""

    def __init__(self, dataset, batch_size=None, drop_last=False, device=None, distribute=True,
                 policy="AUTO", rank=None, world_size=None, pin_memory=False):
        if not (isinstance(dataset, Dataset) or callable(dataset)):
            raise TypeError("dataset must be a sluice.Dataset or a function of a "
                            f"sluice.InputContext returning one, got {type(dataset).__name__}")
        if (rank is None) != (world_size is None):
            raise ValueError("give both rank and world_size, or neither")
        self._dataset = dataset
        self._batch_size = None if batch_size is None else int(batch_size)
        self._drop_last = bool(drop_last)
        self._distribute = bool(distribute)
        self._policy = policy
        self._rank, self._world = rank, world_size
        self._gpu = _gpu_of(device)
        self._pin = bool(pin_memory) and self._gpu is None
        if self._pin and not _torch.cuda.is_available():
            warnings.warn("pin_memory=True but no CUDA device is available; tensors stay unpinned",
                          stacklevel=3)
            self._pin = False
        self._built = None     # ((rank, world), pipeline)
        self._epoch = 0        # the epoch the next iter() runs
        self._pending = None   # (epoch, state bytes, steps) from load_state_dict
        self._live = None      # the current epoch's _EpochIterator

    def pipeline(self):
        """This rank's pipeline for one epoch (rank and world resolved now)."""
        rw = world(self._rank, self._world)
        if self._built is None or self._built[0] != rw:
            ctx = InputContext(num_input_pipelines=rw[1], input_pipeline_id=rw[0])
            if isinstance(self._dataset, Dataset):
                ds = self._dataset
                if self._distribute:
                    ds = ds.distribute(rw, policy=self._policy)
            else:
                ds = self._dataset(ctx)
                if not isinstance(ds, Dataset):
                    raise TypeError("the dataset function returned "
                                    f"{type(ds).__name__}, not a sluice.Dataset")
            if self._batch_size is not None:
                ds = ds.batch(self._batch_size, drop_remainder=self._drop_last)
            if self._gpu is not None:
                ds = ds.prefetch_to_device(f"gpu:{self._gpu}")
            self._built = (rw, ds)
        return self._built[1]

    def _epoch_dataset(self, e):
        # Epoch e's iteration number must be a function of e, not of how many
        # iterators this process made (a fresh Dataset's first iterator is
        # iteration 0, its next ones 1, 2, ...). flat_map gives the
        # sub-dataset it opens for input position i an iteration derived from
        # i, so opening the pipeline at position e (the e before it empty)
        # makes shuffles depend on (seed, e) in any process.
        ds = self.pipeline()
        empty = ds.take(0)
        return Dataset.range(e + 1).flat_map(lambda i: ds if int(i) == e else empty)

    def __len__(self):
        n = self.pipeline().cardinality()
        if n == INFINITE_CARDINALITY:
            raise TypeError("the dataset is infinite")
        if n == UNKNOWN_CARDINALITY:
            raise TypeError("the dataset's length is unknown without reading it "
                            "(use cardinality-preserving stages, or count the steps)")
        return n

    def start(self):
        if self._live is not None:
            self._live.close()
        if self._pending is not None:
            e, state, steps = self._pending
            self._pending = None
        else:
            e, state, steps = self._epoch, None, 0
        self._epoch = e + 1
        it = self._epoch_dataset(e).iterator(state=state)
        self._live = _EpochIterator(it, e, steps, self.pipeline().cardinality(), self._pin,
                                    self._gpu)
        return self._live

    def state_dict(self):
        rank, world_size = world(self._rank, self._world)
        if self._pending is not None:
            e, state, steps = self._pending
        elif self._live is not None and not self._live.exhausted and not self._live_done():
            e, state, steps = self._live.epoch, self._live.save(), self._live.steps
        else:
            e, state, steps = self._epoch, None, 0
        return {"format": _STATE_FORMAT, "epoch": e, "steps": steps,
                "sluice_iterator_state": state, "rank": rank, "world_size": world_size}

    def _live_done(self):
        # Every batch of the epoch taken but StopIteration not seen yet (a loop
        # that counts len() steps): the state is the next epoch's start.
        live = self._live
        return live.steps is not None and 0 <= live.length <= live.steps

    def load_state_dict(self, state_dict):
        if not isinstance(state_dict, dict) or state_dict.get("format") != _STATE_FORMAT:
            raise ValueError("not a sluice.torch state_dict (one from DataLoader.state_dict() "
                             "or IterableDataset.state_dict())")
        if self._live is not None:
            self._live.close()
            self._live = None
        e = int(state_dict["epoch"])
        state = state_dict["sluice_iterator_state"]
        if state is None:
            self._epoch, self._pending = e, None
            return
        steps = state_dict.get("steps")
        if state_dict.get("world_size") != world(self._rank, self._world)[1]:
            steps = None  # a step count of another world size says nothing here
        self._pending = (e, bytes(state), steps)

    def set_epoch(self, epoch):
        self._epoch = int(epoch)
        self._pending = None


class _EpochIterator:
    """One epoch: next() converts each element to torch tensors."""

    def __init__(self, it, epoch, steps, length, pin, gpu):
        # No reference back to the _Feed: that cycle would keep the pipeline
        # alive until the garbage collector runs.
        self._it = it
        self.epoch = epoch
        self.steps = steps
        self.length = length  # the epoch's elements on this rank, or < 0 if not known
        self.exhausted = False
        self._pin = pin
        self._keep = None if gpu is None else _DeviceKeepAlive(gpu)

    def __iter__(self):
        return self

    def __next__(self):
        if self.exhausted:
            raise StopIteration
        try:
            element = next(self._it)
        except StopIteration:
            self.exhausted = True
            self.close()
            raise
        if self.steps is not None:
            self.steps += 1
        if self._keep is not None:
            self._keep.step(_sluice_tensors(element))
        return to_torch(element, self._pin)

    def save(self):
        return self._it.save()

    def close(self):
        """Stops this epoch's pipeline (a later iter() or load_state_dict() replaced it)."""
        if self._keep is not None:
            self._keep.close()
        self._it.close()

    def __len__(self):
        if self.steps is None:
            raise TypeError("the remaining length is unknown after resuming on another "
                            "number of ranks")
        if self.length < 0:
            raise TypeError("the epoch's length is unknown without reading it")
        return self.length - self.steps


def _gpu_of(device):
    """The CUDA index of `device` (None for the host)."""
    if device is None:
        return None
    d = _torch.device(device)
    if d.type == "cpu":
        return None
    if d.type != "cuda":
        raise ValueError(f"device must be cpu or cuda[:N], got {device!r}")
    return _torch.cuda.current_device() if d.index is None else d.index


# ---- The public adapters ------------------------------------------------------

class _Stateful:
    """What both adapters say about their _Feed: length, checkpoints, epochs."""

    def __len__(self):
        return len(self._feed)

    def state_dict(self):
        """Where the loader is: the epoch, and sluice's iterator state within it."""
        return self._feed.state_dict()

    def load_state_dict(self, state_dict):
        """The next iter() continues from state_dict (this loader's, or any rank's under RECORD)."""
        self._feed.load_state_dict(state_dict)

    def set_epoch(self, epoch):
        """The epoch the next iter() runs, from its start (DistributedSampler's name)."""
        self._feed.set_epoch(epoch)


class IterableDataset(_Stateful, _tud.IterableDataset):
    """A sluice Dataset as a torch IterableDataset of torch tensors (no copy).

    For torch.utils.data.DataLoader(sluice.torch.IterableDataset(ds),
    batch_size=None, num_workers=0): sluice batches and parallelizes, the
    DataLoader only hands the tensors on. Each iteration is an epoch of
    this rank's share (see the module's docstring); state_dict() /
    load_state_dict() follow torchdata's Stateful protocol, so a
    StatefulDataLoader(num_workers=0) checkpoints it. num_workers > 0
    raises RuntimeError: sluice runs its own parallel pipeline.
    """

    def __init__(self, dataset, *, distribute=True, policy="AUTO", rank=None, world_size=None):
        super().__init__()
        self._feed = _Feed(dataset, distribute=distribute, policy=policy, rank=rank,
                           world_size=world_size)

    def __iter__(self):
        info = _tud.get_worker_info()
        if info is not None:
            raise RuntimeError(
                f"sluice.torch.IterableDataset in a DataLoader worker process (num_workers="
                f"{info.num_workers}): use num_workers=0. sluice runs its pipeline in parallel "
                "C++ threads itself; worker processes would each run a copy of it and add a "
                "copy of every batch. Batch in sluice and pass batch_size=None.")
        return self._feed.start()

    def __getstate__(self):
        # Worker processes started by spawn or forkserver pickle the dataset.
        raise TypeError("sluice.torch.IterableDataset cannot be sent to DataLoader worker "
                        "processes: use num_workers=0 (sluice runs its pipeline in parallel "
                        "C++ threads itself)")


class DataLoader(_Stateful):
    """Batches of torch tensors from a sluice Dataset, checkpointable mid-epoch.

    ``dataset``: a sluice.Dataset of records (distributed, then batched by
    ``batch_size`` if given), or a function of a sluice.InputContext that
    returns this rank's dataset (then the loader does not distribute).
    ``batch_size`` / ``drop_last``: Dataset.batch after distribute; None if
    the dataset batches already. ``pin_memory``: host tensors copied into
    pinned memory (warns and does nothing without CUDA). ``device``: None or
    "cpu" for host tensors viewing sluice's buffers; "cuda[:N]" for tensors
    in GPU memory straight from Dataset.prefetch_to_device("gpu:N").
    ``distribute`` / ``policy`` / ``rank`` / ``world_size``: this rank's exact
    share (Dataset.distribute; ranks from torch.distributed or the launcher
    unless given).

    Each iter() is an epoch; len() is this rank's number of batches.
    state_dict() / load_state_dict() as torchdata's StatefulDataLoader.
    """

    def __init__(self, dataset, batch_size=None, *, drop_last=False, pin_memory=False,
                 device=None, distribute=True, policy="AUTO", rank=None, world_size=None):
        self._feed = _Feed(dataset, batch_size=batch_size, drop_last=drop_last, device=device,
                           distribute=distribute, policy=policy, rank=rank,
                           world_size=world_size, pin_memory=pin_memory)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.pin_memory = self._feed._pin
        self.device = device

    @property
    def dataset(self):
        """This rank's pipeline (distributed and batched), a sluice.Dataset."""
        return self._feed.pipeline()

    def __iter__(self):
        return self._feed.start()
