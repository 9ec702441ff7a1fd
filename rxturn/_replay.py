"""Replay a recorded provider stream: bytes or a file in, canonical events (or a message) out.

A recorded ``.sse`` / ``.ndjson`` body is the cheapest faithful stand-in for a live reply, so
:func:`replay` turns one into exactly what a client's ``stream()`` would emit: the same decoders
(:mod:`rxturn.wire`), the same events, the same typed errors. :func:`replay_message` folds it
(:mod:`rxturn.fold`) into the reply, which is what ``rxturn replay`` prints (the Message JSON of
docs/behaviour.md §6).

Failures, all typed (:mod:`rxturn.errors`), each saying what and where:

- missing or unreadable file → :class:`~rxturn.errors.ConfigError` (caller misuse, not a stream
  problem) — reported at subscribe time, because the file is read then;
- empty (or blank) input → :class:`~rxturn.errors.StreamProtocolError` ``empty stream``;
- framing, UTF-8, JSON, size limits, in-stream error events → whatever the decoder raises (its
  ``where`` names the line);
- no terminal event → :class:`~rxturn.errors.TruncatedStreamError` after every event decoded;
- :func:`replay_message` also says where a fold error (bad tool JSON, events out of order) or an
  in-stream error event happened: the line of the event that caused it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final, cast

import reactivex
from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, Disposable, SerialDisposable
from reactivex.scheduler import CurrentThreadScheduler, ImmediateScheduler

from ._arguments import check_bool, described, shown
from ._media import describe_bound
from .errors import ConfigError, RxturnError, StreamProtocolError, TruncatedStreamError
from .events import EventBatch, MessageStop, StreamEvent
from .fold import fold, fold_batch, initial_state
from .messages import Message
from .wire import FORMATS, StreamDecoder, decoder_for, sniff_format

__all__ = ["Source", "replay", "replay_batches", "replay_message"]

#: What can be replayed: the bytes themselves, or a path (``str`` is a path, never content).
Source = bytes | bytearray | memoryview | str | os.PathLike[str]

_CHUNK: Final = 64 * 1024  # feed size: large enough that per-chunk overhead vanishes
_SNIFF: Final = 64 * 1024  # how much of the head format sniffing may look at
_LINE: Final = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")  # CR, LF and CRLF, as SSE does
_LINE_END: Final = re.compile(rb"\r\n|\r|\n")


def replay(source: Source, format: str = "auto") -> Observable[StreamEvent]:
    """A cold Observable of the events recorded in ``source``.

    Every subscription reads (a path is read at subscribe time) and decodes from scratch,
    feeding the decoder 64 KiB at a time, and emits each event as it is decoded. It completes
    after the stream's ``MessageStop``; a stream without one ends in
    :class:`~rxturn.errors.TruncatedStreamError` once every decoded event was emitted. Emission
    runs on the subscribe-time scheduler (default, and in place of the ``ImmediateScheduler``:
    the current-thread trampoline), one scheduled action per 64 KiB of input, so on the asyncio
    scheduler the loop runs other work between chunks; it stops as soon as the subscription is
    disposed.

    Args:
        source: the recorded body as bytes, or the path of a file holding it.
        format: ``"anthropic"``, ``"openai"``, ``"openai-responses"``, ``"ollama"``, or
            ``"auto"`` to sniff it.

    Returns:
        ``Observable[StreamEvent]``. The events carry thinking (signatures and redacted data
        included) whatever the fold later keeps: ``keep_thinking`` is the fold's choice.

    Raises:
        ConfigError: ``format`` is not one of the above, or ``source`` is neither bytes nor a
            path (raised immediately).

    Examples:
        >>> from reactivex import operators as ops
        >>> from rxturn.fold import INITIAL_STATE, fold
        >>> body = (b'data: {"id":"c1","object":"chat.completion.chunk","model":"m",'
        ...         b'"choices":[{"index":0,"delta":{"content":"Hi"},'
        ...         b'"finish_reason":"stop"}]}\\n\\ndata: [DONE]\\n\\n')
        >>> replay(body).pipe(ops.scan(fold, INITIAL_STATE), ops.last()).run().message().text
        'Hi'
    """
    return _replay(source, format, batched=False, where="replay")


def replay_batches(source: Source, format: str = "auto") -> Observable[EventBatch]:
    """:func:`replay`, one item per 64 KiB of input: the list of events it decoded to.

    The same events, errors and disposal as :func:`replay`, batched the way a client's
    ``stream_batches`` batches a live body by network chunk (empty batches are skipped). Fold it
    with :func:`rxturn.fold.fold_batch`; this is the cheapest way to run a recorded stream
    through an Rx pipeline (benchmarks/README.md).

    Examples:
        >>> from reactivex import operators as ops
        >>> from rxturn.fold import INITIAL_STATE, fold_batch
        >>> body = (b'data: {"id":"c1","object":"chat.completion.chunk","model":"m",'
        ...         b'"choices":[{"index":0,"delta":{"content":"Hi"},'
        ...         b'"finish_reason":"stop"}]}\\n\\ndata: [DONE]\\n\\n')
        >>> replay_batches(body).pipe(ops.scan(fold_batch, INITIAL_STATE), ops.last()).run(
        ...     ).message().text
        'Hi'
    """
    return _replay(source, format, batched=True, where="replay_batches")


def _replay(source: Source, format: str, *, batched: bool, where: str) -> Observable[Any]:
    _check_source(source, where)
    _check_format(format)

    def subscribe(
        observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        run = _Run(source, format, batched, observer)
        # (the ImmediateScheduler runs each chunk's step inside the step before it: a long
        # recording recursed past Python's limit; the trampoline runs them one after another,
        # as synchronously)
        chosen = (
            scheduler
            if scheduler is not None and not isinstance(scheduler, ImmediateScheduler)
            else CurrentThreadScheduler.singleton()
        )
        run.next.disposable = chosen.schedule(run.step)
        return CompositeDisposable(run.next, Disposable(run.dispose))

    return reactivex.create(subscribe)


class _Run:
    """One subscription of a replay: each scheduled step decodes one 64 KiB chunk (the first
    step reads the source), emits what it decoded, and schedules the next step. On the asyncio
    scheduler the loop thus runs other work between chunks (a 500 MB file does not hold it
    for seconds), and a dispose from anywhere lands between two chunks; on the default
    trampoline the whole replay still runs within ``subscribe``."""

    __slots__ = (
        "batched",
        "data",
        "decoder",
        "disposed",
        "emitted",
        "format",
        "last",
        "next",
        "observer",
        "offset",
        "source",
    )

    def __init__(
        self, source: Source, format: str, batched: bool, observer: abc.ObserverBase[Any]
    ) -> None:
        self.source: Source | None = source
        self.format = format
        self.batched = batched
        self.observer = observer
        self.data = b""
        self.decoder: StreamDecoder | None = None
        self.offset = 0
        self.emitted = 0
        self.last: StreamEvent | None = None
        self.disposed = False
        self.next = SerialDisposable()

    def dispose(self) -> None:
        self.disposed = True

    def step(self, scheduler: abc.SchedulerBase, _: Any = None) -> None:
        if self.disposed:
            return
        try:
            decoder = self.decoder
            if decoder is None:
                assert self.source is not None
                self.data = _load(self.source)
                self.source = None  # the bytes are read: let the caller's object go
                decoder = self.decoder = _open(self.data, self.format)
            data = self.data
            end = self.offset >= len(data)
            if end:
                batch = decoder.close()
            else:
                batch = decoder.feed(data[self.offset : self.offset + _CHUNK])
                self.offset += _CHUNK
            if batch and not self._emit(batch):
                return
            if not end:
                self.next.disposable = scheduler.schedule(self.step)
                return
            # decoders emit nothing after MessageStop: it is the last event or absent
            if type(self.last) is not MessageStop:
                raise TruncatedStreamError(self.emitted, where=f"line {_last_line(data)}")
        except Exception as exc:
            if not self.disposed:
                self.observer.on_error(exc)
            return
        self.observer.on_completed()

    def _emit(self, batch: list[StreamEvent]) -> bool:
        """Hand ``batch`` on (whole, or event by event); False once disposed."""
        if self.batched:
            self.observer.on_next(batch)
        else:
            on_next = self.observer.on_next
            for event in batch:
                if self.disposed:
                    return False
                on_next(event)
        self.emitted += len(batch)
        self.last = batch[-1]
        return not self.disposed


def replay_message(source: Source, format: str = "auto", *, keep_thinking: bool = False) -> Message:
    """Decode and fold ``source`` into the assistant message (docs/behaviour.md §6), synchronously.

    With ``keep_thinking`` the message keeps thinking blocks (text and signature) and redacted
    thinking in block order, as an agent loop with extended thinking needs
    (:func:`rxturn.fold.initial_state`).

    The bytes are decoded 64 KiB at a time. Only if that fails is the stream decoded again one
    line at a time, so that an error raised by the fold (invalid tool JSON, events out of order)
    can name the line of the event that caused it; decoding does not depend on chunking, so
    the second pass meets the same error.

    Raises:
        ConfigError: unknown ``format``, ``source`` neither bytes nor a path, ``keep_thinking``
            not a bool, or the file cannot be read, or it holds more than
            :data:`MAX_STREAM_BYTES` (512 MiB).
        StreamProtocolError: empty, malformed, truncated (:class:`TruncatedStreamError`) or
            carrying invalid tool JSON (:class:`InvalidToolInputError`).
        ProviderError: an in-stream error event (rate limit, overloaded, other).
    """
    _check_source(source, "replay_message")
    _check_format(format)
    check_bool(keep_thinking, "replay_message(keep_thinking=...)")
    data = _load(source)
    try:
        state = initial_state(keep_thinking=keep_thinking)
        for batch in _batches(_open(data, format), data):
            state = fold_batch(state, batch)
        if state.completed:
            return state.message()
    except RxturnError:
        pass
    return _replay_located(data, format, keep_thinking)


def _replay_located(data: bytes, format: str, keep_thinking: bool) -> Message:
    """``replay_message`` one line at a time: slower, but every error says where."""
    decoder = _open(data, format)
    state = initial_state(keep_thinking=keep_thinking)
    emitted = 0
    line = 0  # the line just fed
    content_line = 1  # the last non-blank line fed: where an SSE event's data sits
    try:
        for match in _LINE.finditer(data):
            piece = match.group()
            line += 1
            if piece.strip():
                content_line = line
            for event in decoder.feed(piece):
                state = fold(state, event)
                emitted += 1
        for event in decoder.close():
            state = fold(state, event)
            emitted += 1
    except RxturnError as exc:
        raise _located(exc, f"line {content_line}") from None
    if not state.completed:
        raise TruncatedStreamError(emitted, where=f"line {_last_line(data)}")
    try:
        return state.message()
    except RxturnError as exc:  # pragma: no cover - MessageStop already checked the open lanes
        raise _located(exc, f"line {content_line}") from None


# -- helpers -------------------------------------------------------------------------------------


def _check_source(source: object, where: str) -> None:
    """``source`` is bytes or a path (a ``str``, or an ``os.PathLike`` of one) that is not empty
    and holds no NUL: anything else failed inside the subscription with a bare TypeError or
    ValueError, and ``""`` was read as the current directory."""
    if isinstance(source, bytes | bytearray | memoryview):
        return
    got = described(source)
    path: object = source
    if isinstance(path, os.PathLike):
        path = os.fspath(cast("os.PathLike[str]", path))
    if not isinstance(path, str):
        raise ConfigError(
            f"{where}: the source must be the recorded bytes or a file's path (a str or a "
            f"Path), got {got}"
        )
    if not path:
        raise ConfigError(f"{where}: the source's path is empty")
    if isinstance(source, str) and ("\n" in path or "\r" in path):
        # ``replay(path.read_text())``: the stream itself, which was read as a file name and
        # quoted whole, over many lines, in the error ('File name too long')
        raise ConfigError(
            f"{where}: the source is a str of {len(path)} characters with line breaks, the "
            "stream itself rather than a file's path: pass it as bytes (text.encode())"
        )
    if "\0" in path:
        raise ConfigError(f"{where}: the source's path holds a NUL character ({shown(path)})")


def _check_format(fmt: str) -> None:
    if fmt != "auto" and fmt not in FORMATS:
        raise ConfigError(
            f"unknown stream format {shown(fmt, 100)} (expected auto, {', '.join(FORMATS)})"
        )


#: The most a replay reads from a file (bytes). A recorded stream is kilobytes to megabytes;
#: a path with no end (``/dev/zero``) or a wrong, huge file must not take the machine's memory.
MAX_STREAM_BYTES = 512 * 1024 * 1024


def too_large(where: str) -> ConfigError:
    """The error for a stream past :data:`MAX_STREAM_BYTES` (``where``: the path, or stdin)."""
    return ConfigError(
        f"larger than {describe_bound(MAX_STREAM_BYTES)}, the most a replay reads ({where})"
    )


def _load(source: Source) -> bytes:
    if isinstance(source, bytes | bytearray | memoryview):
        return bytes(source)
    path = os.fspath(source)
    try:
        with Path(path).open("rb") as file:
            data = file.read(MAX_STREAM_BYTES + 1)
        if len(data) > MAX_STREAM_BYTES:
            raise too_large(str(path))
        return data
    except FileNotFoundError:
        raise ConfigError(f"no such file ({path})") from None
    except IsADirectoryError:
        raise ConfigError(f"is a directory, not a stream file ({path})") from None
    except OSError as exc:
        raise ConfigError(f"cannot read file: {exc.strerror or exc} ({path})") from None
    except UnicodeEncodeError:  # a lone surrogate no file name can hold (os.fsencode refuses)
        raise ConfigError(f"no file name the file system can encode ({shown(path)})") from None


def _open(data: bytes, fmt: str) -> StreamDecoder:
    if not data or data.isspace():  # isspace, not strip: no copy of a 100 MB body
        raise StreamProtocolError("empty stream", where="line 1")
    return decoder_for(sniff_format(data[:_SNIFF]) if fmt == "auto" else fmt)


def _batches(decoder: StreamDecoder, data: bytes) -> Iterator[list[StreamEvent]]:
    """The decoder's output, 64 KiB of input at a time, then its flush at end of input."""
    for offset in range(0, len(data), _CHUNK):
        yield decoder.feed(data[offset : offset + _CHUNK])
    yield decoder.close()


def _last_line(data: bytes) -> int:
    """The number of the last line of ``data`` (CR, LF and CRLF all end a line)."""
    ends = len(_LINE_END.findall(data))
    return ends if data.endswith((b"\n", b"\r")) else ends + 1


def _located(exc: RxturnError, where: str) -> RxturnError:
    """Say where a stream went wrong when the error does not already say so.

    A fold error (the fold sees events, not lines) gets ``where`` like a decoder error has it;
    any other error (an in-stream error event) keeps its message and carries the place as a
    PEP 678 note, which tracebacks show and ``rxturn replay`` prints.
    """
    if isinstance(exc, StreamProtocolError):
        if exc.where is None:
            exc.where = where
            exc.message = f"{exc.message} ({where})"
            exc.args = (exc.message,)
    else:
        exc.add_note(where)
    return exc
