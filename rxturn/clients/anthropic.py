"""Anthropic Messages API client (``POST {base_url}/v1/messages``).

Request body, built by the pure :func:`build_anthropic_body`:

* ``model`` — ``RequestOptions.model`` when set, else the client's (the client never changes);
* ``max_tokens`` — the options' value, else the client's (default 8192); 0 is rejected;
* ``messages`` — a message that is one text part is sent as a plain string; anything else as
  blocks, in the message's order: ``text`` (empty ones skipped), ``tool_use {id, name, input}``,
  kept ``thinking {thinking, signature}`` and ``redacted_thinking {data}`` unchanged (refusal
  parts, which Anthropic has no block for, are skipped),
  ``tool_result {tool_use_id, content, is_error only when true}`` — tool results first, as the
  API requires of a user message that carries them;
* ``system`` when the request has one, ``stream``;
* ``tools`` ``[{name, description, input_schema}]`` (omitted when none; ``strict: true`` under
  ``strict_tools``) and ``tool_choice`` from the options (``auto`` / ``any`` / ``none`` /
  ``{"type": "tool", "name": …}``);
* ``output_config`` for a ``response_format`` (below);
* ``temperature``, ``stop_sequences`` when given;
* ``thinking: {type: enabled, budget_tokens: N}`` from ``RequestOptions.thinking`` (at least
  1024, below ``max_tokens``; the API allows only ``auto`` / ``none`` tool choice with it, so a
  forced tool — ``any`` or a tool name — is rejected before anything is sent, and so is a
  ``temperature`` other than 1, which the API refuses with thinking);
  ``reasoning_effort`` is OpenAI's and is rejected;
* ``RequestOptions.extra_body`` merged in last.

With thinking enabled the client keeps the reply's thinking blocks (``replays_thinking``): the
API rejects a tool-use continuation whose assistant message lost them (docs/wire-formats.md).

A ``response_format`` is sent as the API's native structured output, ``output_config:
{format: {type: json_schema, schema}}`` (generally available: no beta header), and the reply is
the JSON as its text, after one request — a plain assistant text message the next request
carries back as it is. The API demands ``additionalProperties: false`` on every object of such a
schema, so objects are closed on the way out; a ``strict`` format also lists every property as
required, as ``strict_tools`` does (:func:`~rxturn.clients._request.strict_schema`). The
caller's tools are left out under a format, as on the other wires. ``strict_tools`` sends each
tool with ``strict: true`` and its schema tightened the same way.

Headers: ``x-api-key`` (when a key is set), ``anthropic-version: 2023-06-01``, JSON content type,
then the client's and the options' extra headers.
"""

from __future__ import annotations

from typing import Any, Unpack, cast

from ..errors import ConfigError
from ..messages import (
    Message,
    RedactedThinkingPart,
    Request,
    RequestOptions,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    ToolSchema,
)
from ._http import HttpClient, HttpSettings
from ._request import (
    JSONBody,
    check_options,
    from_env_key,
    merge_extra_body,
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


def _message(message: Message) -> dict[str, Any]:
    parts = message.content
    if len(parts) == 1 and isinstance(parts[0], TextPart):
        return {"role": message.role, "content": parts[0].text}
    results: list[dict[str, Any]] = []
    blocks: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart):
            if part.text:
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ToolCallPart):
            blocks.append(
                {"type": "tool_use", "id": part.id, "name": part.name, "input": part.input}
            )
        elif isinstance(part, ThinkingPart):
            blocks.append(
                {"type": "thinking", "thinking": part.thinking, "signature": part.signature or ""}
            )
        elif isinstance(part, RedactedThinkingPart):
            blocks.append({"type": "redacted_thinking", "data": part.data})
        elif isinstance(part, ToolResultPart):
            result: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": part.tool_call_id,
                "content": part.content,
            }
            if part.is_error:
                result["is_error"] = True
            results.append(result)
    return {"role": message.role, "content": results + blocks}


def build_anthropic_body(
    request: Request,
    options: RequestOptions,
    *,
    model: str,
    max_tokens: int,
    stream: bool,
) -> JSONBody:
    """The JSON body of an Anthropic Messages request (see the module docstring).

    Args:
        request: messages, system prompt and tools.
        options: per-request options (model override already resolved into ``model``).
        model: the model to ask.
        max_tokens: the client's default, overridden by ``options.max_tokens``.
        stream: whether to ask for an SSE stream.

    Raises:
        ConfigError: a field of ``options`` with a wrong type or range; a ``tool_choice``
            that the request's tools cannot satisfy; a bad ``thinking`` budget, or one with a
            forced tool or a temperature other than 1; a ``reasoning_effort``.

    Examples:
        >>> body = build_anthropic_body(Request(messages=(Message.user("hi"),)), RequestOptions(),
        ...                             model="m", max_tokens=100, stream=True)
        >>> body
        {'model': 'm', 'max_tokens': 100, 'messages': [{'role': 'user', 'content': 'hi'}], \
'stream': True}
    """
    check_options(options)
    fmt = options.response_format
    reject_reasoning_effort(options, "the Anthropic Messages API", "use thinking=<budget>")
    tokens = resolve_max_tokens(options, max_tokens)
    thinking = resolve_thinking(options, tokens)
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": tokens,
        "messages": [_message(message) for message in request.messages],
    }
    if request.system:
        body["system"] = request.system
    body["stream"] = stream
    if fmt is not None:
        schema = response_schema(fmt, close_objects=True)
        body["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
    else:
        if request.tools:
            body["tools"] = [_tool(tool, strict=options.strict_tools) for tool in request.tools]
        choice = resolve_tool_choice(options, request.tools)
        if choice is not None:
            mode, name = choice
            body["tool_choice"] = (
                {"type": "tool", "name": name} if mode == "tool" else {"type": mode}
            )
    put_sampling(body, options, stop_key="stop_sequences")
    if thinking is not None:
        forced = body.get("tool_choice", {}).get("type") in ("any", "tool")
        if forced:
            raise ConfigError(
                "RequestOptions.thinking cannot be combined with a forced tool call "
                f"(tool_choice={options.tool_choice!r}): the API allows only 'auto' or 'none' "
                "with extended thinking"
            )
        if options.temperature is not None and options.temperature != 1:
            raise ConfigError(
                f"RequestOptions.temperature={options.temperature!r} cannot be combined with "
                "RequestOptions.thinking: the API takes extended thinking only at temperature 1 "
                "(leave temperature unset)"
            )
        body["thinking"] = {"type": "enabled", "budget_tokens": thinking}
    return merge_extra_body(body, options)


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
        return cast(int, self._max_tokens)  # checked in __init__: required

    def _auth_headers(self, key: str | None) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if key is not None:
            headers["x-api-key"] = key
        return headers

    def _body(
        self, request: Request, options: RequestOptions, *, model: str, stream: bool
    ) -> dict[str, Any]:
        return build_anthropic_body(
            request, options, model=model, max_tokens=self.max_tokens, stream=stream
        )

    def _parse_reply(self, body: bytes, *, keep_thinking: bool) -> Message:
        from ..wire import parse_anthropic_message

        return parse_anthropic_message(body, keep_thinking=keep_thinking)
