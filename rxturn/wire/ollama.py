"""Ollama ``/api/chat``: streaming (NDJSON) decoder and non-streaming reply parser.

Theory of operation
-------------------
Ollama streams one JSON object per line (:mod:`rxturn.wire.ndjson`)::

    {"model": "m", "created_at": "…", "message": {"role": "assistant", "content": "Hel",
     "thinking": "…", "tool_calls": [{"function": {"name": "f", "arguments": {…}}}]},
     "done": false}
    …
    {"model": "m", "created_at": "…", "message": {"role": "assistant", "content": ""},
     "done": true, "done_reason": "stop", "prompt_eval_count": 26, "eval_count": 290}

It has no lanes, so the decoder builds them: lane **0** text, lane **1** thinking, lane
**2 + n** the n-th tool call. Tool calls arrive whole (arguments already a JSON object), so each
becomes ``PartStart(tool_call)`` + one ``Delta(tool_json)`` with the arguments re-encoded +
``PartStop`` at once; open text / thinking lanes are closed first so the message keeps the order
the model produced. The first line gives ``MessageStart`` (id ``"ollama-<created_at>"``, Ollama has
no message id); the ``done`` line closes the open lanes and gives ``MessageDelta`` (stop reason
from ``done_reason``, promoted to ``tool_call`` when tool calls were made, since Ollama says
``stop`` then; usage from ``prompt_eval_count`` / ``eval_count``, ``None`` when absent or zero)
and ``MessageStop``. Lines after ``done`` are ignored. A line ``{"error": "…"}`` raises
:class:`~rxturn.errors.ProviderStreamError`; a stream without a ``done`` line is truncated (a last
line cut off mid-JSON by the end of the body included). As with every decoder, events decoded
before a failure in the same chunk are returned first; the error is raised by the next call.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..errors import StreamProtocolError
from ..events import (
    Delta,
    MessageDelta,
    MessageStart,
    MessageStop,
    PartStart,
    PartStop,
    StreamEvent,
)
from ..messages import Message, StopReason, TextPart, ToolCallPart, Usage
from ._decoder import FramedDecoder
from ._errors import (
    JSON_ERRORS,
    MAX_INDEX,
    OUT_OF_RANGE,
    bad_index,
    bad_json,
    error_from_json,
    missing_field,
    tool_arguments,
)
from ._usage import checked_count
from .ndjson import NDJSONSplitter

__all__ = ["OllamaDecoder", "parse_ollama_chat"]

TEXT_LANE = 0
THINKING_LANE = 1
FIRST_TOOL_LANE = 2


class _Function(msgspec.Struct, gc=False):
    name: str = ""
    arguments: Any = None
    index: int | None = None  # newer servers number the calls; informative, but checked


class _ToolCall(msgspec.Struct, gc=False):
    function: _Function
    id: str | None = None


class _Message(msgspec.Struct, gc=False):
    content: str | None = None
    thinking: str | None = None
    tool_calls: list[_ToolCall] | None = None


class _Line(msgspec.Struct, gc=False):
    model: str = ""
    created_at: str = ""
    message: _Message | None = None
    done: bool | None = None  # None: not sent (a non-streaming body of a compatible server)
    done_reason: str | None = None
    prompt_eval_count: int | None = None
    eval_count: int | None = None
    error: Any = None


_decoder = msgspec.json.Decoder(_Line)
_encoder = msgspec.json.Encoder()
_STOP = MessageStop()


def _message_id(created_at: str) -> str:
    return f"ollama-{created_at}" if created_at else ""


def _usage(line: _Line, where: str | None = None) -> Usage | None:
    inp = checked_count(line.prompt_eval_count, "prompt_eval_count", "Ollama", where) or 0
    out = checked_count(line.eval_count, "eval_count", "Ollama", where) or 0
    return Usage(input_tokens=inp, output_tokens=out) if inp or out else None


def _stop(done_reason: str | None, tool_calls: bool) -> str | None:
    stop = StopReason.parse(done_reason)
    if tool_calls and stop in (None, StopReason.END_TURN):
        return StopReason.TOOL_CALL
    return stop or done_reason


def _arguments_json(arguments: Any) -> str:
    """Tool arguments as JSON text: objects re-encoded, a string taken as already JSON."""
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return arguments
    return _encoder.encode(arguments).decode()


class OllamaDecoder(FramedDecoder[list[bytes]]):
    """Ollama ``/api/chat`` NDJSON bytes → canonical :data:`~rxturn.events.StreamEvent` lists.

    Args:
        max_line_bytes: NDJSON line limit.

    Attributes:
        saw_terminal: the ``done`` line arrived (without it the reply is truncated).

    Raises:
        StreamProtocolError: bad framing, UTF-8 or JSON (``where="line N"``).
        ProviderStreamError: an ``{"error": …}`` line.

    Examples:
        >>> decoder = OllamaDecoder()
        >>> decoder.feed(b'{"model":"m","created_at":"t","message":{"content":"Hi"},'
        ...              b'"done":false}\\n')
        [MessageStart(id='ollama-t', model='m'), PartStart(index=0, kind='text', id='', name=''), \
Delta(index=0, text='Hi', kind='text')]
    """

    __slots__ = ("_lines", "_started", "_text_open", "_thinking_open", "_tools")

    def __init__(self, *, max_line_bytes: int = 1 << 20, max_event_bytes: int = 1 << 20) -> None:
        del max_event_bytes  # NDJSON has no multi-line events; accepted for a uniform signature
        lines = NDJSONSplitter(max_line_bytes)
        super().__init__(lines)
        self._lines = lines
        self._started = False
        self._text_open = False
        self._thinking_open = False
        self._tools = 0

    def _decode_into(self, frames: list[bytes], eof: bool, out: list[StreamEvent]) -> None:
        # the splitter numbers the lines of its latest feed / close: these very frames
        for raw, number in zip(frames, self._lines.line_numbers, strict=True):
            self._on_line(raw, number, out, eof)
            if self.saw_terminal:
                break

    def _on_line(self, raw: bytes, number: int, out: list[StreamEvent], eof: bool) -> None:
        try:
            line = _decoder.decode(raw)
        except JSON_ERRORS as exc:
            if eof and type(exc) is msgspec.DecodeError:
                return  # the last line cut off by the end of the body: a truncation
            raise bad_json("NDJSON line", exc, number) from None
        if line.error is not None:
            raise error_from_json(line.error)
        if not self._started:
            self._started = True
            out.append(MessageStart(_message_id(line.created_at), line.model))
        message = line.message
        if message is not None:
            if message.thinking:
                if not self._thinking_open:
                    self._thinking_open = True
                    out.append(PartStart(THINKING_LANE, "thinking"))
                out.append(Delta(THINKING_LANE, message.thinking, "thinking"))
            if message.content:
                if self._thinking_open:
                    self._thinking_open = False
                    out.append(PartStop(THINKING_LANE))
                if not self._text_open:
                    self._text_open = True
                    out.append(PartStart(TEXT_LANE, "text"))
                out.append(Delta(TEXT_LANE, message.content, "text"))
            if message.tool_calls:
                last = -1
                for offset, call in enumerate(message.tool_calls):
                    if not call.function.name:
                        raise StreamProtocolError(
                            f"tool call {self._tools + offset} has no function name",
                            where=f"line {number}",
                        )
                    index = call.function.index
                    if index is not None:
                        if not 0 <= index <= MAX_INDEX or index <= last:
                            in_range = 0 <= index <= MAX_INDEX
                            rule = "is out of order" if in_range else OUT_OF_RANGE
                            raise bad_index("tool call index", index, rule, f"line {number}")
                        last = index
                self._close_content(out)
                for call in message.tool_calls:
                    self._on_tool_call(call, out)
        if line.done:
            self._close_content(out)
            out.append(
                MessageDelta(
                    _stop(line.done_reason, self._tools > 0), _usage(line, f"line {number}")
                )
            )
            out.append(_STOP)
            self.saw_terminal = self._done = True  # lines after it are ignored

    def _on_tool_call(self, call: _ToolCall, out: list[StreamEvent]) -> None:
        position = self._tools
        self._tools += 1
        lane = FIRST_TOOL_LANE + position
        out.append(PartStart(lane, "tool_call", call.id or f"call_{position}", call.function.name))
        arguments = _arguments_json(call.function.arguments)
        if arguments:
            out.append(Delta(lane, arguments, "tool_json"))
        out.append(PartStop(lane))

    def _close_content(self, out: list[StreamEvent]) -> None:
        if self._thinking_open:
            self._thinking_open = False
            out.append(PartStop(THINKING_LANE))
        if self._text_open:
            self._text_open = False
            out.append(PartStop(TEXT_LANE))


def parse_ollama_chat(body: bytes) -> Message:
    """Parse a non-streaming ``/api/chat`` reply into a :class:`~rxturn.messages.Message`.

    Content (if non-empty) as a text part, then the tool calls (ids ``call_<n>`` when Ollama
    gives none; arguments kept as the object Ollama sent, a JSON string parsed, missing → ``{}``).
    Stop reason from ``done_reason`` (default ``end_turn``; ``tool_call`` when tools were called);
    usage from ``prompt_eval_count`` / ``eval_count``, ``None`` when absent or zero.

    Raises:
        StreamProtocolError: the body is not JSON or not shaped like a chat reply, or says
            ``"done": false`` (one line of a stream, not a finished reply).
        InvalidToolInputError: a tool call's string ``arguments`` is not valid JSON.
        ProviderStreamError: the body is ``{"error": …}``.
    """
    try:
        reply = _decoder.decode(body)
    except JSON_ERRORS as exc:
        raise bad_json("Ollama chat body", exc) from None
    if reply.error is not None:
        raise error_from_json(reply.error)
    if reply.message is None:
        raise missing_field("Ollama chat body", "message")
    if reply.done is False:
        # one line of a stream, not the whole reply: served, it was a cut reply as a whole one
        raise StreamProtocolError("Ollama chat body is not a finished reply (done is false)")
    parts: list[TextPart | ToolCallPart] = []
    calls = 0
    if reply.message.content:
        parts.append(TextPart(reply.message.content))
    for position, call in enumerate(reply.message.tool_calls or ()):
        arguments: Any = call.function.arguments
        if arguments is None or isinstance(arguments, str):  # else the object Ollama sent
            arguments = tool_arguments(arguments, position, call.function.name)
        parts.append(ToolCallPart(call.id or f"call_{position}", call.function.name, arguments))
        calls += 1
    stop = _stop(reply.done_reason, calls > 0)
    return Message(
        id=_message_id(reply.created_at),
        model=reply.model,
        content=tuple(parts),
        stop_reason=StopReason.parse(stop) or StopReason.END_TURN,
        usage=_usage(reply),
    )
