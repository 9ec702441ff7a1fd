"""The batch runner's errors: bad input, an output that cannot be resumed or written."""

from __future__ import annotations

from ..errors import RxturnError

__all__ = [
    "BatchError",
    "BatchInputError",
    "BatchLockedError",
    "BatchOutputError",
    "BatchWriteError",
]


class BatchError(RxturnError):
    """A batch run cannot start or go on (the rows' own failures are output lines, not this)."""


class BatchInputError(BatchError):
    """The input is not a batch: a line that is not JSON, a duplicate key, a row of no known
    shape, or (on resume) a row edited since its output line was written. ``line`` is the input
    line number when one is to blame (the message says ``line N: …``), or for the Python API's
    rows the row's number in the iterable, from 1 (``row N: …``)."""

    def __init__(self, message: str, *, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


class BatchOutputError(BatchError):
    """The output cannot be continued: another run's manifest, a line that is not an output
    line, another run holding it; or (:class:`BatchWriteError`) it cannot be written. Nothing
    already written is lost."""


class BatchWriteError(BatchOutputError):
    """The output, its lock or its manifest could not be written (or read) by the system: a
    full disk, a read-only file system, a permission, an I/O error. Every line written before
    is kept; the same run continues once the cause is fixed."""


class BatchLockedError(BatchOutputError):
    """Another run holds the output's lock."""
