"""OpenAI Chat Completions: streaming decoder and non-streaming reply parser.

Theory of operation
-------------------
The stream is SSE whose every ``data:`` line is one ``chat.completion.chunk`` JSON object, ending
with ``data: [DONE]``. Chunks carry no lane structure of their own, so the decoder builds it
as follows:

- lane **0** is the text lane, lane **1** the thinking lane, lane **2 + i** the tool call whose
  wire ``index`` is ``i`` (parallel calls interleave freely; each keeps its own lane), lane
  **-1** the refusal lane and lane **-2** a legacy ``function_call``;
- only the choice whose ``index`` is 0 is followed (``n > 1`` streams: the other choices are
  ignored, wherever they sit in ``choices``), to the end of the stream: what it sends after its
  ``finish_reason`` is part of the reply, as the SDK appends it to the same message;
- the first chunk that has an id or choices → ``MessageStart(id, model)``;
- ``delta.content`` → text (opening lane 0 once); given as an array of parts (Mistral and
  other compatible servers), its ``text`` parts are that text, joined in order, its
  ``thinking`` parts (Mistral's, holding text parts) thinking, and any other part (images,
  references) is skipped; ``reasoning_content`` / ``reasoning`` → thinking (lane 1);
- ``refusal`` is **not** text — the official SDK keeps it apart from ``message.content`` — but
  a ``refusal`` part of its own (lane -1, deltas of kind ``refusal``), and the stop reason is
  ``refusal`` when the finish would otherwise be an end of turn;
- a legacy ``function_call`` delta (name, then ``arguments`` fragments) is one tool call with no
  id (lane -2);
- a ``tool_calls`` entry with a new ``index`` → ``PartStart(tool_call, id, name)``; every
  non-empty ``arguments`` fragment → ``Delta(tool_json)`` on that call's lane; a call whose
  first entry has no name (it comes in a later chunk) starts when the name comes, its id and
  fragments (and any call opened after it, to keep their order) held until then; at the
  end, one never named starts nameless;
- ``finish_reason`` is noted (a later one replaces it, as in the SDK); at the end (``[DONE]``, or
  the end of the body after a finish) the text, thinking, refusal and tool lanes close — except
  for ``length``, where tool lanes stay open so the fold keeps their partial input — and the
  stop reason goes out in the last ``MessageDelta`` with the last usage seen (or ``None``)
  (``tool_calls`` / ``function_call`` → tool_call, ``length`` → max_tokens, ``stop`` →
  end_turn, ``content_filter`` → refusal, anything else kept raw). A ``usage`` that changes
  (the usage chunk ``stream_options.include_usage`` sends after the finish, or usage on every
  chunk) is ``MessageDelta(None, usage)`` at once, so what was billed reaches the attempt's
  record even if the stream then fails;
- ``[DONE]`` ends the data (a ``[DONE]`` without any ``finish_reason`` finishes as ``stop``);
  ``MessageStop`` is emitted only if a chunk started the message and a ``finish_reason`` or
  ``[DONE]`` was seen — a stream that just stops is truncated;
- a chunk with a top-level ``error`` raises (429 / ``rate_limit_*`` → RateLimitError, 503 / 529 /
  ``overloaded`` → OverloadedError, else ProviderStreamError).

As with every decoder, events decoded before a failure in the same chunk are returned first; the
error is raised by the next ``feed`` / ``close``. A last chunk cut off mid-JSON by the end of the
body is a truncation, not a JSON error. Chunks missing ``index`` on their tool calls (some
compatible servers) are matched by ``id``, a call without either continuing the latest one.
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
from ..messages import Message, RefusalPart, StopReason, TextPart, ToolCallPart, Usage
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
from ._usage import openai_chat_usage
from .sse import RawEvents, SSEParser

__all__ = ["OpenAIDecoder", "parse_openai_completion"]

TEXT_LANE = 0
THINKING_LANE = 1
FIRST_TOOL_LANE = 2
REFUSAL_LANE = -1
FUNCTION_LANE = -2


# --- wire Structs ------------------------------------------------------------------------------


class _Function(msgspec.Struct, gc=False):
    name: str | None = None
    arguments: str | None = None


class _ToolCallDelta(msgspec.Struct, gc=False):
    index: int | None = None
    id: str | None = None
    function: _Function | None = None


class _InnerChunk(msgspec.Struct, gc=False):
    type: str = ""
    text: str | None = None


class _ContentChunk(msgspec.Struct, gc=False):
    """One part of an array ``content`` (text, Mistral thinking, or a type skipped)."""

    type: str = ""
    text: str | None = None
    thinking: list[_InnerChunk] | str | None = None


class _ChoiceDelta(msgspec.Struct, gc=False):
    content: str | list[_ContentChunk] | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    tool_calls: list[_ToolCallDelta] | None = None
    refusal: str | None = None
    function_call: _Function | None = None


class _Choice(msgspec.Struct, gc=False):
    index: int = 0
    delta: _ChoiceDelta | None = None
    finish_reason: str | None = None


class _Chunk(msgspec.Struct, gc=False):
    id: str = ""
    model: str = ""
    choices: list[_Choice] | None = None
    usage: object = None  # as sent: mapped by ._usage
    error: Any = None


_decoder = msgspec.json.Decoder(_Chunk)
_STOP = MessageStop()
_DONE = b"[DONE]"  # the end-of-stream marker, as the SDK reads it (surrounding spaces allowed)


class OpenAIDecoder(FramedDecoder[RawEvents]):
    """OpenAI Chat Completions SSE bytes → canonical :data:`~rxturn.events.StreamEvent` lists.

    Args:
        max_line_bytes: SSE line limit.
        max_event_bytes: SSE event data limit.

    Attributes:
        saw_terminal: ``MessageStop`` was emitted (the reply is complete).

    Raises:
        StreamProtocolError: bad framing, UTF-8 or JSON (``where="line N"``).
        RateLimitError: an in-stream rate-limit error (``OverloadedError`` for 503 / 529).
        ProviderStreamError: any other in-stream error.

    Examples:
        >>> decoder = OpenAIDecoder()
        >>> decoder.feed(b'data: {"id":"c1","model":"m","choices":[{"index":0,'
        ...              b'"delta":{"content":"Hi"}}]}\\n\\n')
        [MessageStart(id='c1', model='m'), PartStart(index=0, kind='text', id='', name=''), \
Delta(index=0, text='Hi', kind='text')]
    """

    __slots__ = (
        "_finished",
        "_function_open",
        "_hot",
        "_reason",
        "_refusal_open",
        "_started",
        "_text_open",
        "_thinking_open",
        "_tool_ids",
        "_tools",
        "_unnamed",
        "_usage",
    )

    def __init__(self, *, max_line_bytes: int = 1 << 20, max_event_bytes: int = 1 << 20) -> None:
        sse = SSEParser(max_line_bytes, max_event_bytes)
        FramedDecoder.__init__(self, sse)  # not super(): one object fewer per request  # pyright: ignore[reportUnknownMemberType]
        self._started = False
        self._finished = False
        self._text_open = False
        self._thinking_open = False
        #: wire indices of the tool calls seen, in the order they opened (all open until finish)
        self._tools: dict[int, None] = {}
        self._tool_ids: dict[str, int] = {}
        #: calls held from one that opened with no name yet on (so calls keep their order):
        #: [id, name, argument fragments] each, started in order once the first has its name
        self._unnamed: dict[int, list[Any]] = {}
        self._reason = ""  # the last finish_reason (the SDK keeps the last one too)
        self._usage: Usage | None = None
        self._refusal_open = False
        self._function_open = False
        self._hot = False  # what _texting() says, kept between chunks

    def _decode_into(self, frames: RawEvents, eof: bool, out: list[StreamEvent]) -> None:
        append = out.append
        decode = _decoder.decode
        # True while a plain content delta needs nothing but its Delta: the text lane is open,
        # no thinking lane, no finish yet, no usage to forget. Only the slow path below can
        # change that: it clears the flag kept between chunks first (so a chunk that raises
        # leaves it off) and sets it again when done.
        texting = self._hot
        for at, payload in enumerate(frames.payloads):
            try:
                chunk = decode(payload)
            except JSON_ERRORS as exc:  # [DONE] too (not JSON): once a stream, not a test each
                self._hot = False
                if self._on_undecodable(frames, at, exc, eof, out):
                    break
                texting = self._hot = self._texting()
                continue
            if texting and chunk.usage is None and chunk.error is None:
                choices = chunk.choices
                if choices is not None and len(choices) == 1:
                    choice = choices[0]
                    delta = choice.delta
                    if (
                        delta is not None
                        and not choice.index
                        and not choice.finish_reason
                        and not delta.tool_calls
                        and not delta.reasoning_content
                        and not delta.reasoning
                        and not delta.refusal
                        and delta.function_call is None
                        and type(delta.content) is not list
                    ):
                        if delta.content:  # the hot path: one text delta
                            append(Delta(TEXT_LANE, delta.content, "text"))
                        continue
            self._hot = False
            self._decode_chunk(chunk, frames, at, out)
            texting = self._hot = self._texting()
        if eof and not self._done and self._started and self._finished:
            self._terminate(out)  # the body ended after a finish_reason: the message is whole

    def _texting(self) -> bool:
        return (
            self._text_open
            and not self._thinking_open
            and not self._finished
            and self._usage is None
        )

    def _decode_chunk(
        self, chunk: _Chunk, frames: RawEvents, at: int, out: list[StreamEvent]
    ) -> None:
        """Any chunk, by the general rules (the hot path above takes plain text deltas)."""
        append = out.append
        if chunk.error is not None:
            raise error_from_json(chunk.error)
        choices = chunk.choices
        if choices is None:
            raise StreamProtocolError(
                "chat.completion.chunk without 'choices' or 'error'",
                where=f"line {frames.line(at)}",
            )
        if not self._started and (chunk.id or choices):
            self._started = True
            append(MessageStart(chunk.id, chunk.model))
        for choice in choices:
            if choice.index:
                continue  # choice 0 only (to [DONE]: what comes after its finish is kept)
            delta = choice.delta
            if delta is not None:
                if delta.reasoning_content or delta.reasoning:
                    self._on_reasoning(delta.reasoning_content or delta.reasoning or "", out)
                content = delta.content
                if type(content) is list:
                    content = self._on_parts(content, out)
                if content:
                    if self._thinking_open or not self._text_open:
                        self._open_text(out)
                    append(Delta(TEXT_LANE, content, "text"))  # pyright: ignore[reportArgumentType]
                if delta.refusal:
                    if not self._refusal_open:
                        self._refusal_open = True
                        append(PartStart(REFUSAL_LANE, "refusal"))
                    append(Delta(REFUSAL_LANE, delta.refusal, "refusal"))
                if delta.tool_calls:
                    self._on_tool_calls(delta.tool_calls, out)
                if delta.function_call is not None:
                    self._on_function_call(delta.function_call, out)
            if choice.finish_reason:
                self._finish(choice.finish_reason)
        if chunk.usage is not None or self._usage is not None:
            self._on_usage(chunk.usage, frames, at, out)

    def _on_undecodable(
        self,
        frames: RawEvents,
        at: int,
        exc: msgspec.DecodeError | RecursionError,
        eof: bool,
        out: list[StreamEvent],
    ) -> bool:
        """``[DONE]`` (→ True: stop reading), an empty event, a cut-off chunk, or an error."""
        payload = frames.payloads[at]
        if payload.strip() == _DONE:
            self._on_done(out)
            return True
        if not payload:
            return False
        if eof and type(exc) is msgspec.DecodeError:
            return True  # a chunk cut off by the end of the body: a truncation, not bad JSON
        name = frames.name(at)
        what = f"data of event {name!r}" if name != "message" else "chunk data"
        raise bad_json(what, exc, frames.line(at)) from None

    def _on_done(self, out: list[StreamEvent]) -> None:
        """``[DONE]``: nothing after it is read; a started reply finishes (as ``stop`` when no
        ``finish_reason`` came) and terminates."""
        self._done = True
        if self._started:
            if not self._finished:
                self._finish("stop")
            self._terminate(out)

    def _on_reasoning(self, text: str, out: list[StreamEvent]) -> None:
        """``reasoning_content`` (or ``reasoning``, or a thinking part) → the thinking lane."""
        if not self._thinking_open:
            self._thinking_open = True
            out.append(PartStart(THINKING_LANE, "thinking"))
        out.append(Delta(THINKING_LANE, text, "thinking"))

    def _on_parts(self, parts: list[_ContentChunk], out: list[StreamEvent]) -> str:
        """An array ``content``: emit its thinking, return its text (parts joined in order)."""
        text: list[str] = []
        for part in parts:
            if part.type == "text":
                if part.text:
                    text.append(part.text)
            elif part.type == "thinking":
                inner = part.thinking
                if isinstance(inner, str):
                    thought = inner
                else:
                    thought = "".join(c.text or "" for c in inner or () if c.type == "text")
                if thought:
                    if text:  # text before the thinking keeps its place
                        self._emit_text("".join(text), out)
                        text.clear()
                    self._on_reasoning(thought, out)
        return "".join(text)

    def _emit_text(self, text: str, out: list[StreamEvent]) -> None:
        if self._thinking_open or not self._text_open:
            self._open_text(out)
        out.append(Delta(TEXT_LANE, text, "text"))

    def _on_function_call(self, call: _Function, out: list[StreamEvent]) -> None:
        """A legacy ``function_call`` delta: the first opens the call, arguments accumulate."""
        if not self._function_open:
            self._function_open = True
            out.append(PartStart(FUNCTION_LANE, "tool_call", "", call.name or ""))
        if call.arguments:
            out.append(Delta(FUNCTION_LANE, call.arguments, "tool_json"))

    def _open_text(self, out: list[StreamEvent]) -> None:
        """Text arrives: close the thinking lane if open, open the text lane if not."""
        if self._thinking_open:
            self._thinking_open = False
            out.append(PartStop(THINKING_LANE))
        if not self._text_open:
            self._text_open = True
            out.append(PartStart(TEXT_LANE, "text"))

    def _on_usage(self, raw: object, frames: RawEvents, at: int, out: list[StreamEvent]) -> None:
        """Each chunk's ``usage`` replaces the last (``null`` included), as the SDK folds it."""
        usage = (
            openai_chat_usage(raw, lambda: f"line {frames.line(at)}") if raw is not None else None
        )
        if usage != self._usage:
            # billed from here on, so it reaches the attempt's record even if the stream then
            # fails, as Anthropic's message_start usage does (the usage chunk after the finish,
            # or usage on every chunk); the final MessageDelta has the last word
            self._usage = usage
            out.append(MessageDelta(None, usage))

    def _on_tool_calls(self, calls: list[_ToolCallDelta], out: list[StreamEvent]) -> None:
        for call in calls:
            index = call.index
            if index is None:  # some compatible servers omit it: a new id is a new call
                known = self._tool_ids.get(call.id) if call.id else None
                if known is not None:
                    index = known
                elif call.id or not self._tools:
                    index = max(self._tools, default=-1) + 1
                else:
                    index = max(self._tools)
            function = call.function
            lane = FIRST_TOOL_LANE + index
            if index not in self._tools:
                if function is None and not call.id:
                    continue
                # a new call takes a new, higher index: lanes below FIRST_TOOL_LANE are the
                # text / thinking / refusal lanes, and state is keyed on it
                if not 0 <= index <= MAX_INDEX:
                    raise bad_index("tool call index", index, OUT_OF_RANGE)
                if self._tools and index < max(self._tools):
                    raise bad_index(
                        "tool call index",
                        index,
                        "is out of order (a new call below one already open)",
                    )
                self._tools[index] = None
                if call.id:
                    self._tool_ids[call.id] = index
                name = function.name if function is not None else None
                if not name or self._unnamed:  # the name comes later (as the SDK reads it)
                    self._unnamed[index] = [call.id or "", name or "", []]
                    self._on_unnamed(index, call, out)
                    continue
                out.append(PartStart(lane, "tool_call", call.id or "", name))
            elif self._unnamed and index in self._unnamed:
                self._on_unnamed(index, call, out)
                continue
            if function is not None and function.arguments:
                out.append(Delta(lane, function.arguments, "tool_json"))

    def _on_unnamed(self, index: int, call: _ToolCallDelta, out: list[StreamEvent]) -> None:
        """A chunk of a held call: its id, name and arguments are kept; the held calls start, in
        order, up to the first that still has no name."""
        held = self._unnamed[index]
        if call.id and not held[0]:
            held[0] = call.id
            self._tool_ids.setdefault(call.id, index)
        function = call.function
        if function is not None:
            if function.name and not held[1]:
                held[1] = function.name
            if function.arguments:
                held[2].append(function.arguments)
        while self._unnamed:
            first = min(self._unnamed)
            call_id, name, fragments = self._unnamed[first]
            if not name:
                return
            del self._unnamed[first]
            self._start_held(first, call_id, name, fragments, out)

    def _start_held(
        self, index: int, call_id: str, name: str, held: list[str], out: list[StreamEvent]
    ) -> None:
        lane = FIRST_TOOL_LANE + index
        out.append(PartStart(lane, "tool_call", call_id, name))
        out.extend(Delta(lane, fragment, "tool_json") for fragment in held)

    def _finish(self, reason: str) -> None:
        """A ``finish_reason``: noted; the lanes close and the stop reason goes out at the end
        (``[DONE]``, or the end of the body), as the SDK appends what choice 0 sends after its
        finish to the same message and lets a later finish_reason replace the first."""
        self._finished = True
        self._reason = reason

    def _stop_reason(self) -> str:
        stop = StopReason.parse(self._reason)
        if self._refusal_open and stop is StopReason.END_TURN:
            stop = StopReason.REFUSAL  # the model refused in words
        return stop or self._reason

    def _close_lanes(self, out: list[StreamEvent]) -> None:
        if self._unnamed:  # never named: they start here, nameless, as they did before
            for index, (call_id, name, held) in sorted(self._unnamed.items()):
                self._start_held(index, call_id, name, held, out)
            self._unnamed.clear()
        if self._text_open:
            self._text_open = False
            out.append(PartStop(TEXT_LANE))
        if self._thinking_open:
            self._thinking_open = False
            out.append(PartStop(THINKING_LANE))
        if self._refusal_open:
            out.append(PartStop(REFUSAL_LANE))
        if (
            self._reason != "length"
        ):  # a call cut by max_tokens stays open: the fold keeps its input
            if self._tools:  # (no generator made for a reply without tool calls)
                out.extend(PartStop(FIRST_TOOL_LANE + index) for index in self._tools)
            if self._function_open:
                out.append(PartStop(FUNCTION_LANE))

    def _terminate(self, out: list[StreamEvent]) -> None:
        self._close_lanes(out)
        out.append(MessageDelta(self._stop_reason(), self._usage))
        out.append(_STOP)
        self.saw_terminal = True


# --- non-streaming reply -----------------------------------------------------------------------


class _ReplyFunction(msgspec.Struct, gc=False):
    name: str = ""
    arguments: str | None = None


class _ReplyToolCall(msgspec.Struct, gc=False):
    id: str = ""
    function: _ReplyFunction = msgspec.field(default_factory=_ReplyFunction)


class _ReplyMessage(msgspec.Struct, gc=False):
    content: str | list[_ContentChunk] | None = None
    tool_calls: list[_ReplyToolCall] | None = None
    refusal: str | None = None
    function_call: _ReplyFunction | None = None


class _ReplyChoice(msgspec.Struct, gc=False):
    index: int = 0
    message: _ReplyMessage = msgspec.field(default_factory=_ReplyMessage)
    finish_reason: str | None = None


class _Reply(msgspec.Struct, gc=False):
    id: str = ""
    model: str = ""
    choices: list[_ReplyChoice] | None = None  # required of a reply (missing_field)
    usage: object = None
    error: Any = None


_reply_decoder = msgspec.json.Decoder(_Reply)


def parse_openai_completion(body: bytes) -> Message:
    """Parse a non-streaming ``chat.completion`` into a :class:`~rxturn.messages.Message`.

    Choice 0 only: its content (if non-empty; an array's text parts joined) as a text part, its
    ``refusal`` as a refusal part, then its tool calls (and a legacy ``function_call``), whose
    ``arguments`` string is parsed (empty or missing → ``{}``). Stop reason via
    :meth:`StopReason.parse` (default ``end_turn``; ``refusal`` instead of an end of turn when
    the model refused); usage ``None`` when absent or all zero.

    Raises:
        StreamProtocolError: the body is not JSON or not shaped like a completion.
        InvalidToolInputError: a tool call's ``arguments`` is not valid JSON.
        RateLimitError: the body is a rate-limit / overload ``error``.
        ProviderStreamError: the body is any other ``error``.
    """
    try:
        reply = _reply_decoder.decode(body)
    except JSON_ERRORS as exc:
        raise bad_json("OpenAI chat completion body", exc) from None
    if reply.error is not None:
        raise error_from_json(reply.error)
    if reply.choices is None:
        raise missing_field("OpenAI chat completion body", "choices")
    choice = next((c for c in reply.choices if c.index == 0), None)
    parts: list[TextPart | ToolCallPart | RefusalPart] = []
    stop = StopReason.END_TURN
    if choice is not None:
        message = choice.message
        content = message.content
        if isinstance(content, list):
            content = "".join(c.text or "" for c in content if c.type == "text")
        if content:
            parts.append(TextPart(content))
        if message.refusal:
            parts.append(RefusalPart(message.refusal))
        stop = StopReason.parse(choice.finish_reason) or StopReason.END_TURN
        truncated = (
            stop is StopReason.MAX_TOKENS
        )  # arguments may end mid-way: parsed as far as they go
        for position, call in enumerate(message.tool_calls or ()):
            name = call.function.name
            arguments = tool_arguments(call.function.arguments, position, name, truncated=truncated)
            parts.append(ToolCallPart(call.id, name, arguments))
        legacy = message.function_call
        if legacy is not None:
            arguments = tool_arguments(
                legacy.arguments, len(parts), legacy.name, truncated=truncated
            )
            parts.append(ToolCallPart("", legacy.name, arguments))
        if message.refusal and stop is StopReason.END_TURN:
            stop = StopReason.REFUSAL
    return Message(
        id=reply.id,
        model=reply.model,
        content=tuple(parts),
        stop_reason=stop,
        usage=openai_chat_usage(reply.usage),
    )
