"""A sans-IO Server-Sent Events parser: bytes in, :class:`ServerSentEvent` out.

Theory of operation
-------------------
This is the WHATWG HTML "interpret an event stream" algorithm (§9.2.6), fed by the caller one
network chunk at a time, with no IO of its own (as h11's ``receive_data``, anthropic's
``SSEDecoder``). The rules, line by line:

- lines end with CR, LF or CRLF; a leading UTF-8 BOM is dropped;
- an empty line **dispatches** the event being built if its data buffer is not empty (an event
  that saw no ``data`` field is discarded), then the event type and data buffers reset;
- a line starting with ``:`` is a comment (keep-alive) and is ignored;
- otherwise the line is ``field[:value]``, one space after the colon removed: ``event`` sets the
  event type (``"message"`` when unset), ``data`` appends a line to the data (lines join with
  ``"\\n"``), ``id`` sets the last event id (kept across events; ignored if it contains NUL),
  ``retry`` sets the reconnection delay in ms (only if all ASCII digits, at most 18); other fields
  are ignored.

Three deliberate departures: bytes that are not UTF-8 are an error (WHATWG would substitute
U+FFFD, silently corrupting JSON); :meth:`SSEParser.close` dispatches a pending event that has
data (providers sometimes omit the final blank line; WHATWG would drop it); and a ``retry`` of
more than 18 digits is ignored like one that is not all digits (10^18 ms is no delay, and a
hostile server's thousands of digits are more than Python turns into an ``int``). A line over
``max_line_bytes`` or an event whose data exceeds ``max_event_bytes`` is an error, so a hostile
server cannot make the buffer grow without bound. An error never swallows good events: those
completed before the bad line are returned, and the error is raised by the next call (and every
call after it), so what a consumer sees does not depend on how the stream was chunked.

How it stays fast
-----------------
Every byte is handled by C-level ``bytes`` methods, never a per-byte Python loop:

1. A chunk with a CR is normalised to LF (``replace``, twice); a CR ending one chunk swallows an LF
   starting the next, so a CRLF cut in two still counts once.
2. Up to the last LF, the buffer is complete lines. Up to its last blank line (``rfind``) they
   are whole *blocks*, each the lines of one event and the blank line that dispatches it; the
   lines after it belong to an event still open (interpreted now, so only a partial line is ever
   buffered). An event begun in an earlier chunk is finished first, up to the first blank line.
3. A block shaped ``event: X\ndata: Y`` or ``data: Y`` (what providers send) is dispatched by
   slicing; any other block — comments, ``id``, ``retry``, multi-line data, blank-line runs, an
   event continued from the previous chunk, anything over a limit — is interpreted line by line
   with the rules above.
4. :meth:`SSEParser.feed_raw`, the decoders' path, goes further: when *every* block of a chunk has
   the same provider shape, the payloads are cut out at C level, without a Python statement per
   event, and event names and line numbers are only worked out if an error message asks for
   them. The proof is C-level work on the blocks' lines (``split`` at LF; a multi-byte
   separator would cost twice as much): every second (third) line is empty, and every line of a
   column starts with its field: the column's first line does, and the column joined with LF
   holds ``LF field`` once per later line (a line holds no LF, so a match is a line's start).
   For the ``data`` column that count is a ``split`` of the joined column after its first
   field at each LF + ``data: ``: one piece per line exactly when every line starts with the
   field, and the pieces are then the payloads (no slice per line). A count costs a quarter
   less than the column's least and greatest lines, which prove it too (the strings with a
   given prefix are one interval of the lexicographic order), found by ``min`` and ``max``.
5. A live stream mostly sends one event per network chunk, and a short reply's whole body often
   comes as one chunk. When a chunk is whole blocks (it ends with a blank line and has no CR) and
   nothing is carried over from earlier chunks (no partial line, no event begun, no BOM or CR
   pending, no error), ``feed_raw`` hands it straight to step 3's block rules (one block) or
   step 4 (several), skipping the line-end and buffer steps that have nothing to do. A stream's
   first chunk qualifies when its first byte cannot begin a BOM.

Both paths give identical events; the tests check it on every chunking against an oracle.
UTF-8 is decoded per line (or per data payload), never across a chunk boundary, so a multi-byte
character cut between chunks is simply reassembled with its line. ``feed_raw`` leaves all UTF-8
checking to its consumer: the JSON decoder validates the payloads it reads, and the other fields
are not used by it.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .._arguments import shown
from .._validate import positive
from ..errors import ConfigError, StreamProtocolError
from ._errors import QUOTED_CHARS, cut
from ._lines import PartialLine

__all__ = ["RawEvents", "SSEParser", "ServerSentEvent"]

#: Most digits of a ``retry`` value taken (10^18 ms: 31 million years); a longer one is ignored.
_RETRY_DIGITS = 18


class RawEvents:
    """The events of one :meth:`SSEParser.feed_raw` call, cheap to build.

    ``payloads`` holds each event's data as raw bytes (UTF-8 not checked). The event type and the
    line number are looked up on demand (:meth:`name`, :meth:`line`), since a decoder needs them
    only for an error message.
    """

    __slots__ = ("_one", "_runs", "payloads")

    def __init__(self) -> None:
        self.payloads: list[bytes] = []
        # events added one by one: index -> (event type, line of the first data line)
        self._one: dict[int, tuple[bytes, int]] | None = None  # (each made on first use)
        # uniform runs: (first index, end index, their "event:" lines or None, line before the
        # run, lines per event: 3 with an event line, 2 without)
        self._runs: list[tuple[int, int, list[bytes] | None, int, int]] | None = None

    def __len__(self) -> int:
        return len(self.payloads)

    def add(self, name: bytes, data: bytes, line: int) -> None:
        payloads = self.payloads
        if self._one is None:
            self._one = {len(payloads): (name, line)}
        else:
            self._one[len(payloads)] = (name, line)
        payloads.append(data)

    def add_run(
        self, names: list[bytes] | None, payloads: list[bytes], line: int, per: int
    ) -> None:
        first = len(self.payloads)
        run = (first, first + len(payloads), names, line, per)
        if self._runs is None:
            self._runs = [run]
        else:
            self._runs.append(run)
        self.payloads += payloads

    def name(self, index: int) -> str:
        """The event type of event ``index`` (``"message"`` when unset), for messages: cut as
        they quote a server's string (:func:`~rxturn.wire._errors.cut`; a line may be a
        megabyte)."""
        found = self._one.get(index) if self._one is not None else None
        if found is not None:
            raw = found[0]
        else:
            first, _, names, _, _ = self._run(index)
            raw = names[index - first][7:] if names is not None else b""
        return cut(raw[: QUOTED_CHARS * 4].decode(errors="replace")) or "message"

    def line(self, index: int) -> int:
        """The line number of the first ``data`` line of event ``index``."""
        found = self._one.get(index) if self._one is not None else None
        if found is not None:
            return found[1]
        first, _, _, line, per = self._run(index)
        return line + per * (index - first) + per - 1

    def _run(self, index: int) -> tuple[int, int, list[bytes] | None, int, int]:
        for run in self._runs or ():
            if run[0] <= index < run[1]:
                return run
        raise IndexError(index)


class ServerSentEvent(msgspec.Struct, frozen=True):
    """One dispatched event.

    Attributes:
        event: the event type (``"message"`` when the stream did not name one).
        data: the data lines joined with ``"\\n"``.
        id: the last event id seen so far in the stream (``None`` if none ever was).
        retry: the ``retry`` value sent with this event, in milliseconds, if any.
    """

    event: str = "message"
    data: str = ""
    id: str | None = None
    retry: int | None = None


class SSEParser(PartialLine):
    """Incremental WHATWG event-stream parser.

    Args:
        max_line_bytes: longest accepted line (line end excluded).
        max_event_bytes: most ``data`` bytes one event may accumulate.

    Attributes:
        last_event_id: the last ``id`` field value (``None`` until one arrives).
        retry: the last valid ``retry`` value, in milliseconds.
        event_lines: for each event returned by the latest :meth:`feed` / :meth:`close`, the
            line number of its first ``data`` line.

    Raises:
        StreamProtocolError: a line or event over its limit, or a line that is not UTF-8; the
            error's ``where`` names the line (``"line 12"``). Events completed before the bad
            line are returned first; the error is then raised by the next call (and every call
            after it), so what a consumer sees never depends on how the stream was chunked.

    Examples:
        >>> parser = SSEParser()
        >>> parser.feed(b"event: ping\\ndata: {}\\n\\ndata: a\\r")
        [ServerSentEvent(event='ping', data='{}', id=None, retry=None)]
        >>> parser.feed(b"\\ndata: b\\n")
        []
        >>> parser.close()
        [ServerSentEvent(event='message', data='a\\nb', id=None, retry=None)]
    """

    __slots__ = (
        "_closed",
        "_data",
        "_data_line",
        "_error",
        "_event",
        "_event_lines",
        "_event_retry",
        "_fast_limit",
        "_lines",
        "_overlong",
        "_ready",
        "last_event_id",
        "max_event_bytes",
        "max_line_bytes",
        "retry",
    )

    def __init__(self, max_line_bytes: int = 1 << 20, max_event_bytes: int = 1 << 20) -> None:
        ints = type(max_line_bytes) is int and type(max_event_bytes) is int  # each attempt's
        if not (ints and max_line_bytes > 0 and max_event_bytes > 0) and not (
            positive(max_line_bytes) and positive(max_event_bytes)
        ):
            raise ConfigError(
                "SSE limits must be positive, got "
                f"max_line_bytes={shown(max_line_bytes, 100)}, "
                f"max_event_bytes={shown(max_event_bytes, 100)}"
            )
        PartialLine.__init__(self)  # the partial line (chunks, joined when it ends)
        self.max_line_bytes = max_line_bytes
        self.max_event_bytes = max_event_bytes
        # A block no longer than this cannot break either limit, whatever its shape.
        # (a conditional: calling min() costs more)
        self._fast_limit = max_line_bytes if max_line_bytes <= max_event_bytes else max_event_bytes
        self.last_event_id: str | None = None
        self.retry: int | None = None
        self._event_lines: list[int] | None = None  # (the decoders' raw path never makes it)
        self._lines = 0  # complete lines interpreted so far
        self._closed = False
        self._error: StreamProtocolError | None = None
        self._overlong: StreamProtocolError | None = None  # a partial line over the limit
        # nothing carried over between chunks (no partial line, no event begun, no BOM or CR
        # pending, no error): a chunk that is one whole block may skip the framing (feed_raw)
        self._ready = False
        # the event being built line by line (the slow path)
        self._event = b""
        self._data = bytearray()  # data lines, each followed by LF (compact: no object per line)
        self._data_line = 0  # line number of the first data line
        self._event_retry: int | None = None

    @property
    def line(self) -> int:
        """1-based number of the line being read (the next line to end)."""
        return self._lines + 1

    # --- public API ---------------------------------------------------------------------------

    @property
    def event_lines(self) -> list[int]:
        """For each event returned by the latest :meth:`feed` / :meth:`close`, the line number
        of its first ``data`` line."""
        lines = self._event_lines
        return lines if lines is not None else []

    def feed(self, data: bytes) -> list[ServerSentEvent]:
        """Add a chunk of the stream; return the events it completed, in order."""
        self._event_lines = []
        out: list[ServerSentEvent] = []
        self._run(data, out, True)
        return out

    def close(self) -> list[ServerSentEvent]:
        """End of stream: interpret a final unterminated line, then flush a pending event."""
        self._event_lines = []
        out: list[ServerSentEvent] = []
        self._run(None, out, True)
        return out

    def feed_raw(self, data: bytes) -> RawEvents:
        """Like :meth:`feed`, returning :class:`RawEvents` (the decoders' fast path)."""
        out = RawEvents()
        if self._at_start and data and data[0] != 0xEF and not (self._partial or self._closed):
            # The stream's first bytes, which cannot begin a BOM: nothing to hold back.
            self._at_start = False
            self._ready = self._error is None
        if self._ready and data.endswith(b"\n\n") and b"\r" not in data:
            # Whole blocks and nothing held from earlier chunks (what a live stream sends, one
            # event per chunk, or a short reply's whole body): straight to the block rules.
            end = len(data) - 2
            try:
                if data.find(b"\n\n") == end:  # one block
                    self._blocks_checked([data[:end]], out, False)
                elif not self._uniform(data, out):
                    self._blocks_checked(data[:end].split(b"\n\n"), out, False)
            except StreamProtocolError as exc:
                self._error = exc
                self._ready = False
                if not len(out):
                    raise
            return out
        self._run(data, out, False)
        return out

    def close_raw(self) -> RawEvents:
        """Like :meth:`close`, returning :class:`RawEvents`."""
        out = RawEvents()
        self._run(None, out, False)
        return out

    # a decoder's framer (``rxturn.wire._decoder.Framer``): the raw forms
    feed_frames = feed_raw
    close_frames = close_raw

    # --- framing ------------------------------------------------------------------------------

    def _run(self, data: bytes | None, out: Any, typed: bool) -> None:
        """Feed (or, with ``None``, close) into ``out``; on error keep the events before it and
        raise only if there are none (the next call raises it otherwise)."""
        if self._error is not None:
            raise self._error
        if data is not None and self._closed:
            raise ConfigError("SSEParser.feed() after close()")
        try:
            if data is None:
                self._finish(out, typed)
            else:
                buffer = self._take(data)
                if buffer:
                    self._interpret(buffer, out, typed)
                if self._overlong is not None:
                    raise self._overlong
        except StreamProtocolError as exc:
            self._error = exc
            if not len(out):
                raise
        finally:
            # whether the next chunk may start a block with nothing to carry over
            self._ready = not (
                self._partial
                or self._data
                or self._event
                or self._event_retry is not None
                or self._at_start
                or self._skip_lf
                or self._closed
                or self._error is not None
            )

    def _finish(self, out: Any, typed: bool) -> None:
        if self._closed:
            return
        self._closed = True
        if self._partial:
            tail = bytes(self._partial)
            self._partial.clear()
            self._lines_mode([tail], out, typed)
        if self._data:
            self._dispatch(out, typed)

    def _take(self, data: bytes) -> bytes:
        """Normalise line ends; return the buffer up to its last LF (b"" if none), keep the rest."""
        data = self._continue(data)
        if b"\r" in data:
            self._skip_lf = data[-1] == 13
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if b"\n" not in data:
            if data:
                self._partial_len += len(data)
                self._partial += data
                if self._partial_len > self.max_line_bytes:
                    self._overlong = self._too_long(self._lines + 1)
            return b""
        if self._partial:
            self._partial += data
            data = bytes(self._partial)
            self._partial.clear()
        cut = data.rfind(b"\n") + 1
        if cut == len(data):
            self._partial_len = 0
            return data
        tail = data[cut:]
        self._partial_len = len(tail)
        self._partial += tail
        if self._partial_len > self.max_line_bytes:
            # raised once the complete lines before it are interpreted
            self._overlong = self._too_long(self._lines + data.count(b"\n", 0, cut) + 1)
        return data[:cut]

    def _interpret(self, buffer: bytes, out: Any, typed: bool) -> None:
        """Interpret complete lines (``buffer`` ends with LF): blocks fast, the rest by line."""
        start = 0
        if self._data or self._event or self._event_retry is not None:
            # the first block continues an event begun in an earlier chunk
            cut = buffer.find(b"\n\n")
            if cut < 0:
                self._lines_mode(buffer[:-1].split(b"\n"), out, typed)
                return
            self._block_mode(buffer[:cut], out, typed)
            start = cut + 2
        # whole blocks up to the last blank line, then the complete lines of an event still open
        last = buffer.rfind(b"\n\n", start)
        if last < 0:
            end = start
        else:
            end = last + 2
            if typed or not self._uniform(buffer[start:end] if start else buffer[:end], out):
                self._blocks_checked(buffer[start:last].split(b"\n\n"), out, typed)
        if end < len(buffer):
            self._lines_mode(buffer[end:-1].split(b"\n"), out, typed)

    def _uniform(self, region: bytes, out: RawEvents) -> bool:
        """Take ``region`` (whole blocks, each ending in a blank line) in one go if all its
        blocks have one provider shape.

        Its lines (``split`` at LF) must be, block after block, ``data: P`` then a blank line,
        or ``event: N``, ``data: P`` then a blank line: every second (third) line is empty, and
        every line of a column starts with its field. The latter is proved by C-level work on
        the column: its first line starts with the field, and its lines joined with LF hold
        ``LF field`` once per later line (the lines hold no LF, so each match is at a line's
        start and the matches cannot overlap). For the data column, the joined column after its
        first field is split at each LF + ``data: `` instead of counted: one piece per line is
        the same proof, and the pieces are the payloads.
        """
        lines = region.split(b"\n")
        lines.pop()  # (the empty piece after the last LF)
        count = len(lines)
        limit = self._fast_limit
        if len(region) > limit and max(map(len, lines)) > limit:  # (a shorter run: no line is)
            return False
        if lines[0].startswith(b"data: "):
            blocks, odd = divmod(count, 2)
            if odd or lines[1::2].count(b"") != blocks:
                return False
            # the column's first line starts with the field (above); cut after it at every
            # ``LF field``, it falls into one piece per line only if each line starts with it,
            # and those pieces are the payloads (no slice per line)
            payloads = b"\n".join(lines[0::2])[6:].split(b"\ndata: ")
            if len(payloads) != blocks:
                return False
            out.add_run(None, payloads, self._lines, 2)
        elif lines[0].startswith(b"event: "):
            blocks, odd = divmod(count, 3)
            if odd or lines[2::3].count(b"") != blocks:
                return False
            names = lines[0::3]
            data = b"\n".join(lines[1::3])
            if not data.startswith(b"data: "):
                return False
            payloads = data[6:].split(b"\ndata: ")  # as above
            if not (
                len(payloads) == blocks and b"\n".join(names).count(b"\nevent: ") == blocks - 1
            ):
                return False
            out.add_run(names, payloads, self._lines, 3)
        else:
            return False
        self._lines += count
        return True

    def _blocks_checked(self, blocks: list[bytes], out: Any, typed: bool) -> None:
        """Events from whole blocks, each block's shape and size checked first."""
        limit = self._fast_limit
        for block in blocks:
            if len(block) <= limit:
                nl = block.find(b"\n")
                if nl < 0 and block.startswith(b"data: "):
                    self._lines += 2
                    if typed:
                        out.append(self._event_of(b"", block[6:], self._lines - 1))
                    else:
                        out.add(b"", block[6:], self._lines - 1)
                    continue
                if (
                    block.startswith(b"event: ")
                    and block.startswith(b"data: ", nl + 1)
                    and block.find(b"\n", nl + 1) < 0
                ):
                    self._lines += 3
                    if typed:
                        out.append(self._event_of(block[7:nl], block[nl + 7 :], self._lines - 1))
                    else:
                        out.add(block[7:nl], block[nl + 7 :], self._lines - 1)
                    continue
            self._block_mode(block, out, typed)

    def _block_mode(self, block: bytes, out: Any, typed: bool) -> None:
        """A block's lines, then the blank line that ends it."""
        self._lines_mode(block.split(b"\n"), out, typed)
        self._lines += 1
        self._blank(out, typed)

    def _lines_mode(self, lines: list[bytes], out: Any, typed: bool) -> None:
        """The WHATWG rules applied line by line: the general (slow) path."""
        for raw in lines:
            self._lines += 1
            number = self._lines
            if not raw:
                self._blank(out, typed)
                continue
            if len(raw) > self.max_line_bytes:
                raise self._too_long(number)
            name, colon, value = raw.partition(b":")
            if colon and value.startswith(b" "):
                value = value[1:]
            if name == b"data":
                if typed:
                    _check_utf8(value, number)
                if not self._data:
                    self._data_line = number
                self._data += value
                self._data.append(10)
                if len(self._data) > self.max_event_bytes + 1:
                    raise StreamProtocolError(
                        f"SSE event data longer than {self.max_event_bytes} bytes",
                        where=f"line {number}",
                    )
                continue
            if typed:
                _check_utf8(raw, number)
            if name == b"event":
                self._event = value
            elif name == b"id":
                if b"\0" not in value:
                    self.last_event_id = value.decode(errors="replace")
            elif name == b"retry" and value.isdigit() and len(value) <= _RETRY_DIGITS:
                self.retry = self._event_retry = int(value)
            # else: a comment (empty name) or an unknown field

    def _blank(self, out: Any, typed: bool) -> None:
        """A blank line: dispatch the event if it has data, else just reset the buffers."""
        if self._data:
            self._dispatch(out, typed)
        else:
            self._event = b""
            self._event_retry = None

    def _dispatch(self, out: Any, typed: bool) -> None:
        data = bytes(memoryview(self._data)[:-1])
        if typed:
            out.append(self._event_of(self._event, data, self._data_line, self._event_retry))
        else:
            out.add(self._event, data, self._data_line)
        self._reset_event()

    def _reset_event(self) -> None:
        self._data = bytearray()
        self._event = b""
        self._event_retry = None

    def _event_of(
        self, name: bytes, data: bytes, line: int, retry: int | None = None
    ) -> ServerSentEvent:
        try:
            text = data.decode()
        except UnicodeDecodeError as exc:
            raise _bad_utf8(exc, line) from None
        try:
            event = name.decode() or "message" if name else "message"
        except UnicodeDecodeError as exc:
            raise _bad_utf8(exc, line - 1) from None
        self._event_lines.append(line)  # pyright: ignore[reportOptionalMemberAccess] - set by feed/close
        return ServerSentEvent(event, text, self.last_event_id, retry)

    def _too_long(self, line: int) -> StreamProtocolError:
        return StreamProtocolError(
            f"SSE line longer than {self.max_line_bytes} bytes", where=f"line {line}"
        )


def _check_utf8(raw: bytes, number: int) -> None:
    try:
        raw.decode()
    except UnicodeDecodeError as exc:
        raise _bad_utf8(exc, number) from None


def _bad_utf8(exc: UnicodeDecodeError, number: int) -> StreamProtocolError:
    return StreamProtocolError(
        f"SSE line is not valid UTF-8 ({exc.reason})", where=f"line {number}"
    )
