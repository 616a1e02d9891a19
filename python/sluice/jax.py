"""sluice.jax: a sluice pipeline's elements as jax arrays on local devices.

    import sluice, sluice.jax
    ds = records.global_shuffle(seed=7).map(parse).batch(256, drop_remainder=True)
    it = sluice.jax.iterator(ds, shard=True)   # each batch split across local devices
    for batch in it:                          # dicts of jax.Array
        state = train_step(state, batch)
    ckpt["input"] = it.save()                 # bytes; sluice.jax.iterator(ds, state=...)

Each process reads its exact share: the iterator applies
Dataset.distribute((jax.process_index(), jax.process_count())) unless told
otherwise, so give it a pipeline whose distribute point is fine at the end,
or distribute yourself and pass distribute=False.

Placement: jax.device_put onto `device` (default: the first local device).
On the CPU, JAX aliases a NumPy array's memory instead of copying it, so
float32 / int32 / uint8 / bool arrays stay views of sluice's buffers; int64
and float64 become 32-bit copies unless jax_enable_x64 is on (JAX's rule,
not sluice's). With shard=True (or a `sharding`), a batch's leading
dimension is split across the devices (jax.make_array_from_process_local_data
over a 1-d mesh of all devices named "batch"), so with several processes
each one's local batch is its part of the global batch; rank-0 components
(scalars) are replicated. String components stay bytes / NumPy object
arrays.

Import this module explicitly (import sluice.jax); `import sluice` never
imports JAX.
"""

import jax as _jax
import numpy as _np

from . import _sluice
from .dataset import Dataset

__all__ = ["Iterator", "iterator", "to_jax"]


def _batch_sharding():
    mesh = _jax.sharding.Mesh(_np.array(_jax.devices()), ("batch",))
    return _jax.sharding.NamedSharding(mesh, _jax.sharding.PartitionSpec("batch"))


def _replicated(sharding):
    return _jax.sharding.NamedSharding(sharding.mesh, _jax.sharding.PartitionSpec())


def _leaf_to_jax(x, device, sharding):
    if isinstance(x, _np.ndarray):
        if x.dtype.kind in "OSU":
            return x  # strings: JAX has none
    elif isinstance(x, _sluice.Tensor):
        # Device memory (prefetch_to_device) or a dtype NumPy lacks (bfloat16).
        x = _jax.dlpack.from_dlpack(x)
    else:
        return x  # bytes: a string scalar
    if sharding is None:
        return _jax.device_put(x, device)
    if x.ndim == 0 and isinstance(sharding, _jax.sharding.NamedSharding):
        return _jax.device_put(x, _replicated(sharding))
    return _jax.make_array_from_process_local_data(sharding, x)


def to_jax(element, device=None, sharding=None):
    """An element of a sluice Dataset as jax arrays, in the same structure."""
    if device is None and sharding is None:
        device = _jax.local_devices()[0]
    if isinstance(element, dict):
        return {k: _leaf_to_jax(v, device, sharding) for k, v in element.items()}
    if isinstance(element, tuple):
        return tuple(_leaf_to_jax(v, device, sharding) for v in element)
    return _leaf_to_jax(element, device, sharding)


class Iterator:
    """Elements of this process's share as jax arrays; save() / state_dict() for checkpoints.

    It reads nothing ahead of what it hands out (sluice's prefetch stages
    do), so a state saved after n elements resumes with element n + 1.
    """

    def __init__(self, dataset, *, device=None, shard=False, sharding=None, distribute=True,
                 policy="AUTO", rank=None, world_size=None, state=None):
        if not isinstance(dataset, Dataset):
            raise TypeError(f"dataset must be a sluice.Dataset, got {type(dataset).__name__}")
        if (rank is None) != (world_size is None):
            raise ValueError("give both rank and world_size, or neither")
        if device is not None and (shard or sharding is not None):
            raise ValueError("give a device or a sharding (shard=True), not both")
        if rank is None:
            rank, world_size = _jax.process_index(), _jax.process_count()
        if distribute:
            dataset = dataset.distribute((rank, world_size), policy=policy)
        if isinstance(state, dict):
            state = state["sluice_iterator_state"]
        self.dataset = dataset
        if sharding is None and shard:
            sharding = _batch_sharding()
        if device is None and sharding is None:
            device = _jax.local_devices()[0]
        self._device, self._sharding = device, sharding
        self._it = dataset.iterator(state=state)

    def __iter__(self):
        return self

    def __next__(self):
        return to_jax(next(self._it), self._device, self._sharding)

    def save(self):
        """The position as bytes (sluice.jax.iterator(ds, state=...) resumes from it)."""
        return self._it.save()

    def state_dict(self):
        return {"sluice_iterator_state": self._it.save()}

    def close(self):
        """Stops the pipeline now."""
        self._it.close()


def iterator(dataset, **kwargs):
    """sluice.jax.Iterator(dataset, **kwargs)."""
    return Iterator(dataset, **kwargs)
