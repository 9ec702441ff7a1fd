"""Anthropic Messages API: streaming decoder and non-streaming reply parser.

Theory of operation
-------------------
The stream is SSE (:mod:`rxturn.wire.sse`); every event's data is one JSON object tagged by its
``type``, decoded by one module-level ``msgspec`` decoder over a tagged union of wire Structs
(unknown fields allowed: the API adds fields all the time). The decoder then maps wire events to
canonical :mod:`rxturn.events` (docs/behaviour.md §1) as follows:

==========================  ========================================================
wire                        canonical
==========================  ========================================================
``message_start``           ``MessageStart(id, model)`` (first only); its usage latched
                            and, when not all zero, reported at once as
                            ``MessageDelta(None, usage)``
``content_block_start``     ``PartStart``: ``text`` → text (+ its own text as a
                            delta), ``tool_use`` → tool_call(id,
                            name) (a non-empty ``input`` is the call's input
                            unless ``input_json_delta`` events follow, as in the
                            SDK), ``thinking`` → thinking
                            (+ the block's own text and signature as deltas),
                            ``redacted_thinking`` → thinking + one empty thinking Delta
                            + a ``redacted_thinking`` Delta carrying its ``data``;
                            any other block type → an *ignored* lane, nothing emitted
``content_block_delta``     ``text_delta`` / ``input_json_delta`` / ``thinking_delta`` →
                            ``Delta`` of kind text / tool_json / thinking, only into a
                            lane of the same kind, empty fragments dropped;
                            ``signature_delta`` → ``Delta`` of kind signature into a
                            thinking lane; others ignored
``content_block_stop``      ``PartStop(index)`` (nothing for an ignored lane)
``message_delta``           ``MessageDelta(stop_reason, usage)``
``message_stop``            ``MessageStop``; everything after it is ignored
``ping`` / unknown types    nothing
``error``                   :class:`~rxturn.errors.RateLimitError` /
                            :class:`~rxturn.errors.OverloadedError` /
                            :class:`~rxturn.errors.ProviderStreamError`
==========================  ========================================================

Lanes are tracked per block index, so a delta for a block the client does not model (server tool
use, web search results, compaction, a fallback marker…) can never land in a client lane. A block
still open at ``message_stop`` (a tool call cut by ``max_tokens``) is left open: the fold keeps its
partial input. Usage: each counter of ``message_delta.usage`` wins where present, else the
``message_start`` value stands (the SDK's own rule; counters are cumulative); ``None`` when both
are zero. The provider bills the input tokens as soon as it sends ``message_start``, so that
usage is also reported right away, in a ``MessageDelta`` with no stop reason: an attempt that
fails before ``message_delta`` (a dropped connection, a stall, an error event) still has its
usage on record for the audit's billed total. The fold takes it like any ``MessageDelta`` (its
usage is replaced by the final one), so a reply's message is what it would be without it; a
stream with no ``message_delta`` at all keeps ``message_start``'s usage, as the SDK does.

Errors surface from :meth:`AnthropicDecoder.feed`. Events decoded before the failure in the same
chunk are returned first and the error is raised by the next ``feed`` / ``close`` call, so nothing
the provider sent before the failure is lost to observers. A last event cut off mid-JSON by the
end of the body is a truncation (no ``MessageStop``), not a JSON error. Deltas and stops for a
block that is not open, a second ``content_block_start`` for an open block, and content events
before ``message_start`` are protocol errors: a fold could only guess what they mean.
"""

from __future__ import annotations

from functools import partial
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
from ..messages import (
    ContentPart,
    Message,
    RedactedThinkingPart,
    StopReason,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)
from ._decoder import FramedDecoder
from ._errors import (
    JSON_ERRORS,
    MAX_INDEX,
    OUT_OF_RANGE,
    bad_index,
    bad_json,
    missing_field,
    stream_error,
)
from ._usage import anthropic_usage, anthropic_usage_of, merge_anthropic_delta, usage_object
from .sse import RawEvents, SSEParser

__all__ = ["AnthropicDecoder", "parse_anthropic_message"]


# --- wire Structs (mirror the provider JSON; unknown fields are ignored by msgspec) -----------


class _MessageInfo(msgspec.Struct, gc=False):
    id: str = ""
    model: str = ""
    usage: object = None  # the usage object as sent: folded and mapped by ._usage


class _TextBlock(msgspec.Struct, gc=False, tag="text"):
    text: str = ""


class _ToolUseBlock(msgspec.Struct, gc=False, tag="tool_use"):
    id: str
    name: str
    input: msgspec.Raw = msgspec.Raw(b"{}")


class _ThinkingBlock(msgspec.Struct, gc=False, tag="thinking"):
    thinking: str = ""
    signature: str | None = None


class _RedactedThinkingBlock(msgspec.Struct, gc=False, tag="redacted_thinking"):
    data: str = ""


class _TextDelta(msgspec.Struct, gc=False, tag="text_delta"):
    text: str


class _InputJsonDelta(msgspec.Struct, gc=False, tag="input_json_delta"):
    partial_json: str


class _ThinkingDelta(msgspec.Struct, gc=False, tag="thinking_delta"):
    thinking: str


class _SignatureDelta(msgspec.Struct, gc=False, tag="signature_delta"):
    signature: str = ""


class _CitationsDelta(msgspec.Struct, gc=False, tag="citations_delta"):
    pass


class _StopInfo(msgspec.Struct, gc=False):
    stop_reason: str | None = None


class _ErrorInfo(msgspec.Struct, gc=False):
    type: str | None = None
    message: str | None = None


class _MessageStartEvent(msgspec.Struct, gc=False, tag="message_start"):
    message: _MessageInfo


class _BlockStartEvent(msgspec.Struct, gc=False, tag="content_block_start"):
    content_block: _TextBlock | _ToolUseBlock | _ThinkingBlock | _RedactedThinkingBlock
    index: int = 0


class _BlockDeltaEvent(msgspec.Struct, gc=False, tag="content_block_delta"):
    delta: _TextDelta | _InputJsonDelta | _ThinkingDelta | _SignatureDelta | _CitationsDelta
    index: int = 0


class _BlockStopEvent(msgspec.Struct, gc=False, tag="content_block_stop"):
    index: int = 0


class _MessageDeltaEvent(msgspec.Struct, gc=False, tag="message_delta"):
    delta: _StopInfo = msgspec.field(default_factory=_StopInfo)
    usage: object = None


class _MessageStopEvent(msgspec.Struct, gc=False, tag="message_stop"):
    pass


class _PingEvent(msgspec.Struct, gc=False, tag="ping"):
    pass


class _ErrorEvent(msgspec.Struct, gc=False, tag="error"):
    error: _ErrorInfo = msgspec.field(default_factory=_ErrorInfo)


_WireEvent = (
    _BlockDeltaEvent
    | _BlockStartEvent
    | _BlockStopEvent
    | _MessageStartEvent
    | _MessageDeltaEvent
    | _MessageStopEvent
    | _PingEvent
    | _ErrorEvent
)


class _TypeOnly(msgspec.Struct, gc=False):
    type: str = ""


class _LooseEvent(msgspec.Struct, gc=False):
    """Just enough of an event to tell an unknown type from a malformed known one."""

    type: str = ""
    index: int = 0
    content_block: _TypeOnly | None = None
    delta: _TypeOnly | None = None


_decoder = msgspec.json.Decoder(_WireEvent)
_loose_decoder = msgspec.json.Decoder(_LooseEvent)

_EVENT_TYPES = frozenset(
    {
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "ping",
        "error",
    }
)
_BLOCK_TYPES = frozenset({"text", "tool_use", "thinking", "redacted_thinking"})
_DELTA_TYPES = frozenset(
    {"text_delta", "input_json_delta", "thinking_delta", "signature_delta", "citations_delta"}
)
_IGNORED = ""  # lane kind of a block the client does not model
_PRESET = "tool_preset"  # a tool lane whose start carried an input and no json delta came yet
_EMPTY_INPUTS = (b"{}", b"")

_STOP = MessageStop()


class AnthropicDecoder(FramedDecoder[RawEvents]):
    """Anthropic Messages SSE bytes → canonical :data:`~rxturn.events.StreamEvent` lists.

    Args:
        max_line_bytes: SSE line limit.
        max_event_bytes: SSE event data limit.

    Attributes:
        saw_terminal: ``message_stop`` arrived (without it the reply is truncated).

    Raises:
        StreamProtocolError: bad framing, UTF-8, JSON or event order (``where="line N"``).
        RateLimitError: an in-stream ``rate_limit_error`` (``OverloadedError`` for overload).
        ProviderStreamError: any other in-stream ``error`` event.

    Examples:
        >>> decoder = AnthropicDecoder()
        >>> decoder.feed(b'event: message_start\\ndata: {"type":"message_start",'
        ...              b'"message":{"id":"msg_1","model":"m"}}\\n\\n')
        [MessageStart(id='msg_1', model='m')]
    """

    __slots__ = ("_blocks", "_lanes", "_start_inputs", "_started", "_usage")

    def __init__(self, *, max_line_bytes: int = 1 << 20, max_event_bytes: int = 1 << 20) -> None:
        sse = SSEParser(max_line_bytes, max_event_bytes)
        FramedDecoder.__init__(self, sse)  # not super(): one object fewer per request  # pyright: ignore[reportUnknownMemberType]
        self._lanes: dict[int, str] = {}
        self._start_inputs: dict[int, str] = {}  # a _PRESET lane's start input, as JSON text
        self._blocks = 0  # blocks started so far: the next start's index
        self._started = False
        self._usage: dict[str, object] = {}  # message_start's usage, deltas laid over it

    def _decode_into(self, frames: RawEvents, eof: bool, out: list[StreamEvent]) -> None:
        append = out.append
        lanes = self._lanes
        decode = _decoder.decode
        # the lane the previous delta found (a run of deltas goes to one lane): kept only while
        # the lanes cannot change, i.e. until another event or an undecodable one comes
        hot_index: int | None = None  # (no index equals None: the first delta looks its lane up)
        hot_lane = ""
        for at, payload in enumerate(frames.payloads):
            try:
                event = decode(payload)
            except JSON_ERRORS as exc:
                if not payload:
                    continue
                if eof and type(exc) is msgspec.DecodeError:
                    break  # an event cut off by the end of the body: a truncation
                hot_index = None
                self._on_undecodable(_At(frames, at), payload, exc)
                continue
            if type(event) is _BlockDeltaEvent:  # the hot path, kept inline
                index = event.index
                if index == hot_index:
                    lane = hot_lane
                else:
                    lane = lanes.get(index)
                    if lane is None:
                        raise _no_lane("content_block_delta", index, _At(frames, at))
                    hot_index, hot_lane = index, lane
                delta = event.delta
                # ``type() is`` chains, not ``match``: class patterns cost ~5x more here
                if type(delta) is _TextDelta:
                    text = delta.text
                    if text and lane == "text":
                        append(Delta(index, text))  # kind defaults to "text"
                elif type(delta) is _InputJsonDelta:
                    if delta.partial_json and lane == "tool_call":
                        append(Delta(index, delta.partial_json, "tool_json"))
                    elif delta.partial_json and lane == _PRESET:  # deltas replace the start input
                        del self._start_inputs[index]
                        lanes[index] = hot_lane = "tool_call"
                        append(Delta(index, delta.partial_json, "tool_json"))
                elif type(delta) is _ThinkingDelta:
                    if delta.thinking and lane == "thinking":
                        append(Delta(index, delta.thinking, "thinking"))
                elif type(delta) is _SignatureDelta and lane == "thinking":
                    append(Delta(index, delta.signature, "signature"))  # replaces, as the SDK does
                # citations deltas: nothing the message keeps
            elif type(event) is not _PingEvent:  # (a keep-alive: nothing, and no call)
                hot_index = None
                self._on_event(event, frames, at, out)
                if self.saw_terminal:
                    break

    def _on_event(
        self, event: _WireEvent, frames: RawEvents, at: int, out: list[StreamEvent]
    ) -> None:
        # ``type() is`` chains, not ``match``: class patterns cost several times more, and a
        # reply has a handful of these events. The event's place (an ``_At``) is made only for
        # an error, and a usage's ``where`` (the event's line) is worked out only when it turns
        # out malformed: a ``partial`` of ``_where`` is passed, not called (cheaper than an
        # ``_At`` and its bound method).
        if type(event) is _BlockStartEvent:
            if not self._started:
                raise _before_start(_At(frames, at))
            self._on_block_start(event, frames, at, out)
        elif type(event) is _BlockStopEvent:
            if not self._started:
                raise _before_start(_At(frames, at))
            index = event.index
            lane = self._lanes.pop(index, None)
            if lane is None:
                raise _no_lane("content_block_stop", index, _At(frames, at))
            if lane == _PRESET:
                out.append(Delta(index, self._start_inputs.pop(index), "tool_json"))
            if lane:
                out.append(PartStop(index))
        elif type(event) is _MessageDeltaEvent:
            if not self._started:
                raise _before_start(_At(frames, at))
            if self._start_inputs:  # tool blocks left open (max_tokens): their start input stands
                self._emit_start_inputs(out)
            where = partial(_where, frames, at)
            self._usage = merge_anthropic_delta(self._usage, event.usage, where)
            raw = event.delta.stop_reason  # canonical when known, else as sent
            out.append(
                MessageDelta(StopReason.parse(raw) or raw, anthropic_usage_of(self._usage, where))
            )
        elif type(event) is _MessageStopEvent:
            if not self._started:
                raise _before_start(_At(frames, at))
            if self._start_inputs:
                self._emit_start_inputs(out)
            out.append(_STOP)
            self.saw_terminal = self._done = True  # everything after it is ignored
        elif type(event) is _MessageStartEvent:
            if not self._started:  # a duplicate keeps the first id, model and usage
                self._started = True
                info = event.message
                out.append(MessageStart(info.id, info.model))
                if info.usage is not None:
                    where = partial(_where, frames, at)
                    self._usage = usage_object(info.usage, "Anthropic", where)
                    usage_now = anthropic_usage_of(self._usage, where)
                    if usage_now is not None:  # billed from here on, even if it then fails
                        out.append(MessageDelta(None, usage_now))
        elif type(event) is _ErrorEvent:
            error = event.error
            raise stream_error(error.type, error.message)
        # else: nothing (a delta and a ping are handled inline by the caller)

    def _require_start(self, at: _At) -> None:
        if not self._started:
            raise _before_start(at)

    def _next_block(self, index: int, frames: RawEvents, at: int) -> None:
        """A block starts at the next index, as the API numbers them (and as the SDK, which
        appends each block and looks deltas up by position, needs), and at most
        ``MAX_INDEX``, as every wire numbers its parts."""
        if index != self._blocks or index > MAX_INDEX:
            if index in self._lanes:
                raise _already_open(index, _At(frames, at))
            rule = OUT_OF_RANGE if not 0 <= index <= MAX_INDEX else "is out of order"
            raise bad_index("content_block_start for block", index, rule, _where(frames, at))
        self._blocks += 1

    def _on_block_start(
        self, event: _BlockStartEvent, frames: RawEvents, at: int, out: list[StreamEvent]
    ) -> None:
        index = event.index
        self._next_block(index, frames, at)
        block = event.content_block
        if isinstance(block, _TextBlock):
            self._lanes[index] = "text"
            out.append(PartStart(index, "text"))
            if block.text:  # the SDK starts from the block as sent, as for thinking below
                out.append(Delta(index, block.text, "text"))
        elif isinstance(block, _ToolUseBlock):
            given = bytes(block.input).strip()
            if given in _EMPTY_INPUTS:
                self._lanes[index] = "tool_call"
            else:  # the SDK keeps a start's input unless input_json_deltas follow
                self._lanes[index] = _PRESET
                self._start_inputs[index] = given.decode()
            out.append(PartStart(index, "tool_call", block.id, block.name))
        else:
            self._lanes[index] = "thinking"
            out.append(PartStart(index, "thinking"))
            if isinstance(block, _RedactedThinkingBlock):
                out.append(Delta(index, "", "thinking"))
                out.append(Delta(index, block.data, "redacted_thinking"))
            else:  # the SDK starts from the block as sent: usually "" and "", sometimes more
                if block.thinking:
                    out.append(Delta(index, block.thinking, "thinking"))
                if block.signature is not None:
                    out.append(Delta(index, block.signature, "signature"))

    def _emit_start_inputs(self, out: list[StreamEvent]) -> None:
        """Each open tool lane still holding its start input gets it as its one json delta."""
        for index, given in self._start_inputs.items():
            self._lanes[index] = "tool_call"
            out.append(Delta(index, given, "tool_json"))
        self._start_inputs.clear()

    def _on_undecodable(
        self, at: _At, payload: bytes, exc: msgspec.DecodeError | RecursionError
    ) -> None:
        """Skip unknown event / block / delta types; anything else is a malformed event."""
        what = f"data of event {at.name()!r}"
        if not isinstance(exc, msgspec.ValidationError):
            raise bad_json(what, exc, at.line()) from None
        try:
            loose = _loose_decoder.decode(payload)
        except JSON_ERRORS:
            raise bad_json(what, exc, at.line()) from None
        if not loose.type:
            raise bad_json(what, exc, at.line()) from None
        if loose.type not in _EVENT_TYPES:
            return  # an event type newer than this decoder
        block = loose.content_block
        if loose.type == "content_block_start" and block and block.type not in _BLOCK_TYPES:
            self._require_start(at)
            self._next_block(loose.index, at.frames, at.index)
            self._lanes[loose.index] = _IGNORED
            return
        delta = loose.delta
        if loose.type == "content_block_delta" and delta and delta.type not in _DELTA_TYPES:
            if loose.index not in self._lanes:
                raise _no_lane("content_block_delta", loose.index, at)
            return
        raise bad_json(what, exc, at.line()) from None


class _At:
    """Where an event is (its type and line), worked out only when an error message needs it."""

    __slots__ = ("frames", "index")

    def __init__(self, frames: RawEvents, index: int) -> None:
        self.frames = frames
        self.index = index

    def name(self) -> str:
        return self.frames.name(self.index)

    def line(self) -> int:
        return self.frames.line(self.index)

    def where(self) -> str:
        return f"line {self.line()}"


def _where(frames: RawEvents, index: int) -> str:
    """An event's ``where`` (its line), for a usage's error: passed as ``partial(_where, frames,
    index)``, worked out only if the usage turns out malformed."""
    return f"line {frames.line(index)}"


def _before_start(at: _At) -> StreamProtocolError:
    return StreamProtocolError(f"{at.name()!r} event before message_start", where=at.where())


def _no_lane(what: str, index: int, at: _At) -> StreamProtocolError:
    return StreamProtocolError(f"{what} for block {index}, which is not open", where=at.where())


def _already_open(index: int, at: _At) -> StreamProtocolError:
    return StreamProtocolError(
        f"content_block_start for block {index}, which is already open", where=at.where()
    )


# --- non-streaming reply -----------------------------------------------------------------------


class _ReplyText(msgspec.Struct, gc=False, tag="text"):
    text: str = ""


class _ReplyToolUse(msgspec.Struct, gc=False, tag="tool_use"):
    id: str
    name: str
    input: Any = None


class _ReplyThinking(msgspec.Struct, gc=False, tag="thinking"):
    thinking: str = ""
    signature: str = ""


class _ReplyRedactedThinking(msgspec.Struct, gc=False, tag="redacted_thinking"):
    data: str = ""


class _Reply(msgspec.Struct, gc=False):
    type: str = "message"
    id: str = ""
    model: str = ""
    content: list[msgspec.Raw] | None = None  # required of a reply (missing_field)
    stop_reason: str | None = None
    usage: object = None
    error: _ErrorInfo | None = None


_reply_decoder = msgspec.json.Decoder(_Reply)
_reply_block_decoder = msgspec.json.Decoder(_ReplyText | _ReplyToolUse)
_reply_thinking_decoder = msgspec.json.Decoder(
    _ReplyText | _ReplyToolUse | _ReplyThinking | _ReplyRedactedThinking
)
_type_decoder = msgspec.json.Decoder(_TypeOnly)
_MODELLED_BLOCKS = ("text", "tool_use")
_KEPT_BLOCKS = ("text", "tool_use", "thinking", "redacted_thinking")


def parse_anthropic_message(body: bytes, *, keep_thinking: bool = False) -> Message:
    """Parse a non-streaming Messages API reply into a :class:`~rxturn.messages.Message`.

    Text blocks (non-empty) and ``tool_use`` blocks are kept in order; thinking and block types
    the client does not model are skipped — unless ``keep_thinking``, which keeps ``thinking``
    (text and signature) and ``redacted_thinking`` (data) blocks in order, as the streaming fold
    does. A missing tool ``input`` becomes ``None``. The stop reason defaults to ``end_turn``;
    usage is ``None`` when absent or all zero.

    Raises:
        StreamProtocolError: the body is not JSON or not shaped like a message.
        RateLimitError: the body is an ``error`` of a rate-limit / overload type.
        ProviderStreamError: the body is any other ``error``.
    """
    what = "Anthropic message body"
    try:
        reply = _reply_decoder.decode(body)
    except JSON_ERRORS as exc:
        raise bad_json(what, exc) from None
    if reply.type == "error" or reply.error is not None:
        info = reply.error or _ErrorInfo()
        raise stream_error(info.type, info.message)
    if reply.content is None:
        raise missing_field(what, "content")
    parts: list[ContentPart] = []
    block_decoder = _reply_thinking_decoder if keep_thinking else _reply_block_decoder
    modelled = _KEPT_BLOCKS if keep_thinking else _MODELLED_BLOCKS
    for raw in reply.content:
        try:
            block = block_decoder.decode(raw)
        except JSON_ERRORS as exc:
            try:
                known = _type_decoder.decode(raw).type in modelled
            except JSON_ERRORS:
                known = True
            if known:
                raise bad_json(f"a content block of the {what}", exc) from None
            continue
        if isinstance(block, _ReplyText):
            if block.text:
                parts.append(TextPart(block.text))
        elif isinstance(block, _ReplyToolUse):
            parts.append(ToolCallPart(block.id, block.name, block.input))
        elif isinstance(block, _ReplyThinking):
            parts.append(ThinkingPart(block.thinking, block.signature))
        else:
            parts.append(RedactedThinkingPart(block.data))
    return Message(
        id=reply.id,
        model=reply.model,
        content=tuple(parts),
        stop_reason=StopReason.parse(reply.stop_reason) or StopReason.END_TURN,
        usage=anthropic_usage(reply.usage),
    )
