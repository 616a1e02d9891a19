"""sluice.io's ops as map functions over one component of an element.

Same conventions as sluice.image.map: ``key`` picks the component (a name
or an index, default 0: the first), the result takes its place, renamed to
``output_key`` if given, or is added beside it with ``keep_input=True``.

    files = sluice.Dataset.list_files("photos/*.jpg")
    ds = files.map(sluice.io.map.read_file())            # file name -> bytes
"""

from .. import _sluice

__all__ = ["read_file"]


def read_file(max_bytes=None, key=0, output_key=None, keep_input=False, name=None):
    """Replaces a file name (a string scalar) with the file's bytes (tf.io.read_file)."""
    op = _sluice.io_ops.read_file((2 << 30) if max_bytes is None else int(max_bytes))
    return op.map_function(key, output_key, bool(keep_input), None, name or "")
