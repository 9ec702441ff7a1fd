"""Bytes of a scripted reply in each provider's wire format (pure: no IO, no clock).

The fake provider answers with exactly the bytes a real provider would send, so the official
SDKs and rxturn's own decoders can be pointed at it unmodified. Shapes follow the recorded
streams in ``shared/fixtures`` and the providers' documentation:

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
* **Ollama** (``POST /api/chat``): NDJSON, one object per line with ``message.content`` /
  ``message.thinking`` deltas, the tool calls whole in one line, and a final ``done: true``
  line with ``done_reason`` and the ``prompt_eval_count`` / ``eval_count`` statistics.

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

import time
from collections.abc import Mapping
from typing import Any, Literal, cast

import msgspec

from ._scenario import Entry, ScenarioStopReason

__all__ = [
    "SIGNATURE",
    "FaultAction",
    "ReplyContext",
    "Wire",
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
]

Wire = Literal["anthropic", "openai", "ollama"]

#: The signature the fake puts on thinking blocks (real ones are opaque base64 too).
SIGNATURE = "cnh0dXJuLWZha2Utc2lnbmF0dXJl"

_encode = msgspec.json.encode

_ANTHROPIC_STOP: dict[ScenarioStopReason, str] = {
    "end_turn": "end_turn",
    "tool_call": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
}
_OPENAI_FINISH: dict[ScenarioStopReason, str] = {
    "end_turn": "stop",
    "tool_call": "tool_calls",
    "max_tokens": "length",
    "stop_sequence": "stop",
}
_OLLAMA_DONE: dict[ScenarioStopReason, str] = {
    "end_turn": "stop",
    "tool_call": "stop",
    "max_tokens": "length",
    "stop_sequence": "stop",
}


class ReplyContext(msgspec.Struct, frozen=True, kw_only=True):
    """What a reply echoes from its request.

    Attributes:
        model: the model name the request asked for (echoed like real providers do).
        seq: the request's 1-based sequence number on this server (makes ids unique).
        created: unix seconds stamped into the reply.
        prompt_words: :func:`prompt_words` of the request (the default ``input_tokens``).
        include_usage: OpenAI streaming only: the request set ``stream_options.include_usage``.
    """

    model: str
    seq: int = 1
    created: int = 1_700_000_000
    prompt_words: int = 0
    include_usage: bool = False


# ----------------------------------------------------------------------------- helpers


def prompt_words(body: Mapping[str, Any]) -> int:
    """Whitespace-separated words in every text of a request's system prompt and messages."""
    return _words(body.get("system")) + _words(body.get("messages"))


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
            + SIGNATURE.encode()
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


# ----------------------------------------------------------------------------- non-streaming


def reply_body(entry: Entry, wire: Wire, ctx: ReplyContext) -> bytes:
    """The scripted reply as one non-streaming JSON body."""
    usage = default_usage(entry, ctx)
    stop = entry.resolved_stop_reason
    body: dict[str, Any]
    if wire == "anthropic":
        content: list[dict[str, Any]] = []
        if entry.thinking:
            content.append({"type": "thinking", "thinking": entry.thinking, "signature": SIGNATURE})
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
        message: dict[str, Any] = {
            "role": "assistant",
            "content": entry.text or (None if entry.tool_calls else ""),
            "refusal": None,
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
    if wire == "openai":
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
