"""The fake provider: a real aiohttp server on loopback that speaks the providers' wire formats.

Routes (docs/fake-provider.md):

* ``POST /v1/messages`` — Anthropic Messages (SSE when ``stream`` is true);
* ``POST /v1/chat/completions`` and ``POST /chat/completions`` — OpenAI Chat Completions;
* ``POST /v1/responses`` and ``POST /responses`` — the OpenAI Responses API;
* ``POST /api/chat`` — Ollama native chat (NDJSON; ``stream`` defaults to true, as in Ollama);
* ``GET /_fake/requests`` — every request received so far, in order, as a JSON array of
  :class:`RequestRecord` objects: path, model, when each arrived and, once it ended, when and
  how (``completed``, ``disconnected`` by the client, or ``dropped`` by the server), with its
  body; ``GET /_fake/requests?bodies=1`` — the bodies alone.

A path no route serves (404), a method a route does not take (405) and a body over 64 MiB
(413) are answered in the provider's JSON error shape (:func:`_route_errors`), never aiohttp's
plain text. The bodies kept for the records have a bound (``_KEPT_BODY_BYTES``): past it a
body is served but recorded as a note.

Each request takes the next entry of its model's scenario list (see :mod:`._scenario`); an
unknown model with no ``"*"`` list gets a 404 in the provider's error format, a body that is
not a JSON object a 400, and so does a body whose structure the real API refuses (``messages``
not a list of objects, ``max_tokens`` not an integer, …: :mod:`._request` has the rule, checked
by one typed decode per wire). A structured-output request (each wire's native format field) whose
entry scripts no text answers with a JSON value that follows the schema, and, like the real
Anthropic API, an Anthropic format schema with an object not closed by ``additionalProperties:
false`` gets a 400. Like the real Anthropic API, a request with extended thinking whose
last tool-using assistant message lost its thinking block (or carries a signature the fake did
not give) gets a 400 ``invalid_request_error`` before it takes an entry
(:func:`._emit.anthropic_thinking_violation`), and so does one whose history holds ``tool_use``
or ``tool_result`` blocks but that defines no tools (:func:`._emit.anthropic_tools_violation`),
or holds text the real API refuses: an empty text block, whitespace-only text, a final assistant
message ending in whitespace (:func:`._emit.anthropic_text_violation`).
The bytes come from :mod:`._emit`; this module
only does the IO:

* **pacing** — with no delay and no fault the stream is written at once: headers, the body as
  one chunk and the chunked terminator in one send (the benchmark path; a body over 256 KiB
  goes in 256 KiB slices); with a delay each event is written on its own, ``delay_ms`` apart
  (the first event goes out at once);
* **faults** — ``drop`` writes N events then closes the connection (the client sees the body
  end without its terminal event); ``stall`` writes N events then goes silent for
  ``stall_seconds`` (or until the client leaves or the server stops) and then carries on;
  ``malformed`` inserts one event whose JSON is broken; ``error_event`` sends the provider's
  in-stream error and ends the body. For a non-streaming request, ``drop`` closes the
  connection before answering, ``stall`` waits before answering, ``malformed`` sends half
  the JSON body and ``error_event`` is ignored (it is a streaming fault); ``delay_ms`` is
  waited once before a non-streaming answer;
* **slow first content** — ``first_content_delay_ms`` writes the wire's preamble (see
  :func:`._emit.preamble_length`) at once, then waits before the first content event;
* **disconnects** — :attr:`FakeProvider.disconnects` counts responses whose client went away
  before the server finished them, so tests can assert that disposing a stream closes it.

Stopping never hangs on a stalled handler: every wait also watches the server's closing
event, and handlers still running when it fires close their connection and return.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import socket
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from time import monotonic as _monotonic  # (tests replace ``time`` to pin ``created``)
from types import TracebackType
from typing import Any, Self, cast

import msgspec
from aiohttp import HttpVersion11, web

from .._arguments import shown
from .._validate import HOST_RULE, is_host
from ..errors import ConfigError
from . import _emit
from ._cache import PromptCache
from ._emit import ReplyContext, Wire
from ._emit_base import open_object_path, requested_schema, schema_instance
from ._request import BodyFields, BodyProblem, read_body
from ._scenario import DEFAULT_SCENARIO, Entry, Scenario, load_scenario

__all__ = ["FakeProvider", "ReceivedRequest", "RequestRecord"]

# Bytes per ``resp.write`` on the unpaced path: large enough that the per-write cost vanishes,
# small enough that a slow reader applies back-pressure through ``drain``.
_WRITE_SLICE = 256 * 1024
_MAX_REQUEST_BYTES = 64 * 1024 * 1024
#: request body bytes the server keeps for ``/_fake/requests`` (then keeps a note instead):
#: a client sending large bodies, or a long load test, cannot take the machine's memory
_KEPT_BODY_BYTES = 1024 * 1024 * 1024
_SHUTDOWN_TIMEOUT = 2.0
#: pending connections the listening socket queues (the kernel caps it at somaxconn)
_BACKLOG = 4096


class _OneLine(logging.Filter):
    """Say a request the HTTP layer could not handle (a malformed request line or chunk, a
    header too long, a body that does not decompress) in one line, without the traceback
    aiohttp attaches: a hostile client must not fill the server's stderr."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info is not None and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            reason = " ".join(str(exc).split())[:200]
            record.msg = f"{record.getMessage()}: {type(exc).__name__}: {reason}"
            record.args = None
            record.exc_info = None
            record.exc_text = None
        return True


#: the aiohttp server's log (what it could not handle), one line per problem
_LOG = logging.getLogger("rxturn.testing.fake_provider")
_LOG.addFilter(_OneLine())


def _decimal(value: float) -> str:
    """``0.25`` → ``"0.25"``, ``2.0`` → ``"2"``: plain decimal, never exponent notation, and
    never ``"-0"`` (``-0.0`` passes a scenario's ``>= 0``; no Retry-After parser takes it)."""
    return f"{abs(value):.6f}".rstrip("0").rstrip(".") or "0"


def _base_headers(wire: Wire, streaming: bool) -> dict[str, str]:
    headers = {"Content-Type": _emit.content_type(wire, streaming)}
    if streaming:
        headers["Cache-Control"] = "no-cache"
    return headers


#: a reply's headers but its request id, by wire and whether it streams
_BASE_HEADERS: dict[tuple[Wire, bool], dict[str, str]] = {
    (wire, streaming): _base_headers(wire, streaming)
    for wire in ("anthropic", "openai", "openai-responses", "ollama")
    for streaming in (False, True)
}
#: the header a wire's reply names its request id in (Ollama has none)
_REQUEST_ID: dict[Wire, str] = {
    "anthropic": "request-id",
    "openai": "x-request-id",
    "openai-responses": "x-request-id",
}
#: the wire each route speaks
_ROUTES: dict[str, Wire] = {
    "/v1/messages": "anthropic",
    "/v1/chat/completions": "openai",
    "/chat/completions": "openai",
    "/v1/responses": "openai-responses",
    "/responses": "openai-responses",
    "/api/chat": "ollama",
}


def _wire_of(request: web.Request) -> Wire:
    """The wire whose error shape a request no route answers gets: its route's, else Ollama's
    under ``/api/``, Anthropic's when the client sent ``anthropic-version`` (as the SDK does),
    else OpenAI's."""
    wire = _ROUTES.get(request.path)
    if wire is not None:
        return wire
    if request.path.startswith("/api/"):
        return "ollama"
    return "anthropic" if "anthropic-version" in request.headers else "openai"


@web.middleware
async def _route_errors(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """A path no route serves (404) or a method its route does not take (405) is answered in
    the provider's JSON error shape, not aiohttp's plain text: an SDK reads its error body."""
    try:
        return await handler(request)
    except (web.HTTPNotFound, web.HTTPMethodNotAllowed) as exc:
        target = f"{request.method} {request.path}"
        if exc.status == 404:
            message = f"Invalid URL ({target}): the fake provider has no such route"
        else:
            message = f"Method not allowed ({target}): this route takes POST"
        body = _emit.route_error_body(_wire_of(request), exc.status, message)
        headers = {"Content-Type": "application/json"}
        allow = exc.headers.get("Allow")
        if allow is not None:
            headers["Allow"] = allow
        return web.Response(status=exc.status, body=body, headers=headers)


def _has_fault(entry: Entry) -> bool:
    """Whether a streamed reply of ``entry`` breaks off, stalls or carries a broken or error
    event somewhere."""
    return not (
        entry.drop_after_events is None
        and entry.stall_after_events is None
        and entry.malformed_after_events is None
        and entry.error_event_after_events is None
    )


class ReceivedRequest:
    """One request the fake received: where it went, its headers (names lower-cased), its body.

    Attributes:
        method: the HTTP method.
        path: the route it came to.
        headers: its headers, names lower-cased (made from the request's own headers the
            first time it is read: most requests are never looked at this closely).
        body: the request body.
        arrived: ``time.monotonic()`` when the request arrived.
    """

    __slots__ = ("_headers", "_sent", "arrived", "body", "method", "path")

    def __init__(
        self,
        *,
        method: str,
        path: str,
        headers: Mapping[str, str],
        body: object,
        arrived: float = 0.0,
    ) -> None:
        self.method = method
        self.path = path
        self.body: Any = body
        self.arrived = arrived
        self._sent = headers
        self._headers: dict[str, str] | None = None

    @property
    def headers(self) -> dict[str, str]:
        if self._headers is None:
            self._headers = {name.lower(): value for name, value in self._sent.items()}
        return self._headers

    def _fields(self) -> tuple[str, str, dict[str, str], Any, float]:
        return self.method, self.path, self.headers, self.body, self.arrived

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ReceivedRequest):
            return NotImplemented
        return self._fields() == other._fields()

    def __repr__(self) -> str:
        return (
            f"ReceivedRequest(method={self.method!r}, path={self.path!r}, "
            f"headers={self.headers!r}, body={self.body!r}, arrived={self.arrived!r})"
        )


class RequestRecord(msgspec.Struct, kw_only=True):
    """One request's life on the fake server: times on the server's event loop clock
    (``loop.time()``, the clock an asyncio scheduler reads).

    Attributes:
        path: the route it came to.
        model: the ``model`` it asked for (``None`` if it named none).
        arrived: when its body had been read.
        ended: when the server was done with it (``None`` while in flight).
        end: how it ended: ``"completed"`` (the whole response was written, an error response
            included), ``"disconnected"`` (the client went away first) or ``"dropped"`` (the
            server closed the connection: a scripted drop, or the server stopping).
        body: the request body: its JSON value, or its text when it was not JSON (refused
            with a 400, as a body that is not an object is); ``None`` when it could not be
            read (over 64 MiB: a 413; a compressed body that does not decompress: a 400); a
            one-line note in its place once the bodies kept reach ``_KEPT_BODY_BYTES``.
    """

    path: str
    model: str | None
    arrived: float
    ended: float | None = None
    end: str | None = None
    body: Any = None


class FakeProvider:
    """A scripted provider server on ``host:port`` (port 0 picks a free one).

    Use it as an async context manager, or call :meth:`start` / :meth:`stop`::

        async with FakeProvider({"models": {"*": [{"text": "hi"}]}}) as fake:
            client = anthropic.AsyncAnthropic(base_url=fake.base_url, api_key="test")

    Attributes:
        scenario: the validated scenario being served.
        requests: every request body received, in order: its JSON value (an object, unless
            it was refused), or its text when it was not JSON.
        records: the same requests with their arrival and, once ended, how and when they
            ended (:class:`RequestRecord`).
        received: the same requests with method, path and headers (test-side detail only; the
            ``/_fake/requests`` route serves :attr:`records`).
        disconnects: responses whose client went away before the server finished them
            (streaming or not). Only a response still in flight can notice: to assert that
            disposing a stream closes it, script ``stall_after_events`` or ``delay_ms`` so the
            server is not done writing when the client lets go.
    """

    def __init__(
        self,
        scenario: Scenario
        | Mapping[str, object]
        | str
        | os.PathLike[str]
        | bytes = DEFAULT_SCENARIO,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        if not is_host(host):
            raise ConfigError(f"FakeProvider: host must be {HOST_RULE}, got {shown(host, 100)}")
        if type(port) is not int or not 0 <= port <= 65535:
            raise ConfigError(
                f"FakeProvider: port must be an int from 0 to 65535, got {shown(port, 100)}"
            )
        self.scenario: Scenario = load_scenario(scenario)
        self.host = host
        self.requests: list[Any] = []
        self.received: list[ReceivedRequest] = []
        self.records: list[RequestRecord] = []
        self.disconnects = 0
        #: Anthropic prompt-cache prefixes seen (cache reads and writes in usage).
        self.prompt_cache = PromptCache()
        self._requested_port = port
        self._port: int | None = None
        self._cursors: dict[str, int] = {}
        #: requests in flight whose end the server already knows: "dropped" (it closed the
        #: connection) or "gone" (a write found the client gone), by ``id(request)``
        self._ended: dict[int, str] = {}
        self._seq = 0  # never reset: ids stay unique for the server's lifetime
        self._runner: web.AppRunner | None = None
        self._closing = asyncio.Event()
        self._stopping = False
        self._first_arrival: float | None = None  # what rate_limit_windows count from
        self._rng = random.Random(0)  # delay_ms_max draws: the same run, the same latencies
        self._tails = _emit.TailCache()  # the scenario entries' stream bytes no request changes
        self._kept_bytes = 0  # request body bytes kept so far (at most _KEPT_BODY_BYTES)
        #: requests whose body is still being read, by ``id(request)``
        self._reading: dict[int, web.Request] = {}

    # ------------------------------------------------------------------ lifecycle

    @property
    def port(self) -> int:
        """The bound port (raises ``RuntimeError`` before :meth:`start`)."""
        if self._port is None:
            raise RuntimeError("FakeProvider is not running; call start() or use 'async with'")
        return self._port

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT`` — the Anthropic and Ollama base URL."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """``http://HOST:PORT/v1`` — the base URL an OpenAI-compatible client expects."""
        return self.base_url + "/v1"

    async def start(self) -> Self:
        """Bind and start serving. Idempotent.

        Raises:
            ConfigError: the server cannot listen on ``host:port``: the host does not resolve
                or is no address of this machine, or the port is taken (one line, the
                system's reason).
        """
        if self._runner is not None:
            return self
        app = web.Application(client_max_size=_MAX_REQUEST_BYTES, middlewares=[_route_errors])
        app.router.add_post("/v1/messages", self._anthropic)
        app.router.add_post("/v1/chat/completions", self._openai)
        app.router.add_post("/chat/completions", self._openai)
        app.router.add_post("/v1/responses", self._responses)
        app.router.add_post("/responses", self._responses)
        app.router.add_post("/api/chat", self._ollama)
        app.router.add_get("/_fake/requests", self._list_requests)
        runner = web.AppRunner(
            app,
            handle_signals=False,
            access_log=None,
            logger=_LOG,
            handler_cancellation=True,
            shutdown_timeout=_SHUTDOWN_TIMEOUT,
        )
        await runner.setup()
        try:
            # a batch opens hundreds of connections at once: with aiohttp's default backlog
            # (128) the kernel drops the SYNs beyond it, and each such client waits a second
            # (TCP's first retransmit) before it connects at all
            site = web.TCPSite(runner, self.host, self._requested_port, backlog=_BACKLOG)
            await site.start()
        except BaseException as exc:
            await runner.cleanup()
            if isinstance(exc, OSError):  # a name that does not resolve, a port taken...
                raise ConfigError(self._cannot_listen(exc)) from None
            raise
        self._runner = runner
        self._closing = asyncio.Event()
        self._stopping = False
        address: Any = runner.addresses[0]
        self._port = int(address[1])
        return self

    def _cannot_listen(self, exc: OSError) -> str:
        """The one line for a bind that failed: where, and the system's reason (a host that
        does not resolve, one that is no address of this machine, a port taken)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        if isinstance(exc, socket.gaierror) or not exc.errno:
            reason = exc.strerror or str(exc)
        else:  # (aiohttp's own text repeats the address: the errno's name says it once)
            reason = os.strerror(exc.errno)
        return f"FakeProvider: cannot listen on {host}:{self._requested_port}: {reason}"

    async def stop(self) -> None:
        """Stop serving: wake stalled handlers, close every connection. Idempotent."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        self._stopping = True
        self._closing.set()
        for request in list(self._reading.values()):  # a client that sent headers, no body:
            transport = request.transport  # its handler waits for bytes that will not come
            if transport is not None:
                transport.close()
        await runner.cleanup()
        self._port = None

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    def reset(self) -> None:
        """Forget received requests and the prompt cache, and restart every model's list from
        its first entry and the ``delay_ms_max`` draws from their seed."""
        self.requests.clear()
        self.received.clear()
        self.records.clear()
        self._cursors.clear()
        self.disconnects = 0
        self.prompt_cache.clear()
        self._first_arrival = None
        self._kept_bytes = 0
        self._rng.seed(0)  # (the draws went on: a second run after reset paced differently)

    def next_entry(self, model: str) -> Entry | None:
        """Take the next entry for ``model`` (``None``: no list serves it). The last repeats."""
        route = self.scenario.entries_for(model)
        if route is None:
            return None
        key, entries = route
        cursor = self._cursors.get(key, 0)
        self._cursors[key] = cursor + 1
        return entries[min(cursor, len(entries) - 1)]

    # ------------------------------------------------------------------ routes

    async def _anthropic(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, "anthropic")

    async def _openai(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, "openai")

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, "openai-responses")

    async def _ollama(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, "ollama")

    async def _list_requests(self, request: web.Request) -> web.Response:
        shown = self.requests if request.query.get("bodies") == "1" else self.records
        return web.Response(body=msgspec.json.encode(shown), content_type="application/json")

    async def _serve(self, request: web.Request, wire: Wire) -> web.StreamResponse:
        self._reading[id(request)] = request  # (stop() closes a body that never comes)
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge:  # past client_max_size: what the API says, kept
            raw = None
        except web.RequestPayloadError as exc:  # e.g. a gzip body that does not decompress
            raw = exc
        finally:
            del self._reading[id(request)]
        # A body that is not a JSON object is refused, and recorded like any other (as the
        # text it was, when it was not JSON at all): "nothing was sent" is what tests assert
        # on the records, and a client that sent garbage did send something.
        refused: str | None = None
        status = 400
        decoded: object
        if raw is None:
            decoded = None
            status = 413
            refused = f"Request exceeds the maximum allowed number of bytes ({_MAX_REQUEST_BYTES})."
        elif isinstance(raw, web.RequestPayloadError):
            decoded = None
            reason = " ".join(str(raw).split()).removeprefix("400, message: ")
            refused = f"request body could not be read: {reason}"
        else:
            try:
                decoded = msgspec.json.decode(raw)
            except (msgspec.DecodeError, RecursionError) as exc:  # RecursionError: too deep
                decoded = raw.decode("utf-8", "replace")
                refused = f"request body is not valid JSON: {exc}"
            else:
                is_object = isinstance(decoded, dict)  # (a flag: ``decoded`` keeps its type)
                if not is_object:
                    refused = "request body must be a JSON object"
        named: Any = cast("dict[str, Any]", decoded).get("model") if refused is None else None
        kept = self._kept(decoded, len(raw) if isinstance(raw, bytes) else 0)
        record = RequestRecord(
            path=request.path,
            model=named if isinstance(named, str) else None,
            arrived=asyncio.get_running_loop().time(),
            body=kept,
        )
        self.records.append(record)
        end = "completed"
        try:
            if refused is not None:
                seq, _ = self._receive(request, kept)
                return self._error(wire, status, None, refused, seq)
            body = cast("dict[str, Any]", decoded)
            return await self._answer(
                request, wire, body, kept, read_body(cast(bytes, raw), wire, body)
            )
        except asyncio.CancelledError:  # handler_cancellation: the client went away
            end = "dropped" if self._stopping else "disconnected"
            raise
        finally:
            ended = self._ended.pop(id(request), None)
            if ended == "dropped":
                end = "dropped"
            elif ended == "gone":
                end = "dropped" if self._stopping else "disconnected"
            record.ended = asyncio.get_running_loop().time()
            record.end = end

    def _kept(self, body: object, size: int) -> object:
        """What the records keep of a body of ``size`` bytes: the body, while the bodies kept
        so far stay within ``_KEPT_BODY_BYTES``; past it, a one-line note saying so."""
        if self._kept_bytes + size > _KEPT_BODY_BYTES:
            return (
                f"<request body of {size} bytes not kept: the fake provider keeps at most "
                f"{_KEPT_BODY_BYTES} bytes of request bodies>"
            )
        self._kept_bytes += size
        return body

    async def _answer(
        self,
        request: web.Request,
        wire: Wire,
        body: dict[str, Any],
        kept: object,
        fields: BodyFields | BodyProblem,
    ) -> web.StreamResponse:
        """Answer ``body`` (the records keep ``kept``: the body, or the note that replaced it)."""
        seq, arrived = self._receive(request, kept)
        if self._first_arrival is None:
            self._first_arrival = arrived
        model: Any = body.get("model")
        if not isinstance(model, str) or not model:
            return self._error(wire, 400, None, "model: field required", seq)
        if isinstance(fields, BodyProblem):  # structurally wrong: what the real API refuses
            return self._error(
                wire, 400, None, fields.message, seq, param=fields.param, code=fields.code
            )
        if fields.thinking:
            violation = _emit.anthropic_thinking_violation(body)
            if violation is not None:
                return self._error(wire, 400, "invalid_request_error", violation, seq)
        if wire == "anthropic":
            violation = _emit.anthropic_text_violation(body) or _emit.anthropic_tools_violation(
                body
            )
            if violation is not None:
                return self._error(wire, 400, "invalid_request_error", violation, seq)
        schema = requested_schema(body, wire) if fields.formatted else None
        if schema is not None and wire == "anthropic":
            where = open_object_path(schema)
            if where is not None:
                text = (
                    f"output_config.format.{where}: For 'object' type, 'additionalProperties' "
                    "must be explicitly set to false"
                )
                return self._error(wire, 400, "invalid_request_error", text, seq)
        window = self.scenario.window_at(arrived - self._first_arrival)
        if window is not None:
            return self._error(wire, window.status, None, None, seq, window.retry_after)
        entry = self.next_entry(model)
        if entry is None:
            text = (
                f"model {shown(model, 100)} not found (the fake provider's scenario has no "
                "list for it)"
            )
            return self._error(wire, 404, None, text, seq)
        if entry.status is not None:
            failure = self._failure(request, entry, entry.status, wire, seq)
            return await self._guarded(request, failure)
        cache: _emit.TailCache | None = self._tails
        if schema is not None and not (entry.text or entry.tool_calls or entry.stop_reason):
            # a structured-output request the entry scripts no reply for: answer in the format
            reply = msgspec.json.encode(schema_instance(schema)).decode()
            entry = msgspec.structs.replace(entry, text=reply)
            cache = None  # an entry made for this request alone
        read, write = self.prompt_cache.account(body) if fields.cached else (0, 0)
        ctx = ReplyContext(
            model=model,
            seq=seq,
            created=int(time.time()),
            prompt_words=max(0, _emit.prompt_words(body) - read - write),
            cache_read=read,
            cache_write=write,
            include_usage=fields.include_usage,
            encrypted_reasoning=fields.encrypted_reasoning,
        )
        if fields.stream:
            return await self._guarded(request, self._stream(request, entry, wire, ctx, cache))
        return await self._guarded(request, self._reply(request, entry, wire, ctx))

    async def _guarded(
        self, request: web.Request, answer: Coroutine[Any, Any, web.StreamResponse]
    ) -> web.StreamResponse:
        """``answer``, counting a client that went away before it was done."""
        try:
            return await answer
        except asyncio.CancelledError:  # handler_cancellation: the client went away
            if not self._stopping:
                self.disconnects += 1
            raise
        except ConnectionResetError:  # a write found the connection gone
            self._ended[id(request)] = "gone"
            if not self._stopping:
                self.disconnects += 1
            return web.StreamResponse()

    def _receive(self, request: web.Request, body: object) -> tuple[int, float]:
        """Note a request in :attr:`requests` and :attr:`received`; its sequence number (its
        reply's ids) and arrival (``time.monotonic()``)."""
        arrived = _monotonic()
        self.requests.append(body)
        self.received.append(
            ReceivedRequest(
                method=request.method,
                path=request.path,
                headers=request.headers,
                body=body,
                arrived=arrived,
            )
        )
        self._seq += 1
        return self._seq, arrived

    # ------------------------------------------------------------------ replies

    def _headers(self, wire: Wire, seq: int, streaming: bool) -> dict[str, str]:
        headers = dict(_BASE_HEADERS[wire, streaming])
        name = _REQUEST_ID.get(wire)
        if name is not None:
            headers[name] = f"req_fake{seq:06d}"
        return headers

    async def _failure(
        self, request: web.Request, entry: Entry, status: int, wire: Wire, seq: int
    ) -> web.StreamResponse:
        """A scripted HTTP error, after the entry's ``delay_ms`` (once, as a non-streaming
        reply waits it: a slow error; it went out at once, the delay silently ignored)."""
        delay = self._delay(entry)
        if delay and await self._pause(delay):  # the server began closing
            self._hang_up(request)
            return web.StreamResponse()
        return self._error(
            wire, status, entry.error_type, entry.error_message, seq, entry.retry_after
        )

    def _error(
        self,
        wire: Wire,
        status: int,
        error_type: str | None,
        message: str | None,
        seq: int,
        retry_after: float | None = None,
        *,
        param: str | None = None,
        code: str | None = None,
    ) -> web.Response:
        headers = self._headers(wire, seq, streaming=False)
        if retry_after is not None:  # both spellings the SDKs read, saying the same thing
            headers["Retry-After"] = _decimal(retry_after)
            headers["retry-after-ms"] = _decimal(retry_after * 1000)
        body = _emit.error_body(wire, status, error_type, message, param=param, code=code)
        return web.Response(status=status, body=body, headers=headers)

    async def _pause(self, seconds: float | None) -> bool:
        """Wait ``seconds`` (``None``: indefinitely); True if the server began closing."""
        if self._closing.is_set():
            return True
        try:
            async with asyncio.timeout(seconds):
                await self._closing.wait()
        except TimeoutError:
            return False
        return True

    def _delay(self, entry: Entry) -> float:
        """Seconds between events: ``delay_ms``, or a draw up to ``delay_ms_max`` per request."""
        if entry.delay_ms_max is None:
            return entry.delay_ms / 1000
        return self._rng.uniform(entry.delay_ms, entry.delay_ms_max) / 1000

    def _hang_up(self, request: web.Request) -> None:
        self._ended[id(request)] = "dropped"
        transport = request.transport
        if transport is not None:
            transport.close()  # flushes what was written, then FIN: the body is left unfinished

    async def _reply(
        self, request: web.Request, entry: Entry, wire: Wire, ctx: ReplyContext
    ) -> web.StreamResponse:
        body = _emit.reply_body(entry, wire, ctx)
        delay = self._delay(entry)
        closing = bool(delay) and await self._pause(delay)
        if not closing and entry.stall_after_events is not None:
            closing = await self._pause(entry.stall_seconds)
        if closing or entry.drop_after_events is not None:
            self._hang_up(request)  # no status line at all: the client sees the socket close
            return web.StreamResponse()
        if entry.malformed_after_events is not None:
            body = _emit.malformed_body(body)
        return web.Response(body=body, headers=self._headers(wire, ctx.seq, streaming=False))

    async def _stream(
        self,
        request: web.Request,
        entry: Entry,
        wire: Wire,
        ctx: ReplyContext,
        cache: _emit.TailCache | None,
    ) -> web.StreamResponse:
        headers = self._headers(wire, ctx.seq, streaming=True)
        if not (
            entry.delay_ms
            or entry.delay_ms_max is not None
            or entry.first_content_delay_ms
            or _has_fault(entry)
            or self._closing.is_set()
        ):  # the whole stream at once: the benchmark path
            data = _emit.stream_body(entry, wire, ctx, cache)
            if len(data) <= _WRITE_SLICE:
                # One write: headers, the body as one chunk and the chunked terminator go out
                # together (a StreamResponse sends them in three), the same bytes either way.
                whole = web.Response(body=data, headers=headers)
                if request.version >= HttpVersion11:  # (HTTP/1.0 has no chunks: it
                    whole.enable_chunked_encoding()  # reads the body to the socket's close)
                await whole.prepare(request)
                await whole.write_eof()
                return whole
            response = web.StreamResponse(headers=headers)
            await response.prepare(request)
            if await self._write(response, [data], 0, 1, 0.0):
                await response.write_eof()
            else:
                self._hang_up(request)
            return response
        events = _emit.stream_events(entry, wire, ctx, cache)
        response = web.StreamResponse(headers=headers)
        await response.prepare(request)
        delay = self._delay(entry)
        written = 0
        plan = _emit.fault_plan(entry, len(events))
        if entry.first_content_delay_ms:
            preamble = min(_emit.preamble_length(wire), len(events))
            if plan:
                preamble = min(preamble, plan[0][0])
            closing = not await self._write(response, events, 0, preamble, 0.0)
            written = preamble
            if closing or await self._pause(entry.first_content_delay_ms / 1000):
                self._hang_up(request)
                return response
        for position, action in plan:
            if not await self._write(response, events, written, position, delay):
                self._hang_up(request)
                return response
            written = position
            if action == "stall":
                if await self._pause(entry.stall_seconds):
                    self._hang_up(request)
                    return response
            elif action == "malformed":
                await response.write(_emit.malformed_event(wire, ctx))
            elif action == "error_event":
                error = _emit.error_event(wire, entry.error_type, entry.error_message, position)
                await response.write(error)
                await response.write_eof()
                return response
            else:  # drop
                self._hang_up(request)
                return response
        if not await self._write(response, events, written, len(events), delay):
            self._hang_up(request)
            return response
        await response.write_eof()
        return response

    async def _write(
        self,
        response: web.StreamResponse,
        events: list[bytes],
        start: int,
        stop: int,
        delay: float,
    ) -> bool:
        """Write ``events[start:stop]``; False if the server began closing meanwhile."""
        if start >= stop:
            return True
        if not delay:
            data = b"".join(events[start:stop])
            view = memoryview(data)
            for offset in range(0, len(data), _WRITE_SLICE):
                await response.write(view[offset : offset + _WRITE_SLICE])
            return not self._closing.is_set()
        for index in range(start, stop):
            if index and await self._pause(delay):
                return False
            await response.write(events[index])
        return True
