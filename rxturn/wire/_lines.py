"""Byte-level line splitting shared by the SSE parser and the NDJSON splitter.

Theory of operation
-------------------
Both wire framings are line based, and both must cope with a network that cuts the byte stream
anywhere: in the middle of a line, between the CR and the LF of a CRLF, or inside a multi-byte
UTF-8 character. :class:`LineSplitter` keeps exactly two pieces of state between chunks:

- ``_partial``: the bytes of the line that has started but not ended yet (a ``bytearray``
  grown in place, so feeding a long line one byte at a time stays linear; not a container of
  objects, so the garbage collector never walks it);
- ``_skip_lf``: the previous chunk ended with CR, so an LF at the very start of the next chunk
  belongs to that CR (one CRLF line end, not an extra blank line).

A chunk is split with C-level ``bytes`` operations (``in`` and ``splitlines``, which for bytes
breaks on CR, LF and CRLF only), never with a per-byte Python loop. UTF-8 is not decoded here:
lines are cut at CR/LF bytes, which never occur inside a multi-byte UTF-8 sequence, so a
character cut across chunks is simply reassembled with the rest of its line.

A leading UTF-8 byte-order mark is dropped (WHATWG event-stream; harmless for NDJSON), even when
it arrives split across chunks. ``line`` numbers are 1-based and count every line end, so error
messages can point at the offending line.

Errors never swallow good data: when a chunk completes some lines and then breaks a limit, the
good lines are returned and the error is raised by the next call (and every call after it), so
the lines a consumer sees before an error do not depend on how the stream was chunked.
"""

from __future__ import annotations

from .._arguments import shown
from .._validate import positive
from ..errors import ConfigError, StreamProtocolError

__all__ = ["BOM", "LineSplitter", "PartialLine", "without_bom"]

BOM = b"\xef\xbb\xbf"


def without_bom(body: bytes) -> bytes:
    """A whole JSON body without a leading UTF-8 byte-order mark: RFC 8259 §8.1 lets a parser
    ignore it, and ``json.loads`` (which the SDKs' HTTP client parses bodies with) does.

    Examples:
        >>> without_bom(b"\\xef\\xbb\\xbf{}")
        b'{}'
    """
    return body[3:] if body[:3] == BOM else body


class PartialLine:
    """The state both framers keep for the line that has started but not ended.

    ``_partial`` holds its bytes so far, ``_partial_len`` their size,
    ``_at_start`` says the stream's first bytes are still being checked for a BOM, and
    ``_skip_lf`` that the previous chunk ended with CR.
    """

    __slots__ = ("_at_start", "_partial", "_partial_len", "_skip_lf")

    def __init__(self) -> None:
        self._partial = bytearray()
        self._partial_len = 0
        self._at_start = True
        self._skip_lf = False

    def _continue(self, data: bytes) -> bytes:
        """``data`` without what belongs to earlier bytes: a leading BOM (at the stream's start
        only, held back while it could still be one) and the LF of a CRLF whose CR ended the
        previous chunk."""
        if self._at_start:
            data = self._strip_bom(data)
        if self._skip_lf and data:
            self._skip_lf = False
            if data[0] == 10:
                data = data[1:]
        return data

    def _strip_bom(self, data: bytes) -> bytes:
        # Hold back up to two bytes while they could still be the start of a BOM.
        head = bytes(self._partial) + data if self._partial else data
        if len(head) < len(BOM) and BOM.startswith(head):
            self._partial[:] = head
            self._partial_len = len(head)
            return b""
        self._at_start = False
        self._partial.clear()
        self._partial_len = 0
        return head[len(BOM) :] if head.startswith(BOM) else head


class LineSplitter(PartialLine):
    """Split a byte stream into complete lines at CR, LF or CRLF, chunk boundaries anywhere.

    Args:
        max_line_bytes: a line longer than this (line end excluded) raises
            :class:`~rxturn.errors.StreamProtocolError`, even before the line has ended.
        what: how error messages name the stream (``"SSE"``, ``"NDJSON"``).
    """

    __slots__ = ("_closed", "_error", "lines", "max_line_bytes", "what")

    def __init__(self, max_line_bytes: int = 1 << 20, *, what: str = "stream") -> None:
        if not positive(max_line_bytes):
            raise ConfigError(f"max_line_bytes must be positive, got {shown(max_line_bytes, 100)}")
        super().__init__()
        self.max_line_bytes = max_line_bytes
        self.what = what
        #: Complete lines returned so far (the next line to end is ``lines + 1``).
        self.lines = 0
        self._closed = False
        self._error: StreamProtocolError | None = None

    def fail(self, error: StreamProtocolError, good: list[bytes]) -> list[bytes]:
        """Record ``error``: raise it now if there is nothing ``good`` to return first."""
        self._error = error
        if not good:
            raise error
        return good

    def feed(self, data: bytes) -> list[bytes]:
        """Add bytes; return the lines completed by them (without their line ends)."""
        if self._error is not None:
            raise self._error
        if self._closed:
            raise ConfigError(f"{self.what} parser: feed() after close()")
        data = self._continue(data)
        if not data:
            return []
        if b"\n" not in data and b"\r" not in data:
            self._partial_len += len(data)
            self._partial += data
            if self._partial_len > self.max_line_bytes:
                return self.fail(self._too_long(self.lines + 1), [])
            return []
        if self._partial:
            self._partial += data
            data = bytes(self._partial)
            self._partial.clear()
            self._partial_len = 0
        lines = data.splitlines()
        last = data[-1]
        if last == 13:
            self._skip_lf = True
        elif last != 10:
            tail = lines.pop()
            self._partial += tail
            self._partial_len = len(tail)
        limit = self.max_line_bytes
        if lines and max(map(len, lines)) > limit:
            first = next(i for i, line in enumerate(lines) if len(line) > limit)
            self.lines += first
            return self.fail(self._too_long(self.lines + 1), lines[:first])
        self.lines += len(lines)
        if self._partial_len > limit:
            return self.fail(self._too_long(self.lines + 1), lines)
        return lines

    def close(self) -> list[bytes]:
        """End of stream: return the final line if it had no line end (else nothing)."""
        if self._error is not None:
            raise self._error
        if self._closed:
            return []
        self._closed = True
        if self._at_start and self._partial:  # a stream of 1-2 bytes that looked like a BOM
            self._at_start = False
        if not self._partial:
            return []
        tail = bytes(self._partial)
        self._partial.clear()
        self._partial_len = 0
        self.lines += 1
        return [tail]

    def _too_long(self, line: int) -> StreamProtocolError:
        return StreamProtocolError(
            f"{self.what} line longer than {self.max_line_bytes} bytes", where=f"line {line}"
        )
