"""The process's standard streams when their readers go away, written once.

A notice on stderr is for a person: a closed pipe (``2>&1 | head -1``), a full disk or a closed
file behind it must not end the work the notice is about, nor change an exit status. Such a
stream's descriptor is pointed at ``/dev/null`` instead, so later writes (and what is still
buffered) go nowhere rather than raising again. Standard library only: the command line, the
batch runner and its worker processes all use it.
"""

from __future__ import annotations

import contextlib
import os
from typing import IO, Any

__all__ = ["to_devnull", "write_quietly"]


def to_devnull(stream: IO[Any]) -> None:
    """Point ``stream``'s descriptor at ``/dev/null`` (its reader is gone); a stream without
    one (closed, or not a file) is left as it is."""
    try:
        fd = stream.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
    except (AttributeError, ValueError, OSError):
        return
    try:
        with contextlib.suppress(OSError):
            os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def write_quietly(stream: IO[str], text: str) -> None:
    """Write and flush ``text``; if ``stream``'s reader is gone, :func:`to_devnull` it."""
    try:
        stream.write(text)
        stream.flush()
    except (OSError, ValueError):
        to_devnull(stream)
