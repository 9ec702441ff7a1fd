"""A sans-IO newline-delimited JSON splitter (Ollama's streaming framing).

NDJSON (one JSON document per line) needs no event grammar, only the guarantees the SSE parser
gives: lines cut at CR, LF or CRLF at the byte level whatever the chunking, a bounded line length,
and invalid UTF-8 reported with its line number. Blank (whitespace-only) lines are skipped. The
lines come back as ``bytes`` because msgspec decodes bytes directly; JSON parsing is the decoder's
job (:mod:`rxturn.wire.ollama`).
"""

from __future__ import annotations

from ..errors import StreamProtocolError
from ._lines import LineSplitter

__all__ = ["NDJSONSplitter"]


class NDJSONSplitter:
    """Incremental NDJSON line splitter.

    Args:
        max_line_bytes: longest accepted line (line end excluded).

    Attributes:
        line_numbers: for each line returned by the latest :meth:`feed` / :meth:`close`, its
            1-based line number in the stream (blank lines are counted but not returned).

    Raises:
        StreamProtocolError: a line over the limit or not valid UTF-8 (``where="line N"``).
            Lines completed before the bad one are returned first; the error is then raised by
            the next call.

    Examples:
        >>> splitter = NDJSONSplitter()
        >>> splitter.feed(b'{"a": 1}\\r\\n\\n{"b"')
        [b'{"a": 1}']
        >>> splitter.close(), splitter.line_numbers
        ([b'{"b"'], [3])
    """

    __slots__ = ("_lines", "line_numbers")

    def __init__(self, max_line_bytes: int = 1 << 20) -> None:
        self._lines = LineSplitter(max_line_bytes, what="NDJSON")
        self.line_numbers: list[int] = []

    @property
    def line(self) -> int:
        """1-based number of the line being read (the next line to end)."""
        return self._lines.lines + 1

    def feed(self, data: bytes) -> list[bytes]:
        """Add a chunk; return the complete non-blank lines it finished, in order."""
        return self._keep(self._lines.feed(data))

    def close(self) -> list[bytes]:
        """End of stream: return the final line if it had no line end and is not blank."""
        return self._keep(self._lines.close())

    # a decoder's framer (``rxturn.wire._decoder.Framer``)
    feed_frames = feed
    close_frames = close

    def _keep(self, lines: list[bytes]) -> list[bytes]:
        number = self._lines.lines - len(lines)
        kept: list[bytes] = []
        numbers: list[int] = []
        self.line_numbers = numbers
        for raw in lines:
            number += 1
            if not raw or raw.isspace():
                continue
            try:
                raw.decode()
            except UnicodeDecodeError as exc:
                error = StreamProtocolError(
                    f"NDJSON line is not valid UTF-8 ({exc.reason} at byte {exc.start + 1})",
                    where=f"line {number}",
                )
                return self._lines.fail(error, kept)
            kept.append(raw)
            numbers.append(number)
        return kept
