"""Anthropic Messages API client (``POST {base_url}/v1/messages``).

Request body, built by the pure :func:`build_anthropic_body`:

* ``model`` — ``RequestOptions.model`` when set, else the client's (the client never changes);
* ``max_tokens`` — the options' value, else the client's (default 8192); 0 is rejected;
* ``messages`` — a message that is one text part is sent as a plain string; anything else as
  blocks, in the message's order: ``text`` (empty ones skipped), ``tool_use {id, name, input}``,
  kept ``thinking {thinking, signature}`` and ``redacted_thinking {data}`` unchanged (refusal
  parts, which Anthropic has no block for, are skipped, and so is another provider's reasoning:
  a thinking part with a Responses ``rs_…`` id or without a signature),
  ``tool_result {tool_use_id, content, is_error only when true}`` — tool results first, as the
  API requires of a user message that carries them; a tool call id that another wire made and
  that the API's pattern refuses goes out as a stand-in (:mod:`._ids`); images and documents
  as ``image`` / ``document`` blocks with a ``base64``, ``url`` or ``file`` source (plain text:
  a ``text`` source; ``title``, ``context``, ``citations`` on documents), also inside a tool
  result's content; audio is refused; a ``CachePoint`` puts ``cache_control`` on the block before it
  (see below);
* ``system`` when the request has one, ``stream``;
* ``tools`` ``[{name, description, input_schema}]`` (omitted when none; ``strict: true`` under
  ``strict_tools``) and ``tool_choice`` from the options (``auto`` / ``any`` / ``none`` /
  ``{"type": "tool", "name": …}``);
* ``output_config`` for a ``response_format`` (below);
* ``temperature``, ``stop_sequences`` when given;
* ``thinking: {type: enabled, budget_tokens: N}`` from ``RequestOptions.thinking`` (at least
  1024, below ``max_tokens`` — but for interleaved thinking, asked for with the
  ``anthropic-beta: interleaved-thinking-2025-05-14`` header, where the API lets the budget
  exceed it, as it spans the whole assistant turn; the API allows only ``auto`` / ``none``
  tool choice with it, so a forced tool — ``any`` or a tool name — is rejected before
  anything is sent, and so is a ``temperature`` other than 1, which the API refuses with
  thinking);
  ``reasoning_effort`` is OpenAI's and is rejected;
* ``cache_control`` — ``{"type": "ephemeral"}`` (``"ttl": "1h"`` / ``"5m"`` when asked) on the
  block before each :class:`~rxturn.messages.CachePoint`, on the system prompt (then sent as one
  text block) with ``cache_system``, on the last tool with ``cache_tools``, and at the top level
  with ``cache_messages`` (the API's automatic caching of the last cacheable block). At most
  :data:`MAX_CACHE_BREAKPOINTS`: the oldest markers are dropped first, with a warning on the
  ``rxturn.clients`` logger. A marker first in its message or right after a thinking block, and a
  1h breakpoint after a 5m one, are refused; ``prompt_cache_key`` / ``prompt_cache_options``
  (OpenAI's) are ignored;
* inline media over Anthropic's documented limits (5 MB an image, 32 MB a request) is refused;
* ``RequestOptions.extra_body`` merged in last.

With thinking enabled the client keeps the reply's thinking blocks (``replays_thinking``): the
API rejects a tool-use continuation whose assistant message lost them (docs/wire-formats.md).

A ``response_format`` is sent as the API's native structured output, ``output_config:
{format: {type: json_schema, schema}}`` (generally available: no beta header), and the reply is
the JSON as its text, after one request — a plain assistant text message the next request
carries back as it is. The API demands ``additionalProperties: false`` on every object of such a
schema, so objects are closed on the way out; a ``strict`` format also lists every property as
required, as ``strict_tools`` does (:func:`~rxturn.clients._request.strict_schema`). The
caller's tools are left out under a format, as on the other wires — except when the history
holds tool calls or results, which the API refuses in a request that defines no tools: then
the tools go along with ``tool_choice: {"type": "none"}``, so the reply is still the JSON.
``strict_tools`` sends each tool with ``strict: true`` and its schema tightened the same way.

Headers: ``x-api-key`` (when a key is set), ``anthropic-version: 2023-06-01``, JSON content type,
then the client's and the options' extra headers.
"""

from __future__ import annotations

from typing import Any, Unpack, cast

from .._arguments import shown
from ..errors import ConfigError
from ..messages import (
    AudioPart,
    CachePoint,
    DocumentPart,
    FileIdSource,
    ImagePart,
    MediaPart,
    Message,
    RedactedThinkingPart,
    Request,
    RequestOptions,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    ToolSchema,
    UrlSource,
)
from ._content import (
    MEDIA_PARTS,
    Limits,
    cache_value,
    check_inline_limits,
    check_source,
    logger,
    plain_text,
    refuse,
)
from ._http import HttpClient, HttpSettings
from ._ids import ANTHROPIC_IDS, wire_call_id
from ._request import (
    NO_MESSAGE,
    JSONBody,
    from_env_key,
    interleaved_thinking,
    merge_extra_body,
    plain_options,
    put_sampling,
    reject_reasoning_effort,
    resolve_max_tokens,
    resolve_thinking,
    resolve_tool_choice,
    response_schema,
    strict_schema,
)

__all__ = [
    "ANTHROPIC_VERSION",
    "DEFAULT_BASE_URL",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_MODEL",
    "AnthropicClient",
    "AnthropicSettings",
    "build_anthropic_body",
]

ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MODEL = "claude-sonnet-4-20250514"
DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_MAX_TOKENS = 8192


WIRE = "the Anthropic Messages API"
#: Anthropic's documented limits: 5 MB per image (the API measures the base64 text) and 32 MB
#: per request (docs.anthropic.com: vision, and the API's request size limits).
LIMITS = Limits(
    "Anthropic",
    image=(5 * 1024 * 1024, "5 MB"),
    request=(32 * 1024 * 1024, "32 MB"),
    source="Anthropic's documented vision and request size limits",
)
#: The most ``cache_control`` breakpoints one request may carry.
MAX_CACHE_BREAKPOINTS = 4


def _cache_control(ttl: str) -> dict[str, Any]:
    return {"type": "ephemeral", "ttl": ttl} if ttl else {"type": "ephemeral"}


def _source(part: MediaPart) -> dict[str, Any]:
    source = check_source(part, WIRE, "anthropic")
    if isinstance(source, UrlSource):
        return {"type": "url", "url": source.url}
    if isinstance(source, FileIdSource):
        return {"type": "file", "file_id": source.file_id}
    if source.media_type == "text/plain":
        text = plain_text(cast(DocumentPart, part), source, WIRE)
        return {"type": "text", "media_type": "text/plain", "data": text}
    # bytes: the JSON encoder writes them as base64, without a copy as str first
    return {"type": "base64", "media_type": source.media_type, "data": source.data}


def _media_block(part: MediaPart) -> dict[str, Any]:
    if isinstance(part, AudioPart):
        raise refuse(part, WIRE, "it takes no audio (OpenAI Chat's input_audio does)")
    if isinstance(part, ImagePart):
        return {"type": "image", "source": _source(part)}
    block: dict[str, Any] = {"type": "document", "source": _source(part)}
    if part.title is not None:
        block["title"] = part.title
    if part.context is not None:
        block["context"] = part.context
    if part.citations:
        block["citations"] = {"enabled": True}
    return block


def _result_content(part: ToolResultPart) -> str | list[dict[str, Any]]:
    content = part.content
    if isinstance(content, str):
        return content
    blocks: list[dict[str, Any]] = []
    for item in content:
        if isinstance(item, TextPart):
            if item.text:
                blocks.append({"type": "text", "text": item.text})
        else:
            blocks.append(_media_block(item))
    return blocks


def _message(message: Message, marks: list[dict[str, Any]]) -> dict[str, Any]:
    parts = message.content
    if len(parts) == 1 and isinstance(parts[0], TextPart):
        return {"role": message.role, "content": parts[0].text}
    results: list[dict[str, Any]] = []
    blocks: list[dict[str, Any]] = []
    previous: dict[str, Any] | None = None
    for part in parts:
        block: dict[str, Any]
        if isinstance(part, TextPart):  # (never empty: _check_text refused that)
            block = {"type": "text", "text": part.text}
        elif isinstance(part, ToolCallPart):
            call_id = wire_call_id(part.id, ANTHROPIC_IDS)
            block = {"type": "tool_use", "id": call_id, "name": part.name, "input": part.input}
        elif isinstance(part, ThinkingPart):
            if part.id or not part.signature:
                # another provider's reasoning (a Responses item has an id; Ollama's and OpenAI
                # Chat's have no signature): its signature, if any, is not Anthropic's, and the
                # API refuses a thinking block it did not sign
                continue
            block = {"type": "thinking", "thinking": part.thinking, "signature": part.signature}
        elif isinstance(part, RedactedThinkingPart):
            block = {"type": "redacted_thinking", "data": part.data}
        elif isinstance(part, MEDIA_PARTS):
            block = _media_block(part)
        elif isinstance(part, CachePoint):
            _mark(previous, part, marks)
            continue
        elif isinstance(part, ToolResultPart):
            block = {
                "type": "tool_result",
                "tool_use_id": wire_call_id(part.tool_call_id, ANTHROPIC_IDS),
                "content": _result_content(part),
            }
            if part.is_error:
                block["is_error"] = True
            results.append(block)
            previous = block
            continue
        else:  # a refusal: Anthropic has no block for it
            continue
        blocks.append(block)
        previous = block
    return {"role": message.role, "content": results + blocks}


def _messages(messages: tuple[Message, ...], marks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The request's ``messages``. The API refuses a message with no content but the final
    assistant one: an earlier assistant turn with nothing Anthropic can carry (an empty reply, a
    refusal alone) is left out, as the Responses wire leaves it out, and an empty user message
    is a ConfigError."""
    last = len(messages) - 1
    out: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if message.role == "assistant" and index != last:
            message = _without_blank_text(message)
        shaped = _message(message, marks)
        if not shaped["content"] and not isinstance(shaped["content"], str):
            if message.role == "user":
                raise ConfigError(
                    f"messages[{index}] (user) has no content the Anthropic Messages API can "
                    "take, which it refuses; give it some text"
                )
            if index != last:
                continue  # nothing said: nothing to send
        out.append(shaped)
    return out


def _blank(part: object) -> bool:
    return isinstance(part, TextPart) and (not part.text or part.text.isspace())


def _without_blank_text(message: Message) -> Message:
    """An earlier assistant message without its blank text parts: a model's reply of ``"\n\n"``
    (alone, or before its tool calls) says nothing, and the API refuses it with a 400 that no
    later turn of the conversation could get past."""
    if not any(_blank(part) for part in message.content):
        return message
    kept = tuple(part for part in message.content if not _blank(part))
    return Message(role="assistant", content=kept)


def _check_text(messages: tuple[Message, ...]) -> None:
    """Refuse the text the Messages API answers with a 400: an empty text part (a prompt of
    ``""`` included), a message whose text is all whitespace, and a final assistant message
    (a prefill) whose text ends in whitespace. The API's one exception, an empty final
    assistant message, is sent as is; the model's own earlier replies are sent without their
    blank text (:func:`_without_blank_text`), not refused."""
    last = len(messages) - 1
    for index, message in enumerate(messages):
        final = index == last
        if message.role == "assistant" and not final:
            continue
        texts = blank = 0
        empty = False
        for part in message.content:  # one pass, nothing allocated: every request walks them
            if isinstance(part, TextPart):
                texts += 1
                if not part.text:
                    empty = True
                elif part.text.isspace():
                    blank += 1
        if not texts:
            continue
        where = f"messages[{index}] ({message.role})"
        final = final and message.role == "assistant"
        if final and empty and len(message.content) == 1:
            continue  # an empty prefill: the API takes it
        if empty:
            raise ConfigError(
                f"{where} has an empty text part: the Anthropic Messages API refuses empty "
                "text content blocks; give the part some text or leave it out"
            )
        if blank == texts:
            raise ConfigError(
                f"{where} holds only whitespace text: the Anthropic Messages API refuses "
                "text content blocks without non-whitespace text; send some text"
            )
        tail = message.content[-1]
        if final and isinstance(tail, TextPart) and tail.text[-1].isspace():
            raise ConfigError(
                f"{where} is a final assistant message (a prefill) ending in whitespace, "
                "which the Anthropic Messages API refuses; strip its trailing whitespace"
            )


def _mark(block: dict[str, Any] | None, point: CachePoint, marks: list[dict[str, Any]]) -> None:
    """Put the marker's ``cache_control`` on the block before it (see the module docstring)."""
    ttl = cache_value(point.ttl or True, "CachePoint.ttl")
    if block is None:
        raise ConfigError(
            "a CachePoint first in a message has no block before it to cache; put it after "
            "the content whose prefix is to be cached"
        )
    if block["type"] in ("thinking", "redacted_thinking"):
        raise ConfigError(
            "a CachePoint right after a thinking block: Anthropic cannot put cache_control on "
            "a thinking block; put the marker after the message's text or tool blocks"
        )
    if "cache_control" not in block:
        marks.append(block)
    block["cache_control"] = _cache_control(cast(str, ttl))


def _check_ttl_order(body: dict[str, Any], marks: list[dict[str, Any]]) -> None:
    """The API caches in the order tools, system, messages, and a 1-hour breakpoint may not
    follow a 5-minute one: refuse that order here rather than as a 400."""
    controls: list[tuple[str, Any]] = []
    tools: Any = body.get("tools")
    if tools and "cache_control" in tools[-1]:
        controls.append(("the last tool", tools[-1]["cache_control"]))
    system: Any = body.get("system")
    if not isinstance(system, str) and system is not None:
        controls.append(("the system prompt", system[0]["cache_control"]))
    controls.extend(
        ("a CachePoint", block["cache_control"]) for block in marks if "cache_control" in block
    )
    if "cache_control" in body:
        controls.append(("cache_messages", body["cache_control"]))
    short: str | None = None
    for where, control in controls:
        if control.get("ttl") == "1h":
            if short is not None:
                raise ConfigError(
                    f"a 1h cache breakpoint ({where}) after a 5m one ({short}): Anthropic "
                    "needs longer-lived breakpoints first (tools, system, then messages)"
                )
        elif short is None:
            short = where


def _trim_breakpoints(marks: list[dict[str, Any]], fixed: int) -> None:
    """Keep at most :data:`MAX_CACHE_BREAKPOINTS`, dropping the oldest message markers."""
    excess = len(marks) + fixed - MAX_CACHE_BREAKPOINTS
    if excess <= 0:
        return
    for block in marks[:excess]:
        del block["cache_control"]
    logger.warning(
        "Anthropic takes at most %d cache breakpoints per request; dropped the %d oldest "
        "CachePoint marker(s) of %d (system/tools/messages switches use %d)",
        MAX_CACHE_BREAKPOINTS,
        excess,
        len(marks),
        fixed,
    )


def build_anthropic_body(
    request: Request,
    options: RequestOptions,
    *,
    model: str,
    max_tokens: int,
    stream: bool,
    interleaved: bool = False,
) -> JSONBody:
    """The JSON body of an Anthropic Messages request (see the module docstring).

    Args:
        request: messages, system prompt and tools.
        options: per-request options (model override already resolved into ``model``).
        model: the model to ask.
        max_tokens: the client's default, overridden by ``options.max_tokens``.
        stream: whether to ask for an SSE stream.
        interleaved: interleaved thinking is on (an ``anthropic-beta`` header the client
            sends asks for it; ``options.extra_headers`` are looked at here too): the thinking
            budget may then exceed ``max_tokens``, as the API documents.

    Raises:
        ConfigError: no message to send (the API refuses an empty ``messages`` with a 400);
            text the API refuses (an empty text part, whitespace-only text, a final
            assistant message ending in whitespace);
            a field of ``options`` with a wrong type or range; a ``tool_choice``
            that the request's tools cannot satisfy; a bad ``thinking`` budget, or one with a
            forced tool or a temperature other than 1; a ``reasoning_effort``.

    Examples:
        >>> body = build_anthropic_body(Request(messages=(Message.user("hi"),)), RequestOptions(),
        ...                             model="m", max_tokens=100, stream=True)
        >>> body
        {'model': 'm', 'max_tokens': 100, 'messages': [{'role': 'user', 'content': 'hi'}], \
'stream': True}
    """
    if not request.messages:
        raise ConfigError(NO_MESSAGE.format(api="the Anthropic Messages API"))
    _check_text(request.messages)
    # plain options (every field unset): no knob to resolve, only the client's cap to check
    plain = plain_options(options)
    fmt = options.response_format
    if not plain:
        reject_reasoning_effort(options, "the Anthropic Messages API", "use thinking=<budget>")
    tokens = resolve_max_tokens(options, max_tokens)
    thinking = None
    if not plain:
        interleaved = interleaved or interleaved_thinking(options.extra_headers)
        thinking = resolve_thinking(options, tokens, interleaved=interleaved)
    check_inline_limits(request, LIMITS)
    system_ttl = tools_ttl = messages_ttl = None
    if not plain:
        system_ttl = cache_value(options.cache_system, "RequestOptions.cache_system")
        tools_ttl = cache_value(options.cache_tools, "RequestOptions.cache_tools")
        messages_ttl = cache_value(options.cache_messages, "RequestOptions.cache_messages")
    marks: list[dict[str, Any]] = []
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": tokens,
        "messages": _messages(request.messages, marks),
    }
    fixed = 0
    if request.system:
        if system_ttl is None:
            body["system"] = request.system
        else:
            body["system"] = [
                {
                    "type": "text",
                    "text": request.system,
                    "cache_control": _cache_control(system_ttl),
                }
            ]
            fixed += 1
    body["stream"] = stream
    if fmt is not None:
        schema = response_schema(fmt, close_objects=True)
        body["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
        if request.tools and _holds_tool_blocks(request):
            # the API refuses tool_use / tool_result blocks in a request that defines no
            # tools: they go along, and tool_choice none keeps the reply the JSON
            body["tools"] = [_tool(tool, strict=options.strict_tools) for tool in request.tools]
            body["tool_choice"] = {"type": "none"}
    else:
        if request.tools:
            body["tools"] = [_tool(tool, strict=options.strict_tools) for tool in request.tools]
        choice = None if plain else resolve_tool_choice(options, request.tools)
        if choice is not None:
            mode, name = choice
            body["tool_choice"] = (
                {"type": "tool", "name": name} if mode == "tool" else {"type": mode}
            )
    if tools_ttl is not None and body.get("tools"):
        body["tools"][-1]["cache_control"] = _cache_control(tools_ttl)
        fixed += 1
    if messages_ttl is not None:
        body["cache_control"] = _cache_control(messages_ttl)
        fixed += 1
    if marks or fixed:  # (no breakpoint at all: nothing to trim, no order to check)
        _trim_breakpoints(marks, fixed)
        _check_ttl_order(body, marks)
    if plain:
        return body
    put_sampling(body, options, stop_key="stop_sequences")
    if thinking is not None:
        forced = body.get("tool_choice", {}).get("type") in ("any", "tool")
        if forced:
            raise ConfigError(
                "RequestOptions.thinking cannot be combined with a forced tool call "
                f"(tool_choice={shown(options.tool_choice, 100)}): the API allows only 'auto' or "
                "'none' "
                "with extended thinking"
            )
        if options.temperature is not None and options.temperature != 1:
            raise ConfigError(
                f"RequestOptions.temperature={shown(options.temperature, 100)} cannot be "
                "combined with "
                "RequestOptions.thinking: the API takes extended thinking only at temperature 1 "
                "(leave temperature unset)"
            )
        body["thinking"] = {"type": "enabled", "budget_tokens": thinking}
    return merge_extra_body(body, options)


def _holds_tool_blocks(request: Request) -> bool:
    """Whether a message of ``request`` holds a tool call or a tool result."""
    return any(
        isinstance(part, ToolCallPart | ToolResultPart)
        for message in request.messages
        for part in message.content
    )


def _tool(schema: ToolSchema, *, strict: bool) -> dict[str, Any]:
    tool: dict[str, Any] = {"name": schema.name}
    if schema.description:
        tool["description"] = schema.description
    tool["input_schema"] = strict_schema(schema.input_schema) if strict else schema.input_schema
    if strict:
        tool["strict"] = True
    return tool


class AnthropicSettings(HttpSettings, total=False):
    """The keywords :meth:`AnthropicClient.from_env` passes on to the constructor."""

    base_url: str
    max_tokens: int


class AnthropicClient(HttpClient):
    """A client for the Anthropic Messages API (and servers that speak it).

    Args:
        model: the default model (``RequestOptions.model`` overrides it per request).
        api_key: sent as ``x-api-key``; ``None`` reads ``ANTHROPIC_API_KEY`` (as the SDK does)
            and, if that is unset too, sends none (a local or fake server) — except to the
            default ``base_url``, where a missing key is a :class:`~rxturn.errors.ConfigError`.
        base_url: the API root, without ``/v1``.
        max_tokens: the default ``max_tokens`` (required by the API).
        extra_headers: added to every request (e.g. ``anthropic-beta``).
        transport: an :class:`~rxturn.transport.AsyncTransport` to share (not closed by this
            client); by default the client opens its own aiohttp pool on first use.
        connect_timeout: seconds to connect (own pool only).
        read_timeout: longest silence between reads, not a total deadline (own pool only).

    Raises:
        ConfigError: an invalid argument (empty model, bad URL, non-positive limits…).

    Examples:
        >>> client = AnthropicClient(api_key="sk-ant-example")
        >>> client
        AnthropicClient(model='claude-sonnet-4-20250514', base_url='https://api.anthropic.com')
        >>> # async with client: message = await client.create(request)
    """

    wire_format = "anthropic"
    _key_variable = "ANTHROPIC_API_KEY"
    _own_base_url = DEFAULT_BASE_URL
    _path = "/v1/messages"
    _max_tokens_required = True
    replays_thinking = True

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        api_key: str | None = None,
        base_url: str = DEFAULT_BASE_URL,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        **settings: Unpack[HttpSettings],
    ) -> None:
        super().__init__(
            model, api_key=api_key, base_url=base_url, max_tokens=max_tokens, **settings
        )
        self._interleaved = interleaved_thinking(self._extra_headers)

    @classmethod
    def from_env(
        cls, model: str = DEFAULT_MODEL, **kwargs: Unpack[AnthropicSettings]
    ) -> AnthropicClient:
        """A client whose key comes from ``ANTHROPIC_API_KEY``.

        Raises:
            ConfigError: the variable is missing or empty.
        """
        return cls(model, api_key=from_env_key("ANTHROPIC_API_KEY", cls.__name__), **kwargs)

    @property
    def max_tokens(self) -> int:
        """The default ``max_tokens`` (required by the Messages API, so never ``None``)."""
        # checked in __init__: required (an ignore, not a cast() call per request)
        return self._max_tokens  # pyright: ignore[reportReturnType]

    def _auth_headers(self, key: str | None) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if key is not None:
            headers["x-api-key"] = key
        return headers

    def _body(
        self, request: Request, options: RequestOptions, *, model: str, stream: bool
    ) -> dict[str, Any]:
        # (the attribute, not the property: required and checked in __init__, no call)
        tokens = self._max_tokens
        return build_anthropic_body(
            request,
            options,
            model=model,
            max_tokens=tokens,  # pyright: ignore[reportArgumentType]
            stream=stream,
            interleaved=self._interleaved,
        )

    def _parse_reply(self, body: bytes, *, keep_thinking: bool) -> Message:
        from ..wire import parse_anthropic_message

        return parse_anthropic_message(body, keep_thinking=keep_thinking)
