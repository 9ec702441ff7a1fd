"""LIMIT: the floor every rxturn contender is measured against.

What is the least a Python program must do to turn a provider's SSE body into the reply? Cut
the bytes into lines, hand each ``data:`` payload to one reused typed ``msgspec`` decoder (a
tagged union on ``type`` for Anthropic, one chunk Struct for OpenAI), and fold the decoded
objects into the reply in a plain ``for`` loop: append text fragments to a per-block list, join
them once at the end. Nothing else — no SSE field rules (``event:``/``id:``/``retry:``, CR line
ends, BOM), no lane checks, no canonical events, no error reporting, no Observables.

It is written to be honestly fast, because it is the denominator of every ratio in the report:

- the body is fed in 64 KiB chunks (as a socket would deliver it) and split with C-level
  ``bytes.split`` — only the partial last line of a chunk is carried over;
- the wire Structs declare only the fields the reply needs (msgspec skips the rest in C);
- dispatch is ``type(obj) is Cls`` on the most frequent class first;
- text is never grown with ``+=``: fragments go to a list and are joined once.

It still builds a real :class:`rxturn.messages.Message` (id, model, text, stop reason, usage), so
the harness can check that it folded the same reply as every other contender.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import msgspec

from rxturn.messages import Message, StopReason, TextPart, Usage

__all__ = ["CHUNK", "LimitAnthropic", "LimitOpenAI", "limit_anthropic", "limit_openai"]

#: Feed size, the same as :func:`rxturn.replay` uses.
CHUNK: Final = 64 * 1024


def limit_anthropic(body: bytes) -> Message:
    """Fold an Anthropic Messages SSE body into the reply, fed 64 KiB at a time."""
    folder = LimitAnthropic()
    feed = folder.feed
    for offset in range(0, len(body), CHUNK):
        feed(body[offset : offset + CHUNK])
    return folder.message()


def limit_openai(body: bytes) -> Message:
    """Fold an OpenAI Chat Completions SSE body into the reply, fed 64 KiB at a time."""
    folder = LimitOpenAI()
    feed = folder.feed
    for offset in range(0, len(body), CHUNK):
        feed(body[offset : offset + CHUNK])
    return folder.message()


# --- Anthropic: a tagged union on "type" ------------------------------------------------------


class _Usage(msgspec.Struct):
    input_tokens: int | None = None
    output_tokens: int | None = None


class _Info(msgspec.Struct):
    id: str = ""
    model: str = ""
    usage: _Usage | None = None


class _TextDelta(msgspec.Struct, tag="text_delta"):
    text: str


class _JsonDelta(msgspec.Struct, tag="input_json_delta"):
    partial_json: str


class _ThinkingDelta(msgspec.Struct, tag="thinking_delta"):
    thinking: str


class _SignatureDelta(msgspec.Struct, tag="signature_delta"):
    pass


class _BlockDelta(msgspec.Struct, tag="content_block_delta"):
    index: int
    delta: _TextDelta | _JsonDelta | _ThinkingDelta | _SignatureDelta


class _Block(msgspec.Struct):
    type: str


class _BlockStart(msgspec.Struct, tag="content_block_start"):
    index: int
    content_block: _Block


class _BlockStop(msgspec.Struct, tag="content_block_stop"):
    index: int


class _StopInfo(msgspec.Struct):
    stop_reason: str | None = None


class _MessageStart(msgspec.Struct, tag="message_start"):
    message: _Info


class _MessageDelta(msgspec.Struct, tag="message_delta"):
    delta: _StopInfo
    usage: _Usage | None = None


class _MessageStop(msgspec.Struct, tag="message_stop"):
    pass


class _Ping(msgspec.Struct, tag="ping"):
    pass


_anthropic = msgspec.json.Decoder(
    _BlockDelta | _BlockStart | _BlockStop | _MessageStart | _MessageDelta | _MessageStop | _Ping
)


class LimitAnthropic:
    """The LIMIT fold for Anthropic Messages SSE, fed chunks (per-event work stays in locals)."""

    __slots__ = ("_blocks", "_id", "_in", "_model", "_order", "_out", "_stop", "_tail", "on_text")

    def __init__(self, on_text: Callable[[str], object] | None = None) -> None:
        self._blocks: dict[int, list[str]] = {}
        self._order: list[list[str]] = []
        self._id = self._model = ""
        self._stop: str | None = None
        self._in = self._out = 0
        self._tail = b""
        #: called with each text fragment (the latency probe of the concurrency run)
        self.on_text = on_text

    def feed(self, piece: bytes) -> None:
        decode = _anthropic.decode
        blocks = self._blocks
        on_text = self.on_text
        tail = self._tail
        lines = (tail + piece).split(b"\n") if tail else piece.split(b"\n")
        self._tail = lines.pop()
        for line in lines:
            if not line.startswith(b"data:"):
                continue
            event = decode(line[5:])
            cls = type(event)
            if cls is _BlockDelta:
                delta = event.delta  # pyright: ignore[reportAttributeAccessIssue]
                if type(delta) is _TextDelta:
                    blocks[event.index].append(delta.text)  # pyright: ignore[reportAttributeAccessIssue]
                    if on_text is not None:
                        on_text(delta.text)
            elif cls is _BlockStart:
                if event.content_block.type == "text":  # pyright: ignore[reportAttributeAccessIssue]
                    texts: list[str] = []
                    blocks[event.index] = texts  # pyright: ignore[reportAttributeAccessIssue]
                    self._order.append(texts)
            elif cls is _MessageDelta:
                self._stop = event.delta.stop_reason  # pyright: ignore[reportAttributeAccessIssue]
                usage = event.usage  # pyright: ignore[reportAttributeAccessIssue]
                if usage is not None:
                    if usage.input_tokens is not None:
                        self._in = usage.input_tokens
                    if usage.output_tokens is not None:
                        self._out = usage.output_tokens
            elif cls is _MessageStart:
                info = event.message  # pyright: ignore[reportAttributeAccessIssue]
                self._id, self._model = info.id, info.model
                if info.usage is not None:
                    self._in = info.usage.input_tokens or 0
                    self._out = info.usage.output_tokens or 0

    def message(self) -> Message:
        inp, out = self._in, self._out
        return Message(
            id=self._id,
            model=self._model,
            content=tuple(TextPart(text) for text in map("".join, self._order) if text),
            stop_reason=StopReason.parse(self._stop) or StopReason.END_TURN,
            usage=Usage(input_tokens=inp, output_tokens=out) if inp or out else None,
        )


# --- OpenAI: one chunk Struct ------------------------------------------------------------------


class _ChoiceDelta(msgspec.Struct):
    content: str | None = None


class _Choice(msgspec.Struct):
    delta: _ChoiceDelta | None = None
    finish_reason: str | None = None
    index: int = 0


class _OpenAIUsage(msgspec.Struct):
    prompt_tokens: int = 0
    completion_tokens: int = 0


class _Chunk(msgspec.Struct):
    id: str = ""
    model: str = ""
    choices: list[_Choice] = []
    usage: _OpenAIUsage | None = None


_openai = msgspec.json.Decoder(_Chunk)


class LimitOpenAI:
    """The LIMIT fold for OpenAI Chat Completions SSE (choice 0), fed chunks."""

    __slots__ = ("_id", "_model", "_stop", "_tail", "_texts", "_usage", "on_text")

    def __init__(self, on_text: Callable[[str], object] | None = None) -> None:
        self._texts: list[str] = []
        self._id = self._model = ""
        self._stop: str | None = None
        self._usage: _OpenAIUsage | None = None
        self._tail = b""
        self.on_text = on_text

    def feed(self, piece: bytes) -> None:
        decode = _openai.decode
        append = self._texts.append
        on_text = self.on_text
        tail = self._tail
        lines = (tail + piece).split(b"\n") if tail else piece.split(b"\n")
        self._tail = lines.pop()
        for line in lines:
            if not line.startswith(b"data:") or line.endswith(b"[DONE]"):
                continue
            chunk = decode(line[5:])
            choices = chunk.choices
            if choices:
                choice = choices[0]
                delta = choice.delta
                if delta is not None and delta.content:
                    append(delta.content)
                    if on_text is not None:
                        on_text(delta.content)
                if choice.finish_reason is not None:
                    self._stop = choice.finish_reason
                if not self._id:
                    self._id, self._model = chunk.id, chunk.model
            if chunk.usage is not None:
                self._usage = chunk.usage

    def message(self) -> Message:
        text = "".join(self._texts)
        usage = self._usage
        inp = usage.prompt_tokens if usage else 0
        out = usage.completion_tokens if usage else 0
        return Message(
            id=self._id,
            model=self._model,
            content=(TextPart(text),) if text else (),
            stop_reason=StopReason.parse(self._stop) or StopReason.END_TURN,
            usage=Usage(input_tokens=inp, output_tokens=out) if inp or out else None,
        )
