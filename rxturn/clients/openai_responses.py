"""OpenAI Responses API client (``POST {base_url}/responses``).

OpenAI's current API, and the only one for some of its models. The stream is the semantic SSE
that :class:`~rxturn.wire.openai_responses.OpenAIResponsesDecoder` reads; the non-streaming
reply (the rescue) goes through :func:`~rxturn.wire.openai_responses.parse_openai_response`.
Errors map exactly as for :class:`~rxturn.clients.openai.OpenAIClient` (same error body shape).

Request body, built by the pure :func:`build_responses_body`:

* ``model`` — ``RequestOptions.model`` when set, else the client's (the client never changes);
* ``instructions`` — the system prompt, when the request has one (but see the cache switches);
* ``input`` — a list of items, in the conversation's order and each message's part order:

  - a user message's text as ``{"role": "user", "content": text}`` — with media, a list of
    ``input_text`` / ``input_image`` (``detail`` always, ``auto`` by default) / ``input_file``
    parts; its tool results first, each as ``{"type": "function_call_output", "call_id",
    "output"}``, the output a string or a list of those parts; audio is refused;
  - an assistant message's consecutive text (and refusal text, which the API has no input
    field for) as ``{"role": "assistant", "content": text}``; each tool call as
    ``{"type": "function_call", "call_id", "name", "arguments": JSON string}`` (a ``call_id``
    over the API's 64 characters, made by another wire, goes out as a stand-in, in the call
    and in its output alike: :mod:`._ids`); each kept
    reasoning item (a thinking part with an ``rs_…`` id) as ``{"type": "reasoning", "id",
    "summary": [{"type": "summary_text", "text"}], "encrypted_content"}`` — unchanged, so that
    the model gets its reasoning back; thinking parts from other providers (no id) are left out,
    and so are reasoning items last in their message (a reply cut short while reasoning), which
    the API refuses without the item that follows them, and, in a request with ``store:
    false``, reasoning items without ``encrypted_content``, which name an item OpenAI did not
    keep;

* ``stream``; ``tools`` ``[{type: function, name, description, parameters, strict}]`` —
  ``strict`` is always sent because the API defaults it to true; ``strict_tools`` tightens the
  schema as for chat — omitted when none, suppressed under a ``response_format``;
* ``tool_choice`` — ``auto`` / ``required`` (from ``any``) / ``none`` /
  ``{type: function, name}``;
* ``text: {format: {type: json_schema, name, schema, strict}}`` for a response format;
* ``max_output_tokens``, ``temperature`` when set; ``stop_sequences`` have no Responses
  equivalent and are rejected;
* ``reasoning: {effort}`` from ``reasoning_effort`` (``thinking``, Anthropic's budget, is
  rejected);
* when thinking is kept (:func:`~rxturn.clients.keeps_thinking`: by default when
  ``reasoning_effort`` is set, or ``extra_body``'s ``reasoning``): ``store: false`` and
  ``include: ["reasoning.encrypted_content"]``
  — the reasoning items come back with their encrypted content and travel in the next request
  instead of living on OpenAI's side;
* ``prompt_cache_key`` / ``prompt_cache_options`` as for chat (explicit breakpoints on the
  part before each marker in explicit mode, and for the switches: ``cache_system`` sends the
  system prompt as a first ``system`` input item with a marked text part instead of
  ``instructions``, ``cache_messages`` marks the last input item's last part);
* ``RequestOptions.extra_body`` merged in last (e.g. ``{"reasoning": {"effort": "high",
  "summary": "auto"}}`` for reasoning summaries, replacing the ``reasoning`` above whole).

Headers: ``Authorization: Bearer <key>`` when a key is set, JSON content type, then extras.
"""

from __future__ import annotations

from typing import Any, Unpack

from ..errors import ConfigError
from ..messages import (
    AudioPart,
    CachePoint,
    FileIdSource,
    ImagePart,
    MediaPart,
    Message,
    RefusalPart,
    Request,
    RequestOptions,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    UrlSource,
)
from ._base import keeps_thinking
from ._content import (
    EXPLICIT_BREAKPOINT,
    MEDIA_PARTS,
    check_inline_limits,
    check_source,
    data_url,
    explicit_switches,
    no_part_to_mark,
    plain_text,
    prompt_cache_fields,
    refuse,
)
from ._http import HttpClient, HttpSettings
from ._ids import RESPONSES_IDS, wire_call_id
from ._request import (
    JSONBody,
    check_options,
    encode_tool_arguments,
    from_env_key,
    merge_extra_body,
    put_sampling,
    reject_thinking,
    resolve_reasoning_effort,
    resolve_tool_choice,
    response_schema,
    strict_schema,
)
from .openai import DEFAULT_BASE_URL, LIMITS

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_MODEL",
    "OpenAIResponsesClient",
    "ResponsesEnvSettings",
    "build_responses_body",
]

DEFAULT_MODEL = "gpt-5-mini"


def _reasoning_item(part: ThinkingPart) -> dict[str, Any]:
    item: dict[str, Any] = {
        "type": "reasoning",
        "id": part.id,
        "summary": [{"type": "summary_text", "text": part.thinking}] if part.thinking else [],
    }
    if part.signature is not None:
        item["encrypted_content"] = part.signature
    return item


def _assistant_items(message: Message, out: list[dict[str, Any]]) -> None:
    start = len(out)
    text: list[str] = []

    def flush() -> None:
        if text:
            out.append({"role": "assistant", "content": "".join(text)})
            text.clear()

    for part in message.content:
        if isinstance(part, TextPart | RefusalPart):
            if part.text:
                text.append(part.text)
        elif isinstance(part, ToolCallPart):
            flush()
            out.append(
                {
                    "type": "function_call",
                    "call_id": wire_call_id(part.id, RESPONSES_IDS),
                    "name": part.name,
                    "arguments": encode_tool_arguments(part.input),
                }
            )
        elif isinstance(part, ThinkingPart) and part.id:
            flush()
            out.append(_reasoning_item(part))
    flush()
    # a reasoning item must come back with the item it led to: one the reply ended after (cut
    # short at max_output_tokens while reasoning) is refused with a 400, "Item 'rs_…' of type
    # 'reasoning' was provided without its required following item", so it is left out
    while len(out) > start and out[-1].get("type") == "reasoning":
        out.pop()


WIRE = "the OpenAI Responses API"


def _input_part(part: MediaPart | TextPart) -> dict[str, Any]:
    """An ``input_text`` / ``input_image`` / ``input_file`` content part."""
    if isinstance(part, TextPart):
        return {"type": "input_text", "text": part.text}
    if isinstance(part, AudioPart):
        raise refuse(part, WIRE, "it takes no audio input (OpenAI Chat's input_audio does)")
    source = check_source(part, WIRE, "openai")
    if isinstance(part, ImagePart):
        image: dict[str, Any] = {"type": "input_image", "detail": part.detail or "auto"}
        if isinstance(source, FileIdSource):
            image["file_id"] = source.file_id
        else:
            image["image_url"] = source.url if isinstance(source, UrlSource) else data_url(source)
        return image
    if isinstance(source, FileIdSource):
        return {"type": "input_file", "file_id": source.file_id}
    if isinstance(source, UrlSource):
        return {"type": "input_file", "file_url": source.url}
    if source.media_type == "text/plain":
        return {"type": "input_text", "text": plain_text(part, source, WIRE)}
    return {
        "type": "input_file",
        "filename": part.filename or "document.pdf",
        "file_data": data_url(source),
    }


def _output(result: ToolResultPart) -> str | list[dict[str, Any]]:
    content = result.content
    if isinstance(content, str):
        return content
    return [_input_part(part) for part in content if not isinstance(part, TextPart) or part.text]


def _mark(last: dict[str, Any] | None, explicit: bool) -> None:
    if not explicit:
        return
    if last is None:
        raise ConfigError(
            "a CachePoint first in a message has no content part before it to mark; put it "
            "after the content whose prefix is to be cached"
        )
    if last.get("type") == "function_call_output":  # a string output becomes a text part
        output = last["output"]
        if isinstance(output, str):
            last["output"] = [{"type": "input_text", "text": output}]
        last = last["output"][-1]
    last["prompt_cache_breakpoint"] = EXPLICIT_BREAKPOINT  # pyright: ignore[reportOptionalSubscript]


def _user_items(message: Message, explicit: bool, out: list[dict[str, Any]]) -> None:
    parts: list[dict[str, Any]] = []
    last: dict[str, Any] | None = None
    results = 0
    media = False  # a part made from media (a text document too) is kept whole
    for part in message.content:
        if isinstance(part, ToolResultPart):
            last = {
                "type": "function_call_output",
                "call_id": wire_call_id(part.tool_call_id, RESPONSES_IDS),
                "output": _output(part),
            }
            out.append(last)
            results += 1
        elif isinstance(part, TextPart):
            if part.text:
                last = _input_part(part)
                parts.append(last)
        elif isinstance(part, MEDIA_PARTS):
            last = _input_part(part)
            parts.append(last)
            media = True
        elif isinstance(part, CachePoint):
            _mark(last, explicit)
    if parts or not results:
        plain = not media and all(p["type"] == "input_text" and len(p) == 2 for p in parts)
        content = "".join(p["text"] for p in parts) if plain else parts
        out.append({"role": "user", "content": content})


def _input(request: Request, explicit: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in request.messages:
        if message.role == "assistant":
            for part in message.content:
                if isinstance(part, MEDIA_PARTS):
                    raise refuse(part, WIRE, "media goes in user messages and tool results only")
                if explicit and isinstance(part, CachePoint):  # (implicit mode drops markers)
                    raise ConfigError(
                        "a CachePoint in an assistant message: the Responses API takes explicit "
                        "breakpoints on input parts only (user messages and tool outputs), and "
                        "an assistant message goes back as output text; put the marker in the "
                        "user message that follows"
                    )
            _assistant_items(message, out)
            continue
        _user_items(message, explicit, out)
    return out


def _mark_switches(
    items: list[dict[str, Any]], options: RequestOptions, request: Request
) -> str | None:
    """Explicit mode: breakpoints for ``cache_system`` and ``cache_messages``
    (:func:`explicit_switches`); returns the ``instructions`` still to send. ``instructions``
    is a plain string, which takes no breakpoint: a cached system prompt goes as the first
    input item instead, a ``system`` message whose text part carries it."""
    system, conversation = explicit_switches(options)
    instructions = request.system
    if system and instructions:
        part: dict[str, Any] = {"type": "input_text", "text": instructions}
        part["prompt_cache_breakpoint"] = EXPLICIT_BREAKPOINT
        items.insert(0, {"role": "system", "content": [part]})
        instructions = None
    if conversation:
        last = items[-1] if items else None
        if last is None or ("role" not in last and last.get("type") != "function_call_output"):
            raise no_part_to_mark("a tool call or a reasoning item" if last else "no message")
        if last.get("role") == "assistant":
            raise no_part_to_mark("an assistant message, sent back as output text")
        if last.get("type") == "function_call_output":
            _mark(last, True)
        elif isinstance(last["content"], str):
            text: dict[str, Any] = {"type": "input_text", "text": last["content"]}
            text["prompt_cache_breakpoint"] = EXPLICIT_BREAKPOINT
            last["content"] = [text]
        else:
            last["content"][-1]["prompt_cache_breakpoint"] = EXPLICIT_BREAKPOINT
    return instructions


def build_responses_body(
    request: Request,
    options: RequestOptions,
    *,
    model: str,
    max_tokens: int | None,
    stream: bool,
    keep_thinking: bool = False,
) -> JSONBody:
    """The JSON body of a Responses API request (see the module docstring).

    Args:
        request: messages, system prompt and tools.
        options: per-request options (model override already resolved into ``model``).
        model: the model to ask.
        max_tokens: the client's default ``max_output_tokens`` (``None`` = omit), overridden
            by ``options.max_tokens``.
        stream: whether to ask for an SSE stream.
        keep_thinking: ask for reasoning items with their encrypted content, not stored.

    Raises:
        ConfigError: a non-positive ``max_tokens``; a ``tool_choice`` the tools cannot satisfy;
            tool input that is not JSON-serializable; ``stop_sequences``; a ``thinking``
            budget; a bad ``reasoning_effort`` or ``extra_body``.

    Examples:
        >>> build_responses_body(Request(messages=(Message.user("hi"),), system="be brief"),
        ...                      RequestOptions(), model="m", max_tokens=None, stream=True)
        {'model': 'm', 'input': [{'role': 'user', 'content': 'hi'}], 'stream': True, \
'instructions': 'be brief'}
    """
    check_options(options)
    reject_thinking(options, "the Responses API", "use reasoning_effort")
    if options.stop_sequences:
        raise ConfigError(
            "RequestOptions.stop_sequences: the Responses API has no stop sequences (use "
            "OpenAIClient for Chat Completions' stop)"
        )
    effort = resolve_reasoning_effort(options)
    check_inline_limits(request, LIMITS)
    cache: dict[str, Any] = {}
    explicit = prompt_cache_fields(options, cache)
    items = _input(request, explicit)
    instructions = request.system
    if explicit:
        instructions = _mark_switches(items, options, request)
    body: dict[str, Any] = {"model": model, "input": items, "stream": stream}
    body.update(cache)
    if instructions:
        body["instructions"] = instructions
    fmt = options.response_format
    if fmt is None:
        if request.tools:
            tools: list[dict[str, Any]] = []
            for tool in request.tools:
                entry: dict[str, Any] = {"type": "function", "name": tool.name}
                if tool.description:
                    entry["description"] = tool.description
                strict = bool(options.strict_tools)
                entry["parameters"] = (
                    strict_schema(tool.input_schema) if strict else (tool.input_schema)
                )
                entry["strict"] = strict
                tools.append(entry)
            body["tools"] = tools
        choice = resolve_tool_choice(options, request.tools)
        if choice is not None:
            mode, name = choice
            body["tool_choice"] = (
                {"type": "function", "name": name}
                if mode == "tool"
                else "required"
                if mode == "any"
                else mode
            )
    else:
        body["text"] = {
            "format": {
                "type": "json_schema",
                "name": fmt.name,
                "schema": response_schema(fmt),
                "strict": fmt.strict,
            }
        }
    put_sampling(body, options, max_tokens=max_tokens, tokens_key="max_output_tokens")
    if effort is not None:
        body["reasoning"] = {"effort": effort}
    if keep_thinking:
        body["store"] = False
        body["include"] = ["reasoning.encrypted_content"]
    body = merge_extra_body(body, options)
    if body.get("store") is False:
        _drop_unresolvable_reasoning(items)
    return body


def _drop_unresolvable_reasoning(items: list[dict[str, Any]]) -> None:
    """Under ``store: false`` a reasoning item travels by its ``encrypted_content``: one
    without it (kept with ``"signature": null``, as a stored conversation's reasoning is) names
    an item OpenAI never kept, which the API refuses with a 400 ("Item with id 'rs_…' not
    found. Items are not persisted when `store` is set to false"), so it is left out."""
    items[:] = [
        item
        for item in items
        if item.get("type") != "reasoning" or item.get("encrypted_content") is not None
    ]


class ResponsesEnvSettings(HttpSettings, total=False):
    """The keywords :meth:`OpenAIResponsesClient.from_env` passes on to the constructor."""

    base_url: str
    max_tokens: int | None


class OpenAIResponsesClient(HttpClient):
    """A client for the OpenAI Responses API (``POST /v1/responses``).

    Args:
        model: the default model (``RequestOptions.model`` overrides it per request).
        api_key: sent as ``Authorization: Bearer``; ``None`` reads ``OPENAI_API_KEY`` (as the
            SDK does) and, if that is unset too, sends none (local servers) — except to the
            default ``base_url``, where a missing key is a :class:`~rxturn.errors.ConfigError`.
        base_url: the API root including ``/v1`` (``https://api.openai.com/v1``).
        max_tokens: default ``max_output_tokens``; ``None`` omits it (the server decides).
        extra_headers: added to every request (e.g. ``OpenAI-Organization``).
        transport: a shared :class:`~rxturn.transport.AsyncTransport` (not closed by this
            client); by default the client opens its own aiohttp pool on first use.
        connect_timeout: seconds to connect (own pool only).
        read_timeout: longest silence between reads, not a total deadline (own pool only).

    Raises:
        ConfigError: an invalid argument.

    Examples:
        >>> OpenAIResponsesClient("gpt-5", base_url="http://127.0.0.1:8080/v1")
        OpenAIResponsesClient(model='gpt-5', base_url='http://127.0.0.1:8080/v1')
    """

    wire_format = "openai-responses"
    _key_variable = "OPENAI_API_KEY"
    _own_base_url = DEFAULT_BASE_URL
    _path = "/responses"
    replays_thinking = True

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        api_key: str | None = None,
        base_url: str = DEFAULT_BASE_URL,
        max_tokens: int | None = None,
        **settings: Unpack[HttpSettings],
    ) -> None:
        super().__init__(
            model, api_key=api_key, base_url=base_url, max_tokens=max_tokens, **settings
        )

    @classmethod
    def from_env(
        cls, model: str = DEFAULT_MODEL, **kwargs: Unpack[ResponsesEnvSettings]
    ) -> OpenAIResponsesClient:
        """A client whose key comes from ``OPENAI_API_KEY``.

        Raises:
            ConfigError: the variable is missing or empty.
        """
        return cls(model, api_key=from_env_key("OPENAI_API_KEY", cls.__name__), **kwargs)

    def _body(
        self, request: Request, options: RequestOptions, *, model: str, stream: bool
    ) -> dict[str, Any]:
        return build_responses_body(
            request,
            options,
            model=model,
            max_tokens=self.max_tokens,
            stream=stream,
            keep_thinking=keeps_thinking(self, options),
        )

    def _parse_reply(self, body: bytes, *, keep_thinking: bool) -> Message:
        from ..wire import parse_openai_response

        return parse_openai_response(body, keep_thinking=keep_thinking)
