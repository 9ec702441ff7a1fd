"""Bytes of a scripted reply in each provider's wire format (pure: no IO, no clock).

The fake provider answers with exactly the bytes a real provider would send, so the official
SDKs and rxturn's own decoders can be pointed at it unmodified. Shapes follow the recorded
streams in ``tests/fixtures`` and the providers' documentation:

* **Anthropic** (``POST /v1/messages``): SSE ``event: X\\ndata: {json}\\n\\n``. ``message_start``
  (carrying usage), one ``ping`` after the first ``content_block_start``, then per block
  ``content_block_start`` / ``*_delta``... / ``content_block_stop`` — a ``thinking`` block
  (``thinking_delta``\\ s and one ``signature_delta``), a ``text`` block, one ``tool_use`` block
  per call (``input_json_delta`` fragments) — then ``message_delta`` (stop reason, output
  tokens) and ``message_stop``.
* **OpenAI** (``POST /v1/chat/completions``): SSE ``data: {chunk}\\n\\n``. A role chunk,
  ``reasoning_content`` deltas, ``content`` deltas, ``tool_calls`` deltas by index (the first
  carries id and name, later ones argument fragments), a chunk with the ``finish_reason``, a
  usage chunk with ``choices: []`` when the request asked ``stream_options.include_usage``,
  then ``data: [DONE]``.
* **OpenAI Responses** (``POST /v1/responses``): SSE ``event: X\\ndata: {json}\\n\\n`` with a
  ``sequence_number`` on every event, as the API sends them: ``response.created``,
  ``response.in_progress``, then one output item per piece — a ``reasoning`` item
  (``reasoning_summary_part.added``, ``reasoning_summary_text.delta``\\ s, ``….done``), a
  ``message`` item (``content_part.added``, ``output_text.delta``\\ s or, for a refusal,
  ``refusal.delta``\\ s, their ``.done``, ``content_part.done``), one ``function_call`` item per
  call (``function_call_arguments.delta``\\ s, ``.done``), each closed by
  ``output_item.done`` — and ``response.completed`` (``response.incomplete`` with
  ``incomplete_details.reason: max_output_tokens`` for ``max_tokens``) carrying the whole
  response and its usage.
* **Ollama** (``POST /api/chat``): NDJSON, one object per line with ``message.content`` /
  ``message.thinking`` deltas, the tool calls whole in one line, and a final ``done: true``
  line with ``done_reason`` and the ``prompt_eval_count`` / ``eval_count`` statistics.

Thinking signatures are deterministic: :func:`thinking_signature` is an HMAC of the thinking
text under a fixed key, so the server can check a signature that comes back
(:func:`anthropic_thinking_violation`, the real API's rule for tool-use continuations with
extended thinking). A Responses reasoning item's ``encrypted_content`` (sent only when the
request ``include``\\ s ``reasoning.encrypted_content``, as the API does) is made the same way.

``stop_reason: "refusal"`` makes each wire's refusal: Anthropic ``stop_reason: "refusal"`` after
the scripted text; OpenAI chat ``refusal`` deltas (the scripted text, or a stock sentence) and a
``stop`` finish, ``message.refusal`` when not streaming; Responses a ``refusal`` content part;
Ollama has no refusal, so the text is sent as ordinary content with ``done_reason: "stop"`` (a
client sees an end of turn).

Streaming replies are returned as a list with one byte string per event, so the server can
cut a stream after N events for the fault scripts. This module is the benchmark server's hot
path: deltas are built by slicing one msgspec-encoded string and concatenating precomputed
prefixes (no per-event dict, no per-event ``encode`` for ASCII text).

Usage when an entry does not script it (``usage`` key absent), deterministic so tests can
predict it: ``input_tokens`` = the number of whitespace-separated words in every text of the
request's system prompt and messages; ``output_tokens`` = the number of text and thinking
deltas plus the number of tool calls. ``usage: null`` reports none: Anthropic sends zeros,
OpenAI sends no usage (no usage chunk), Ollama omits its counters.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from collections.abc import Mapping
from typing import Any, Literal, cast

import msgspec

from ._scenario import Entry, ScenarioStopReason

__all__ = [
    "REFUSAL_TEXT",
    "FaultAction",
    "ReplyContext",
    "Wire",
    "anthropic_thinking_violation",
    "content_type",
    "default_usage",
    "error_body",
    "error_event",
    "fault_plan",
    "malformed_body",
    "malformed_event",
    "prompt_words",
    "reply_body",
    "stream_events",
    "thinking_signature",
]

Wire = Literal["anthropic", "openai", "openai-responses", "ollama"]

#: What an OpenAI wire refuses with when a ``refusal`` entry scripts no text.
REFUSAL_TEXT = "I'm sorry, but I can't help with that."

# The fake's signing key. Not a secret: signatures only need to be deterministic and to change
# when the thinking text does, so that a block edited or re-signed on the way back is caught.
_SIGNING_KEY = b"rxturn fake provider: thinking signatures"


def thinking_signature(thinking: str, *, kind: str = "anthropic") -> str:
    """The signature the fake puts on a thinking block (base64, like the real opaque ones).

    ``kind="openai-responses"`` gives a reasoning item's ``encrypted_content`` instead.
    """
    digest = hmac.new(
        _SIGNING_KEY, kind.encode() + b"\x00" + thinking.encode(), hashlib.sha256
    ).digest()
    return base64.b64encode(digest).decode()


_encode = msgspec.json.encode

_ANTHROPIC_STOP: dict[ScenarioStopReason, str] = {
    "end_turn": "end_turn",
    "tool_call": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "refusal": "refusal",
}
_OPENAI_FINISH: dict[ScenarioStopReason, str] = {
    "end_turn": "stop",
    "tool_call": "tool_calls",
    "max_tokens": "length",
    "stop_sequence": "stop",
    "refusal": "stop",  # the refusal text says it; the finish is an ordinary stop
}
_OLLAMA_DONE: dict[ScenarioStopReason, str] = {
    "end_turn": "stop",
    "tool_call": "stop",
    "max_tokens": "length",
    "stop_sequence": "stop",
    "refusal": "stop",
}


class ReplyContext(msgspec.Struct, frozen=True, kw_only=True):
    """What a reply echoes from its request.

    Attributes:
        model: the model name the request asked for (echoed like real providers do).
        seq: the request's 1-based sequence number on this server (makes ids unique).
        created: unix seconds stamped into the reply.
        prompt_words: :func:`prompt_words` of the request (the default ``input_tokens``).
        include_usage: OpenAI streaming only: the request set ``stream_options.include_usage``.
        encrypted_reasoning: Responses only: the request asked to ``include``
            ``reasoning.encrypted_content``, so reasoning items carry it.
    """

    model: str
    seq: int = 1
    created: int = 1_700_000_000
    prompt_words: int = 0
    include_usage: bool = False
    encrypted_reasoning: bool = False


# ----------------------------------------------------------------------------- helpers


def prompt_words(body: Mapping[str, Any]) -> int:
    """Whitespace-separated words in every text of a request's system prompt and messages
    (Responses: ``instructions`` and ``input``)."""
    return (
        _words(body.get("system"))
        + _words(body.get("messages"))
        + _words(body.get("instructions"))
        + _words(body.get("input"))
    )


def _refusal_text(entry: Entry) -> str:
    return entry.text or REFUSAL_TEXT


def anthropic_thinking_violation(body: Mapping[str, Any]) -> str | None:
    """The Anthropic API's 400 message for a tool-use continuation that lost its thinking.

    With extended thinking requested (``thinking.type`` ``enabled`` or ``adaptive``), the last
    assistant message that has a ``tool_use`` block must start with a ``thinking`` (or
    ``redacted_thinking``) block, and every ``thinking`` block in it must carry the signature
    the fake gave it (:func:`thinking_signature`). ``None`` when the request is fine.
    """
    thinking: Any = body.get("thinking")
    if not isinstance(thinking, dict):
        return None
    if cast("dict[str, Any]", thinking).get("type") not in ("enabled", "adaptive"):
        return None
    messages: Any = body.get("messages")
    if not isinstance(messages, list):
        return None
    history = cast("list[Any]", messages)
    for position in range(len(history) - 1, -1, -1):
        message: Any = history[position]
        if not isinstance(message, dict):
            continue
        fields = cast("dict[str, Any]", message)
        if fields.get("role") != "assistant":
            continue
        content: Any = fields.get("content")
        if not isinstance(content, list):
            return None  # plain text: no tool_use
        blocks = [
            cast("dict[str, Any]", block)
            for block in cast("list[Any]", content)
            if isinstance(block, dict)
        ]
        if not any(block.get("type") == "tool_use" for block in blocks):
            return None
        first = blocks[0].get("type")
        if first not in ("thinking", "redacted_thinking"):
            return (
                f"messages.{position}.content.0.type: Expected `thinking` or "
                f"`redacted_thinking`, but found `{first}`. When `thinking` is enabled, a final "
                "`assistant` message must start with a thinking block (preceeding the lastmost "
                "set of `tool_use` and `tool_result` blocks). We recommend you include thinking "
                "blocks from previous turns. To avoid this requirement, disable `thinking`. "
                "Please consult our documentation at "
                "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
            )
        for index, block in enumerate(blocks):
            if block.get("type") != "thinking":
                continue
            text: Any = block.get("thinking")
            signature: Any = block.get("signature")
            if not isinstance(text, str) or signature != thinking_signature(text):
                return (
                    f"messages.{position}.content.{index}: Invalid `signature` in `thinking` block"
                )
        return None
    return None


def _words(node: Any) -> int:
    if isinstance(node, str):
        return len(node.split())
    if isinstance(node, list):
        items = cast("list[Any]", node)
        return sum([_words(item) for item in items], 0)
    if isinstance(node, dict):
        mapping = cast("dict[str, Any]", node)
        text: Any = mapping.get("text")
        count = len(text.split()) if isinstance(text, str) else 0
        return count + _words(mapping.get("content"))
    return 0


def _n_pieces(text: str, size: int) -> int:
    return -(-len(text) // size)


def default_usage(entry: Entry, ctx: ReplyContext) -> tuple[int, int] | None:
    """``(input_tokens, output_tokens)`` the reply reports, or ``None`` for ``usage: null``."""
    if entry.usage is None:
        return None
    if isinstance(entry.usage, msgspec.UnsetType):
        size = entry.chunk_chars
        out = _n_pieces(entry.text, size) + _n_pieces(entry.thinking, size)
        return ctx.prompt_words, out + len(entry.tool_calls)
    return entry.usage.input_tokens, entry.usage.output_tokens


def _deltas(prefix: bytes, suffix: bytes, text: str, size: int) -> list[bytes]:
    """One event per ``size``-character piece of ``text``: ``prefix + "piece" + suffix``."""
    if not text:
        return []
    if text.isascii():
        encoded = _encode(text)
        if len(encoded) == len(text) + 2:  # nothing escaped: slice the encoding directly
            inner = encoded[1:-1]
            head, tail = prefix + b'"', b'"' + suffix
            return [head + inner[i : i + size] + tail for i in range(0, len(inner), size)]
    return [prefix + _encode(text[i : i + size]) + suffix for i in range(0, len(text), size)]


def _tool_id(wire: Wire, ctx: ReplyContext, index: int, scripted: str | None) -> str:
    if scripted is not None:
        return scripted
    return f"{'toolu' if wire == 'anthropic' else 'call'}_fake{ctx.seq:04d}_{index}"


def _message_id(wire: Wire, ctx: ReplyContext) -> str:
    return f"msg_fake{ctx.seq:06d}" if wire == "anthropic" else f"chatcmpl-fake{ctx.seq:06d}"


def _created_at(ctx: ReplyContext) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime(ctx.created))


def content_type(wire: Wire, streaming: bool) -> str:
    """The Content-Type header of a reply."""
    if not streaming:
        return "application/json"
    return "application/x-ndjson" if wire == "ollama" else "text/event-stream; charset=utf-8"


# ----------------------------------------------------------------------------- streaming


def stream_events(entry: Entry, wire: Wire, ctx: ReplyContext) -> list[bytes]:
    """The scripted reply as a list of wire events (one ``bytes`` per SSE event / NDJSON line)."""
    if wire == "anthropic":
        return _anthropic_events(entry, ctx)
    if wire == "openai":
        return _openai_events(entry, ctx)
    if wire == "openai-responses":
        return _responses_events(entry, ctx)
    return _ollama_events(entry, ctx)


def _sse(event: bytes, payload: Any) -> bytes:
    return b"event: " + event + b"\ndata: " + _encode(payload) + b"\n\n"


_A_DELTA = b'event: content_block_delta\ndata: {"type":"content_block_delta","index":%d,"delta":'
_A_PING = b'event: ping\ndata: {"type": "ping"}\n\n'


def _anthropic_block(index: int, block: dict[str, Any], deltas: list[bytes]) -> list[bytes]:
    start = _sse(
        b"content_block_start",
        {"type": "content_block_start", "index": index, "content_block": block},
    )
    stop = b'event: content_block_stop\ndata: {"type":"content_block_stop","index":%d}\n\n' % index
    return [start, *deltas, stop]


def _anthropic_events(entry: Entry, ctx: ReplyContext) -> list[bytes]:
    usage = default_usage(entry, ctx)
    in_tokens, out_tokens = usage if usage is not None else (0, 0)
    size = entry.chunk_chars
    events = [
        _sse(
            b"message_start",
            {
                "type": "message_start",
                "message": {
                    "id": _message_id("anthropic", ctx),
                    "type": "message",
                    "role": "assistant",
                    "model": ctx.model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {
                        "input_tokens": in_tokens,
                        "cache_creation_input_tokens": 0,
                        "cache_read_input_tokens": 0,
                        "output_tokens": min(out_tokens, 1),
                        "service_tier": "standard",
                    },
                },
            },
        )
    ]
    index = 0
    if entry.thinking:
        prefix = _A_DELTA % index + b'{"type":"thinking_delta","thinking":'
        deltas = _deltas(prefix, b"}}\n\n", entry.thinking, size)
        deltas.append(
            _A_DELTA % index
            + b'{"type":"signature_delta","signature":"'
            + thinking_signature(entry.thinking).encode()
            + b'"}}\n\n'
        )
        block = {"type": "thinking", "thinking": "", "signature": ""}
        events += _anthropic_block(index, block, deltas)
        index += 1
    if entry.text:
        prefix = _A_DELTA % index + b'{"type":"text_delta","text":'
        deltas = _deltas(prefix, b"}}\n\n", entry.text, size)
        events += _anthropic_block(index, {"type": "text", "text": ""}, deltas)
        index += 1
    for position, call in enumerate(entry.tool_calls):
        prefix = _A_DELTA % index + b'{"type":"input_json_delta","partial_json":'
        deltas = _deltas(prefix, b"}}\n\n", _encode(call.input).decode(), size)
        tool_block: dict[str, Any] = {
            "type": "tool_use",
            "id": _tool_id("anthropic", ctx, position, call.id),
            "name": call.name,
            "input": {},
        }
        events += _anthropic_block(index, tool_block, deltas)
        index += 1
    events.insert(2 if index else 1, _A_PING)
    events.append(
        _sse(
            b"message_delta",
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": _ANTHROPIC_STOP[entry.resolved_stop_reason],
                    "stop_sequence": None,
                },
                "usage": {"output_tokens": out_tokens},
            },
        )
    )
    events.append(b'event: message_stop\ndata: {"type":"message_stop"}\n\n')
    return events


def _openai_head(ctx: ReplyContext) -> bytes:
    return (
        b'data: {"id":"'
        + _message_id("openai", ctx).encode()
        + b'","object":"chat.completion.chunk","created":%d,"model":' % ctx.created
        + _encode(ctx.model)
        + b',"system_fingerprint":"fp_rxturn_fake","choices":'
    )


_O_OPEN = b'[{"index":0,"delta":'
_O_TAIL = b',"logprobs":null,"finish_reason":null}]}\n\n'


def _openai_events(entry: Entry, ctx: ReplyContext) -> list[bytes]:
    size = entry.chunk_chars
    head = _openai_head(ctx) + _O_OPEN
    events = [head + b'{"role":"assistant","content":"","refusal":null}' + _O_TAIL]
    events += _deltas(head + b'{"reasoning_content":', b"}" + _O_TAIL, entry.thinking, size)
    if entry.resolved_stop_reason == "refusal":
        events += _deltas(head + b'{"refusal":', b"}" + _O_TAIL, _refusal_text(entry), size)
    else:
        events += _deltas(head + b'{"content":', b"}" + _O_TAIL, entry.text, size)
    for index, call in enumerate(entry.tool_calls):
        first = {
            "index": index,
            "id": _tool_id("openai", ctx, index, call.id),
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        events.append(head + b'{"tool_calls":[' + _encode(first) + b"]}" + _O_TAIL)
        prefix = head + b'{"tool_calls":[{"index":%d,"function":{"arguments":' % index
        events += _deltas(prefix, b"}}]}" + _O_TAIL, _encode(call.input).decode(), size)
    finish = _OPENAI_FINISH[entry.resolved_stop_reason].encode()
    events.append(head + b'{},"logprobs":null,"finish_reason":"' + finish + b'"}]}\n\n')
    usage = default_usage(entry, ctx)
    if ctx.include_usage and usage is not None:
        events.append(_openai_head(ctx) + b"[]," + _openai_usage(usage)[1:] + b"\n\n")
    events.append(b"data: [DONE]\n\n")
    return events


def _openai_usage(usage: tuple[int, int]) -> bytes:
    """``{"usage":{...}}`` (the caller splices it into a chunk)."""
    prompt, completion = usage
    return _encode(
        {
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
        }
    )


def _ollama_stats(stop: ScenarioStopReason, usage: tuple[int, int] | None) -> dict[str, Any]:
    stats: dict[str, Any] = {"done_reason": _OLLAMA_DONE[stop], "done": True}
    if usage is not None:
        prompt, completion = usage
        stats |= {
            "total_duration": 1_000_000 * (prompt + completion + 1),
            "load_duration": 1_000_000,
            "prompt_eval_count": prompt,
            "prompt_eval_duration": 1_000_000 * prompt,
            "eval_count": completion,
            "eval_duration": 1_000_000 * completion,
        }
    return stats


def _ollama_tool_calls(entry: Entry, ctx: ReplyContext) -> list[dict[str, Any]]:
    return [
        {
            "id": _tool_id("ollama", ctx, index, call.id),
            "function": {"index": index, "name": call.name, "arguments": call.input},
        }
        for index, call in enumerate(entry.tool_calls)
    ]


def _ollama_events(entry: Entry, ctx: ReplyContext) -> list[bytes]:
    size = entry.chunk_chars
    head = (
        b'{"model":'
        + _encode(ctx.model)
        + b',"created_at":"'
        + _created_at(ctx).encode()
        + b'","message":{"role":"assistant","content":'
    )
    tail = b'},"done":false}\n'
    events = _deltas(head + b'"","thinking":', tail, entry.thinking, size)
    events += _deltas(head, tail, entry.text, size)
    if entry.tool_calls:
        calls = _encode(_ollama_tool_calls(entry, ctx))
        events.append(head + b'"","tool_calls":' + calls + tail)
    final: dict[str, Any] = {
        "model": ctx.model,
        "created_at": _created_at(ctx),
        "message": {"role": "assistant", "content": ""},
    }
    final |= _ollama_stats(entry.resolved_stop_reason, default_usage(entry, ctx))
    events.append(_encode(final) + b"\n")
    return events


# ----------------------------------------------------------------------------- OpenAI Responses


def _responses_ids(ctx: ReplyContext) -> tuple[str, str, str]:
    """``(response id, reasoning item id, message item id)`` of a reply."""
    return (
        f"resp_fake{ctx.seq:06d}",
        f"rs_fake{ctx.seq:06d}",
        f"msg_fake{ctx.seq:06d}",
    )


def _responses_reasoning(entry: Entry, ctx: ReplyContext) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": _responses_ids(ctx)[1],
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": entry.thinking}],
    }
    if ctx.encrypted_reasoning:
        item["encrypted_content"] = thinking_signature(entry.thinking, kind="openai-responses")
    return item


def _responses_part(entry: Entry) -> dict[str, Any]:
    if entry.resolved_stop_reason == "refusal":
        return {"type": "refusal", "refusal": _refusal_text(entry)}
    return {"type": "output_text", "annotations": [], "logprobs": [], "text": entry.text}


def _responses_message(entry: Entry, ctx: ReplyContext, status: str) -> dict[str, Any]:
    return {
        "id": _responses_ids(ctx)[2],
        "type": "message",
        "status": status,
        "content": [_responses_part(entry)],
        "role": "assistant",
    }


def _responses_call(entry: Entry, ctx: ReplyContext, index: int, status: str) -> dict[str, Any]:
    call = entry.tool_calls[index]
    return {
        "id": f"fc_fake{ctx.seq:06d}_{index}",
        "type": "function_call",
        "status": status,
        "arguments": _encode(call.input).decode(),
        "call_id": _tool_id("openai-responses", ctx, index, call.id),
        "name": call.name,
    }


def _has_message(entry: Entry) -> bool:
    return bool(entry.text) or entry.resolved_stop_reason == "refusal"


def _responses_output(entry: Entry, ctx: ReplyContext) -> list[dict[str, Any]]:
    """The finished output items: reasoning, message, function calls (those scripted)."""
    status = "incomplete" if entry.resolved_stop_reason == "max_tokens" else "completed"
    output: list[dict[str, Any]] = []
    if entry.thinking:
        output.append(_responses_reasoning(entry, ctx))
    if _has_message(entry):
        output.append(_responses_message(entry, ctx, status))
    output += [
        _responses_call(entry, ctx, index, "completed") for index in range(len(entry.tool_calls))
    ]
    return output


def _responses_object(
    entry: Entry,
    ctx: ReplyContext,
    output: list[dict[str, Any]],
    usage: tuple[int, int] | None,
    *,
    final: bool = True,
) -> dict[str, Any]:
    """A Responses ``response`` object: in progress (``final`` false) or finished."""
    incomplete = final and entry.resolved_stop_reason == "max_tokens"
    status = "in_progress" if not final else "incomplete" if incomplete else "completed"
    usage_object: dict[str, Any] | None = None
    if final and usage is not None:
        prompt, completion = usage
        usage_object = {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": completion,
            "output_tokens_details": {
                "reasoning_tokens": _n_pieces(entry.thinking, entry.chunk_chars)
            },
            "total_tokens": prompt + completion,
        }
    return {
        "id": _responses_ids(ctx)[0],
        "object": "response",
        "created_at": ctx.created,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "instructions": None,
        "max_output_tokens": None,
        "model": ctx.model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": not ctx.encrypted_reasoning,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage_object,
        "user": None,
        "metadata": {},
    }


class _ResponsesWriter:
    """Numbers the events of one Responses stream (every event has a ``sequence_number``)."""

    __slots__ = ("events", "seq")

    def __init__(self) -> None:
        self.events: list[bytes] = []
        self.seq = 0

    def event(self, kind: str, payload: dict[str, Any]) -> None:
        body = {"type": kind, "sequence_number": self.seq, **payload}
        self.events.append(_sse(kind.encode(), body))
        self.seq += 1

    def deltas(self, kind: str, head: dict[str, Any], text: str, size: int, tail: bytes) -> None:
        """One ``kind`` event per piece of ``text``: ``{...head, "delta": piece}`` + ``tail``."""
        prefix = _encode({"type": kind, **head})[:-1]
        name = b"event: " + kind.encode() + b"\ndata: "
        for piece in _deltas(b"", b"", text, size):
            self.events.append(
                name
                + prefix
                + b',"sequence_number":%d,"delta":' % self.seq
                + piece
                + tail
                + b"}\n\n"
            )
            self.seq += 1


def _responses_events(entry: Entry, ctx: ReplyContext) -> list[bytes]:
    size = entry.chunk_chars
    out = _ResponsesWriter()
    pending = _responses_object(entry, ctx, [], None, final=False)
    out.event("response.created", {"response": pending})
    out.event("response.in_progress", {"response": pending})
    output_index = 0
    _, reasoning_id, message_id = _responses_ids(ctx)
    if entry.thinking:
        where = {"item_id": reasoning_id, "output_index": output_index}
        added: dict[str, Any] = {"id": reasoning_id, "type": "reasoning", "summary": []}
        out.event("response.output_item.added", {"output_index": output_index, "item": added})
        part: dict[str, Any] = {"type": "summary_text", "text": ""}
        out.event(
            "response.reasoning_summary_part.added", {**where, "summary_index": 0, "part": part}
        )
        out.deltas(
            "response.reasoning_summary_text.delta",
            {**where, "summary_index": 0},
            entry.thinking,
            size,
            b"",
        )
        done = {**where, "summary_index": 0}
        out.event("response.reasoning_summary_text.done", {**done, "text": entry.thinking})
        part = {"type": "summary_text", "text": entry.thinking}
        out.event("response.reasoning_summary_part.done", {**done, "part": part})
        item = _responses_reasoning(entry, ctx)
        out.event("response.output_item.done", {"output_index": output_index, "item": item})
        output_index += 1
    if _has_message(entry):
        where = {"item_id": message_id, "output_index": output_index, "content_index": 0}
        added = {
            "id": message_id,
            "type": "message",
            "status": "in_progress",
            "content": [],
            "role": "assistant",
        }
        out.event("response.output_item.added", {"output_index": output_index, "item": added})
        final_part = _responses_part(entry)
        if final_part["type"] == "refusal":
            empty: dict[str, Any] = {"type": "refusal", "refusal": ""}
            out.event("response.content_part.added", {**where, "part": empty})
            text = final_part["refusal"]
            out.deltas("response.refusal.delta", where, text, size, b"")
            out.event("response.refusal.done", {**where, "refusal": text})
        else:
            empty = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
            out.event("response.content_part.added", {**where, "part": empty})
            out.deltas("response.output_text.delta", where, entry.text, size, b',"logprobs":[]')
            out.event("response.output_text.done", {**where, "text": entry.text, "logprobs": []})
        out.event("response.content_part.done", {**where, "part": final_part})
        status = "incomplete" if entry.resolved_stop_reason == "max_tokens" else "completed"
        item = _responses_message(entry, ctx, status)
        out.event("response.output_item.done", {"output_index": output_index, "item": item})
        output_index += 1
    for index in range(len(entry.tool_calls)):
        call = _responses_call(entry, ctx, index, "in_progress")
        where = {"item_id": call["id"], "output_index": output_index}
        out.event(
            "response.output_item.added",
            {"output_index": output_index, "item": {**call, "arguments": ""}},
        )
        out.deltas("response.function_call_arguments.delta", where, call["arguments"], size, b"")
        out.event(
            "response.function_call_arguments.done",
            {**where, "name": call["name"], "arguments": call["arguments"]},
        )
        item = {**call, "status": "completed"}
        out.event("response.output_item.done", {"output_index": output_index, "item": item})
        output_index += 1
    final = _responses_object(entry, ctx, _responses_output(entry, ctx), default_usage(entry, ctx))
    terminal = "response.incomplete" if final["status"] == "incomplete" else "response.completed"
    out.event(terminal, {"response": final})
    return out.events


# ----------------------------------------------------------------------------- non-streaming


def reply_body(entry: Entry, wire: Wire, ctx: ReplyContext) -> bytes:
    """The scripted reply as one non-streaming JSON body."""
    usage = default_usage(entry, ctx)
    stop = entry.resolved_stop_reason
    body: dict[str, Any]
    if wire == "anthropic":
        content: list[dict[str, Any]] = []
        if entry.thinking:
            content.append(
                {
                    "type": "thinking",
                    "thinking": entry.thinking,
                    "signature": thinking_signature(entry.thinking),
                }
            )
        if entry.text:
            content.append({"type": "text", "text": entry.text})
        content += [
            {
                "type": "tool_use",
                "id": _tool_id(wire, ctx, index, call.id),
                "name": call.name,
                "input": call.input,
            }
            for index, call in enumerate(entry.tool_calls)
        ]
        in_tokens, out_tokens = usage if usage is not None else (0, 0)
        body = {
            "id": _message_id(wire, ctx),
            "type": "message",
            "role": "assistant",
            "model": ctx.model,
            "content": content,
            "stop_reason": _ANTHROPIC_STOP[stop],
            "stop_sequence": None,
            "usage": {
                "input_tokens": in_tokens,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": out_tokens,
                "service_tier": "standard",
            },
        }
    elif wire == "openai":
        refused = stop == "refusal"
        message: dict[str, Any] = {
            "role": "assistant",
            "content": None if refused else entry.text or (None if entry.tool_calls else ""),
            "refusal": _refusal_text(entry) if refused else None,
        }
        if entry.thinking:
            message["reasoning_content"] = entry.thinking
        if entry.tool_calls:
            message["tool_calls"] = [
                {
                    "id": _tool_id(wire, ctx, index, call.id),
                    "type": "function",
                    "function": {"name": call.name, "arguments": _encode(call.input).decode()},
                }
                for index, call in enumerate(entry.tool_calls)
            ]
        body = {
            "id": _message_id(wire, ctx),
            "object": "chat.completion",
            "created": ctx.created,
            "model": ctx.model,
            "system_fingerprint": "fp_rxturn_fake",
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": _OPENAI_FINISH[stop],
                }
            ],
        }
        if usage is not None:
            body |= msgspec.json.decode(_openai_usage(usage))
    elif wire == "openai-responses":
        return _encode(_responses_object(entry, ctx, _responses_output(entry, ctx), usage))
    else:
        ollama_message: dict[str, Any] = {"role": "assistant", "content": entry.text}
        if entry.thinking:
            ollama_message["thinking"] = entry.thinking
        if entry.tool_calls:
            ollama_message["tool_calls"] = _ollama_tool_calls(entry, ctx)
        body = {"model": ctx.model, "created_at": _created_at(ctx), "message": ollama_message}
        body |= _ollama_stats(stop, usage)
    return _encode(body)


# ----------------------------------------------------------------------------- errors and faults

_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    503: "overloaded_error",
    504: "timeout_error",
    529: "overloaded_error",
}
_OPENAI_ERRORS: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}
_MESSAGES = {
    "rate_limit_error": "Rate limit exceeded",
    "requests": "Rate limit reached for requests",
    "overloaded_error": "Overloaded",
    "not_found_error": "model not found",
    "model_not_found": "model not found",
    "server_error": "The server had an error while processing your request",
}


def _error_text(kind: str, message: str | None) -> str:
    return message or f"{_MESSAGES.get(kind, 'Scripted error')} (rxturn fake provider)"


def error_body(
    wire: Wire, status: int, error_type: str | None = None, message: str | None = None
) -> bytes:
    """The JSON body a provider sends with an HTTP error ``status``.

    Anthropic ``{"type":"error","error":{"type","message"}}``; OpenAI
    ``{"error":{"message","type","param","code"}}``; Ollama ``{"error": "message"}``.
    """
    if wire == "anthropic":
        kind = error_type or _ANTHROPIC_ERROR_TYPES.get(
            status, "api_error" if status >= 500 else "invalid_request_error"
        )
        return _encode(
            {"type": "error", "error": {"type": kind, "message": _error_text(kind, message)}}
        )
    if wire in ("openai", "openai-responses"):
        default_kind, code = _OPENAI_ERRORS.get(
            status, ("server_error", None) if status >= 500 else ("invalid_request_error", None)
        )
        kind = error_type or default_kind
        text = _error_text(code if code in _MESSAGES else kind, message)
        return _encode({"error": {"message": text, "type": kind, "param": None, "code": code}})
    kind = error_type or ("not_found" if status == 404 else "error")
    return _encode({"error": message or f"{kind}: scripted HTTP {status} (rxturn fake provider)"})


def error_event(wire: Wire, error_type: str | None, message: str | None = None) -> bytes:
    """An in-stream error event (the stream ends after it, as with the real providers)."""
    if wire == "anthropic":
        kind = error_type or "overloaded_error"
        payload = {"type": "error", "error": {"type": kind, "message": _error_text(kind, message)}}
        return _sse(b"error", payload)
    if wire == "openai":
        kind = error_type or "server_error"
        payload = {
            "error": {
                "message": _error_text(kind, message),
                "type": kind,
                "param": None,
                "code": None,
            }
        }
        return b"data: " + _encode(payload) + b"\n\n"
    if wire == "openai-responses":
        kind = error_type or "server_error"
        payload = {
            "type": "error",
            "code": kind,
            "message": _error_text(kind, message),
            "param": None,
        }
        return _sse(b"error", payload)
    kind = error_type or "server_error"
    return _encode({"error": message or f"{kind}: scripted in-stream error"}) + b"\n"


def malformed_event(wire: Wire, ctx: ReplyContext) -> bytes:
    """One event whose data is not valid JSON (an unterminated string), framing intact."""
    if wire == "anthropic":
        return (
            b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
            b'"delta":{"type":"text_delta","text":"unterminated\n\n'
        )
    if wire == "openai":
        return _openai_head(ctx) + b'[{"index":0,"delta":{"content":"unterminated\n\n'
    if wire == "openai-responses":
        return (
            b"event: response.output_text.delta\n"
            b'data: {"type":"response.output_text.delta","delta":"unterminated\n\n'
        )
    return b'{"model":' + _encode(ctx.model) + b',"message":{"role":"assistant","content":"unter\n'


def malformed_body(body: bytes) -> bytes:
    """A non-streaming body cut in half: valid framing, invalid JSON."""
    return body[: max(1, len(body) // 2)]


FaultAction = Literal["stall", "malformed", "error_event", "drop"]
_ORDER: dict[FaultAction, int] = {"stall": 0, "malformed": 1, "error_event": 2, "drop": 3}


def fault_plan(entry: Entry, n_events: int) -> list[tuple[int, FaultAction]]:
    """Where the entry's faults fire: ``(events written before it, action)``, in order.

    A position at or past the end of the stream is pulled in to just before the last event,
    so a scripted fault always happens (``drop_after_events: 99`` on a 10-event stream still
    loses the terminal event). ``error_event`` and ``drop`` end the stream.
    """
    last = max(n_events - 1, 0)
    scripted: tuple[tuple[int | None, FaultAction], ...] = (
        (entry.stall_after_events, "stall"),
        (entry.malformed_after_events, "malformed"),
        (entry.error_event_after_events, "error_event"),
        (entry.drop_after_events, "drop"),
    )
    plan: list[tuple[int, FaultAction]] = [
        (min(after, last), action) for after, action in scripted if after is not None
    ]
    plan.sort(key=lambda item: (item[0], _ORDER[item[1]]))
    return plan
