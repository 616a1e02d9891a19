"""sluice's exceptions, named as tf.errors names them.

Every error the C++ core reports reaches Python as a subclass of
:class:`Error` chosen by its status code, with the message naming what
failed and where (file, byte offset, record, stage)::

    try:
        for batch in ds: ...
    except sluice.DataLossError as e:
        print(e.code, e.message)   # 15, "train-0.tfrecord: corrupt record at offset 1234 ..."

An exception raised by your own Python function inside the pipeline (a
map function, a generator) reaches you as itself, with its traceback, and a
note naming the stage.
"""

__all__ = [
    "Error", "CancelledError", "UnknownError", "InvalidArgumentError", "NotFoundError",
    "ResourceExhaustedError", "FailedPreconditionError", "OutOfRangeError", "InternalError",
    "UnavailableError", "DataLossError",
]


class Error(Exception):
    """Base of sluice's errors; ``code`` is the canonical status code."""

    code = 2

    def __init__(self, message=""):
        super().__init__(message)
        self.message = message


class CancelledError(Error):
    code = 1


class UnknownError(Error):
    code = 2


class InvalidArgumentError(Error, ValueError):
    code = 3


class NotFoundError(Error, FileNotFoundError):
    code = 5


class ResourceExhaustedError(Error, MemoryError):
    code = 8


class FailedPreconditionError(Error):
    code = 9


class OutOfRangeError(Error, IndexError):
    code = 11


class InternalError(Error):
    code = 13


class UnavailableError(Error):
    code = 14


class DataLossError(Error):
    code = 15
