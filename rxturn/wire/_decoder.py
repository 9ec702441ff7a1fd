"""What every wire decoder shares: ``feed`` / ``close`` and the error that waits its turn.

A decoder turns body chunks into canonical events in two steps: a *framer* (SSE or NDJSON) cuts
the bytes into payloads, then the decoder maps each payload to events. The steps around the
mapping are the same for every wire format, and they are easy to get subtly wrong, so they live
here once:

- an error is final: once raised, every later ``feed`` / ``close`` raises it again;
- a framing error (line too long, bad UTF-8) is raised at once;
- a provider error found after good events of the same chunk is *deferred*: the good events are
  returned first (observers see everything the provider sent before the failure) and the error
  is raised by the next call;
- once input is over (the terminal event; OpenAI's ``[DONE]``), more input is ignored, and
  ``close`` decodes the framer's remainder at most once.

The per-payload loop — the hot path — stays in each decoder's :meth:`FramedDecoder._decode_into`.
A chunk costs the same calls as a hand-written decoder (framer, then loop): in a live stream a
chunk is often a single event, so even a per-chunk call would be a per-event cost.
"""

from __future__ import annotations

from typing import Generic, Protocol, TypeVar

from ..errors import ProviderError, StreamProtocolError
from ..events import StreamEvent

__all__ = ["FramedDecoder", "Framer"]

_Frames = TypeVar("_Frames")
_FramesOut = TypeVar("_FramesOut", covariant=True)


class Framer(Protocol[_FramesOut]):
    """What cuts a body into payloads (SSE events, NDJSON lines) for a :class:`FramedDecoder`."""

    def feed_frames(self, data: bytes, /) -> _FramesOut:
        """A chunk in, its complete payloads out (raises ``StreamProtocolError`` on bad
        framing)."""
        ...

    def close_frames(self) -> _FramesOut:
        """The payloads still held at the end of the body."""
        ...


class FramedDecoder(Generic[_Frames]):
    """The ``feed`` / ``close`` scaffolding of a wire decoder (see the module docstring).

    Args:
        framer: what cuts the body into payloads (kept as the object: its two methods are
            looked up per call, not held as two bound-method objects per decoder).

    Subclasses implement :meth:`_decode_into` and set ``_done`` when input is over (with
    :attr:`saw_terminal` for a terminal event; OpenAI's ``[DONE]`` sets ``_done`` alone).

    Attributes:
        saw_terminal: the provider's terminal event arrived (without it the reply is truncated).
    """

    __slots__ = ("_closed", "_done", "_error", "_framer", "saw_terminal")

    def __init__(self, framer: Framer[_Frames]) -> None:
        self._framer = framer
        self._error: ProviderError | None = None
        self._done = False  # nothing more is read
        self._closed = False
        self.saw_terminal = False

    def feed(self, data: bytes) -> list[StreamEvent]:
        """Decode a chunk of the response body; return the canonical events it completed."""
        if self._error is not None:
            raise self._error
        if self._done:
            return []
        try:
            frames = self._framer.feed_frames(data)
        except StreamProtocolError as exc:
            self._error = exc  # framing errors are final too
            raise
        # as in close(), written out: a shared helper would be one more call per chunk
        out: list[StreamEvent] = []
        try:
            self._decode_into(frames, False, out)
        except ProviderError as exc:
            self._error = exc  # raised by the next call: the events before it go out first
            if not out:
                raise
        return out

    def check(self) -> None:
        """Raise the error a ``feed`` deferred behind the good events it returned, if any: a
        transport calls it after handing those events on, so the error is not left waiting for
        a next chunk that may never come. An attribute check, so it is free per chunk."""
        if self._error is not None:
            raise self._error

    def close(self) -> list[StreamEvent]:
        """End of body: decode what the framer still held (a last event without its terminator)
        and let the decoder finish; ``[]`` once input is over."""
        if self._error is not None:
            raise self._error
        if self._closed or self._done:
            return []
        self._closed = True
        try:
            frames = self._framer.close_frames()
        except StreamProtocolError as exc:
            self._error = exc  # framing errors are final too
            raise
        out: list[StreamEvent] = []
        try:
            self._decode_into(frames, True, out)
        except ProviderError as exc:
            self._error = exc  # raised by the next call: the events before it go out first
            if not out:
                raise
        return out

    def _decode_into(self, frames: _Frames, eof: bool, out: list[StreamEvent]) -> None:
        """Append the events of ``frames`` to ``out``; ``eof``: these are the body's last."""
        raise NotImplementedError
