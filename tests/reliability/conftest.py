"""Fixtures of the reliability suite: loopback servers, wire bodies written by hand, clients.

Two kinds of server run on 127.0.0.1 inside the tests:

- :class:`rxturn.testing.FakeProvider`, scripted by a scenario (docs/fake-provider.md), for every
  fault it knows how to play;
- :class:`ScriptedProvider` below, which answers with exact bytes given by the test, for the
  faults the fake cannot play: a stream that ends *cleanly* without its terminal event, a closed
  tool block whose JSON is unfinished, a tool block still open at ``max_tokens``.

The bytes :class:`ScriptedProvider` serves are built here from the providers' published wire
formats (Anthropic Messages streaming, OpenAI Chat Completions chunks, Ollama ``/api/chat``
NDJSON), independently of both the fake's emitter and rxturn's decoders.

Two more for hostile behaviour: :func:`serve` runs any aiohttp handler on every path, and
:class:`RawHTTPServer` writes whatever bytes a test computes from the request — a status line,
headers and body no HTTP library would produce (no content type at all, a reason phrase that
quotes the API key, a broken status line).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from contextlib import suppress
from typing import Any, Literal

import msgspec
from aiohttp import web

from rxturn.clients import AnthropicClient, OllamaClient, OpenAIClient
from rxturn.engine import TurnEngine
from rxturn.engine.handler import StreamHandler
from rxturn.errors import RxturnError
from rxturn.resilience.policies import RetryPolicy, TimeoutPolicy
from rxturn.testing import assert_no_secret

from ._loopback import LoopbackUrls, Site, serve

__all__ = [
    "FORMAT_NAMES",
    "TEST_KEY",
    "RawHTTPServer",
    "RawRequest",
    "ScriptedEntry",
    "ScriptedProvider",
    "Site",
    "ToolScript",
    "make_client",
    "resilient",
    "run_turn",
    "serve",
    "wire_reply",
    "wire_stream",
]

Format = Literal["anthropic", "openai", "ollama"]
FORMAT_NAMES: tuple[Format, ...] = ("anthropic", "openai", "ollama")

_encode = msgspec.json.encode

#: The key the suite's clients send by default: matches no key pattern, so only secret-aware
#: scrubbing keeps it out of errors (``assert_no_secret`` runs over the errors with it).
TEST_KEY = "rxturn-suite-KEY-0xC0FFEE42"


class ToolScript(msgspec.Struct, frozen=True, kw_only=True):
    """A tool call as the provider streams it: its JSON arguments cut into ``fragments``.

    ``closed`` False leaves the block open (no stop event for it) — what a reply cut by
    ``max_tokens`` looks like.
    """

    id: str = "call_scripted_1"
    name: str = "get_weather"
    fragments: tuple[str, ...] = ()
    closed: bool = True


def _sse(event: str, payload: dict[str, Any]) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + _encode(payload) + b"\n\n"


def wire_stream(
    fmt: str,
    *,
    model: str = "primary",
    text: Sequence[str] = (),
    tool: ToolScript | None = None,
    stop: str = "end_turn",
    complete: bool = True,
    usage: tuple[int, int] = (11, 7),
) -> bytes:
    """A streamed reply in ``fmt``'s wire format; ``complete=False`` omits the terminal event.

    ``stop`` is rxturn's spelling (``end_turn``, ``tool_call``, ``max_tokens``); it is written
    the provider's way (Anthropic ``tool_use``, OpenAI ``tool_calls`` / ``length``, Ollama
    ``done_reason``).
    """
    inp, out = usage
    if fmt == "anthropic":
        stop_wire = {"tool_call": "tool_use"}.get(stop, stop)
        parts = [
            _sse(
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": "msg_scripted",
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": {"input_tokens": inp, "output_tokens": 1},
                    },
                },
            )
        ]
        index = 0
        if text:
            parts.append(
                _sse(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": 0,
                        "content_block": {"type": "text", "text": ""},
                    },
                )
            )
            parts.append(b'event: ping\ndata: {"type": "ping"}\n\n')
            parts += [
                _sse(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": piece},
                    },
                )
                for piece in text
            ]
            parts.append(_sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
            index = 1
        if tool is not None:
            parts.append(
                _sse(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": index,
                        "content_block": {
                            "type": "tool_use",
                            "id": tool.id,
                            "name": tool.name,
                            "input": {},
                        },
                    },
                )
            )
            parts += [
                _sse(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": fragment},
                    },
                )
                for fragment in tool.fragments
            ]
            if tool.closed:
                parts.append(
                    _sse("content_block_stop", {"type": "content_block_stop", "index": index})
                )
        parts.append(
            _sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop_wire, "stop_sequence": None},
                    "usage": {"output_tokens": out},
                },
            )
        )
        if complete:
            parts.append(b'event: message_stop\ndata: {"type":"message_stop"}\n\n')
        return b"".join(parts)
    if fmt == "openai":

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            return (
                b"data: "
                + _encode(
                    {
                        "id": "chatcmpl-scripted",
                        "object": "chat.completion.chunk",
                        "created": 1,
                        "model": model,
                        "choices": [
                            {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
                        ],
                    }
                )
                + b"\n\n"
            )

        parts = [chunk({"role": "assistant", "content": ""})]
        parts += [chunk({"content": piece}) for piece in text]
        if tool is not None:
            parts.append(
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": tool.id,
                                "type": "function",
                                "function": {"name": tool.name, "arguments": ""},
                            }
                        ]
                    }
                )
            )
            parts += [
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": fragment}}]})
                for fragment in tool.fragments
            ]
        if complete:
            finish = {"tool_call": "tool_calls", "max_tokens": "length", "end_turn": "stop"}.get(
                stop, stop
            )
            parts.append(chunk({}, finish))
            parts.append(
                b"data: "
                + _encode(
                    {
                        "id": "chatcmpl-scripted",
                        "object": "chat.completion.chunk",
                        "created": 1,
                        "model": model,
                        "choices": [],
                        "usage": {
                            "prompt_tokens": inp,
                            "completion_tokens": out,
                            "total_tokens": inp + out,
                        },
                    }
                )
                + b"\n\n"
            )
            parts.append(b"data: [DONE]\n\n")
        return b"".join(parts)
    # Ollama: tool calls come whole; a string ``arguments`` is passed through verbatim
    head = {"model": model, "created_at": "2025-01-01T00:00:00Z"}
    lines = [
        _encode({**head, "message": {"role": "assistant", "content": piece}, "done": False}) + b"\n"
        for piece in text
    ]
    if tool is not None:
        lines.append(
            _encode(
                {
                    **head,
                    "message": {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [
                            {"function": {"name": tool.name, "arguments": "".join(tool.fragments)}}
                        ],
                    },
                    "done": False,
                }
            )
            + b"\n"
        )
    if complete:
        reason = {"max_tokens": "length"}.get(stop, "stop")
        lines.append(
            _encode(
                {
                    **head,
                    "message": {"role": "assistant", "content": ""},
                    "done": True,
                    "done_reason": reason,
                    "prompt_eval_count": inp,
                    "eval_count": out,
                }
            )
            + b"\n"
        )
    return b"".join(lines)


def wire_reply(
    fmt: str,
    *,
    model: str = "primary",
    text: str = "",
    tool: tuple[str, str, str] | None = None,
    stop: str = "end_turn",
    usage: tuple[int, int] = (11, 7),
) -> bytes:
    """A non-streaming reply body; ``tool`` is ``(id, name, arguments JSON text)``."""
    inp, out = usage
    if fmt == "anthropic":
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        if tool is not None:
            content.append(
                {
                    "type": "tool_use",
                    "id": tool[0],
                    "name": tool[1],
                    "input": msgspec.Raw(tool[2].encode()),
                }
            )
        return _encode(
            {
                "id": "msg_scripted",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": content,
                "stop_reason": {"tool_call": "tool_use"}.get(stop, stop),
                "stop_sequence": None,
                "usage": {"input_tokens": inp, "output_tokens": out},
            }
        )
    if fmt == "openai":
        message: dict[str, Any] = {"role": "assistant", "content": text or None, "refusal": None}
        if tool is not None:
            message["tool_calls"] = [
                {
                    "id": tool[0],
                    "type": "function",
                    "function": {"name": tool[1], "arguments": tool[2]},
                }
            ]
        finish = {"tool_call": "tool_calls", "max_tokens": "length", "end_turn": "stop"}[stop]
        return _encode(
            {
                "id": "chatcmpl-scripted",
                "object": "chat.completion",
                "created": 1,
                "model": model,
                "choices": [
                    {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
                ],
                "usage": {
                    "prompt_tokens": inp,
                    "completion_tokens": out,
                    "total_tokens": inp + out,
                },
            }
        )
    ollama_message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool is not None:
        ollama_message["tool_calls"] = [{"function": {"name": tool[1], "arguments": tool[2]}}]
    return _encode(
        {
            "model": model,
            "created_at": "2025-01-01T00:00:00Z",
            "message": ollama_message,
            "done": True,
            "done_reason": {"max_tokens": "length"}.get(stop, "stop"),
            "prompt_eval_count": inp,
            "eval_count": out,
        }
    )


class ScriptedEntry(msgspec.Struct, frozen=True, kw_only=True):
    """What one request gets: the streamed body, or the non-streaming body, as exact bytes."""

    stream: bytes
    reply: bytes


class ScriptedProvider(LoopbackUrls):
    """A loopback server answering each request with the next :class:`ScriptedEntry`.

    The last entry repeats, as in the fake. Streams are written in a few pieces and then
    *finished properly* (``write_eof``): a missing terminal event is the body's fault, not the
    connection's. Routes: the same as the fake provider's.
    """

    def __init__(self, entries: Sequence[ScriptedEntry]) -> None:
        self.entries = list(entries)
        self.requests: list[Any] = []
        self.disconnects = 0
        self._runner: web.AppRunner | None = None
        self.port = 0

    async def __aenter__(self) -> ScriptedProvider:
        app = web.Application()
        for path in ("/v1/messages", "/v1/chat/completions", "/api/chat"):
            app.router.add_post(path, self._serve)
        self._runner = web.AppRunner(
            app, handle_signals=False, access_log=None, shutdown_timeout=1.0
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        body: Any = msgspec.json.decode(await request.read())
        self.requests.append(body)
        entry = self.entries[min(len(self.requests), len(self.entries)) - 1]
        streaming = body.get("stream", request.path == "/api/chat") is True
        if not streaming:
            return web.Response(body=entry.reply, content_type="application/json")
        kind = "application/x-ndjson" if request.path == "/api/chat" else "text/event-stream"
        response = web.StreamResponse(headers={"Content-Type": kind})
        await response.prepare(request)
        data = entry.stream
        step = max(1, len(data) // 3)
        try:
            for start in range(0, len(data), step):
                await response.write(data[start : start + step])
                await asyncio.sleep(0)
            await response.write_eof()
        except ConnectionResetError:
            self.disconnects += 1
        return response


def handler_with(
    *,
    first_event: float | None = None,
    per_event: float | None = None,
    total: float | None = None,
    consecutive: int = 1,
    rescue: bool = False,
    retries: int = 0,
) -> StreamHandler:
    """A handler with exactly these deadlines and retries (tiny backoff delays)."""
    return StreamHandler(
        timeouts=TimeoutPolicy(
            first_event=first_event,
            per_event=per_event,
            total=total,
            max_consecutive_timeouts=consecutive,
            rescue=rescue,
        ),
        retry=RetryPolicy(max_retries=retries, base_delay=0.001, max_delay=0.01),
    )


def resilient() -> StreamHandler:
    """The reference ladder with tiny delays; no rescue, so the attempts are the stream's."""
    return StreamHandler(
        timeouts=TimeoutPolicy(first_event=5.0, per_event=5.0, total=20.0, rescue=False),
        retry=RetryPolicy(base_delay=0.001, max_delay=0.01),
    )


async def run_turn(client: Any, handler: StreamHandler, mode: str) -> tuple[Any, Any]:
    """One ``engine.run("hi")``, bounded: ``(result, None)`` or ``(None, error)``; the error
    never holds the test key."""
    engine = TurnEngine(client, handler=handler, mode=mode)  # pyright: ignore[reportArgumentType]
    try:
        return await asyncio.wait_for(engine.run("hi"), 30), None
    except RxturnError as exc:
        assert_no_secret(exc, TEST_KEY, name="error")
        return None, exc


def make_client(
    fmt: str, base: Any, *, model: str = "primary", api_key: str | None = TEST_KEY, **kwargs: Any
) -> Any:
    """A real rxturn client for ``fmt`` pointed at a loopback server (fake or scripted)."""
    if fmt == "anthropic":
        return AnthropicClient(model, api_key=api_key, base_url=base.base_url, **kwargs)
    if fmt == "openai":
        return OpenAIClient(model, api_key=api_key, base_url=base.openai_base_url, **kwargs)
    return OllamaClient(model, api_key=api_key, base_url=base.base_url, **kwargs)


class RawRequest(msgspec.Struct, frozen=True):
    """A request as :class:`RawHTTPServer` read it: the request line, headers (lower-cased
    names), the body."""

    line: str
    headers: dict[str, str]
    body: bytes

    @property
    def credential(self) -> str:
        """The credential the client sent (``x-api-key``, or the bearer token), or ``""``."""
        if "x-api-key" in self.headers:
            return self.headers["x-api-key"]
        return self.headers.get("authorization", "").removeprefix("Bearer ")

    @property
    def streaming(self) -> bool:
        """Whether the request asked for a stream (Ollama streams unless told not to)."""
        doc: Any = msgspec.json.decode(self.body) if self.body else {}
        default = self.line.split(" ")[1].endswith("/api/chat")
        return doc.get("stream", default) is True


class RawHTTPServer(LoopbackUrls):
    """An HTTP/1.1 server on 127.0.0.1 that answers each request with the exact bytes
    ``respond(request)`` returns (status line, headers, body), then closes the connection.

    Bodies are delimited by the close, so no ``Content-Length`` or ``Content-Type`` is sent
    unless the bytes carry one.
    """

    def __init__(self, respond: Callable[[RawRequest], bytes]) -> None:
        self.respond = respond
        self.requests: list[RawRequest] = []
        self._server: asyncio.Server | None = None
        self.port = 0

    async def __aenter__(self) -> RawHTTPServer:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            lines = head.decode("latin-1").split("\r\n")
            headers: dict[str, str] = {}
            for line in lines[1:]:
                if ":" in line:
                    name, value = line.split(":", 1)
                    headers[name.strip().lower()] = value.strip()
            size = int(headers.get("content-length", "0"))
            body = await asyncio.wait_for(reader.readexactly(size), 5) if size else b""
            request = RawRequest(lines[0], headers, body)
            self.requests.append(request)
            writer.write(self.respond(request))
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, TimeoutError):
            pass
        finally:
            writer.close()
            with suppress(ConnectionError):
                await writer.wait_closed()
