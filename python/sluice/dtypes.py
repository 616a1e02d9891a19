"""Element types, named as tf.dtypes names them (sluice.int64, sluice.float32...)."""

import numpy as np

__all__ = ["DType", "as_dtype", "bool", "uint8", "int32", "int64", "float16", "bfloat16",
           "float32", "float64", "string"]

_builtin_bool = bool


class DType:
    """A sluice element type. Compares equal to its name and to NumPy's dtype."""

    __slots__ = ("name", "_numpy")

    def __init__(self, name, numpy_dtype):
        self.name = name
        self._numpy = numpy_dtype

    @property
    def as_numpy_dtype(self):
        """The NumPy type (``np.object_`` for strings; bfloat16 has none)."""
        if self._numpy is None:
            raise TypeError("NumPy has no bfloat16; use DLPack (torch.from_dlpack)")
        return self._numpy

    @property
    def is_floating(self):
        return self.name in ("float16", "bfloat16", "float32", "float64")

    def __eq__(self, other):
        try:
            return self.name == as_dtype(other).name
        except (TypeError, ValueError):
            return NotImplemented

    def __hash__(self):
        return hash(self.name)

    def __repr__(self):
        return f"sluice.{self.name}"


bool = DType("bool", np.bool_)  # noqa: A001 (tf.bool)
uint8 = DType("uint8", np.uint8)
int32 = DType("int32", np.int32)
int64 = DType("int64", np.int64)
float16 = DType("float16", np.float16)
bfloat16 = DType("bfloat16", None)
float32 = DType("float32", np.float32)
float64 = DType("float64", np.float64)
string = DType("string", np.object_)

_BY_NAME = {d.name: d for d in (bool, uint8, int32, int64, float16, bfloat16, float32, float64,
                                string)}
_ALIASES = {"float": float32, "double": float64, "half": float16, "str": string,
            "bytes": string, "object": string}


def as_dtype(value):
    """A DType from a DType, a name ('int64'), a NumPy dtype or a Python type."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        d = _BY_NAME.get(value) or _ALIASES.get(value)
        if d is None:
            raise ValueError(f"unknown dtype {value!r}; sluice has {', '.join(_BY_NAME)}")
        return d
    if value is _builtin_bool:
        return bool
    if value is int:
        return int64
    if value is float:
        return float32
    if value in (bytes, str):
        return string
    try:
        npd = np.dtype(value)
    except TypeError:
        raise TypeError(f"cannot interpret {value!r} as a sluice dtype") from None
    if npd.kind in "OSU":
        return string
    name = npd.name
    if name not in _BY_NAME:
        raise ValueError(f"NumPy dtype {name} has no sluice dtype ({', '.join(_BY_NAME)})")
    return _BY_NAME[name]
