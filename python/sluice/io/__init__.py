"""sluice.io: tf.io's Example parsing, TFRecord writing and file reading.

    spec = {"image/encoded": sluice.io.FixedLenFeature([], sluice.string),
            "label": sluice.io.FixedLenFeature([], sluice.int64, default_value=-1),
            "tags": sluice.io.VarLenFeature(sluice.int64)}
    ds = sluice.TFRecordDataset(files).map(sluice.io.parse_example(spec))

    with sluice.io.TFRecordWriter("out.tfrecord") as w:
        w.write(sluice.io.serialize_example({"label": 3, "image/encoded": jpeg}))

``parse_example(features)`` (one argument, the feature dict) is the map
function, run in C++ without the GIL; ``parse_example(serialized,
features)`` parses eagerly, as tf.io.parse_example does.

Differences from tf.io:

- A VarLenFeature comes out dense, not as a SparseTensor: one Example gives
  a 1-D array of its values; a batch gives the values of all its Examples
  concatenated under ``key`` and an int64 array of each Example's count
  under ``key + ".row_lengths"`` (tf.RaggedTensor.from_row_lengths's
  layout; ``np.split(values, np.cumsum(row_lengths)[:-1])`` gives the rows).
- sluice has no sparse or ragged tensor: a SparseFeature gives its
  SparseTensor's components ``key + ".indices"``, ``key`` (values) and
  ``key + ".dense_shape"``; a RaggedFeature gives its RaggedTensor's flat
  values under ``key`` and its nested row splits under
  ``key + ".row_splits_0"``, ``".row_splits_1"``, ... (outermost first; a
  batch adds the examples' splits as row_splits_0). The values equal
  TensorFlow's components. Partitions are always validated, and a
  SparseFeature's indices are checked against ``size`` (and, with
  already_sorted=True, for order): tf.io returns an invalid tensor instead.
- parse_sequence_example / parse_single_sequence_example return tf.io's
  tuple of dicts, with VarLen features laid out as above; a batch's
  ``lengths`` dict has every feature list's steps per example (tf.io's has
  the FixedLenSequence ones). As a map function the result is one dict:
  context outputs, then feature-list outputs, then (batched records)
  ``key + ".length"``; a key in both specs is an error there.
- ``ds.map(parse_example(spec)).batch(n)`` is run as
  ``ds.batch(n).map(parse_example(spec))`` when every feature is
  FixedLen (the same results; whole batches parsed at once).
- TFRecordWriter publishes its file only at close(): until then the records
  go to a hidden temporary file beside it, and a writer dropped without
  close() (or a ``with`` block left by an exception) leaves the path as it
  was. tf.io's writer writes the path in place.
- Errors are sluice.errors classes: a malformed Example is DataLossError
  ("malformed Example at byte N"), data that does not fit the spec
  InvalidArgumentError naming the feature (and, in a batch, the Example).
"""

import collections as _collections

from .. import _sluice
from .. import dtypes as _dtypes

__all__ = ["FixedLenFeature", "VarLenFeature", "FixedLenSequenceFeature", "SparseFeature",
           "RaggedFeature", "parse_example", "parse_single_example", "parse_sequence_example",
           "parse_single_sequence_example", "serialize_example", "TFRecordWriter", "TFRecordOptions",
           "read_file", "decode_jpeg", "decode_png", "decode_image", "decode_and_crop_jpeg",
           "encode_jpeg", "encode_png", "extract_jpeg_shape", "map"]

_ops = _sluice.io_ops


def _shape(shape, what):
    if shape is None:
        raise ValueError(f"{what}: shape must be fully defined (a list of ints)")
    if isinstance(shape, int):
        shape = (shape,)
    out = []
    for d in shape:
        if d is None or int(d) < 0:
            raise ValueError(f"{what}: shape {tuple(shape)} must be fully defined")
        out.append(int(d))
    return tuple(out)


class FixedLenFeature(_collections.namedtuple("FixedLenFeature",
                                              ["shape", "dtype", "default_value"])):
    """A feature of a fixed number of values (tf.io.FixedLenFeature).

    shape: the value's shape (``[]`` for a scalar); dtype: sluice.int64,
    sluice.float32 or sluice.string. default_value, if given, is used when
    an Example lacks the feature (else the feature is required); it must
    have the shape's number of values (it is reshaped to it).
    """

    __slots__ = ()

    def __new__(cls, shape, dtype, default_value=None):
        return super().__new__(cls, _shape(shape, "FixedLenFeature"), _dtypes.as_dtype(dtype),
                               default_value)


class VarLenFeature(_collections.namedtuple("VarLenFeature", ["dtype"])):
    """A feature with any number of values (tf.io.VarLenFeature).

    Parsed dense: a 1-D array for one Example; for a batch, the values of all
    its Examples concatenated and ``"<key>.row_lengths"`` (int64, one count
    per Example). tf.io returns a SparseTensor instead.
    """

    __slots__ = ()

    def __new__(cls, dtype):
        return super().__new__(cls, _dtypes.as_dtype(dtype))


class FixedLenSequenceFeature(_collections.namedtuple(
        "FixedLenSequenceFeature", ["shape", "dtype", "allow_missing", "default_value"])):
    """Any number of items of ``shape`` (tf.io.FixedLenSequenceFeature).

    Parsed as [num_items, *shape]; a batch is padded to its longest Example
    with default_value (a scalar; else 0 or b""). In an Example parse spec
    allow_missing must be True, as tf.io requires.
    """

    __slots__ = ()

    def __new__(cls, shape, dtype, allow_missing=False, default_value=None):
        return super().__new__(cls, _shape(shape, "FixedLenSequenceFeature"),
                               _dtypes.as_dtype(dtype), bool(allow_missing), default_value)


class SparseFeature(_collections.namedtuple(
        "SparseFeature", ["index_key", "value_key", "dtype", "size", "already_sorted"])):
    """A sparse feature from index and value features (tf.io.SparseFeature).

    index_key: a key (or a list, one per dimension) of int64 features;
    value_key: the values' feature; size: the dense size (a list with a
    list of index keys). Parsed to ``key + ".indices"`` (int64 [nnz, rank]),
    ``key`` (values) and ``key + ".dense_shape"``; a batch adds the example
    as the first index column. Indices outside [0, size), index and value
    counts that differ, and (already_sorted=True) unsorted indices are
    InvalidArgumentError naming the feature.
    """

    __slots__ = ()

    def __new__(cls, index_key, value_key, dtype, size, already_sorted=False):
        return super().__new__(cls, index_key, value_key, _dtypes.as_dtype(dtype), size,
                               bool(already_sorted))


class _Partition(_collections.namedtuple("_Partition", ["key"])):
    __slots__ = ()


class RaggedFeature(_collections.namedtuple(
        "RaggedFeature", ["dtype", "value_key", "partitions", "row_splits_dtype", "validate"])):
    """A ragged feature (tf.io.RaggedFeature).

    Values from ``value_key`` (default: the feature's key), partitioned by
    ``partitions`` (outermost first): RaggedFeature.RowSplits(key),
    RowLengths(key), RowStarts(key), RowLimits(key), ValueRowIds(key) and
    UniformRowLength(length). Parsed to ``key`` (the flat values; trailing
    uniform partitions are dense dimensions of it) and
    ``key + ".row_splits_<i>"`` per ragged dimension, in row_splits_dtype
    (int32 by default, as tf.io). Partitions are always validated.
    """

    __slots__ = ()

    class RowSplits(_Partition):
        __slots__ = ()

    class RowLengths(_Partition):
        __slots__ = ()

    class RowStarts(_Partition):
        __slots__ = ()

    class RowLimits(_Partition):
        __slots__ = ()

    class ValueRowIds(_Partition):
        __slots__ = ()

    class UniformRowLength(_collections.namedtuple("UniformRowLength", ["length"])):
        __slots__ = ()

    def __new__(cls, dtype, value_key=None, partitions=(), row_splits_dtype="int32",
                validate=False):
        return super().__new__(cls, _dtypes.as_dtype(dtype), value_key, tuple(partitions),
                               _dtypes.as_dtype(row_splits_dtype), bool(validate))


def _composite(key, f):
    if isinstance(f, SparseFeature):
        index = [f.index_key] if isinstance(f.index_key, str) else list(f.index_key)
        size = [int(f.size)] if isinstance(f.size, int) else [int(d) for d in f.size]
        return (key, "SparseFeature", f.dtype.name, [], None, False,
                {"index_keys": index, "value_key": f.value_key, "size": size,
                 "already_sorted": f.already_sorted})
    parts = []
    for p in f.partitions:
        if isinstance(p, RaggedFeature.UniformRowLength):
            parts.append(("UniformRowLength", int(p.length)))
        elif isinstance(p, _Partition):
            parts.append((type(p).__name__, p.key))
        else:
            raise TypeError(f"feature {key!r}: {p!r} is not a RaggedFeature partition")
    return (key, "RaggedFeature", f.dtype.name, [], None, False,
            {"value_key": f.value_key or key, "partitions": parts,
             "row_splits_dtype": f.row_splits_dtype.name, "validate": f.validate})


def _spec_list(features):
    if not isinstance(features, dict):
        raise TypeError(f"features must be a dict of feature specs, got {type(features).__name__}")
    out = []
    for key, f in features.items():
        if not isinstance(key, str):
            raise TypeError(f"feature keys must be str, got {key!r}")
        if isinstance(f, FixedLenFeature):
            out.append((key, "FixedLenFeature", f.dtype.name, list(f.shape), f.default_value,
                        False))
        elif isinstance(f, VarLenFeature):
            out.append((key, "VarLenFeature", f.dtype.name, [], None, False))
        elif isinstance(f, FixedLenSequenceFeature):
            out.append((key, "FixedLenSequenceFeature", f.dtype.name, list(f.shape),
                        f.default_value, f.allow_missing))
        elif isinstance(f, (SparseFeature, RaggedFeature)):
            out.append(_composite(key, f))
        else:
            raise TypeError(f"feature {key!r}: {f!r} is not a sluice.io FixedLenFeature, "
                            "VarLenFeature, FixedLenSequenceFeature, SparseFeature or "
                            "RaggedFeature")
    return out


_MISSING = object()


def _parse(what, serialized, features, name, eager):
    """The map function for the features dict alone, else eager(serialized, specs)."""
    if features is _MISSING:
        if serialized is _MISSING:
            raise TypeError(f"{what} needs the features dict")
        features, serialized = serialized, _MISSING
    if serialized is _MISSING:
        return _ops.parse_example_fn(_spec_list(features), name or "")
    return eager(serialized, _spec_list(features))


def parse_example(serialized=_MISSING, features=_MISSING, name=None):
    """Parses serialized tf.train.Examples (tf.io.parse_example).

    Two forms, told apart by their arguments:

    - ``parse_example(features)``: one argument, the dict of feature specs
      (or ``features=`` alone). Returns a sluice.MapFunction for
      Dataset.map, run in C++ without the GIL. On an element whose first
      component is one record (bytes) it gives parse_single_example's
      features; on a batch of records (``ds.batch(n).map(...)``) the batch's.
      Any other components follow the features unchanged. Followed by
      ``.batch(n)`` with only FixedLen features, the pipeline parses whole
      batches (``map(parse).batch(n)`` runs as ``batch(n).map(parse)``).
    - ``parse_example(serialized, features)``: parses a list of serialized
      Examples (bytes) now, as a batch: a dict of NumPy arrays, each with
      the batch dimension first.

    An invalid spec raises InvalidArgumentError naming the feature at once.
    """
    return _parse("parse_example", serialized, features, name, _ops.parse_batch)


def parse_single_example(serialized=_MISSING, features=_MISSING, name=None):
    """Parses one serialized tf.train.Example (tf.io.parse_single_example).

    ``parse_single_example(serialized, features)`` returns a dict of NumPy
    arrays (strings as bytes). With the features dict alone it returns the
    same map function as ``parse_example(features)``.
    """
    return _parse("parse_single_example", serialized, features, name, _ops.parse_single)


_seq_ops = _sluice.io_sequence_ops


def _sequence(serialized, context_features, sequence_features, name, eager):
    """The map function when no records are given, else eager(...)."""
    if isinstance(serialized, dict):
        # The two spec dicts given positionally: the map function form.
        if sequence_features is not None:
            raise TypeError("the map function form takes (context_features, sequence_features)")
        serialized, context_features, sequence_features = (
            _MISSING, serialized, context_features)
    context = _spec_list(context_features or {})
    sequence = _spec_list(sequence_features or {})
    if serialized is _MISSING:
        return _seq_ops.parse_sequence_example_fn(context, sequence, name or "")
    return eager(serialized, context, sequence)


def parse_sequence_example(serialized=_MISSING, context_features=None, sequence_features=None,
                           example_names=None, name=None):
    """Parses serialized tf.train.SequenceExamples (tf.io.parse_sequence_example).

    - ``parse_sequence_example(serialized, context_features,
      sequence_features)``: a list of serialized SequenceExamples, parsed
      now. Returns (context, feature_lists, lengths), dicts of NumPy
      arrays: FixedLenSequence features padded to the longest example (with
      0 / b""), ``lengths[key]`` each example's steps.
    - Without ``serialized`` (``parse_sequence_example(context_features=...,
      sequence_features=...)``, or the two dicts positionally): a
      sluice.MapFunction for Dataset.map, run in C++ without the GIL, on one
      record (parse_single_sequence_example's outputs) or a batch of records
      (``ds.batch(n).map(...)``: the batched form, with ``key + ".length"``);
      the element is one dict, context outputs first.

    example_names is accepted for tf.io's signature and ignored.
    """
    del example_names
    return _sequence(serialized, context_features, sequence_features, name,
                     _seq_ops.parse_batch)


def parse_single_sequence_example(serialized=_MISSING, context_features=None,
                                  sequence_features=None, example_name=None, name=None):
    """Parses one serialized tf.train.SequenceExample
    (tf.io.parse_single_sequence_example): (context, feature_lists) dicts
    of NumPy arrays; a VarLen feature list gives ``key`` (all values) and
    ``key + ".row_lengths"`` (values per step). Without ``serialized``, the
    map function of parse_sequence_example.
    """
    del example_name
    return _sequence(serialized, context_features, sequence_features, name,
                     _seq_ops.parse_single)


def serialize_example(features):
    """A serialized tf.train.Example of a dict {key: value} (bytes).

    int (and bool) values and integer arrays become an Int64List, float
    values and float arrays a FloatList (as float32), bytes / str (UTF-8)
    and arrays or lists of them a BytesList; arrays are flattened. An empty
    list has no type: pass an empty NumPy array of the type. The bytes are
    protobuf's deterministic serialization (keys sorted), what
    ``tf.train.Example(...).SerializeToString(deterministic=True)`` gives.
    """
    if not isinstance(features, dict):
        raise TypeError(f"serialize_example takes a dict, got {type(features).__name__}")
    return _ops.serialize_example(features)


class TFRecordOptions:
    """Options of a TFRecordWriter (tf.io.TFRecordOptions's names).

    compression_type: None or "" (none), "GZIP" or "ZLIB";
    compression_level: zlib's 0-9 (None: zlib's default, 6, as tf);
    output_buffer_size: bytes buffered before each write(2).
    """

    __slots__ = ("compression_type", "compression_level", "output_buffer_size")

    def __init__(self, compression_type=None, compression_level=None, output_buffer_size=None):
        self.compression_type = compression_type
        self.compression_level = compression_level
        self.output_buffer_size = output_buffer_size

    def __repr__(self):
        return (f"TFRecordOptions(compression_type={self.compression_type!r}, "
                f"compression_level={self.compression_level!r}, "
                f"output_buffer_size={self.output_buffer_size!r})")


class TFRecordWriter:
    """Writes records to a TFRecord file (tf.io.TFRecordWriter).

        with sluice.io.TFRecordWriter("train-0.tfrecord", "GZIP") as w:
            w.write(record_bytes)

    options: a TFRecordOptions, or the compression type ("GZIP", "ZLIB",
    "" or None). The bytes equal tf.io.TFRecordWriter's for every
    compression. The records go to a hidden temporary file beside ``path``,
    renamed to ``path`` by close(): ``path`` never holds a partial file. A
    ``with`` block left by an exception, or a writer garbage-collected
    without close(), publishes nothing (tf.io's writer would have written
    the records so far). write_index=True also writes ``path + ".idx"``
    (sluice's record index: exact cardinality and random access for
    TFRecordDataset). Thread-safe (calls are serialized).
    """

    __slots__ = ("_w",)

    def __init__(self, path, options=None, write_index=False):
        if isinstance(options, TFRecordOptions):
            compression = options.compression_type or ""
            level = -1 if options.compression_level is None else int(options.compression_level)
            buffer_size = int(options.output_buffer_size or 0)
        elif options is None or isinstance(options, str):
            compression, level, buffer_size = options or "", -1, 0
        else:
            raise TypeError(f"options must be a TFRecordOptions or a compression type, got "
                            f"{options!r}")
        path = path.decode() if isinstance(path, bytes) else str(path)
        self._w = _ops.TFRecordWriter(path, compression, level, buffer_size, bool(write_index))

    def write(self, record):
        """Appends one record (bytes)."""
        if isinstance(record, str):
            record = record.encode()
        elif not isinstance(record, bytes):
            record = bytes(record)
        self._w.write(record)

    def flush(self):
        """Hands buffered bytes to the OS (the file is still published only by close())."""
        self._w.flush()

    def close(self):
        """Finishes the file and publishes it at ``path`` (a second call does nothing)."""
        self._w.close()

    def discard(self):
        """Drops what was written: ``path`` stays as it was."""
        self._w.discard()

    @property
    def path(self):
        return self._w.path

    @property
    def records_written(self):
        return self._w.records_written

    @property
    def closed(self):
        return self._w.closed

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.discard()
        return False

    def __repr__(self):
        state = "closed" if self.closed else f"{self.records_written} records"
        return f"<sluice.io.TFRecordWriter {self.path!r} ({state})>"


def read_file(filename, max_bytes=None):
    """The bytes of a whole file (tf.io.read_file).

    NotFoundError if it does not exist; ResourceExhaustedError above
    max_bytes (default 2 GiB). The map function form is
    sluice.io.map.read_file.
    """
    op = _ops.read_file(_max_bytes(max_bytes))
    filename = filename.decode() if isinstance(filename, bytes) else str(filename)
    return op(filename)


def _max_bytes(max_bytes):
    return (2 << 30) if max_bytes is None else int(max_bytes)


# ---- object stores (s3://, gs://, az://): docs/objstore.md


def set_remote_options(request_bytes=None, read_ahead=None, max_requests_per_host=None,
                       max_retries=None, retry_base_delay_s=None, retry_max_delay_s=None,
                       connect_timeout_s=None, request_timeout_s=None):
    """Sets how objects are read from s3://, gs:// and az:// URIs.

    Only the arguments given change. They apply to files opened after the
    call (the shared clients are made again). InvalidArgumentError for a
    value out of range. See docs/objstore.md for the defaults and why.
    """
    _remote.set_remote_options(request_bytes, read_ahead, max_requests_per_host, max_retries,
                               retry_base_delay_s, retry_max_delay_s, connect_timeout_s,
                               request_timeout_s)


def reset_remote_options():
    """Back to the defaults of set_remote_options."""
    _remote.reset_remote_options()


def remote_options():
    """The current remote options, as a dict."""
    o = dict(_remote.remote_options())
    for k in ("request_bytes", "read_ahead", "max_requests_per_host", "max_retries"):
        o[k] = int(o[k])
    return o


def remote_stats():
    """What the object stores did since the process started (or the last
    reset_remote_stats()): requests, bytes_read, retries, throttled, timeouts,
    errors, files_opened."""
    return dict(_remote.remote_stats())


def reset_remote_stats():
    _remote.reset_remote_stats()


def remote_filesystems_available():
    """True when this build has the object stores (built with Arrow C++)."""
    return _remote.remote_filesystems_available()


_remote = _sluice.remote_ops


# tf.io's image codecs are sluice.image's.
from ..image import (decode_and_crop_jpeg, decode_image, decode_jpeg, decode_png,  # noqa: E402
                     encode_jpeg, encode_png, extract_jpeg_shape)
from . import map  # noqa: E402,A004
from . import gfile  # noqa: E402


def set_remote_cache(dir, max_bytes, fill="while_reading"):  # noqa: A002
    """Keeps objects read from object stores on a local disk, for the next epoch.

    ``max_bytes`` (an int, or a string such as "200G") bounds the folder;
    whole files are evicted least recently used first. ``fill``:
    "while_reading" caches a file read in order from start to end as its
    bytes arrive; "on_open" downloads it whole when opened (caches random
    access too). ``dir=None`` turns the cache off. The environment's
    SLUICE_REMOTE_CACHE_DIR / SLUICE_REMOTE_CACHE_BYTES do the same without
    code. See docs/objstore.md.
    """
    if dir is None:
        _sluice.fs_ops.set_remote_cache("", 0, "while_reading")
        return
    if isinstance(max_bytes, str):
        max_bytes = _sluice.fs_ops.parse_byte_size(max_bytes)
    _sluice.fs_ops.set_remote_cache(str(dir), int(max_bytes), fill)


def remote_cache_stats():
    """The remote cache's counters: hits, misses, filled, evicted, not_cached, errors,
    bytes_read_from_cache."""
    return _sluice.fs_ops.remote_cache_stats()


__all__ += ["gfile", "set_remote_cache", "remote_cache_stats"]
