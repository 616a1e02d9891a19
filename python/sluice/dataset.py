"""sluice.Dataset: tf.data's Dataset API over sluice's C++ pipeline.

A Dataset is a cheap, immutable description of a pipeline; nothing runs
until you iterate it. Iterating yields each element as NumPy arrays that
view sluice's own buffers (no copy), in tf.data's structure: a dict for
named components, a tuple for several unnamed ones, the array alone for one.

Built-in stages and built-in map functions (sluice.io.parse_example, the
sluice.image ops) run in C++ without the GIL; Python functions given to
map, filter, flat_map, interleave and from_generator work too, each call
taking the GIL (see docs/python.md, "What Python functions cost").
"""

import json

from . import _sluice
from . import dtypes as _dtypes

__all__ = ["Dataset", "TFRecordDataset", "TensorSpec", "Options", "AUTOTUNE",
           "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY"]

#: A parameter the autotuner chooses while the pipeline runs (tf.data.AUTOTUNE).
AUTOTUNE = -1
#: Dataset.cardinality() of an infinite dataset (tf.data.INFINITE_CARDINALITY).
INFINITE_CARDINALITY = -1
#: Dataset.cardinality() when it is not known without reading (tf.data.UNKNOWN_CARDINALITY).
UNKNOWN_CARDINALITY = -2


class TensorSpec:
    """The shape and dtype of one component (tf.TensorSpec).

    ``shape`` is a tuple whose unknown dimensions are None, or None for an
    unknown rank.
    """

    __slots__ = ("shape", "dtype", "name")

    def __init__(self, shape, dtype=_dtypes.float32, name=None):
        self.shape = None if shape is None else tuple(None if d is None or d < 0 else int(d)
                                                      for d in shape)
        self.dtype = _dtypes.as_dtype(dtype)
        self.name = name

    def __eq__(self, other):
        return (isinstance(other, TensorSpec) and self.shape == other.shape
                and self.dtype == other.dtype and self.name == other.name)

    def __hash__(self):
        return hash((self.shape, self.dtype.name, self.name))

    def __repr__(self):
        name = f", name={self.name!r}" if self.name else ""
        return f"TensorSpec(shape={self.shape}, dtype={self.dtype!r}{name})"


class Options:
    """Pipeline-wide options (tf.data.Options), for Dataset.with_options.

    Unset (None) fields keep the default or an inner with_options' value.
    ``deterministic`` (default True), ``seed`` (every random stage without
    its own), ``cpu_budget`` (cores the pipeline may keep busy; default all
    this process may use), ``max_threads``, ``ram_budget`` (bytes; default
    half the memory available), ``autotune`` (default True),
    ``map_and_batch_fusion`` (default True). docs/pipeline.md says what each
    does.
    """

    _FIELDS = ("deterministic", "seed", "cpu_budget", "max_threads", "ram_budget", "autotune",
               "map_and_batch_fusion")
    __slots__ = _FIELDS

    def __init__(self, **kwargs):
        for f in self._FIELDS:
            setattr(self, f, None)
        for k, v in kwargs.items():
            if k not in self._FIELDS:
                raise TypeError(f"Options has no field {k!r} (fields: {', '.join(self._FIELDS)})")
            setattr(self, k, v)

    def _as_kwargs(self):
        return {f: getattr(self, f) for f in self._FIELDS if getattr(self, f) is not None}

    def __repr__(self):
        return "Options(" + ", ".join(f"{k}={v!r}" for k, v in self._as_kwargs().items()) + ")"


def _spec_structure(spec_list):
    """The element_spec structure of the C++ side's [(name, dtype, shape)]."""
    if spec_list is None:
        return None
    specs = [TensorSpec(shape, dtype, name or None) for name, dtype, shape in spec_list]
    if specs and all(s.name for s in specs):
        return {s.name: s for s in specs}
    if len(specs) == 1:
        return specs[0]
    return tuple(specs)


def _flatten_signature(signature):
    """[(name, dtype, shape)] of an output_signature structure."""
    if isinstance(signature, TensorSpec):
        return [(signature.name or "", signature.dtype.name, _shape_list(signature.shape))]
    if isinstance(signature, dict):
        out = []
        for k, s in signature.items():
            if not isinstance(s, TensorSpec):
                raise TypeError(f"output_signature[{k!r}] must be a sluice.TensorSpec, got {s!r}")
            out.append((str(k), s.dtype.name, _shape_list(s.shape)))
        return out
    if isinstance(signature, (tuple, list)):
        out = []
        for i, s in enumerate(signature):
            if not isinstance(s, TensorSpec):
                raise TypeError(f"output_signature[{i}] must be a sluice.TensorSpec "
                                "(sluice elements are flat: a tuple or a dict of tensors)")
            out.append(("", s.dtype.name, _shape_list(s.shape)))
        return out
    raise TypeError(f"output_signature must be a TensorSpec, a tuple or a dict of them, "
                    f"got {signature!r}")


def _shape_list(shape):
    if shape is None:
        return None
    return [-1 if d is None else int(d) for d in shape]


def _count(value, none_means):
    return none_means if value is None else int(value)


def _per_component(structure, spec_list, what):
    """A per-component list from a structure matching the element's."""
    if structure is None:
        return None
    names = [n for n, _, _ in (spec_list or [])]
    if isinstance(structure, dict):
        if not names or not all(names):
            raise TypeError(f"{what}: a dict, but the elements are not dicts")
        missing = [n for n in names if n not in structure]
        if missing:
            raise ValueError(f"{what}: no entry for component(s) {missing}")
        return [structure[n] for n in names]
    if isinstance(structure, tuple) and (spec_list is None or len(spec_list) != 1):
        return list(structure)
    return [structure]


class _ShardDatasets(list):
    """reader_func's argument: the shard Datasets in shard order, a list that
    also takes tf.data's idioms for its Dataset of Datasets:
    ``datasets.interleave(lambda x: x, cycle_length=...)`` and
    ``datasets.flat_map(lambda x: x)``."""

    def interleave(self, map_func, cycle_length=None, block_length=None,
                   num_parallel_calls=None, deterministic=None, name=None):
        shards = list(self)
        return Dataset.range(len(shards)).interleave(
            lambda i: map_func(shards[int(i)]),
            cycle_length=max(len(shards), 1) if cycle_length is None else cycle_length,
            block_length=block_length, num_parallel_calls=num_parallel_calls,
            deterministic=deterministic, name=name)

    def flat_map(self, map_func, name=None):
        shards = list(self)
        return Dataset.range(len(shards)).flat_map(lambda i: map_func(shards[int(i)]))


def _shard_reader(reader_func):
    if reader_func is None:
        return None
    if not callable(reader_func):
        raise TypeError(f"reader_func must be callable, got {reader_func!r}")
    return lambda datasets: reader_func(_ShardDatasets(datasets))


class Dataset:
    """A lazy, immutable input pipeline (tf.data.Dataset)."""

    __slots__ = ("_ds",)

    def __init__(self, ds):
        if not isinstance(ds, _sluice.Dataset):
            raise TypeError("use a source (Dataset.range, from_tensor_slices, TFRecordDataset, "
                            "...) to make a Dataset")
        self._ds = ds

    # ---- Sources ---------------------------------------------------------
    @staticmethod
    def range(*args):
        """int64 scalars as Python's range(stop), range(start, stop[, step])."""
        if not 1 <= len(args) <= 3:
            raise TypeError(f"range takes 1 to 3 arguments, got {len(args)}")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (args + (1,))[:3]
        return Dataset(_sluice.Dataset.range(int(start), int(stop), int(step)))

    @staticmethod
    def from_tensor_slices(tensors):
        """Slices of the tensors along their first dimension (a tuple or a dict of them)."""
        return Dataset(_sluice.Dataset.from_tensor_slices(tensors))

    @staticmethod
    def from_tensors(tensors):
        """One element: the tensors."""
        return Dataset(_sluice.Dataset.from_tensors(tensors))

    @staticmethod
    def from_generator(generator, output_types=None, output_shapes=None, args=None,
                       output_signature=None):
        """The elements a Python generator yields (tf.data's from_generator).

        ``generator`` is a callable returning an iterator, called once per
        iteration (with ``args`` if given). ``output_signature`` (TensorSpecs
        in the element's structure) fixes dtypes and shapes; values are
        converted to its dtypes. save()/restore() replay the generator, so it
        must be deterministic for checkpoints to be exact.
        """
        if not callable(generator):
            raise TypeError("from_generator takes the generator function, not its call: "
                            "from_generator(gen, ...) rather than from_generator(gen())")
        if output_signature is None and output_types is not None:
            output_signature = _signature_from_types(output_types, output_shapes)
        fn = generator if args is None else (lambda: generator(*args))
        spec = None if output_signature is None else _flatten_signature(output_signature)
        return Dataset(_sluice.Dataset.from_generator(fn, spec))

    @staticmethod
    def list_files(file_pattern, shuffle=False, seed=None):
        """File names matching glob pattern(s), sorted (shuffled with shuffle=True).

        Brace patterns expand first, as webdataset's: "shard-{000000..000127}.tar",
        "{train,val}/*.tar". Unlike tf.data, sluice lists in sorted order unless asked to shuffle.
        """
        patterns = [file_pattern] if isinstance(file_pattern, (str, bytes)) else list(file_pattern)
        patterns = [p.decode() if isinstance(p, bytes) else str(p) for p in patterns]
        return Dataset(_sluice.Dataset.list_files(patterns, bool(shuffle), seed))

    @staticmethod
    def zip(*datasets):
        """Element i holds every input's element i; ends with the shortest input."""
        if len(datasets) == 1 and isinstance(datasets[0], (tuple, list)):
            datasets = tuple(datasets[0])
        return Dataset(_sluice.Dataset.zip([d._ds for d in datasets]))

    @staticmethod
    def sample_from_datasets(datasets, weights=None, seed=None, stop_on_empty_dataset=False,
                             rerandomize_each_iteration=None):
        """A random mixture: each element from datasets[j] with probability weights[j].

        weights: a list (default uniform; normalized), or a Dataset of weight
        vectors, one per draw. An exhausted input is dropped and the others'
        weights renormalized (stop_on_empty_dataset=True: the mixture ends).
        seed unset: the pipeline's seed. The same seed gives the same order on
        any machine. A saved iterator state restores into a mixture built with
        other weights: every input continues from its saved position.
        """
        datasets = list(datasets)
        if weights is not None and not isinstance(weights, Dataset):
            weights = [float(w) for w in weights]
        elif isinstance(weights, Dataset):
            weights = weights._ds
        return Dataset(_sluice._sample_from_datasets(
            [d._ds if isinstance(d, Dataset) else d for d in datasets], weights,
            None if seed is None else int(seed), bool(stop_on_empty_dataset),
            bool(rerandomize_each_iteration)))

    @staticmethod
    def choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset=True):
        """Element k from datasets[choice_dataset[k]] (int64 scalars in [0, len(datasets)))."""
        return Dataset(_sluice._choose_from_datasets(
            [d._ds if isinstance(d, Dataset) else d for d in list(datasets)],
            choice_dataset._ds if isinstance(choice_dataset, Dataset) else choice_dataset,
            bool(stop_on_empty_dataset)))

    # ---- Transformations ---------------------------------------------------
    def map(self, map_func, num_parallel_calls=None, deterministic=None, name=None):
        """map_func on every element; num_parallel_calls at once (AUTOTUNE: tuned).

        A sluice.MapFunction (sluice.io.parse_example, sluice.image ops,
        f.then(g)) runs without the GIL; a Python function takes it per call
        and gets a tuple's components as separate arguments.
        """
        p = _count(num_parallel_calls, 1)
        if isinstance(map_func, _sluice.MapFunction):
            return Dataset(self._ds.map_builtin(map_func, p, deterministic, name or ""))
        if not callable(map_func):
            raise TypeError(f"map_func must be callable, got {map_func!r}")
        return Dataset(self._ds.map_python(map_func, p, deterministic, name or ""))

    def filter(self, predicate, name=None):
        """The elements for which predicate returns True."""
        return Dataset(self._ds.filter_python(predicate, name or ""))

    def flat_map(self, map_func, name=None):
        """map_func maps each element to a Dataset; their elements follow one another.

        Over windows (Dataset.window), map_func gets each window as datasets.
        """
        if _sluice.elements_are_windows(self._ds):
            return Dataset(_sluice.flat_map_windows(self._ds, map_func, Dataset))
        return Dataset(self._ds.flat_map_python(map_func))

    def interleave(self, map_func, cycle_length=None, block_length=None, num_parallel_calls=None,
                   deterministic=None, name=None):
        """map_func maps each element to a Dataset; cycle_length are read in turn.

        cycle_length defaults to AUTOTUNE, which in sluice is a constant (16,
        capped by the inputs) so the order is the same on every machine.
        Over windows (Dataset.window), map_func gets each window as datasets.
        """
        if _sluice.elements_are_windows(self._ds):
            return Dataset(_sluice.interleave_windows(
                self._ds, map_func, Dataset, _count(cycle_length, AUTOTUNE),
                _count(block_length, 1), _count(num_parallel_calls, 1), deterministic, name or ""))
        return Dataset(self._ds.interleave_python(
            map_func, _count(cycle_length, AUTOTUNE), _count(block_length, 1),
            _count(num_parallel_calls, 1), deterministic, name or ""))

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None, name=None):
        """Each output drawn at random from a buffer of buffer_size elements."""
        reshuffle = True if reshuffle_each_iteration is None else bool(reshuffle_each_iteration)
        return Dataset(self._ds.shuffle(int(buffer_size), seed, reshuffle, name or ""))

    def global_shuffle(self, seed=None, reshuffle_each_iteration=True, name=None):
        """A uniform random permutation of the whole dataset, holding no elements.

        The input must allow random access (range, from_tensor_slices,
        indexed TFRecord files, maps over them).
        """
        return Dataset(self._ds.global_shuffle(seed, bool(reshuffle_each_iteration), name or ""))

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None, deterministic=None,
              name=None):
        """Stacks batch_size consecutive elements (num_parallel_calls: copy rows in parallel)."""
        return Dataset(self._ds.batch(int(batch_size), bool(drop_remainder),
                                      num_parallel_calls is not None, name or ""))

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None,
                     drop_remainder=False, name=None):
        """Batches elements of different shapes, padded to padded_shapes (or the longest)."""
        spec = self._ds.element_spec()
        shapes = _per_component(padded_shapes, spec, "padded_shapes")
        if shapes is not None:
            shapes = [None if s is None else _shape_list(tuple(s) if not isinstance(s, int) else (s,))
                      for s in shapes]
        values = _per_component(padding_values, spec, "padding_values")
        return Dataset(self._ds.padded_batch(int(batch_size), shapes, values, bool(drop_remainder),
                                             name or ""))

    def unbatch(self, name=None):
        """Splits each element along its first dimension."""
        return Dataset(self._ds.unbatch())

    def prefetch(self, buffer_size=AUTOTUNE, name=None):
        """Produces up to buffer_size elements ahead in the background."""
        return Dataset(self._ds.prefetch(_count(buffer_size, AUTOTUNE), name or ""))

    def prefetch_to_device(self, device, buffer_size=AUTOTUNE):
        """Elements copied into `device`'s memory ahead of the consumer ("gpu:0").

        The components come out as sluice.Tensor in device memory; hand
        them to torch or JAX with DLPack (torch.from_dlpack). On "cpu:0"
        (the host backend) they are host memory.
        """
        return Dataset(self._ds.prefetch_to_device(str(device), _count(buffer_size, AUTOTUNE)))

    def repeat(self, count=None, name=None):
        """count epochs (None or -1: forever)."""
        return Dataset(self._ds.repeat(_count(count, -1)))

    def take(self, count, name=None):
        return Dataset(self._ds.take(int(count)))

    def skip(self, count, name=None):
        return Dataset(self._ds.skip(int(count)))

    def shard(self, num_shards, index, equal=False, pad=False, weight_name="sample_weight",
              name=None):
        """Elements index, index + num_shards, ... (equal / pad: every shard as long)."""
        return Dataset(self._ds.shard(int(num_shards), int(index), bool(equal), bool(pad),
                                      weight_name))

    def cache(self, filename="", name=None):
        """Keeps the first pass's elements (in memory, or in `filename`) for later passes."""
        return Dataset(self._ds.cache(str(filename)))

    def snapshot(self, path, compression="AUTO", reader_func=None, shard_func=None, name=None):
        """Persists this dataset's output under ``path`` (tf.data's snapshot).

        The first iteration runs the pipeline and writes its elements to
        path/<fingerprint of the pipeline>; later iterations (in this process
        or another) read them back instead. compression: "AUTO" (none in
        sluice), None or "", "GZIP", "ZLIB". ``shard_func(element) -> int``
        picks each element's shard file (default: round robin over 4);
        ``reader_func(datasets) -> Dataset`` combines the shard datasets
        when reading (sluice passes a list of Datasets in shard order;
        default: one element from each in turn, which reads the default
        shards back in the original order; tf.data's
        ``datasets.interleave(lambda x: x, ...)`` works on the list too).
        """
        return Dataset(_sluice._snapshot(self._ds, str(path), compression,
                                         _shard_reader(reader_func), shard_func, 4, name or ""))

    def save(self, path, compression=None, shard_func=None, checkpoint_args=None):
        """Writes every element to the folder ``path`` (tf.data's Dataset.save).

        Shard files (TFRecord framing of encoded elements, CRC-checked), then
        snapshot.metadata, written last, marks the save complete.
        compression: None, "GZIP" or "ZLIB". ``shard_func(element) -> int``
        picks each element's shard (default: round robin over 4 files).
        """
        if checkpoint_args is not None:
            raise NotImplementedError("Dataset.save: checkpoint_args (resuming an interrupted "
                                      "save) is not supported by sluice; save again instead")
        _sluice._save(self._ds, str(path), compression, shard_func, 4)

    @staticmethod
    def load(path, element_spec=None, compression=None, reader_func=None):
        """The dataset a save() (or a snapshot) wrote to ``path`` (tf.data's Dataset.load).

        element_spec: None (the saved one) or TensorSpecs in the element's
        structure, which must be compatible with the saved spec.
        compression: None (the saved one) or the one used to save.
        ``reader_func(datasets) -> Dataset`` gets a list of Datasets, one per
        shard file in shard order (default: one element from each in turn);
        tf.data's ``datasets.interleave(lambda x: x, ...)`` works on it too.
        """
        spec = None if element_spec is None else _flatten_signature(element_spec)
        return Dataset(_sluice._load(str(path), spec, compression, _shard_reader(reader_func)))

    def concatenate(self, dataset, name=None):
        return Dataset(self._ds.concatenate(dataset._ds))

    def enumerate(self, start=0, name=None):
        """Prepends an int64 index component."""
        return Dataset(self._ds.enumerate(int(start)))

    def assert_cardinality(self, expected_cardinality):
        """The same elements, reporting `expected_cardinality`; reading checks it
        (FailedPreconditionError when the input ends early or runs past it)."""
        return Dataset(self._ds.assert_cardinality(int(expected_cardinality)))

    def at(self, index):
        """Element `index` of a random-access dataset, computed alone
        (tf.data.experimental.at): FailedPreconditionError unless
        random_access, OutOfRangeError past the end."""
        return self._ds.at(int(index))
    # ---- Scans, uniques and other small stages (docs/pipeline.md) ----------
    def scan(self, initial_state, scan_func, name=None):
        """tf.data's scan: scan_func(state, element) -> (new_state, output_element).

        The state (a NumPy value, a tuple or a dict of them) must keep its
        components and dtypes; it is saved with the iterator.
        """
        if not callable(scan_func):
            raise TypeError(f"scan_func must be callable, got {scan_func!r}")
        fn = scan_func
        if isinstance(initial_state, tuple) and len(initial_state) == 1:
            # A 1-tuple state crosses as one component: give it back as a tuple.
            def fn(state, element):
                return scan_func(state if isinstance(state, tuple) else (state,), element)
        return Dataset(_sluice._scan(self._ds, initial_state, fn, name or ""))

    def take_while(self, predicate, name=None):
        """The elements before the first one for which predicate is False."""
        if not callable(predicate):
            raise TypeError(f"predicate must be callable, got {predicate!r}")
        return Dataset(_sluice._take_while(self._ds, predicate, name or ""))

    def unique(self, name=None):
        """Each distinct element once, in order of first appearance (int32/int64/string)."""
        return Dataset(_sluice._unique(self._ds))

    def rebatch(self, batch_size, drop_remainder=False, name=None):
        """The input's batches regrouped into batches of batch_size (an int or a list of sizes)."""
        sizes = [int(b) for b in batch_size] if isinstance(batch_size, (list, tuple)) else [
            int(batch_size)]
        return Dataset(_sluice._rebatch(self._ds, sizes, bool(drop_remainder), name or ""))

    def rejection_resample(self, class_func, target_dist, initial_dist=None, seed=None,
                           name=None):
        """(class, *element) resampled so that the classes follow target_dist (tf.data's).

        class_func maps an element (a tuple's components as arguments) to an
        int class in [0, len(target_dist)).
        """
        if not callable(class_func):
            raise TypeError(f"class_func must be callable, got {class_func!r}")
        import numpy as np
        target = [float(x) for x in np.asarray(target_dist, dtype=np.float64).reshape(-1)]
        initial = None if initial_dist is None else [
            float(x) for x in np.asarray(initial_dist, dtype=np.float64).reshape(-1)]
        return Dataset(_sluice._rejection_resample(self._ds, class_func, target, initial,
                                                   None if seed is None else int(seed),
                                                   name or ""))

    @staticmethod
    def random(seed=None, rerandomize_each_iteration=None, name=None):
        """Infinite uniform int64 scalars in [0, 2**32) (tf.data's Dataset.random)."""
        return Dataset(_sluice._random(None if seed is None else int(seed),
                                       bool(rerandomize_each_iteration), name or ""))

    @staticmethod
    def counter(start=0, step=1, dtype=_dtypes.int64, name=None):
        """start, start + step, ... forever (tf.data's Dataset.counter)."""
        return Dataset(_sluice._counter(int(start), int(step), _dtypes.as_dtype(dtype).name))

    def ignore_errors(self, log_warning=False, name=None):
        """Skips elements whose production failed (counted in the iterator's stats)."""
        return Dataset(self._ds.ignore_errors())

    def with_options(self, options=None, name=None, **fields):
        """Pipeline-wide Options: an Options, a dict, or its fields as keywords.

        ds.with_options(sluice.Options(seed=7)) == ds.with_options(seed=7)
        """
        if options is None:
            options = Options(**fields)
        elif isinstance(options, dict):
            options = Options(**options, **fields)
        elif fields:
            raise TypeError("with_options: pass an Options or keyword fields, not both")
        return Dataset(self._ds.with_options(**options._as_kwargs()))

    # ---- Windows and groups (docs/pipeline.md, "Windows and groups") --------
    def window(self, size, shift=None, stride=1, drop_remainder=False, name=None):
        """Windows of ``size`` elements, ``shift`` apart, rows ``stride`` apart.

        As tf.data's window: flat_map and interleave hand their function each
        window as a Dataset (a dict of Datasets for dict elements, one Dataset
        per argument for tuples): ``ds.window(3).flat_map(lambda w: w.batch(3))``.
        Unlike tf.data, a window is one element holding its rows stacked, so
        iterating a windowed dataset directly yields those stacked arrays, and
        a window's rows must have equal shapes (as for batch).
        """
        return Dataset(_sluice.window(self._ds, int(size), None if shift is None else int(shift),
                                      int(stride), bool(drop_remainder), name or ""))

    def group_by_window(self, key_func, reduce_func=None, window_size=None, window_size_func=None,
                        name=None):
        """Groups elements by key_func into windows; reduce_func(key, window) -> Dataset.

        key_func maps an element to an integer key; a key's window holds
        window_size elements (or window_size_func(key)). A full window, and at
        the end each partial one in increasing key order, becomes the elements
        of reduce_func(key, window_dataset).
        """
        if (window_size is None) == (window_size_func is None):
            raise ValueError("Either the `window_size` argument or the `window_size_func` "
                             "argument must be specified.")
        if reduce_func is None:
            raise ValueError("group_by_window needs reduce_func")
        return Dataset(_sluice.group_by_window(
            self._ds, key_func, reduce_func, Dataset,
            None if window_size is None else int(window_size), window_size_func, name or ""))

    def bucket_by_sequence_length(self, element_length_func, bucket_boundaries,
                                  bucket_batch_sizes, padded_shapes=None, padding_values=None,
                                  pad_to_bucket_boundary=False, no_padding=False,
                                  drop_remainder=False, name=None):
        """Batches elements of similar length together (tf.data's bucket_by_sequence_length).

        Bucket i holds lengths in [bucket_boundaries[i-1], bucket_boundaries[i])
        and is padded-batched by bucket_batch_sizes[i] (one more entry than
        bucket_boundaries).
        """
        spec = self._ds.element_spec()
        shapes = _per_component(padded_shapes, spec, "padded_shapes")
        if shapes is not None:
            shapes = [None if s is None else _shape_list(tuple(s) if not isinstance(s, int) else (s,))
                      for s in shapes]
        values = _per_component(padding_values, spec, "padding_values")
        return Dataset(_sluice.bucket_by_sequence_length(
            self._ds, element_length_func, [int(b) for b in bucket_boundaries],
            [int(b) for b in bucket_batch_sizes], shapes, values, bool(pad_to_bucket_boundary),
            bool(no_padding), bool(drop_remainder), name or ""))
    def pack_sequences(self, length, algorithm="first_fit", num_packing_bins=16,
                       shuffle_bins=True, seed=0, feature_lengths=None, padding_value=0,
                       truncate=False, name=None):
        """Packs dicts of 1-D token sequences into rows of `length` (Grain's packing).

        Each row holds, per component c: c ([length] values, then
        padding_value), c_segment_ids (int32: 1, 2... per sequence, 0 for
        padding) and c_positions (int32: 0..n-1 within each sequence).
        algorithm: "first_fit" (Grain's FirstFitPackIterDataset) or
        "best_fit" (BestFitPackIterDataset); num_packing_bins rows are open
        at once; when a sequence fits none, every open row is emitted
        (shuffled when shuffle_bins, from seed). feature_lengths: {name:
        length} per component; padding_value: an int, or {name: int}.
        A sequence longer than its length raises InvalidArgumentError
        unless truncate.
        """
        if isinstance(padding_value, dict):
            default_pad, pads = 0, {str(k): int(v) for k, v in padding_value.items()}
        else:
            default_pad, pads = int(padding_value), {}
        lengths = {str(k): int(v) for k, v in (feature_lengths or {}).items()}
        return Dataset(_sluice._pack_sequences(
            self._ds, int(length), str(algorithm), int(num_packing_bins), bool(shuffle_bins),
            int(seed), lengths, default_pad, pads, bool(truncate), name or ""))

    def apply(self, transformation_func):
        """transformation_func(self): a reusable piece of pipeline."""
        out = transformation_func(self)
        if not isinstance(out, Dataset):
            raise TypeError(f"apply: the transformation returned {type(out).__name__}, "
                            "not a Dataset")
        return out

    def distribute(self, context=None, policy="AUTO", pad_for_eval=False,
                   weight_name="sample_weight"):
        """This rank's exact share (docs/distribute.md).

        ``context`` is an InputContext, a (rank, world_size) pair, or None to
        read the launcher's environment (torchrun, mpirun, srun, TF_CONFIG).
        policy: AUTO, RECORD, FILE, DATA or OFF. With pad_for_eval every
        rank gets ceil(n / W) elements, the extra ones weighted 0 in a
        ``weight_name`` component.
        """
        rank, world = _rank_and_world(context)
        return Dataset(_sluice._distribute(self._ds, rank, world, str(policy).upper(),
                                           bool(pad_for_eval), weight_name))

    def plan_distribution(self, context=None, policy="AUTO", pad_for_eval=False):
        """What distribute() would do, as text ("RECORD: 100 elements over 4 ranks...")."""
        rank, world = _rank_and_world(context)
        return _sluice._plan_distribution(self._ds, rank, world, str(policy).upper(),
                                          bool(pad_for_eval))

    # ---- Consuming -------------------------------------------------------
    def __iter__(self):
        return self._ds.iterator()

    def iterator(self, state=None):
        """A new iterator, restored from ``state`` (bytes from Iterator.save()) if given."""
        if isinstance(state, dict):
            state = state["sluice_iterator_state"]
        return self._ds.iterator(state)

    def as_numpy_iterator(self):
        """tf.data's spelling: sluice's elements are NumPy already."""
        return self._ds.iterator()

    def reduce(self, initial_state, reduce_func, name=None):
        """Folds reduce_func(state, element) over every element from initial_state."""
        return self._ds.reduce_python(initial_state, reduce_func)

    def get_single_element(self, name=None):
        """The dataset's one element (tf.data's); InvalidArgumentError unless it has exactly one."""
        from .errors import InvalidArgumentError
        it = self._ds.iterator()
        try:
            element = next(it)
        except StopIteration:
            raise InvalidArgumentError("get_single_element: the dataset is empty") from None
        try:
            next(it)
        except StopIteration:
            return element
        finally:
            it.close()
        raise InvalidArgumentError("get_single_element: the dataset has more than one element")

    # ---- Introspection ---------------------------------------------------
    @property
    def element_spec(self):
        """TensorSpecs in the elements' structure, or None when unknown."""
        return _spec_structure(self._ds.element_spec())

    def cardinality(self):
        """The number of elements, INFINITE_CARDINALITY or UNKNOWN_CARDINALITY."""
        return self._ds.cardinality()

    def __len__(self):
        n = self._ds.cardinality()
        if n == INFINITE_CARDINALITY:
            raise TypeError("the dataset is infinite")
        if n == UNKNOWN_CARDINALITY:
            raise TypeError("the dataset's length is unknown; use cardinality()")
        return n

    def random_access(self):
        """True if element i can be computed without reading the others."""
        return self._ds.random_access()

    def source_files(self):
        """A file source's files, in order (empty for any other dataset)."""
        return self._ds.source_files()

    def __repr__(self):
        return f"<sluice.Dataset {self._ds.debug_string()}>"


class TFRecordDataset(Dataset):
    """Records of TFRecord files as bytes (tf.data.TFRecordDataset).

    compression_type: None (from the file name and contents), "", "GZIP" or
    "ZLIB". num_parallel_reads files are read at once, record by record in
    turn, and ahead of the consumer (AUTOTUNE: 16, capped by the file
    count). With FILE.idx indexes (``sluice index``, ``sluice convert
    --index``) the cardinality is exact and the dataset allows random
    access (global_shuffle, record-level sharding).
    """

    __slots__ = ()

    def __init__(self, filenames, compression_type=None, buffer_size=None, num_parallel_reads=None,
                 verify_checksums=True, use_index=True, max_record_size=256 << 20, name=None):
        files = [filenames] if isinstance(filenames, (str, bytes)) else list(filenames)
        files = [f.decode() if isinstance(f, bytes) else str(f) for f in files]
        super().__init__(_sluice.Dataset.tfrecord(
            files, compression_type, _count(buffer_size, 0), _count(num_parallel_reads, 1),
            bool(verify_checksums), bool(use_index), int(max_record_size), name or ""))


def _signature_from_types(types, shapes):
    if isinstance(types, dict):
        shapes = shapes or {}
        return {k: TensorSpec(shapes.get(k), t, k) for k, t in types.items()}
    if isinstance(types, (tuple, list)):
        shapes = shapes or [None] * len(types)
        return tuple(TensorSpec(s, t) for t, s in zip(types, shapes))
    return TensorSpec(shapes, types)


def _rank_and_world(context):
    if context is None:
        return _sluice._cluster_from_environment()
    if isinstance(context, tuple):
        return int(context[0]), int(context[1])
    return int(context.input_pipeline_id), int(context.num_input_pipelines)


class InputContext:
    """Which rank this is, of how many (tf.distribute.InputContext's names)."""

    __slots__ = ("input_pipeline_id", "num_input_pipelines")

    def __init__(self, num_input_pipelines=1, input_pipeline_id=0):
        self.num_input_pipelines = int(num_input_pipelines)
        self.input_pipeline_id = int(input_pipeline_id)

    @staticmethod
    def from_environment():
        """Ranks from the launcher (torchrun, mpirun, srun, TF_CONFIG)."""
        rank, world = _sluice._cluster_from_environment()
        return InputContext(world, rank)

    def __repr__(self):
        return (f"InputContext(num_input_pipelines={self.num_input_pipelines}, "
                f"input_pipeline_id={self.input_pipeline_id})")


# ---- The iterator's Python-side methods --------------------------------------

def _stats(self):
    """Per-stage counters and the autotuner's choices, now (a dict)."""
    return json.loads(self._stats_json())


def _state_dict(self):
    """The iterator's position for a training checkpoint (StatefulDataLoader's protocol)."""
    return {"sluice_iterator_state": self.save()}


_sluice.Iterator.stats = _stats
_sluice.Iterator.state_dict = _state_dict
