"""What every wire's reply bytes share: the reply context, deterministic usage, ids, thinking
signatures, the piecewise delta encoder and SSE framing (see :mod:`rxturn.testing._emit`)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import math
import time
from collections.abc import Mapping
from typing import Any, Literal, cast

import msgspec

from ._scenario import Entry, ScenarioStopReason

__all__ = [
    "ANTHROPIC_STOP",
    "OLLAMA_DONE",
    "OPENAI_FINISH",
    "REFUSAL_TEXT",
    "ReplyContext",
    "Wire",
    "anthropic_text_violation",
    "anthropic_thinking_violation",
    "anthropic_tools_violation",
    "content_type",
    "count_words",
    "created_at",
    "default_usage",
    "delta_events",
    "encode",
    "message_id",
    "n_pieces",
    "open_object_path",
    "openai_head",
    "prompt_words",
    "refusal_text",
    "requested_schema",
    "schema_instance",
    "sse",
    "thinking_signature",
    "tool_id",
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


encode = msgspec.json.encode

ANTHROPIC_STOP: dict[ScenarioStopReason, str] = {
    "end_turn": "end_turn",
    "tool_call": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "refusal": "refusal",
}
OPENAI_FINISH: dict[ScenarioStopReason, str] = {
    "end_turn": "stop",
    "tool_call": "tool_calls",
    "max_tokens": "length",
    "stop_sequence": "stop",
    "refusal": "stop",  # the refusal text says it; the finish is an ordinary stop
}
OLLAMA_DONE: dict[ScenarioStopReason, str] = {
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
        cache_read: Anthropic only: prompt tokens read from the fake's prompt cache
            (``cache_read_input_tokens``; see :mod:`._cache`).
        cache_write: Anthropic only: prompt tokens written to it
            (``cache_creation_input_tokens``).
    """

    model: str
    seq: int = 1
    created: int = 1_700_000_000
    prompt_words: int = 0
    include_usage: bool = False
    encrypted_reasoning: bool = False
    cache_read: int = 0
    cache_write: int = 0


# ----------------------------------------------------------------------------- helpers


def prompt_words(body: Mapping[str, Any]) -> int:
    """Whitespace-separated words in every text of a request's system prompt and messages
    (Responses: ``instructions`` and ``input``)."""
    total = 0
    for key in _PROMPT_KEYS:
        node = body.get(key)
        if node is not None:
            total += _words(node)
    return total


_PROMPT_KEYS = ("system", "messages", "instructions", "input")


def refusal_text(entry: Entry) -> str:
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


def anthropic_tools_violation(body: Mapping[str, Any]) -> str | None:
    """The Anthropic API's 400 message for a history with ``tool_use`` or ``tool_result``
    blocks in a request that defines no tools; ``None`` when the request is fine."""
    if body.get("tools"):
        return None
    messages: Any = body.get("messages")
    if not isinstance(messages, list):
        return None
    for message in cast("list[Any]", messages):
        if not isinstance(message, dict):
            continue
        content: Any = cast("dict[str, Any]", message).get("content")
        if not isinstance(content, list):
            continue  # plain text
        for block in cast("list[Any]", content):
            if not isinstance(block, dict):
                continue
            if cast("dict[str, Any]", block).get("type") in ("tool_use", "tool_result"):
                return (
                    "Requests which include `tool_use` or `tool_result` blocks must define tools."
                )
    return None


def anthropic_text_violation(body: Mapping[str, Any]) -> str | None:
    """The Anthropic API's 400 message for text it refuses: a message with empty content
    (``""`` or ``[]``; the final assistant message may be empty), an empty text block, a message
    whose text is all whitespace, or a final assistant message ending in whitespace; ``None``
    when fine."""
    messages: Any = body.get("messages")
    if not isinstance(messages, list):
        return None
    history = cast("list[Any]", messages)
    for position, message in enumerate(history):
        if not isinstance(message, dict):
            continue
        fields = cast("dict[str, Any]", message)
        final = position == len(history) - 1 and fields.get("role") == "assistant"
        content: Any = fields.get("content")
        if isinstance(content, str):
            texts = [content]
        elif isinstance(content, list):
            blocks = [
                cast("dict[str, Any]", block)
                for block in cast("list[Any]", content)
                if isinstance(block, dict)
            ]
            texts = [b.get("text") for b in blocks if b.get("type") == "text"]
            if any(text == "" for text in texts):
                return "messages: text content blocks must be non-empty"
            texts = [text for text in texts if isinstance(text, str)]
        else:
            continue
        if texts == [""] or content == []:  # string content "", or no block at all
            if final:
                continue
            return (
                f"messages.{position}: all messages must have non-empty content except for "
                "the optional final assistant message"
            )
        if texts and all(text.isspace() for text in texts):
            return "messages: text content blocks must contain non-whitespace text"
        last: Any = None
        if isinstance(content, str):
            last = content
        elif content:
            last = cast("list[Any]", content)[-1]
        tail: Any = last if isinstance(last, str) else None
        if isinstance(last, dict) and cast("dict[str, Any]", last).get("type") == "text":
            tail = cast("dict[str, Any]", last).get("text")
        if final and isinstance(tail, str) and tail[-1:].isspace():
            return "messages: final assistant content cannot end with trailing whitespace"
    return None


def _words(node: Any) -> int:
    if isinstance(node, str):
        return len(node.split())
    if isinstance(node, list):
        total = 0
        for item in cast("list[Any]", node):
            total += _words(item)
        return total
    if isinstance(node, dict):
        mapping = cast("dict[str, Any]", node)
        text: Any = mapping.get("text")
        count = len(text.split()) if isinstance(text, str) else 0
        content: Any = mapping.get("content")
        return count if content is None else count + _words(content)
    return 0


def count_words(node: Any) -> int:
    """Whitespace-separated words of the texts in a JSON value (``text`` and ``content``)."""
    return _words(node)


def n_pieces(text: str, size: int) -> int:
    return -(-len(text) // size)


def default_usage(entry: Entry, ctx: ReplyContext) -> tuple[int, int] | None:
    """``(input_tokens, output_tokens)`` the reply reports, or ``None`` for ``usage: null``."""
    if entry.usage is None:
        return None
    if isinstance(entry.usage, msgspec.UnsetType):
        size = entry.chunk_chars
        out = n_pieces(entry.text, size) + n_pieces(entry.thinking, size)
        return ctx.prompt_words, out + len(entry.tool_calls)
    return entry.usage.input_tokens, entry.usage.output_tokens


def delta_events(prefix: bytes, suffix: bytes, text: str, size: int) -> list[bytes]:
    """One event per ``size``-character piece of ``text``: ``prefix + "piece" + suffix``."""
    if not text:
        return []
    if text.isascii():
        encoded = encode(text)
        if len(encoded) == len(text) + 2:  # nothing escaped: slice the encoding directly
            inner = encoded[1:-1]
            head, tail = prefix + b'"', b'"' + suffix
            return [head + inner[i : i + size] + tail for i in range(0, len(inner), size)]
    return [prefix + encode(text[i : i + size]) + suffix for i in range(0, len(text), size)]


def tool_id(wire: Wire, ctx: ReplyContext, index: int, scripted: str | None) -> str:
    if scripted is not None:
        return scripted
    return f"{'toolu' if wire == 'anthropic' else 'call'}_fake{ctx.seq:04d}_{index}"


def message_id(wire: Wire, ctx: ReplyContext) -> str:
    return f"msg_fake{ctx.seq:06d}" if wire == "anthropic" else f"chatcmpl-fake{ctx.seq:06d}"


def created_at(ctx: ReplyContext) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime(ctx.created))


def content_type(wire: Wire, streaming: bool) -> str:
    """The Content-Type header of a reply."""
    if not streaming:
        return "application/json"
    return "application/x-ndjson" if wire == "ollama" else "text/event-stream; charset=utf-8"


def sse(event: bytes, payload: Any) -> bytes:
    return b"event: " + event + b"\ndata: " + encode(payload) + b"\n\n"


def openai_head(ctx: ReplyContext) -> bytes:
    return (
        b'data: {"id":"'
        + message_id("openai", ctx).encode()
        + b'","object":"chat.completion.chunk","created":%d,"model":' % ctx.created
        + encode(ctx.model)
        + b',"system_fingerprint":"fp_rxturn_fake","choices":'
    )


def requested_schema(body: Mapping[str, Any], wire: Wire) -> dict[str, Any] | None:
    """The JSON Schema a request asks its reply to follow, in the wire's native form
    (Anthropic ``output_config.format``, OpenAI ``response_format``, Responses ``text.format``,
    Ollama ``format``), or ``None``."""
    found: Any = None
    if wire == "anthropic":
        found = _dig(body, "output_config", "format", "schema")
    elif wire == "openai":
        found = _dig(body, "response_format", "json_schema", "schema")
    elif wire == "openai-responses":
        found = _dig(body, "text", "format", "schema")
    else:
        found = body.get("format")
    return cast("dict[str, Any]", found) if isinstance(found, dict) else None


def _dig(node: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(node, dict):
            return None
        node = cast("dict[str, Any]", node).get(key)
    return node


def open_object_path(schema: Any, path: str = "schema") -> str | None:
    """Where ``schema`` has an object without ``additionalProperties: false`` (which Anthropic's
    structured output refuses), or ``None``."""
    if isinstance(schema, list):
        for index, item in enumerate(cast("list[Any]", schema)):
            found = open_object_path(item, f"{path}[{index}]")
            if found is not None:
                return found
        return None
    if not isinstance(schema, dict):
        return None
    node = cast("dict[str, Any]", schema)
    if (node.get("type") == "object" or "properties" in node) and node.get(
        "additionalProperties"
    ) is not False:
        return path
    for key, value in node.items():
        if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            for name, sub in cast("dict[str, Any]", value).items():
                found = open_object_path(sub, f"{path}.{key}.{name}")
                if found is not None:
                    return found
        elif key in ("items", "anyOf", "allOf", "oneOf", "prefixItems"):
            found = open_object_path(value, f"{path}.{key}")
            if found is not None:
                return found
    return None


def schema_instance(schema: Any) -> Any:
    """A small value that follows ``schema``: what the fake replies to a structured-output
    request whose entry scripts no text (every property present; the first enum value or
    ``const``; ``""``, ``0``, ``false``, ``[]`` by type, grown to the schema's ``minimum``,
    ``minLength`` or ``minItems``). A local ``$ref`` (``#/$defs/Name``, how msgspec and
    pydantic write a nested model) is followed; a recursive one takes the first option of its
    ``anyOf`` that does not recurse (``null`` for an optional child)."""
    return _instance(schema, schema, frozenset())


def _instance(schema: Any, root: Any, expanding: frozenset[str]) -> Any:
    """:func:`schema_instance` of ``schema``, a part of ``root`` (where ``$ref`` s point),
    inside the ``expanding`` references."""
    if not isinstance(schema, dict):
        return None
    node = cast("dict[str, Any]", schema)
    ref = node.get("$ref")
    if isinstance(ref, str):
        target = _pointed(root, ref)
        if target is not None and ref not in expanding:
            merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
            return _instance(merged, root, expanding | {ref})
    if "const" in node:
        return node["const"]
    enum = node.get("enum")
    if isinstance(enum, list) and enum:
        return cast("list[Any]", enum)[0]
    for key in ("anyOf", "oneOf"):
        options = node.get(key)
        if isinstance(options, list) and options:
            listed = cast("list[Any]", options)
            ending = [o for o in listed if not _recurses(o, expanding)]
            return _instance((ending or listed)[0], root, expanding)
    every = node.get("allOf")
    if isinstance(every, list) and every:
        merged = dict(node)
        del merged["allOf"]
        for part in cast("list[Any]", every):
            if isinstance(part, dict):
                merged = {**cast("dict[str, Any]", part), **merged}
        return _instance(merged, root, expanding)
    kind = node.get("type")
    if isinstance(kind, list):
        kind = next((k for k in cast("list[Any]", kind) if k != "null"), "null")
    if kind == "object" or "properties" in node:
        properties = node.get("properties")
        if not isinstance(properties, dict):
            return {}
        return {
            name: _instance(sub, root, expanding)
            for name, sub in cast("dict[str, Any]", properties).items()
        }
    if kind == "array":
        count = _bound(node.get("minItems"))
        return [_instance(node.get("items"), root, expanding)] * count if count else []
    if kind == "string":
        return "x" * _bound(node.get("minLength"))
    if kind in ("integer", "number"):
        return _least(node, integer=kind == "integer")
    return False if kind == "boolean" else None


def _pointed(root: Any, ref: str) -> dict[str, Any] | None:
    """The schema a local ``$ref`` points at in ``root`` (``None``: none, or a remote one)."""
    if not ref.startswith("#/"):
        return None
    found = root
    for key in ref[2:].split("/"):
        key = key.replace("~1", "/").replace("~0", "~")
        if not isinstance(found, dict) or key not in found:
            return None
        found = cast("dict[str, Any]", found)[key]
    return cast("dict[str, Any]", found) if isinstance(found, dict) else None


def _recurses(option: Any, expanding: frozenset[str]) -> bool:
    return isinstance(option, dict) and cast("dict[str, Any]", option).get("$ref") in expanding


def _bound(value: Any) -> int:
    """A ``minLength`` / ``minItems``: a small non-negative int (others count as 0)."""
    return value if type(value) is int and 0 <= value <= 1000 else 0


def _least(node: dict[str, Any], *, integer: bool) -> int | float:
    """0, or the smallest simple number the schema's lower bounds let through."""
    value: int | float = 0
    minimum, above = _finite(node.get("minimum")), _finite(node.get("exclusiveMinimum"))
    if minimum is not None and value < minimum:
        value = math.ceil(minimum) if integer else minimum
    if above is not None and value <= above:
        value = math.floor(above) + 1 if integer else above + 1
    return value


def _finite(value: Any) -> int | float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return value
    return None
