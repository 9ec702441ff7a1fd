"""OpenAI Chat Completions client, for any compatible server (docs/wire-formats.md).

``POST {base_url}/chat/completions`` — OpenAI, Ollama's ``/v1``, vLLM, OpenRouter, LM Studio…
Request body, built by the pure :func:`build_openai_body`:

* ``model`` — ``RequestOptions.model`` when set, else the client's (the client never changes);
* ``messages`` — the system prompt first as a ``system`` message; an assistant message with tool
  calls carries ``tool_calls [{id, type: function, function {name, arguments: JSON string}}]`` and
  ``content: null`` when it has no text; an assistant refusal goes back in the message's
  ``refusal`` field, as the API returned it (``content: null`` when there is no text); kept
  thinking parts are left out on purpose — the API has no input field for them, and servers
  that stream ``reasoning_content`` (DeepSeek and others) reject it in input; every tool result
  becomes its own ``tool`` message (``tool_call_id``; an id over the API's 40 characters, made
  by another wire, goes out as a stand-in: :mod:`._ids`), and text accompanying results follows
  them as a ``user`` message; a user message with media has a list of content parts
  (``text``, ``image_url`` with a ``data:`` URL or the URL, ``file`` with ``file_data`` or
  ``file_id``, ``input_audio``; a plain-text document as ``text``); media elsewhere, or in a
  tool result without ``tool_media_in_user`` (which moves it into a user message after the
  tool messages), is refused;
* ``prompt_cache_key`` and ``prompt_cache_options`` passed through; with ``{"mode":
  "explicit"}`` each :class:`~rxturn.messages.CachePoint` becomes a ``prompt_cache_breakpoint``
  on the content part before it, ``cache_system`` one on the system message's text and
  ``cache_messages`` one on the last message's last part, and ``cache_tools`` is refused (else
  markers and switches are dropped: OpenAI caches by itself);
* ``stream``; ``stream_options: {include_usage: true}`` only when streaming with
  ``stream_usage`` on (the default; the Ollama profile turns it off, and streamed usage is then
  ``None``);
* ``tools`` ``[{type: function, function {name, description, parameters}}]`` — with
  ``strict: true`` and a tightened schema (every object closed, every property required) under
  ``strict_tools`` — omitted when none, and suppressed under a ``response_format``;
* ``tool_choice`` — ``auto`` / ``required`` (from ``any``) / ``none`` /
  ``{type: function, function {name}}``;
* ``response_format: {type: json_schema, json_schema {name, schema, strict}}`` — a strict
  format's schema tightened as ``strict_tools`` tightens tools (:func:`strict_schema`); the
  reply is the JSON as text;
* the output cap, ``temperature``, ``stop`` when set; the cap is ``max_completion_tokens`` on
  OpenAI's own endpoint (where ``max_tokens`` is deprecated and its reasoning models refuse
  it) and ``max_tokens`` on any other (what compatible servers take);
* ``reasoning_effort`` from the options (``thinking``, Anthropic's budget, is rejected: use
  ``reasoning_effort``, or ``extra_body`` for a compatible server's own field);
* ``RequestOptions.extra_body`` merged in last.

Headers: ``Authorization: Bearer <key>`` when a key is set, JSON content type, then extras.
"""

from __future__ import annotations

from typing import Any, Unpack

from .._arguments import check_bool
from ..errors import ConfigError
from ..messages import (
    AudioPart,
    CachePoint,
    FileIdSource,
    ImagePart,
    InlineSource,
    MediaPart,
    Message,
    RefusalPart,
    Request,
    RequestOptions,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    UrlSource,
)
from ._content import (
    EXPLICIT_BREAKPOINT,
    MEDIA_PARTS,
    Limits,
    b64,
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
from ._ids import CHAT_IDS, wire_call_id
from ._request import (
    NO_MESSAGE,
    JSONBody,
    encode_tool_arguments,
    from_env_key,
    merge_extra_body,
    plain_options,
    put_sampling,
    reject_thinking,
    resolve_reasoning_effort,
    resolve_tool_choice,
    response_schema,
    strict_schema,
)

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_MODEL",
    "OLLAMA_BASE_URL",
    "OpenAIClient",
    "OpenAIEnvSettings",
    "OpenAISettings",
    "build_openai_body",
    "strict_schema",
]

DEFAULT_MODEL = "gpt-4o"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
OLLAMA_BASE_URL = "http://localhost:11434/v1"


WIRE = "OpenAI Chat Completions"
#: OpenAI's documented limit for image inputs: 50 MB of total payload per request.
LIMITS = Limits(
    "OpenAI",
    image=None,
    request=(50 * 1000 * 1000, "50 MB"),
    source="OpenAI's documented image input limit",
)
_AUDIO_FORMATS = {"audio/wav": "wav", "audio/mpeg": "mp3"}


def _media_part(part: MediaPart) -> dict[str, Any]:
    """A user message's content part for an image, document or audio part."""
    source = check_source(part, WIRE, "openai")
    if isinstance(part, ImagePart):
        if isinstance(source, FileIdSource):
            raise refuse(part, WIRE, "image_url takes a URL or inline bytes, not a file id")
        url = source.url if isinstance(source, UrlSource) else data_url(source)
        image: dict[str, Any] = {"url": url}
        if part.detail is not None:
            image["detail"] = part.detail
        return {"type": "image_url", "image_url": image}
    if isinstance(part, AudioPart):
        if not isinstance(source, InlineSource):
            raise refuse(part, WIRE, "input_audio takes inline bytes (wav or mp3) only")
        return {
            "type": "input_audio",
            "input_audio": {"data": b64(source.data), "format": _AUDIO_FORMATS[source.media_type]},
        }
    if isinstance(source, UrlSource):
        raise refuse(part, WIRE, "a file part takes inline bytes or a file id, not a URL")
    if isinstance(source, FileIdSource):
        return {"type": "file", "file": {"file_id": source.file_id}}
    if source.media_type == "text/plain":
        return {"type": "text", "text": plain_text(part, source, WIRE)}
    return {
        "type": "file",
        "file": {"filename": part.filename or "document.pdf", "file_data": data_url(source)},
    }


class _Content:
    """One message's content parts as they are built; markers attach to the last part."""

    __slots__ = ("explicit", "media", "parts")

    def __init__(self, explicit: bool) -> None:
        self.parts: list[dict[str, Any]] = []
        self.explicit = explicit
        self.media = False  # a part made from media (a text document too) is kept whole

    def text(self, text: str) -> None:
        if text:
            self.parts.append({"type": "text", "text": text})

    def mark(self, last: dict[str, Any] | None) -> None:
        """A :class:`CachePoint`: an explicit breakpoint on ``last`` in explicit mode."""
        if not self.explicit:
            return
        if last is None:
            raise ConfigError(
                "a CachePoint first in a message has no content part before it to mark; put it "
                "after the content whose prefix is to be cached"
            )
        last["prompt_cache_breakpoint"] = EXPLICIT_BREAKPOINT

    def value(self) -> str | list[dict[str, Any]]:
        """A plain string when every part is the message's own unmarked text (what the API has
        always got); a text document stays a part of its own, not run into the prompt."""
        if not self.media and all(p["type"] == "text" and len(p) == 2 for p in self.parts):
            return "".join(p["text"] for p in self.parts)
        return self.parts


def _tool_message(
    result: ToolResultPart, options: RequestOptions, media: list[MediaPart]
) -> dict[str, Any]:
    if result.media and not options.tool_media_in_user:
        raise refuse(
            result.media[0],
            WIRE,
            "a tool message carries text only; set RequestOptions(tool_media_in_user=True) to "
            "send a tool result's media in a user message after the tool messages",
        )
    media.extend(result.media)
    call_id = wire_call_id(result.tool_call_id, CHAT_IDS)
    return {"role": "tool", "tool_call_id": call_id, "content": result.text}


def _user_messages(
    message: Message, options: RequestOptions, explicit: bool, out: list[dict[str, Any]]
) -> None:
    content = _Content(explicit)
    moved: list[MediaPart] = []
    last: dict[str, Any] | None = None
    tools = 0
    for part in message.content:
        if isinstance(part, TextPart):
            content.text(part.text)
            last = content.parts[-1] if part.text else last
        elif isinstance(part, MEDIA_PARTS):
            last = _media_part(part)
            content.parts.append(last)
            content.media = True
        elif isinstance(part, ToolResultPart):
            entry = _tool_message(part, options, moved)
            out.append(entry)
            tools += 1
            if explicit:  # a marker after a result marks the tool message's text
                entry["content"] = [{"type": "text", "text": entry["content"]}]
                last = entry["content"][0]
        elif isinstance(part, CachePoint):
            content.mark(last)
    if explicit:  # unmarked tool messages keep their plain string
        for entry in out[len(out) - tools :]:
            if len(entry["content"][0]) == 2:
                entry["content"] = entry["content"][0]["text"]
    if moved:
        content.parts[:0] = [_media_part(part) for part in moved]
        content.media = True
    if content.parts or not tools:
        out.append({"role": "user", "content": content.value()})


def _messages(request: Request, options: RequestOptions, explicit: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if request.system:
        out.append({"role": "system", "content": request.system})
    for message in request.messages:
        if message.role != "assistant":
            _user_messages(message, options, explicit, out)
            continue
        for part in message.content:
            if isinstance(part, MEDIA_PARTS):
                raise refuse(part, WIRE, "media goes in user messages only")
        texts = [part.text for part in message.content if isinstance(part, TextPart)]
        text = "".join(texts)
        calls = [part for part in message.content if isinstance(part, ToolCallPart)]
        refusal = "".join(p.text for p in message.content if isinstance(p, RefusalPart))
        entry: dict[str, Any] = {
            "role": "assistant",
            "content": text if text or not (calls or refusal) else None,
        }
        if explicit and any(isinstance(part, CachePoint) for part in message.content):
            if not text:
                raise ConfigError(
                    "a CachePoint in an assistant message without text: OpenAI puts explicit "
                    "breakpoints on content parts, and this message has none"
                )
            entry["content"] = [
                {"type": "text", "text": text, "prompt_cache_breakpoint": EXPLICIT_BREAKPOINT}
            ]
        if refusal:
            entry["refusal"] = refusal
        if calls:
            entry["tool_calls"] = [
                {
                    "id": wire_call_id(call.id, CHAT_IDS),
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": encode_tool_arguments(call.input),
                    },
                }
                for call in calls
            ]
        out.append(entry)
    return out


def _mark_switches(
    messages: list[dict[str, Any]], options: RequestOptions, request: Request
) -> None:
    """Explicit mode: the system message's text and the last message's last content part
    carry a breakpoint when ``cache_system`` / ``cache_messages`` ask
    (:func:`explicit_switches`)."""
    system, conversation = explicit_switches(options)
    if system and request.system:
        _mark_last_part(messages[0])
    if conversation and messages and not _mark_last_part(messages[-1]):
        raise no_part_to_mark("an assistant message without text (its tool calls)")


def _mark_last_part(entry: dict[str, Any]) -> bool:
    """A breakpoint on ``entry``'s last content part (a plain string becomes one text part);
    ``False`` when it has none."""
    content = entry.get("content")
    if isinstance(content, str):
        entry["content"] = [
            {"type": "text", "text": content, "prompt_cache_breakpoint": EXPLICIT_BREAKPOINT}
        ]
    elif content:
        content[-1]["prompt_cache_breakpoint"] = EXPLICIT_BREAKPOINT
    else:
        return False
    return True


def build_openai_body(
    request: Request,
    options: RequestOptions,
    *,
    model: str,
    max_tokens: int | None,
    stream: bool,
    stream_usage: bool = True,
    tokens_key: str = "max_tokens",
) -> JSONBody:
    """The JSON body of a Chat Completions request (see the module docstring).

    Args:
        request: messages, system prompt and tools.
        options: per-request options (model override already resolved into ``model``).
        model: the model to ask.
        max_tokens: the client's default (``None`` = omit), overridden by ``options``.
        stream: whether to ask for an SSE stream.
        stream_usage: ask for the final usage chunk when streaming.
        tokens_key: the output cap's field: ``max_tokens``, or ``max_completion_tokens`` (OpenAI's
            own endpoint).

    Raises:
        ConfigError: no message to send, not even a system prompt (the API refuses an empty
            ``messages`` with a 400); a non-positive ``max_tokens``; a ``tool_choice`` the
            tools cannot satisfy; tool input that is not JSON-serializable; a ``thinking``
            budget; a bad ``reasoning_effort`` or ``extra_body``.

    Examples:
        >>> build_openai_body(Request(messages=(Message.user("hi"),), system="be brief"),
        ...                   RequestOptions(), model="m", max_tokens=None, stream=True)
        {'model': 'm', 'messages': [{'role': 'system', 'content': 'be brief'}, \
{'role': 'user', 'content': 'hi'}], 'stream': True, 'stream_options': {'include_usage': True}}
    """
    if not request.messages and not request.system:
        raise ConfigError(NO_MESSAGE.format(api="Chat Completions"))
    # plain options (every field unset): no knob to resolve, only the client's cap to write
    plain = plain_options(options)
    if not plain:
        reject_thinking(
            options,
            "Chat Completions",
            "use reasoning_effort, or extra_body for a server's own field",
        )
    effort = None if plain else resolve_reasoning_effort(options)
    check_inline_limits(request, LIMITS)
    cache: dict[str, Any] = {}
    explicit = False if plain else prompt_cache_fields(options, cache)
    messages = _messages(request, options, explicit)
    if explicit:
        _mark_switches(messages, options, request)
    body: dict[str, Any] = {"model": model, "messages": messages, "stream": stream}
    body.update(cache)
    if stream and stream_usage:
        body["stream_options"] = {"include_usage": True}
    fmt = options.response_format
    if fmt is None:
        if request.tools:
            tools: list[dict[str, Any]] = []
            for tool in request.tools:
                function: dict[str, Any] = {"name": tool.name}
                if tool.description:
                    function["description"] = tool.description
                if options.strict_tools:
                    function["parameters"] = strict_schema(tool.input_schema)
                    function["strict"] = True
                else:
                    function["parameters"] = tool.input_schema
                tools.append({"type": "function", "function": function})
            body["tools"] = tools
        choice = None if plain else resolve_tool_choice(options, request.tools)
        if choice is not None:
            mode, name = choice
            body["tool_choice"] = (
                {"type": "function", "function": {"name": name}}
                if mode == "tool"
                else "required"
                if mode == "any"
                else mode
            )
    else:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {
                "name": fmt.name,
                "schema": response_schema(fmt),
                "strict": fmt.strict,
            },
        }
    put_sampling(body, options, max_tokens=max_tokens, tokens_key=tokens_key, stop_key="stop")
    if plain:
        return body
    if effort is not None:
        body["reasoning_effort"] = effort
    return merge_extra_body(body, options)


class OpenAISettings(HttpSettings, total=False):
    """The keywords :meth:`OpenAIClient.ollama` passes on to the constructor."""

    max_tokens: int | None
    stream_usage: bool


class OpenAIEnvSettings(OpenAISettings, total=False):
    """The keywords :meth:`OpenAIClient.from_env` passes on to the constructor."""

    base_url: str


class OpenAIClient(HttpClient):
    """A client for OpenAI Chat Completions and every server that speaks it.

    Args:
        model: the default model (``RequestOptions.model`` overrides it per request).
        api_key: sent as ``Authorization: Bearer``; ``None`` reads ``OPENAI_API_KEY`` (as the
            SDK does) and, if that is unset too, sends none (local servers) — except to the
            default ``base_url``, where a missing key is a :class:`~rxturn.errors.ConfigError`.
        base_url: the API root including ``/v1`` (``https://api.openai.com/v1``).
        max_tokens: default ``max_tokens``; ``None`` omits it (the server decides).
        stream_usage: ask for usage in streams (``stream_options.include_usage``); some
            compatible servers reject or ignore it.
        extra_headers: added to every request (e.g. ``OpenAI-Organization``).
        transport: a shared :class:`~rxturn.transport.AsyncTransport` (not closed by this
            client); by default the client opens its own aiohttp pool on first use.
        connect_timeout: seconds to connect (own pool only).
        read_timeout: longest silence between reads, not a total deadline (own pool only).

    Raises:
        ConfigError: an invalid argument.

    Examples:
        >>> OpenAIClient.ollama("llama3.2")
        OpenAIClient(model='llama3.2', base_url='http://localhost:11434/v1')
    """

    wire_format = "openai"
    _key_variable = "OPENAI_API_KEY"
    _own_base_url = DEFAULT_BASE_URL
    _path = "/chat/completions"

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        api_key: str | None = None,
        base_url: str = DEFAULT_BASE_URL,
        max_tokens: int | None = None,
        stream_usage: bool = True,
        **settings: Unpack[HttpSettings],
    ) -> None:
        check_bool(stream_usage, f"{type(self).__name__}: stream_usage")  # before the key's check
        super().__init__(
            model, api_key=api_key, base_url=base_url, max_tokens=max_tokens, **settings
        )
        self._stream_usage = stream_usage
        self._tokens_key = "max_completion_tokens" if self._at_own_endpoint() else "max_tokens"

    @classmethod
    def ollama(
        cls, model: str, base_url: str = OLLAMA_BASE_URL, **kwargs: Unpack[OpenAISettings]
    ) -> OpenAIClient:
        """The Ollama profile of the OpenAI-compatible API: no key, no streamed usage."""
        kwargs.setdefault("stream_usage", False)
        client = cls(model, base_url=base_url, **kwargs)
        client._key = None  # never OPENAI_API_KEY: it is not Ollama's
        return client

    @classmethod
    def from_env(
        cls, model: str = DEFAULT_MODEL, **kwargs: Unpack[OpenAIEnvSettings]
    ) -> OpenAIClient:
        """A client whose key comes from ``OPENAI_API_KEY``.

        Raises:
            ConfigError: the variable is missing or empty.
        """
        return cls(model, api_key=from_env_key("OPENAI_API_KEY", cls.__name__), **kwargs)

    @property
    def stream_usage(self) -> bool:
        """Whether streams ask for a usage chunk."""
        return self._stream_usage

    def _body(
        self, request: Request, options: RequestOptions, *, model: str, stream: bool
    ) -> dict[str, Any]:
        return build_openai_body(
            request,
            options,
            model=model,
            max_tokens=self.max_tokens,
            stream=stream,
            stream_usage=self._stream_usage,
            tokens_key=self._tokens_key,
        )

    def _parse_reply(self, body: bytes, *, keep_thinking: bool) -> Message:
        from ..wire import parse_openai_completion

        return parse_openai_completion(body)
