"""Ollama native chat client (``POST {base_url}/api/chat``, NDJSON streams).

For Ollama's OpenAI-compatible ``/v1`` endpoint use :meth:`OpenAIClient.ollama
<rxturn.clients.openai.OpenAIClient.ollama>` instead; the native API is what Ollama documents
first, streams thinking separately, and reports token counts in every final line.

Request body, built by the pure :func:`build_ollama_body`:

* ``model`` — ``RequestOptions.model`` when set, else the client's;
* ``messages`` — the system prompt first (``system`` role); assistant tool calls as
  ``tool_calls [{function {name, arguments: object}}]``; an assistant refusal (a part that came
  from an OpenAI-style provider: Ollama has no refusal field) as the message's text, after any
  text; kept thinking parts are left out on purpose (Ollama's chat templates drop earlier turns'
  thinking anyway); each tool result its own ``tool`` message (with ``tool_name`` when the
  matching call is in the history), accompanying text after them; a user message's inline
  images as raw base64 in ``images`` and plain-text documents appended to its text, each set
  apart by a blank line (PDFs, audio, URLs, file ids and media in tool results are refused);
  cache markers are ignored;
* ``stream`` (always sent: Ollama streams by default);
* ``tools`` ``[{type: function, function {name, description, parameters}}]`` when any (and no
  ``response_format``);
* ``options`` — ``num_predict`` from ``max_tokens``, ``temperature``, ``stop`` — when any is set;
* ``format`` — the response format's JSON schema (a strict format's tightened as
  ``strict_tools`` tightens tools: every object closed, every property required);
* ``think`` — ``true`` for a ``thinking`` budget (Ollama takes no budget), the effort for
  ``reasoning_effort`` ``low`` / ``medium`` / ``high`` (``"none"``: ``false``; other efforts are
  rejected);
* ``RequestOptions.extra_body`` merged in last.

Ollama cannot force a tool call: ``tool_choice`` ``"any"`` or a tool name is a
:class:`~rxturn.errors.ConfigError`; ``"none"`` sends no tools.
"""

from __future__ import annotations

from typing import Any, Unpack

from .._arguments import shown
from ..errors import ConfigError
from ..messages import (
    DocumentPart,
    ImagePart,
    InlineSource,
    Message,
    RefusalPart,
    Request,
    RequestOptions,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from ._content import MEDIA_PARTS, b64, check_source, plain_text, refuse
from ._http import HttpClient, HttpSettings
from ._request import (
    JSONBody,
    check_options,
    merge_extra_body,
    put_sampling,
    resolve_reasoning_effort,
    resolve_thinking,
    resolve_tool_choice,
    response_schema,
)

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_MODEL", "OllamaClient", "build_ollama_body"]

DEFAULT_MODEL = "llama3.2"
DEFAULT_BASE_URL = "http://localhost:11434"


WIRE = "Ollama's /api/chat"


def _user_content(message: Message) -> tuple[str, list[str]]:
    """A user message's text (plain-text documents appended, each set apart by a blank line)
    and its images as raw base64."""
    text: list[str] = []  # runs of the message's own text, and documents, in order
    document = True  # whether the last entry of ``text`` is a document (none yet: a new run)
    images: list[str] = []
    for part in message.content:
        if isinstance(part, TextPart):
            if document:
                text.append(part.text)
                document = False
            else:
                text[-1] += part.text
        elif isinstance(part, MEDIA_PARTS):
            source = part.source
            if not isinstance(source, InlineSource):  # before check_source, which would say
                # a file id belongs to another provider and to upload it to Ollama's store
                raise refuse(part, WIRE, "it takes inline bytes only (no URLs, no file ids)")
            check_source(part, WIRE, "ollama")
            if isinstance(part, ImagePart):
                images.append(b64(source.data))
            elif isinstance(part, DocumentPart) and source.media_type == "text/plain":
                text.append(plain_text(part, source, WIRE))
                document = True
            else:
                raise refuse(part, WIRE, "it takes images and plain text only")
    return "\n\n".join(run for run in text if run), images


def _messages(request: Request) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if request.system:
        out.append({"role": "system", "content": request.system})
    tool_names: dict[str, str] = {}
    for message in request.messages:
        if message.role == "assistant":
            for part in message.content:
                if isinstance(part, MEDIA_PARTS):
                    raise refuse(part, WIRE, "media goes in user messages only")
            text = "".join(part.text for part in message.content if isinstance(part, TextPart))
            calls = [part for part in message.content if isinstance(part, ToolCallPart)]
            refusal = "".join(p.text for p in message.content if isinstance(p, RefusalPart))
            entry: dict[str, Any] = {"role": "assistant", "content": text + refusal}
            if calls:
                entry["tool_calls"] = [
                    {"function": {"name": call.name, "arguments": call.input}} for call in calls
                ]
                tool_names.update((call.id, call.name) for call in calls)
            out.append(entry)
            continue
        results = [part for part in message.content if isinstance(part, ToolResultPart)]
        for result in results:
            if result.media:
                raise refuse(
                    result.media[0],
                    WIRE,
                    "a tool message takes text only; send it in a user message",
                )
            tool: dict[str, Any] = {"role": "tool", "content": result.text}
            name = tool_names.get(result.tool_call_id)
            if name is not None:
                tool["tool_name"] = name
            out.append(tool)
        text, images = _user_content(message)
        if text or images or not results:
            user: dict[str, Any] = {"role": "user", "content": text}
            if images:
                user["images"] = images
            out.append(user)
    return out


def build_ollama_body(
    request: Request,
    options: RequestOptions,
    *,
    model: str,
    max_tokens: int | None,
    stream: bool,
) -> JSONBody:
    """The JSON body of an Ollama ``/api/chat`` request (see the module docstring).

    Raises:
        ConfigError: a non-positive ``max_tokens``; a ``tool_choice`` Ollama cannot honour; a
            bad ``thinking``, ``reasoning_effort`` or ``extra_body``.

    Examples:
        >>> build_ollama_body(Request(messages=(Message.user("hi"),)),
        ...                   RequestOptions(max_tokens=50), model="m", max_tokens=None,
        ...                   stream=False)
        {'model': 'm', 'messages': [{'role': 'user', 'content': 'hi'}], 'stream': False, \
'options': {'num_predict': 50}}
    """
    check_options(options)
    body: dict[str, Any] = {"model": model, "messages": _messages(request), "stream": stream}
    fmt = options.response_format
    choice = resolve_tool_choice(options, request.tools)
    if choice is not None and choice[0] in ("any", "tool"):
        raise ConfigError(
            f"RequestOptions.tool_choice={shown(options.tool_choice, 100)}: Ollama's /api/chat "
            "cannot "
            "force a tool call (use OpenAIClient.ollama for tool_choice support where the model "
            "has it, or leave tool_choice unset)"
        )
    if fmt is None and request.tools and (choice is None or choice[0] != "none"):
        tools: list[dict[str, Any]] = []
        for tool in request.tools:
            function: dict[str, Any] = {"name": tool.name}
            if tool.description:
                function["description"] = tool.description
            function["parameters"] = tool.input_schema
            tools.append({"type": "function", "function": function})
        body["tools"] = tools
    model_options: dict[str, Any] = {}
    tokens = put_sampling(
        model_options, options, max_tokens=max_tokens, tokens_key="num_predict", stop_key="stop"
    )
    if model_options:
        body["options"] = model_options
    if fmt is not None:
        body["format"] = response_schema(fmt)
    think = _think(options, tokens)
    if think is not None:
        body["think"] = think
    return merge_extra_body(body, options)


def _think(options: RequestOptions, max_tokens: int | None) -> bool | str | None:
    effort = resolve_reasoning_effort(options)
    if effort is not None:
        if effort == "none":
            return False
        if effort not in ("low", "medium", "high"):
            raise ConfigError(
                f"RequestOptions.reasoning_effort={effort!r}: Ollama's think takes 'low', "
                "'medium' or 'high' (or 'none')"
            )
        return effort
    if resolve_thinking(options, max_tokens) is not None:
        return True
    return None


class OllamaClient(HttpClient):
    """A client for Ollama's native ``/api/chat``.

    Args:
        model: the default model (``RequestOptions.model`` overrides it per request).
        api_key: optional; sent as ``Authorization: Bearer`` (Ollama behind an auth proxy).
        base_url: the server root, without ``/api``.
        max_tokens: default ``num_predict``; ``None`` omits it.
        extra_headers: added to every request.
        transport: a shared :class:`~rxturn.transport.AsyncTransport` (not closed by this
            client); by default the client opens its own aiohttp pool on first use.
        connect_timeout: seconds to connect (own pool only).
        read_timeout: longest silence between reads, not a total deadline (own pool only).

    Raises:
        ConfigError: an invalid argument.

    Examples:
        >>> OllamaClient("qwen3")
        OllamaClient(model='qwen3', base_url='http://localhost:11434')
    """

    wire_format = "ollama"
    _path = "/api/chat"
    _stream_accept = "application/x-ndjson"
    # a one-line NDJSON body is JSON, and Ollama labels some of its answers application/json
    _stream_types = frozenset({"application/x-ndjson", "application/json"})

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

    def _body(
        self, request: Request, options: RequestOptions, *, model: str, stream: bool
    ) -> dict[str, Any]:
        return build_ollama_body(
            request, options, model=model, max_tokens=self.max_tokens, stream=stream
        )

    def _parse_reply(self, body: bytes, *, keep_thinking: bool) -> Message:
        from ..wire import parse_ollama_chat

        return parse_ollama_chat(body)
