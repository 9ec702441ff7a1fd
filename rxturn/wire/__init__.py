"""Sans-IO wire decoding: provider bytes in, canonical :mod:`rxturn.events` out.

Nothing in this package does IO or imports asyncio, aiohttp or reactivex: a transport feeds
response-body chunks to a decoder and forwards the events it returns. Layers, bottom up:

- framing: :class:`~rxturn.wire.sse.SSEParser` (WHATWG event stream) and
  :class:`~rxturn.wire.ndjson.NDJSONSplitter` (one JSON document per line);
- decoders, one per wire format, all shaped like :class:`StreamDecoder`:
  :class:`~rxturn.wire.anthropic.AnthropicDecoder` (Messages SSE),
  :class:`~rxturn.wire.openai.OpenAIDecoder` (Chat Completions SSE),
  :class:`~rxturn.wire.openai_responses.OpenAIResponsesDecoder` (Responses API SSE),
  :class:`~rxturn.wire.ollama.OllamaDecoder` (``/api/chat`` NDJSON);
- non-streaming reply parsers (``parse_*``) and :func:`parse_error_body` for HTTP error bodies.

Typical use::

    decoder = decoder_for("anthropic")
    for chunk in body_chunks:
        for event in decoder.feed(chunk):
            handle(event)
    for event in decoder.close():
        handle(event)
    if not decoder.saw_terminal:
        raise TruncatedStreamError(...)

Rules every decoder keeps:

- a typed error from :mod:`rxturn.errors` for anything malformed, saying what and where
  (``"… (line 12)"``); events decoded before the failure in the same chunk are returned first
  and the error is raised by the next ``feed`` / ``close`` (and every call after it);
- ``MessageStop`` only for the provider's real terminal event; everything after it is ignored;
- at ``close()``, a last event cut off mid-JSON by the end of the body is a truncation (no
  ``MessageStop``, ``saw_terminal`` false), not a JSON error.
"""

from __future__ import annotations

import re
from typing import Protocol, runtime_checkable

from .._arguments import shown
from ..errors import ConfigError, StreamProtocolError
from ..events import StreamEvent
from ._errors import parse_error_body
from .anthropic import AnthropicDecoder, parse_anthropic_message
from .ndjson import NDJSONSplitter
from .ollama import OllamaDecoder, parse_ollama_chat
from .openai import OpenAIDecoder, parse_openai_completion
from .openai_responses import OpenAIResponsesDecoder, parse_openai_response
from .sse import ServerSentEvent, SSEParser

__all__ = [
    "FORMATS",
    "AnthropicDecoder",
    "NDJSONSplitter",
    "OllamaDecoder",
    "OpenAIDecoder",
    "OpenAIResponsesDecoder",
    "SSEParser",
    "ServerSentEvent",
    "StreamDecoder",
    "decoder_for",
    "parse_anthropic_message",
    "parse_error_body",
    "parse_ollama_chat",
    "parse_openai_completion",
    "parse_openai_response",
    "sniff_format",
]

#: The wire formats rxturn decodes.
FORMATS = ("anthropic", "openai", "openai-responses", "ollama")


@runtime_checkable
class StreamDecoder(Protocol):
    """What every wire decoder looks like: fed body chunks, returns canonical events."""

    @property
    def saw_terminal(self) -> bool:
        """Whether the provider's terminal event arrived (else the stream is truncated)."""
        ...

    def feed(self, data: bytes) -> list[StreamEvent]:
        """Decode a chunk; return the events it completed (raises typed errors)."""
        ...

    def close(self) -> list[StreamEvent]:
        """End of body; return any events still pending."""
        ...

    def check(self) -> None:
        """Raise the error a ``feed`` deferred behind the good events it returned, if any."""
        ...


_DECODERS: dict[
    str,
    type[AnthropicDecoder]
    | type[OpenAIDecoder]
    | type[OpenAIResponsesDecoder]
    | type[OllamaDecoder],
] = {
    "anthropic": AnthropicDecoder,
    "openai": OpenAIDecoder,
    "openai-responses": OpenAIResponsesDecoder,
    "ollama": OllamaDecoder,
}


def decoder_for(
    fmt: str, *, max_line_bytes: int = 1 << 20, max_event_bytes: int = 1 << 20
) -> StreamDecoder:
    """A fresh decoder for wire format ``fmt`` (one of :data:`FORMATS`).

    Raises:
        ConfigError: unknown format.

    Examples:
        >>> decoder_for("openai").saw_terminal
        False
    """
    # (callers may be untyped: a list is no key of the table, a TypeError)
    cls = _DECODERS.get(fmt) if isinstance(fmt, str) else None  # pyright: ignore[reportUnnecessaryIsInstance]
    if cls is None:
        raise ConfigError(
            f"unknown stream format {shown(fmt, 100)} (expected one of {', '.join(FORMATS)})"
        )
    return cls(max_line_bytes=max_line_bytes, max_event_bytes=max_event_bytes)


# Markers, earliest match wins. Anthropic streams open with ``event: message_start`` (or an
# ``error`` event); OpenAI chunks are ``data:`` lines of ``chat.completion.chunk`` objects;
# Responses events are typed ``response.*`` (their ``event:`` lines name them too).
_ANTHROPIC = re.compile(
    rb'^event:(?!\s*response\.)|"type"\s*:\s*"(?:message_start|content_block_\w+|message_delta|message_stop|ping)"',
    re.MULTILINE,
)
_RESPONSES = re.compile(rb'^event:\s*response\.|"type"\s*:\s*"response\.', re.MULTILINE)
_OPENAI = re.compile(
    rb'"object"\s*:\s*"chat\.completion|"choices"\s*:|^data:\s*\[DONE\]', re.MULTILINE
)
_SSE_LINE = re.compile(rb"^(?:data|event|id|retry)?:", re.MULTILINE)


def sniff_format(head: bytes) -> str:
    """Tell which wire format a stream is in from its first bytes (a few KiB are plenty).

    A body whose first non-blank byte is ``{`` is Ollama NDJSON; an SSE stream is Anthropic,
    OpenAI chat or OpenAI Responses by the first marker of any of them that appears.

    Raises:
        StreamProtocolError: the bytes match no known format.

    Examples:
        >>> sniff_format(b'event: message_start\\ndata: {"type":"message_start"}')
        'anthropic'
        >>> sniff_format(b'{"model":"llama3","message":{"content":"Hi"},"done":false}\\n')
        'ollama'
    """
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if text.startswith(b"{"):
        return "ollama"
    if _SSE_LINE.match(text):
        found = [
            (match.start(), name)
            for name, pattern in (
                ("anthropic", _ANTHROPIC),
                ("openai-responses", _RESPONSES),
                ("openai", _OPENAI),
            )
            if (match := pattern.search(text)) is not None
        ]
        if found:
            return min(found)[1]
    raise StreamProtocolError(
        "cannot tell the stream format (expected Anthropic, OpenAI or OpenAI Responses SSE, "
        "or Ollama NDJSON)",
        where="line 1",
    )
