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

from collections.abc import Callable
from typing import Any

import msgspec

from ._emit_base import (
    ANTHROPIC_STOP,
    OLLAMA_DONE,
    OPENAI_FINISH,
    REFUSAL_TEXT,
    ReplyContext,
    Wire,
    anthropic_text_violation,
    anthropic_thinking_violation,
    anthropic_tools_violation,
    content_type,
    created_at,
    default_usage,
    delta_events,
    encode,
    message_id,
    openai_head,
    prompt_words,
    refusal_text,
    sse,
    thinking_signature,
    tool_id,
)
from ._emit_faults import (
    FaultAction,
    error_body,
    error_event,
    fault_plan,
    malformed_body,
    malformed_event,
    route_error_body,
)
from ._emit_responses import responses_events, responses_object, responses_output
from ._scenario import Entry, ScenarioStopReason

__all__ = [
    "REFUSAL_TEXT",
    "FaultAction",
    "ReplyContext",
    "TailCache",
    "Wire",
    "anthropic_text_violation",
    "anthropic_thinking_violation",
    "anthropic_tools_violation",
    "content_type",
    "default_usage",
    "error_body",
    "error_event",
    "fault_plan",
    "malformed_body",
    "malformed_event",
    "preamble_length",
    "prompt_words",
    "reply_body",
    "route_error_body",
    "stream_body",
    "stream_events",
    "thinking_signature",
]

# ----------------------------------------------------------------------------- streaming
#
# A stream is ``lead + [head + tail for tail in tails] + trail``: ``lead`` and ``trail`` (the
# Anthropic ``message_start``; the OpenAI usage chunk and ``[DONE]``; the Ollama ``done`` line)
# and ``head`` (the OpenAI and Ollama per-chunk prefix: id, created, model) carry what the
# request decides, while the tails depend on the entry alone once its tool calls have scripted
# ids. :class:`TailCache` keeps those per entry, so a server answering the same entry again
# splices a few request fields into bytes it already has instead of encoding every event anew.


class TailCache:
    """Per entry and wire, the tails of its stream (see the comment above), built once.

    Only entries whose tails no request changes are kept (every tool call has a scripted
    ``id``; not the Responses wire, whose every event is numbered and names the response).
    The cache holds the entries it keys, so their ids stay theirs.
    """

    __slots__ = ("_saved",)

    def __init__(self) -> None:
        self._saved: dict[tuple[int, Wire], tuple[Entry, list[bytes]]] = {}

    def clear(self) -> None:
        self._saved.clear()

    def tails(self, entry: Entry, wire: Wire, ctx: ReplyContext) -> list[bytes]:
        """``[b"", *tails]`` (the leading empty item lets ``head.join`` put a head before each)."""
        key = (id(entry), wire)
        saved = self._saved.get(key)
        if saved is not None:
            return saved[1]
        built = [b"", *_TAILS[wire](entry, ctx)]
        if all(call.id is not None for call in entry.tool_calls):
            self._saved[key] = (entry, built)
        return built


def _parts(
    entry: Entry, wire: Wire, ctx: ReplyContext, cache: TailCache | None
) -> tuple[bytes, bytes, list[bytes], list[bytes]]:
    """``(lead, head, [b"", *tails], trail)`` of a streamed reply (not Responses)."""
    tails = cache.tails(entry, wire, ctx) if cache is not None else [b"", *_TAILS[wire](entry, ctx)]
    if wire == "anthropic":
        return _anthropic_start(entry, ctx), b"", tails, []
    if wire == "openai":
        return b"", openai_head(ctx) + _O_OPEN, tails, _openai_trail(entry, ctx)
    return b"", _ollama_head(ctx), tails, [_ollama_final(entry, ctx)]


def stream_events(
    entry: Entry, wire: Wire, ctx: ReplyContext, cache: TailCache | None = None
) -> list[bytes]:
    """The scripted reply as a list of wire events (one ``bytes`` per SSE event / NDJSON line).

    ``cache``: a server's :class:`TailCache`, to reuse what does not change between requests
    (the bytes are the same with or without it).
    """
    if wire == "openai-responses":
        return responses_events(entry, ctx)
    lead, head, tails, trail = _parts(entry, wire, ctx, cache)
    events = [lead] if lead else []
    events += [head + tail for tail in tails[1:]]
    events += trail
    return events


def stream_body(
    entry: Entry, wire: Wire, ctx: ReplyContext, cache: TailCache | None = None
) -> bytes:
    """``b"".join(stream_events(...))``, made without the list: the unpaced, fault-free reply."""
    if wire == "openai-responses":
        return b"".join(responses_events(entry, ctx))
    lead, head, tails, trail = _parts(entry, wire, ctx, cache)
    return lead + head.join(tails) + b"".join(trail)


#: Events a wire sends before any content (what ``first_content_delay_ms`` lets out at once).
_PREAMBLE: dict[Wire, int] = {"anthropic": 1, "openai": 1, "openai-responses": 2, "ollama": 0}


def preamble_length(wire: Wire) -> int:
    """How many of :func:`stream_events`' first events carry no content on ``wire``:
    Anthropic's ``message_start``, the OpenAI role chunk, the Responses ``response.created``
    and ``response.in_progress``; an Ollama line always carries content."""
    return _PREAMBLE[wire]


_A_DELTA = b'event: content_block_delta\ndata: {"type":"content_block_delta","index":%d,"delta":'
_A_PING = b'event: ping\ndata: {"type": "ping"}\n\n'
_A_START = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_fake%06d",'
    b'"type":"message","role":"assistant","model":%b,"content":[],"stop_reason":null,'
    b'"stop_sequence":null,"usage":%b}}\n\n'
)
_A_USAGE = (
    b'{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,'
    b'"output_tokens":%d,"service_tier":"standard"}'
)


def _anthropic_block(index: int, block: dict[str, Any], deltas: list[bytes]) -> list[bytes]:
    start = sse(
        b"content_block_start",
        {"type": "content_block_start", "index": index, "content_block": block},
    )
    stop = b'event: content_block_stop\ndata: {"type":"content_block_stop","index":%d}\n\n' % index
    return [start, *deltas, stop]


#: the counts of a ``raw_usage`` that go in ``message_delta`` (the rest go in ``message_start``)
_A_DELTA_USAGE = ("output_tokens", "output_tokens_details")


def _anthropic_start(entry: Entry, ctx: ReplyContext) -> bytes:
    """``message_start``: the message id, the model and the input side of usage."""
    if entry.raw_usage is not None:
        usage = encode({k: v for k, v in entry.raw_usage.items() if k not in _A_DELTA_USAGE})
    else:
        counts = default_usage(entry, ctx)
        in_tokens, out_tokens = counts if counts is not None else (0, 0)
        usage = _A_USAGE % (in_tokens, ctx.cache_write, ctx.cache_read, min(out_tokens, 1))
    return _A_START % (ctx.seq, encode(ctx.model), usage)


def _anthropic_tails(entry: Entry, ctx: ReplyContext) -> list[bytes]:
    """Every event after ``message_start`` (``ctx`` only names generated tool ids)."""
    usage = default_usage(entry, ctx)
    out_tokens = usage[1] if usage is not None else 0
    size = entry.chunk_chars
    events: list[bytes] = []
    index = 0
    if entry.thinking:
        prefix = _A_DELTA % index + b'{"type":"thinking_delta","thinking":'
        deltas = delta_events(prefix, b"}}\n\n", entry.thinking, size)
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
        deltas = delta_events(prefix, b"}}\n\n", entry.text, size)
        events += _anthropic_block(index, {"type": "text", "text": ""}, deltas)
        index += 1
    for position, call in enumerate(entry.tool_calls):
        prefix = _A_DELTA % index + b'{"type":"input_json_delta","partial_json":'
        deltas = delta_events(prefix, b"}}\n\n", encode(call.input).decode(), size)
        tool_block: dict[str, Any] = {
            "type": "tool_use",
            "id": tool_id("anthropic", ctx, position, call.id),
            "name": call.name,
            "input": {},
        }
        events += _anthropic_block(index, tool_block, deltas)
        index += 1
    events.insert(1 if index else 0, _A_PING)
    events.append(
        sse(
            b"message_delta",
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": ANTHROPIC_STOP[entry.resolved_stop_reason],
                    "stop_sequence": None,
                },
                "usage": {"output_tokens": out_tokens}
                if entry.raw_usage is None
                else {k: v for k, v in entry.raw_usage.items() if k in _A_DELTA_USAGE},
            },
        )
    )
    events.append(b'event: message_stop\ndata: {"type":"message_stop"}\n\n')
    return events


_O_OPEN = b'[{"index":0,"delta":'
_O_TAIL = b',"logprobs":null,"finish_reason":null}]}\n\n'
_O_DONE = b"data: [DONE]\n\n"


def _openai_tails(entry: Entry, ctx: ReplyContext) -> list[bytes]:
    """Every chunk with a choice, less its head (``ctx`` only names generated tool ids)."""
    size = entry.chunk_chars
    # As the API opens the message: content null when it will carry none (a refusal, tool
    # calls alone), refusal "" when it will be a refusal; the non-streaming message agrees.
    if entry.resolved_stop_reason == "refusal":
        role = b'{"role":"assistant","content":null,"refusal":""}'
    elif entry.tool_calls and not entry.text:
        role = b'{"role":"assistant","content":null,"refusal":null}'
    else:
        role = b'{"role":"assistant","content":"","refusal":null}'
    events = [role + _O_TAIL]
    events += delta_events(b'{"reasoning_content":', b"}" + _O_TAIL, entry.thinking, size)
    if entry.resolved_stop_reason == "refusal":
        events += delta_events(b'{"refusal":', b"}" + _O_TAIL, refusal_text(entry), size)
    else:
        events += delta_events(b'{"content":', b"}" + _O_TAIL, entry.text, size)
    for index, call in enumerate(entry.tool_calls):
        first = {
            "index": index,
            "id": tool_id("openai", ctx, index, call.id),
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        events.append(b'{"tool_calls":[' + encode(first) + b"]}" + _O_TAIL)
        prefix = b'{"tool_calls":[{"index":%d,"function":{"arguments":' % index
        events += delta_events(prefix, b"}}]}" + _O_TAIL, encode(call.input).decode(), size)
    finish = OPENAI_FINISH[entry.resolved_stop_reason].encode()
    events.append(b'{},"logprobs":null,"finish_reason":"' + finish + b'"}]}\n\n')
    return events


def _openai_trail(entry: Entry, ctx: ReplyContext) -> list[bytes]:
    """The usage chunk (when the request asked for it and there is usage) and ``[DONE]``."""
    if not ctx.include_usage:
        return [_O_DONE]
    if entry.raw_usage is not None:
        raw = encode({"usage": entry.raw_usage})
        return [openai_head(ctx) + b"[]," + raw[1:] + b"\n\n", _O_DONE]
    usage = default_usage(entry, ctx)
    if usage is None:
        return [_O_DONE]
    return [openai_head(ctx) + b"[]," + _openai_usage(usage)[1:] + b"\n\n", _O_DONE]


def _openai_usage(usage: tuple[int, int]) -> bytes:
    """``{"usage":{...}}`` (the caller splices it into a chunk)."""
    prompt, completion = usage
    return encode(
        {
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
        }
    )


def _ollama_stats(stop: ScenarioStopReason, usage: tuple[int, int] | None) -> dict[str, Any]:
    stats: dict[str, Any] = {"done_reason": OLLAMA_DONE[stop], "done": True}
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
            "id": tool_id("ollama", ctx, index, call.id),
            "function": {"index": index, "name": call.name, "arguments": call.input},
        }
        for index, call in enumerate(entry.tool_calls)
    ]


def _ollama_head(ctx: ReplyContext) -> bytes:
    return (
        b'{"model":'
        + encode(ctx.model)
        + b',"created_at":"'
        + created_at(ctx).encode()
        + b'","message":{"role":"assistant","content":'
    )


_L_TAIL = b'},"done":false}\n'


def _ollama_tails(entry: Entry, ctx: ReplyContext) -> list[bytes]:
    """Every line before ``done``, less its head (``ctx`` only names generated tool ids)."""
    size = entry.chunk_chars
    events = delta_events(b'"","thinking":', _L_TAIL, entry.thinking, size)
    events += delta_events(b"", _L_TAIL, entry.text, size)
    if entry.tool_calls:
        calls = encode(_ollama_tool_calls(entry, ctx))
        events.append(b'"","tool_calls":' + calls + _L_TAIL)
    return events


def _ollama_final(entry: Entry, ctx: ReplyContext) -> bytes:
    final: dict[str, Any] = {
        "model": ctx.model,
        "created_at": created_at(ctx),
        "message": {"role": "assistant", "content": ""},
    }
    final |= _ollama_stats(entry.resolved_stop_reason, default_usage(entry, ctx))
    final |= entry.raw_usage or {}
    return encode(final) + b"\n"


_TAILS: dict[Wire, Callable[[Entry, ReplyContext], list[bytes]]] = {
    "anthropic": _anthropic_tails,
    "openai": _openai_tails,
    "ollama": _ollama_tails,
}


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
                "id": tool_id(wire, ctx, index, call.id),
                "name": call.name,
                "input": call.input,
            }
            for index, call in enumerate(entry.tool_calls)
        ]
        in_tokens, out_tokens = usage if usage is not None else (0, 0)
        body = {
            "id": message_id(wire, ctx),
            "type": "message",
            "role": "assistant",
            "model": ctx.model,
            "content": content,
            "stop_reason": ANTHROPIC_STOP[stop],
            "stop_sequence": None,
            "usage": {
                "input_tokens": in_tokens,
                "cache_creation_input_tokens": ctx.cache_write,
                "cache_read_input_tokens": ctx.cache_read,
                "output_tokens": out_tokens,
                "service_tier": "standard",
            },
        }
    elif wire == "openai":
        refused = stop == "refusal"
        message: dict[str, Any] = {
            "role": "assistant",
            "content": None if refused else entry.text or (None if entry.tool_calls else ""),
            "refusal": refusal_text(entry) if refused else None,
        }
        if entry.thinking:
            message["reasoning_content"] = entry.thinking
        if entry.tool_calls:
            message["tool_calls"] = [
                {
                    "id": tool_id(wire, ctx, index, call.id),
                    "type": "function",
                    "function": {"name": call.name, "arguments": encode(call.input).decode()},
                }
                for index, call in enumerate(entry.tool_calls)
            ]
        body = {
            "id": message_id(wire, ctx),
            "object": "chat.completion",
            "created": ctx.created,
            "model": ctx.model,
            "system_fingerprint": "fp_rxturn_fake",
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": OPENAI_FINISH[stop],
                }
            ],
        }
        if usage is not None:
            body |= msgspec.json.decode(_openai_usage(usage))
        if entry.raw_usage is not None:
            body["usage"] = entry.raw_usage
    elif wire == "openai-responses":
        return encode(responses_object(entry, ctx, responses_output(entry, ctx), usage))
    else:
        ollama_message: dict[str, Any] = {"role": "assistant", "content": entry.text}
        if entry.thinking:
            ollama_message["thinking"] = entry.thinking
        if entry.tool_calls:
            ollama_message["tool_calls"] = _ollama_tool_calls(entry, ctx)
        body = {"model": ctx.model, "created_at": created_at(ctx), "message": ollama_message}
        body |= _ollama_stats(stop, usage)
        body |= entry.raw_usage or {}
        return encode(body)
    if wire == "anthropic" and entry.raw_usage is not None:
        body["usage"] = entry.raw_usage
    return encode(body)
