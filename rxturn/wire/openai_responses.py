"""OpenAI Responses API (``POST /v1/responses``): streaming decoder and non-streaming parser.

Theory of operation
-------------------
The stream is SSE whose every ``data:`` line is one semantic event, a JSON object tagged by its
``type`` (``response.output_text.delta`` …), decoded by one module-level ``msgspec`` decoder over
a tagged union of wire Structs that allow unknown fields. There is no ``[DONE]``: the terminal
event is ``response.completed`` / ``response.incomplete`` (or ``response.failed``, an error).

A response is a list of *output items* (``output_index``); a ``message`` item holds *content
parts* (``content_index``). The decoder gives each thing the fold models a lane of its own,
numbered in the order they open (docs/wire-formats.md has the full table):

=========================================  ====================================================
wire                                       canonical
=========================================  ====================================================
``response.created`` / ``in_progress`` /   ``MessageStart(response.id, response.model)``, once
``queued``
``response.content_part.added``            ``output_text`` → text lane, ``refusal`` → refusal
                                           lane (other part types: nothing)
``response.output_text.delta``             ``Delta`` text
``response.refusal.delta``                 ``Delta`` refusal
``response.content_part.done``             ``PartStop`` (after the part's text, if no delta
                                           carried it)
``response.output_item.added``             ``function_call`` → ``PartStart(tool_call,
                                           call_id, name)``; ``reasoning`` →
                                           ``PartStart(thinking, id)``; other items: nothing
``response.function_call_arguments.delta``  ``Delta`` tool_json
``response.reasoning_summary_text.delta``  ``Delta`` thinking (summary parts after the first
/ ``reasoning_text.delta``                 are separated by a blank line, once a delta came)
``response.output_item.done``              what no delta carried (arguments, text), then
                                           ``PartStop`` — except for a reasoning item
``response.completed`` / ``incomplete``    each reasoning item's ``encrypted_content`` (from
                                           the final response, as the SDK returns it) as a
                                           ``signature`` delta and its ``PartStop``; then
                                           ``MessageDelta(stop, usage)``, ``MessageStop``
``response.failed`` / ``error``            the typed error (rate limit, overload, other);
                                           a failed response's usage first, as
                                           ``MessageDelta(None, usage)`` (it was billed)
other types                                nothing (newer events, hosted tools, ``*.done``)
=========================================  ====================================================

A delta aimed at an item of another type (text at a function call, arguments at a message) is a
``StreamProtocolError``, as the SDK's stream refuses it; content part events aimed at a function
call or reasoning item are nothing.

Stop reason: ``incomplete_details.reason`` ``max_output_tokens`` → ``max_tokens`` (a function
call still open then stays open: the fold keeps its partial input), ``content_filter`` →
``refusal``; else a function call → ``tool_call``, a refusal → ``refusal``, else ``end_turn``.
Usage is ``response.usage`` of the terminal event, mapped by :mod:`._usage` (``None`` when absent
or zero).
The official SDK's final response is the terminal event's ``response``; the deltas add up to it.
"""

from __future__ import annotations

from typing import Any, cast

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
    RefusalPart,
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
    cut,
    missing_field,
    shown,
    stream_error,
    tool_arguments,
)
from ._responses_types import (
    KNOWN_TYPES,
    ArgumentsDelta,
    Completed,
    Created,
    ErrorEvent,
    ErrorInfo,
    Failed,
    Incomplete,
    InProgress,
    Item,
    ItemAdded,
    ItemContent,
    ItemDone,
    Part,
    PartAdded,
    PartDone,
    Queued,
    ReasoningTextDelta,
    RefusalDelta,
    Response,
    SummaryDelta,
    SummaryPartAdded,
    TextDelta,
    event_decoder,
    type_decoder,
)
from ._usage import responses_usage
from .sse import RawEvents, SSEParser

__all__ = ["OpenAIResponsesDecoder", "parse_openai_response"]

#: How the summary parts of one reasoning item are joined into its thinking text.
SUMMARY_SEPARATOR = "\n\n"


_STOP = MessageStop()
_ITEM = -1  # content index of a lane that is a whole item (function call, reasoning)


class _Lane:
    """One open lane: its canonical index, kind, and whether a delta carried its content."""

    __slots__ = ("index", "kind", "streamed")

    def __init__(self, index: int, kind: str) -> None:
        self.index = index
        self.kind = kind
        self.streamed = False


def _error(info: ErrorInfo | None, fallback: str) -> Exception:
    if info is None:
        return stream_error(None, fallback)
    return stream_error(info.type, info.message or fallback, info.code)


class OpenAIResponsesDecoder(FramedDecoder[RawEvents]):
    """OpenAI Responses SSE bytes → canonical :data:`~rxturn.events.StreamEvent` lists.

    Args:
        max_line_bytes: SSE line limit.
        max_event_bytes: SSE event data limit.

    Attributes:
        saw_terminal: ``response.completed`` or ``response.incomplete`` arrived.

    Raises:
        StreamProtocolError: bad framing, UTF-8 or JSON (``where="line N"``).
        RateLimitError: an ``error`` event or failed response with a rate-limit code
            (``OverloadedError`` for overload).
        ProviderStreamError: any other ``error`` event or ``response.failed``.

    Examples:
        >>> decoder = OpenAIResponsesDecoder()
        >>> decoder.feed(b'data: {"type":"response.created","response":{"id":"resp_1",'
        ...              b'"model":"gpt-x"}}\\n\\n')
        [MessageStart(id='resp_1', model='gpt-x')]
    """

    __slots__ = (
        "_closed_parts",
        "_function",
        "_hot",
        "_hot_content",
        "_hot_output",
        "_items",
        "_lanes",
        "_next",
        "_reasoning",
        "_refused",
        "_response_id",
        "_started",
    )

    def __init__(self, *, max_line_bytes: int = 1 << 20, max_event_bytes: int = 1 << 20) -> None:
        sse = SSEParser(max_line_bytes, max_event_bytes)
        FramedDecoder.__init__(self, sse)  # not super(): one object fewer per request  # pyright: ignore[reportUnknownMemberType]
        self._started = False
        self._response_id = ""  # the id response.created (or the first lifecycle event) gave
        self._lanes: dict[tuple[int, int], _Lane] = {}
        self._next = 0  # the next lane's canonical index
        self._function = False  # a function call was seen
        self._refused = False  # a refusal part was seen
        # content parts already closed (not ``_closed``: the base class's close-once flag)
        self._closed_parts: set[tuple[int, int]] = set()
        #: output items as announced (``output_item.added``, else ``done``), by output index
        self._items: dict[int, tuple[Item, bool]] = {}  # (item, done)
        #: reasoning items done but kept open: output index → (lane, encrypted_content)
        self._reasoning: dict[int, tuple[int, str | None]] = {}
        # the text lane that took the last delta: (output_index, content_index) → canonical index
        self._hot_output = -1
        self._hot_content = -1
        self._hot = 0

    def _decode_into(self, frames: RawEvents, eof: bool, out: list[StreamEvent]) -> None:
        append = out.append
        decode = event_decoder.decode
        for at, payload in enumerate(frames.payloads):
            try:
                event = decode(payload)
            except JSON_ERRORS as exc:
                if not payload:
                    continue
                if eof and type(exc) is msgspec.DecodeError:
                    break  # an event cut off by the end of the body: a truncation
                self._on_undecodable(frames, at, payload, exc)
                continue
            if (
                type(event) is TextDelta
                and event.output_index == self._hot_output
                and event.content_index == self._hot_content
            ):  # the hot path: more text for the lane that took the last text
                if event.delta:
                    append(Delta(self._hot, event.delta))  # kind defaults to "text"
                continue
            self._on_event(event, frames, at, out)
            if self._done:
                break

    # -- the rarer events ----------------------------------------------------------------------

    def _on_event(self, event: Any, frames: RawEvents, at: int, out: list[StreamEvent]) -> None:
        cls: object = type(cast(object, event))
        if cls is ErrorEvent:
            info = event.error
            if info is not None:
                raise _error(info, "stream failed")
            raise stream_error(None, event.message, event.code)
        if cls is Created or cls is InProgress or cls is Queued:
            if not self._started:
                self._started = True
                self._response_id = event.response.id
                out.append(MessageStart(event.response.id, event.response.model))
            else:
                self._check_identity(event.response, frames, at)
            return
        if cls is Failed:
            if self._started:  # the usage it reports was billed: it goes out before the error
                usage = responses_usage(event.response.usage, f"line {frames.line(at)}")
                if usage is not None:
                    out.append(MessageDelta(None, usage))
            raise _error(event.response.error, "response failed")
        if not self._started:
            raise StreamProtocolError(
                f"{frames.name(at)!r} event before response.created",
                where=f"line {frames.line(at)}",
            )
        if cls is Completed or cls is Incomplete:
            self._check_identity(event.response, frames, at)
            if cls is Completed:
                self._check_final(event.response, frames, at)
            self._finish(event.response, out)
            return
        if self._check_indices(event, cls, frames, at):
            return  # an item done again: what it holds went out the first time
        if cls is TextDelta or cls is RefusalDelta:
            kind = "text" if cls is TextDelta else "refusal"
            lane = self._content_lane(
                event.output_index, event.content_index, kind, out, frames, at
            )
            if lane is None:
                # the part is of the other kind: its text would be dropped (a refusal read as
                # an end of turn); the official SDK's accumulator refuses it too
                other = "a refusal" if kind == "text" else "an output_text"
                raise StreamProtocolError(
                    f"{frames.name(at)} for output {event.output_index} content "
                    f"{event.content_index}, which is {other} part",
                    where=_where(frames, at),
                )
            if event.delta:
                lane.streamed = True
                out.append(Delta(lane.index, event.delta, kind))
                if kind == "text":
                    self._hot_output = event.output_index
                    self._hot_content = event.content_index
                    self._hot = lane.index
        elif cls is ArgumentsDelta:
            lane = self._lanes.get((event.output_index, _ITEM))
            if lane is not None and lane.kind == "tool_call":
                if event.delta:
                    lane.streamed = True
                    out.append(Delta(lane.index, event.delta, "tool_json"))
            else:
                self._check_aim(event.output_index, "function_call", frames, at)
        elif cls is SummaryDelta or cls is ReasoningTextDelta:
            lane = self._lanes.get((event.output_index, _ITEM))
            if lane is not None and lane.kind == "thinking":
                # streamed, even by an empty delta: the item's done adds nothing then (an empty
                # summary part, streamed, still counts in the join, as in the final item)
                lane.streamed = True
                if event.delta:
                    out.append(Delta(lane.index, event.delta, "thinking"))
        elif cls is SummaryPartAdded:
            lane = self._lanes.get((event.output_index, _ITEM))
            if (
                lane is not None
                and lane.kind == "thinking"
                and event.summary_index > 0
                and lane.streamed  # else the summary comes whole with the item's done, joined
            ):
                out.append(Delta(lane.index, SUMMARY_SEPARATOR, "thinking"))
        elif cls is PartAdded or cls is PartDone:
            item = self._items.get(event.output_index)
            if item is not None and item[0].type != "message":
                return  # a part of a call or of reasoning: nothing, as for the SDK's accumulator
            if cls is PartDone:
                self._close_part(event.output_index, event.content_index, event.part, out)
                return
            kind = _part_kind(event.part.type)
            if kind is not None:
                self._content_lane(event.output_index, event.content_index, kind, out, frames, at)
        elif cls is ItemAdded:
            self._on_item_added(event.item, event.output_index, out)
        elif cls is ItemDone:
            self._on_item_done(event.item, event.output_index, out)

    # -- what a stream may say about its items (the SDK's accumulator holds it to the same) -----

    def _check_indices(self, event: Any, cls: object, frames: RawEvents, at: int) -> bool:
        """Indices in range; an item announced once, in order; ``done`` agreeing with it.

        Returns True for an ``output_item.done`` repeating one already taken (a replaying
        proxy): it changes nothing, as for the official SDK, whose final response is the
        completed one; handled again, it opened the item anew and a function call came out
        twice.
        """
        output_index: int = event.output_index
        if not 0 <= output_index <= MAX_INDEX:
            raise bad_index("output_index", output_index, OUT_OF_RANGE, _where(frames, at))
        if cls is ItemAdded:
            items = self._items
            if output_index in items:
                raise bad_index(
                    "output_item.added for output_index",
                    output_index,
                    "repeats an item",
                    _where(frames, at),
                )
            if items and output_index < max(items):
                raise bad_index("output_index", output_index, "is out of order", _where(frames, at))
            items[output_index] = (event.item, False)
        elif cls is ItemDone:
            known = self._items.get(output_index)
            if known is not None and not _same_item(known[0], event.item):
                raise StreamProtocolError(
                    f"output_item.done for output_index {output_index} names another item than "
                    f"its output_item.added ({_describe(known[0])} vs {_describe(event.item)})",
                    where=_where(frames, at),
                )
            if known is not None and known[1]:
                return True
            self._items[output_index] = (event.item, True)
        elif cls is SummaryPartAdded:
            if not 0 <= event.summary_index <= MAX_INDEX:
                where = _where(frames, at)
                raise bad_index("summary_index", event.summary_index, OUT_OF_RANGE, where)
        elif (
            cls is TextDelta or cls is RefusalDelta or cls is PartAdded or cls is PartDone
        ) and not 0 <= event.content_index <= MAX_INDEX:
            where = _where(frames, at)
            raise bad_index("content_index", event.content_index, OUT_OF_RANGE, where)
        return False

    def _check_identity(self, response: Response, frames: RawEvents, at: int) -> None:
        """A lifecycle event must be about the response the stream began with.

        Another id means the bytes splice two responses (a proxy's retry): the official SDK
        refuses it ("Lifecycle response identity changed"), and taken as it came, the reply
        got the other response's usage and stop reason. An id left out (some compatible
        servers) says nothing.
        """
        if response.id and self._response_id and response.id != self._response_id:
            raise StreamProtocolError(
                f"{frames.name(at)} is about response {cut(response.id)!r}, but the stream "
                f"began with {cut(self._response_id)!r}",
                where=_where(frames, at),
            )

    def _check_final(self, response: Response, frames: RawEvents, at: int) -> None:
        """The completed response must carry the streamed items as they were announced.

        The official SDK's accumulator takes the completed response as the final one and
        refuses one whose items contradict the stream (another id for an item, an item announced
        but neither finished nor in the response); rxturn, which has already handed the streamed
        item on, refuses the same streams with a typed error. A completed response that lists
        no items at all (some compatible servers) is not held against the stream.
        """
        if not self._items or not response.output:
            return  # a completed response that repeats no items (compatible servers) says nothing
        final = {_identity(item): item for item in response.output}
        for output_index, (item, done) in self._items.items():
            match = final.get(_identity(item))
            if (match is None and not done) or (match is not None and not _compatible(item, match)):
                raise StreamProtocolError(
                    f"response.completed contradicts output item {output_index} "
                    f"({_describe(item)}): "
                    + ("another id" if match is not None else "never finished, and not in it"),
                    where=_where(frames, at),
                )

    def _check_aim(self, output_index: int, kind: str, frames: RawEvents, at: int) -> None:
        """A delta for an item of another type (text aimed at a function call, arguments at a
        message) is a :class:`StreamProtocolError`: the official SDK's stream refuses it (an
        assertion), and taken as it came, the text was a part that the final response lacks,
        the arguments a silent drop. An item never announced is not checked here."""
        item = self._items.get(output_index)
        if item is not None and item[0].type != kind:
            raise StreamProtocolError(
                f"{frames.name(at)} for output {output_index}, which is a "
                f"{shown(item[0].type)} item, not a {kind}",
                where=_where(frames, at),
            )

    def _content_lane(
        self,
        output_index: int,
        content_index: int,
        kind: str,
        out: list[StreamEvent],
        frames: RawEvents,
        at: int,
    ) -> _Lane | None:
        """The lane of a message's content part, opened on first sight.

        A part already closed (``content_part.done``, or its item's ``output_item.done``) is
        never opened again: its text went out when it closed, so a later delta for it would
        come out as a second copy of the text (a stale index), or land in another part than
        the one the server meant. Checked only when a lane opens, so the hot path pays nothing.
        """
        key = (output_index, content_index)
        lane = self._lanes.get(key)
        if lane is None:
            self._check_aim(output_index, "message", frames, at)
            item = self._items.get(output_index)
            if key in self._closed_parts or (item is not None and item[1]):
                what = "content part" if key in self._closed_parts else "item"
                raise StreamProtocolError(
                    f"{frames.name(at)} for output {output_index} content {content_index}, "
                    f"whose {what} is already done",
                    where=_where(frames, at),
                )
            lane = self._open(key, kind, out)
            if kind == "refusal":
                self._refused = True
        return lane if lane.kind == kind else None

    def _open(
        self, key: tuple[int, int], kind: str, out: list[StreamEvent], id: str = "", name: str = ""
    ) -> _Lane:
        lane = _Lane(self._next, kind)
        self._next += 1
        self._lanes[key] = lane
        out.append(PartStart(lane.index, kind, id, name))  # pyright: ignore[reportArgumentType]
        return lane

    def _close_part(
        self, output_index: int, content_index: int, part: Part, out: list[StreamEvent]
    ) -> None:
        key = (output_index, content_index)
        if key in self._closed_parts:
            return  # closed already (a repeated done, or its item's done first): its text went out
        self._closed_parts.add(key)
        lane = self._lanes.pop(key, None)
        if lane is None:
            kind = _part_kind(part.type)
            text = (part.refusal if kind == "refusal" else part.text) or ""
            if kind is None or not text:
                return
            if kind == "refusal":
                self._refused = True
            lane = self._open(key, kind, out)
            del self._lanes[key]
        if not lane.streamed:  # a server that sends the whole text only when it is done
            text = (part.refusal if lane.kind == "refusal" else part.text) or ""
            if text:
                out.append(Delta(lane.index, text, lane.kind))  # pyright: ignore[reportArgumentType]
        if lane.index == self._hot and output_index == self._hot_output:
            self._hot_output = self._hot_content = -1
        out.append(PartStop(lane.index))

    def _on_item_added(self, item: Item, output_index: int, out: list[StreamEvent]) -> None:
        key = (output_index, _ITEM)
        if key in self._lanes:
            return
        if item.type == "function_call":
            self._function = True
            lane = self._open(key, "tool_call", out, item.call_id or "", item.name or "")
            if item.arguments:
                lane.streamed = True
                out.append(Delta(lane.index, item.arguments, "tool_json"))
        elif item.type == "reasoning":
            self._open(key, "thinking", out, item.id or "")

    def _on_item_done(self, item: Item, output_index: int, out: list[StreamEvent]) -> None:
        if item.type == "message":
            # parts no content_part event announced (some compatible servers): whole, now
            for position, content in enumerate(item.content or ()):
                if (output_index, position) not in self._closed_parts:
                    self._close_part(output_index, position, _as_part(content), out)
            for key in [k for k in self._lanes if k[0] == output_index and k[1] != _ITEM]:
                self._close_part(key[0], key[1], Part(), out)
            return
        if item.type not in ("function_call", "reasoning"):
            return
        key = (output_index, _ITEM)
        lane = self._lanes.pop(key, None)
        if lane is None:  # never announced: open it now, whole
            self._on_item_added(item, output_index, out)
            lane = self._lanes.pop(key)
        if item.type == "function_call":
            if not lane.streamed and item.arguments:
                out.append(Delta(lane.index, item.arguments, "tool_json"))
        else:
            if not lane.streamed and item.summary:
                text = SUMMARY_SEPARATOR.join(s.text for s in item.summary)
                if text:
                    out.append(Delta(lane.index, text, "thinking"))
            # left open until the terminal event: the SDK's final response carries the
            # encrypted_content the API returns (it differs from this event's, re-encrypted)
            self._reasoning[output_index] = (lane.index, item.encrypted_content)
            return
        out.append(PartStop(lane.index))

    def _finish(self, response: Response, out: list[StreamEvent]) -> None:
        final = response.output or []
        for output_index, (index, encrypted) in self._reasoning.items():
            if output_index < len(final) and final[output_index].type == "reasoning":
                encrypted = final[output_index].encrypted_content
            if encrypted is not None:
                out.append(Delta(index, encrypted, "signature"))
            out.append(PartStop(index))
        for key, lane in list(self._lanes.items()):  # anything the server did not close
            if lane.kind != "tool_call":  # an unfinished call stays open for the fold
                del self._lanes[key]
                out.append(PartStop(lane.index))
        out.append(
            MessageDelta(
                _stop(response, self._function, self._refused), responses_usage(response.usage)
            )
        )
        out.append(_STOP)
        self.saw_terminal = self._done = True

    def _on_undecodable(
        self, frames: RawEvents, at: int, payload: bytes, exc: msgspec.DecodeError | RecursionError
    ) -> None:
        """Skip event types this decoder does not model; anything else is malformed."""
        name = frames.name(at)
        what = f"data of event {name!r}" if name != "message" else "event data"
        if isinstance(exc, msgspec.ValidationError):
            try:
                kind = type_decoder.decode(payload).type
            except JSON_ERRORS:
                kind = ""
            if kind and kind not in KNOWN_TYPES:
                return  # a newer or hosted-tool event: nothing the fold models
        raise bad_json(what, exc, frames.line(at)) from None


def _where(frames: RawEvents, at: int) -> str:
    return f"line {frames.line(at)}"


def _identity(item: Item) -> tuple[str, str | None, str | None]:
    """What names an output item: a function call by its ``call_id``, anything else by its id."""
    if item.type == "function_call":
        return item.type, None, item.call_id
    return item.type, item.id, item.call_id


def _compatible(first: Item, second: Item) -> bool:
    """The same item ids — or a function call first announced without one."""
    return first.id == second.id or (first.id is None and first.type == "function_call")


def _same_item(added: Item, done: Item) -> bool:
    return _identity(added) == _identity(done) and _compatible(added, done)


def _describe(item: Item) -> str:
    if item.type == "function_call":
        return f"function_call call_id={shown(item.call_id)} id={shown(item.id)}"
    return f"{cut(item.type) or 'item'} id={shown(item.id)}"


def _part_kind(part_type: str) -> str | None:
    if part_type == "output_text":
        return "text"
    if part_type == "refusal":
        return "refusal"
    return None


def _as_part(content: ItemContent) -> Part:
    return Part(content.type, content.text, content.refusal)


def _stop(response: Response, function: bool, refused: bool) -> StopReason:
    details = response.incomplete_details
    if details is not None and details.reason:
        if details.reason == "max_output_tokens":
            return StopReason.MAX_TOKENS
        if details.reason == "content_filter":
            return StopReason.REFUSAL
    if function:
        return StopReason.TOOL_CALL
    if refused:
        return StopReason.REFUSAL
    return StopReason.END_TURN


# --- non-streaming reply ----------------------------------------------------------------------


_response_decoder = msgspec.json.Decoder(Response)


#: Statuses of a response that is not a finished reply (a finished one is ``completed`` or
#: ``incomplete``; compatible servers may send none).
_UNFINISHED = frozenset({"queued", "in_progress", "cancelled"})


def parse_openai_response(body: bytes, *, keep_thinking: bool = False) -> Message:
    """Parse a non-streaming Responses API body into a :class:`~rxturn.messages.Message`.

    Output items in order: a ``message``'s ``output_text`` parts (non-empty) as text parts and
    its ``refusal`` parts as refusal parts, each ``function_call`` as a tool call (``call_id``
    as id, ``arguments`` parsed; empty → ``{}``), and — only with ``keep_thinking`` — each
    ``reasoning`` item as a thinking part (summary texts joined by a blank line,
    ``encrypted_content`` as signature, its ``id``). Other items are skipped. Stop reason and
    usage as in the streaming decoder.

    Raises:
        StreamProtocolError: the body is not JSON or not shaped like a response, or the
            response is not finished (status ``queued``, ``in_progress`` or ``cancelled``).
        InvalidToolInputError: a function call's ``arguments`` is not valid JSON.
        RateLimitError: the body is (or carries) a rate-limit / overload ``error``.
        ProviderStreamError: any other ``error``, or a ``failed`` response.
    """
    try:
        reply = _response_decoder.decode(body)
    except JSON_ERRORS as exc:
        raise bad_json("OpenAI response body", exc) from None
    if reply.error is not None or reply.status == "failed":
        raise _error(reply.error, "response failed")
    if reply.output is None:
        raise missing_field("OpenAI response body", "output")
    if reply.status in _UNFINISHED:
        # a background response answered before it ran (or one cancelled): its output is not
        # the reply, and taken as one it folded to an empty (or cut) end of turn
        raise StreamProtocolError(
            f"OpenAI response body is not a finished reply (status {reply.status!r})"
        )
    parts: list[ContentPart] = []
    function = refused = False
    details = reply.incomplete_details
    truncated = details is not None and details.reason == "max_output_tokens"  # (as _stop reads it)
    for item in reply.output:
        if item.type == "message":
            for content in item.content or ():
                if content.type == "output_text" and content.text:
                    parts.append(TextPart(content.text))
                elif content.type == "refusal" and content.refusal:
                    refused = True
                    parts.append(RefusalPart(content.refusal))
        elif item.type == "function_call":
            function = True
            name = item.name or ""
            arguments = tool_arguments(item.arguments, len(parts), name, truncated=truncated)
            parts.append(ToolCallPart(item.call_id or "", name, arguments))
        elif item.type == "reasoning" and keep_thinking:
            text = SUMMARY_SEPARATOR.join(s.text for s in item.summary or ())
            parts.append(ThinkingPart(text, item.encrypted_content, item.id or ""))
    return Message(
        id=reply.id,
        model=reply.model,
        content=tuple(parts),
        stop_reason=_stop(reply, function, refused),
        usage=responses_usage(reply.usage),
    )
