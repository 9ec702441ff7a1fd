"""A thousand streaming turns at once on one event loop: throughput, latency, errors, objects.

The server is the stamp server of :mod:`_servers` in a child process (the fake provider's bytes,
Anthropic or OpenAI format). Every phase runs its clients one after the other, side by side in
one run, so their ratios share the machine's load.

**Objects in flight.** ``n`` turns start on a slow paced stream; once every one of them has
received its second delta, a ``gc.collect()`` runs and ``len(gc.get_objects())`` is compared
with the count taken before they started: (after - before) / n is the number of GC-tracked
objects one turn in flight keeps alive (its task, connection, parser, and for rxturn its
Observable chain, subscriptions and timers). ``tracemalloc``, started after the first count,
gives the bytes alive per turn the same way. The types that grew most are kept too.

**Throughput.** ``turns`` turns start together; each streams ``events`` deltas that the server
writes as fast as the socket takes them. Reported: aggregate events/s (all wire events of all
turns / wall time from the first request to the last reply), CPU µs per event (per-turn setup
included), errors. The bare client and rxturn run a few interleaved rounds; rxturn's share of
the bare client's throughput is the median of the per-round shares. A contender too slow to
finish ``turns`` turns within the time budget (an official SDK) is calibrated on a few dozen
turns first and then runs fewer turns, once; its result says how many and why.

**Latency, in a steady state.** ``turns`` workers each run turns back to back, so a thousand
turns are always in flight — some starting, most streaming, some finishing — as on a busy
server. Each turn streams a random number of deltas (uniform in ``[n/2, 3n/2]``, so turns end at
scattered times), paced ``pace = turns / rate`` apart so that the server offers ``rate`` events/s
in aggregate, the first delta after a random offset in ``[0, pace)``. Every delta's text is the
server's ``time.monotonic_ns()`` read just before it wrote the delta; the client reads the clock
again when the delta reaches the text streamer and records **arrival - send**: the latency the
whole client side adds per event — kernel loopback, event-loop scheduling among a thousand
sockets, HTTP parsing, SSE decoding, the handler's operators, the fan-out, and the other turns'
setup and tear-down competing for the same loop — on one clock (CLOCK_MONOTONIC is shared by
all processes). Samples count only inside a window that opens one second after every worker
has received its first delta (the start-up burst of a thousand simultaneous requests is not a
steady state) and lasts ``window_s``; then the turns in flight are cancelled. CPU per event and
turns completed are counted up to the end of the window. The floor client's figures show how
much of the latency is not rxturn's.

These phases run with the collector as a fresh interpreter has it: :func:`run_concurrency`
unfreezes anything ``gc.freeze()`` moved aside earlier and records the thresholds; the
``gc_thresholds`` rows, run last, are the only ones with a tuned collector, and they are
information, not the judged figure.

Clients, per wire format:

- ``limit_http`` — one aiohttp session; per turn a POST whose body chunks feed LIMIT's fold;
  the probe runs on each decoded text delta.
- ``turn`` — one rxturn client (``AnthropicClient`` or ``OpenAIClient``) on one
  ``AiohttpTransport`` whose pool allows every turn its own connection, and per turn a
  ``TurnEngine`` with the default resilient handler (three deadlines armed), an observer, and
  the probe as ``text_streamer``.
- ``sdk`` — the official SDK: ``anthropic.AsyncAnthropic().messages.stream(...)`` iterating
  ``text_stream``, or ``openai.AsyncOpenAI().chat.completions.stream(...)`` iterating its
  ``content.delta`` events, then the final message; its HTTP pool also allows every turn its
  own connection (``max_connections`` and ``max_keepalive_connections`` = turns + 16), and
  retries are off. It has no chunk hand-over stamp, so its "added" latency is not measured.

An error is any exception a turn raised or a reply that is not exactly the streamed deltas
with the scripted usage.
"""

from __future__ import annotations

import asyncio
import gc
import random
import statistics
import time
import tracemalloc
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import CoroutineType
from typing import Any, Final

import aiohttp
from _contenders import DeltaCounter
from _limit import LimitAnthropic, LimitOpenAI
from _servers import PLACEHOLDER, stamp_model
from _streams import request_body, wire_events

__all__ = [
    "DEFAULT_GC_THRESHOLD",
    "Client",
    "gc_state",
    "in_flight",
    "make_clients",
    "run_concurrency",
]

#: The collector's thresholds as this interpreter started (read at import, before anything
#: could tune them): the judged steady-state phases must run with these.
DEFAULT_GC_THRESHOLD: Final = gc.get_threshold()

_WIDTH = len(PLACEHOLDER)
_NEVER = 1 << 62
_MAX_ERRORS_KEPT = 5
_START_LIMIT_S = 60.0

#: A text-delta callback (a probe): the text streamer of one turn.
Probe = Callable[[str], None]
#: One turn against the stamp server: (model, probe) → (input tokens, output tokens).
TurnFn = Callable[[str, Probe], Awaitable[tuple[int, int]]]


@dataclass(frozen=True)
class Client:
    """One contender of the concurrency run: a turn function for one wire format."""

    name: str  # limit_http | turn | sdk
    fmt: str
    run: TurnFn
    stamps_handover: bool  # it sets _Handover.ns as it hands a body chunk to its decoder
    label: str


class _Window:
    """The sampling window, in monotonic ns (closed until every worker is streaming)."""

    __slots__ = ("deltas", "end", "first_deltas", "start", "stopping", "turns", "window_ns")

    def __init__(self, turns: int, window_s: float) -> None:
        self.start = _NEVER
        self.end = _NEVER
        self.deltas = 0  # every delta delivered to any probe sharing this window
        self.stopping = False
        self.turns = turns
        self.first_deltas = 0
        self.window_ns = int(window_s * 1e9)

    def worker_streaming(self) -> None:
        self.first_deltas += 1
        if self.first_deltas == self.turns:
            self.start = time.monotonic_ns() + 1_000_000_000
            self.end = self.start + self.window_ns


class _Handover:
    """When the client code was last handed a body chunk (monotonic ns).

    From that moment to the text streamer, a chunk's deltas run through the client's own code
    only — decoding, and for rxturn the Rx pipeline, handler and fan-out — synchronously in one
    task step (no await in between), so ``now - ns`` at the probe is the latency the client's
    code added to that delta, excluding the kernel, the server and the wait for the loop.
    """

    ns = 0


class _StampingTransport:
    """rxturn's transport with :class:`_Handover` stamped as each body chunk is handed over.

    Only while :attr:`on` (the steady-state phase, the one that reports the added latency):
    the stamp is a wrapper around each response, an async generator that costs rxturn's turn
    objects and a layer per chunk the bare client does not pay (it stamps inline), so the
    other phases send through the transport as it is.
    """

    on = False

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def send(self, *args: Any, **kwargs: Any) -> CoroutineType[Any, Any, Any]:
        # a plain function returning the coroutine: outside the stamped phase the inner
        # transport's own coroutine, with no layer added
        if not _StampingTransport.on:
            return self._inner.send(*args, **kwargs)
        return self._stamped(*args, **kwargs)

    async def _stamped(self, *args: Any, **kwargs: Any) -> Any:
        return _StampedResponse(await self._inner.send(*args, **kwargs))

    async def aclose(self) -> None:
        await self._inner.aclose()


class _StampedResponse:
    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.status = inner.status
        self.headers = inner.headers

    async def aiter_bytes(self) -> Any:
        async for chunk in self._inner.aiter_bytes():
            _Handover.ns = time.monotonic_ns()
            yield chunk

    async def read(self, limit: int) -> bytes:
        return await self._inner.read(limit)

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Probe:
    """Text-streamer probe: counts every delta's text and, when the delta carries a send stamp
    inside the window, records arrival - send and arrival - handover (ns)."""

    __slots__ = ("added", "chars", "first", "latencies", "window")

    def __init__(
        self,
        latencies: list[int] | None,
        window: _Window | None = None,
        first: bool = False,
        added: list[int] | None = None,
    ) -> None:
        self.chars = 0
        self.latencies = latencies
        self.added = added
        self.window = window
        self.first = first  # this is its worker's first turn: report its first delta

    def __call__(self, text: str) -> None:
        self.chars += len(text)
        window = self.window
        if window is None or self.latencies is None:
            return
        now = time.monotonic_ns()
        window.deltas += 1
        sent = int(text)
        if window.start <= sent <= window.end:
            self.latencies.append(now - sent)
            if self.added is not None:
                self.added.append(now - _Handover.ns)
        if self.first:
            self.first = False
            window.worker_streaming()


def _percentiles(values: list[int]) -> dict[str, float]:
    if not values:
        return {"samples": 0}
    ordered = sorted(values)
    n = len(ordered)

    def at(q: float) -> float:
        return ordered[min(n - 1, int(q * n))] / 1000  # ns → µs

    return {
        "samples": n,
        "p50_us": at(0.50),
        "p90_us": at(0.90),
        "p99_us": at(0.99),
        "p999_us": at(0.999),
        "max_us": ordered[-1] / 1000,
        "mean_us": statistics.fmean(ordered) / 1000,
    }


def _verdict(result: tuple[int, int] | BaseException, probe: _Probe, events: int) -> str | None:
    if isinstance(result, BaseException):
        return f"{type(result).__name__}: {result}"
    if result != (10, events) or probe.chars != events * _WIDTH:
        return f"wrong reply: usage {result}, {probe.chars} chars streamed"
    return None


async def _throughput(
    client: Client, turns: int, events: int, wire: int, timeout_s: float
) -> dict[str, Any]:
    probes = [_Probe(None) for _ in range(turns)]
    model = stamp_model(events, 0)
    gc.collect()
    c0, w0 = time.process_time(), time.perf_counter()
    runs = [asyncio.ensure_future(client.run(model, p)) for p in probes]
    _, pending = await asyncio.wait(runs, timeout=timeout_s)
    for task in pending:
        task.cancel()
    wall = time.perf_counter() - w0
    cpu = time.process_time() - c0
    await asyncio.gather(*pending, return_exceptions=True)
    results: list[tuple[int, int] | BaseException] = []
    for task in runs:
        if task in pending:
            results.append(TimeoutError(f"not finished after {timeout_s:g} s"))
        elif (exc := task.exception()) is not None:
            results.append(exc)
        else:
            results.append(task.result())
    errors = [e for r, p in zip(results, probes, strict=True) if (e := _verdict(r, p, events))]
    total = turns * wire
    return {
        "client": client.name,
        "format": client.fmt,
        "label": client.label,
        "turns": turns,
        "wall_s": wall,
        "cpu_s": cpu,
        "events_per_s": total / wall,
        "cpu_us_per_event": cpu / total * 1e6,
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
    }


async def _steady(
    client: Client,
    turns: int,
    rate: int,
    mean_events: int,
    window_s: float,
) -> dict[str, Any]:
    _StampingTransport.on = True
    try:
        return await _steady_run(client, turns, rate, mean_events, window_s)
    finally:
        _StampingTransport.on = False


async def _steady_run(
    client: Client,
    turns: int,
    rate: int,
    mean_events: int,
    window_s: float,
) -> dict[str, Any]:
    pace_us = int(turns / rate * 1e6)
    rng = random.Random(20_000 + rate)
    latencies: list[int] = []
    added: list[int] | None = [] if client.stamps_handover else None
    window = _Window(turns, window_s)
    errors: list[str] = []
    counts = {"turns": 0, "errors": 0}
    low, high = max(2, mean_events // 2), max(3, mean_events * 3 // 2)

    async def worker() -> None:
        first = True
        while True:
            events = rng.randint(low, high)
            probe = _Probe(latencies, window, first, added)
            first = False
            try:
                result: tuple[int, int] | BaseException = await client.run(
                    stamp_model(events, pace_us), probe
                )
            except Exception as exc:
                result = exc
            if window.stopping:
                return  # the window is over: a turn cut short now is neither counted nor wrong
            counts["turns"] += 1
            problem = _verdict(result, probe, events)
            if problem is not None:
                counts["errors"] += 1
                if len(errors) < _MAX_ERRORS_KEPT:
                    errors.append(problem)
                if probe.first:
                    window.worker_streaming()  # a failed first turn must not stall the window

    gc.collect()
    c0, w0 = time.process_time(), time.perf_counter()
    workers = [asyncio.ensure_future(worker()) for _ in range(turns)]
    # Workers run turns back to back until the window closes; then the turns still in flight
    # are cancelled (a cancelled turn is neither counted nor an error: the sample window is over).
    deadline = time.monotonic() + _START_LIMIT_S
    while window.start == _NEVER and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    if window.start == _NEVER:
        errors.append(f"not every worker was streaming after {_START_LIMIT_S:g} s")
        counts["errors"] += 1
    else:
        await asyncio.sleep(max(0.0, (window.end - time.monotonic_ns()) / 1e9))
    cpu = time.process_time() - c0
    wall = time.perf_counter() - w0
    delivered = window.deltas
    window.stopping = True
    for task in workers:
        task.cancel()
    outcomes = await asyncio.gather(*workers, return_exceptions=True)
    crashed = [o for o in outcomes if isinstance(o, Exception)]
    if crashed:
        counts["errors"] += len(crashed)
        errors.append(f"worker crashed: {crashed[0]!r}")
    return {
        "client": client.name,
        "format": client.fmt,
        "label": client.label,
        "turns": turns,
        "turns_completed": counts["turns"],
        "wall_s": wall,
        "cpu_s": cpu,
        "deltas_delivered": delivered,
        # deltas sent inside the window and delivered: below the offered rate = saturated
        "window_events_per_s": len(latencies) / window_s,
        "cpu_us_per_delta": cpu / max(1, delivered) * 1e6,
        "errors": counts["errors"],
        "first_error": errors[0] if errors else None,
        "latency": _percentiles(latencies),
        "added": _percentiles(added) if added is not None else None,
    }


# ------------------------------------------------------------------------------ objects


class _Arrivals:
    """Text streamer for the in-flight count: counts deltas; when each of ``n`` turns has had
    its second delta (so it is past setup and mid-stream), sets ``ready``."""

    __slots__ = ("chars", "deltas", "shared")

    def __init__(self, shared: _Ready) -> None:
        self.chars = 0
        self.deltas = 0
        self.shared = shared

    def __call__(self, text: str) -> None:
        self.chars += len(text)
        self.deltas += 1
        if self.deltas == 2:
            self.shared.one_more()


class _Ready:
    __slots__ = ("count", "event", "n")

    def __init__(self, n: int) -> None:
        self.n = n
        self.count = 0
        self.event = asyncio.Event()

    def one_more(self) -> None:
        self.count += 1
        if self.count >= self.n:
            self.event.set()


def _type_name(kind: type) -> str:
    return f"{kind.__module__}.{kind.__qualname__}"


def _type_counts() -> Counter[str]:
    return Counter(_type_name(type(obj)) for obj in gc.get_objects())


async def in_flight(
    client: Client, n: int, *, pace_us: int = 50_000, deltas: int = 2_000, top: int = 25
) -> dict[str, Any]:
    """GC-tracked objects and traced bytes one in-flight turn keeps alive (see the module
    docstring), and the ``top`` types that grew most, per turn."""
    model = stamp_model(deltas, pace_us)
    ready = _Ready(n)
    await asyncio.sleep(0.2)  # let the previous phase's connections finish closing
    gc.collect()
    before = _type_counts()
    tracemalloc.start()
    tasks = [asyncio.ensure_future(client.run(model, _Arrivals(ready))) for _ in range(n)]
    try:
        await asyncio.wait_for(ready.event.wait(), 60.0)
        gc.collect()
        traced = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    after = _type_counts()
    for task in tasks:
        task.cancel()
    outcomes = await asyncio.gather(*tasks, return_exceptions=True)
    failed = [o for o in outcomes if isinstance(o, Exception)]
    growth = after - before
    return {
        "client": client.name,
        "format": client.fmt,
        "label": client.label,
        "turns": n,
        "objects_per_turn": (after.total() - before.total()) / n,
        "bytes_per_turn": traced / n,
        "top_types": [[name, count / n] for name, count in growth.most_common(top)],
        "errors": len(failed),
        "first_error": repr(failed[0]) if failed else None,
    }


def gc_state() -> dict[str, Any]:
    """The collector's settings now, and whether they are the interpreter's defaults."""
    threshold = gc.get_threshold()
    frozen = gc.get_freeze_count()
    return {
        "threshold": list(threshold),
        "enabled": gc.isenabled(),
        "frozen_objects": frozen,
        "tracked_objects": len(gc.get_objects()),
        "default": threshold == DEFAULT_GC_THRESHOLD and gc.isenabled() and frozen == 0,
    }


# ------------------------------------------------------------------------------ clients


async def make_clients(
    base_url: str, turns: int, formats: tuple[str, ...], sdks: bool
) -> tuple[list[Client], Callable[[], Awaitable[None]]]:
    """The contenders of the concurrency run against the stamp server at ``base_url``, and
    a coroutine function that closes their pools."""
    from rxturn.clients import AnthropicClient, OpenAIClient
    from rxturn.engine import TurnEngine
    from rxturn.engine.context.tokens import TiktokenCounter
    from rxturn.engine.handler import StreamHandler
    from rxturn.messages import RequestOptions
    from rxturn.transport.aiohttp import AiohttpTransport

    counter = TiktokenCounter()
    pool = turns + 16
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=pool))
    closers: list[Callable[[], Awaitable[Any]]] = [session.close]
    clients: list[Client] = []
    messages = [{"role": "user", "content": "Write a long reply."}]

    for fmt in formats:
        url = base_url + ("/v1/messages" if fmt == "anthropic" else "/v1/chat/completions")
        limit_cls = LimitAnthropic if fmt == "anthropic" else LimitOpenAI

        async def floor(
            model: str, probe: Probe, url: str = url, fmt: str = fmt, cls: Any = limit_cls
        ) -> tuple[int, int]:
            folder = cls(on_text=probe)
            async with session.post(url, json=request_body(fmt, model)) as response:
                response.raise_for_status()
                async for chunk in response.content.iter_any():
                    _Handover.ns = time.monotonic_ns()
                    folder.feed(chunk)
            usage = folder.message().usage
            return (usage.input_tokens, usage.output_tokens) if usage else (0, 0)

        transport = AiohttpTransport(limit=pool)
        stamped = _StampingTransport(transport)
        rx_client: Any = (
            AnthropicClient("bench", api_key="k", base_url=base_url, transport=stamped)
            if fmt == "anthropic"
            else OpenAIClient("bench", api_key="k", base_url=base_url + "/v1", transport=stamped)
        )
        closers += [rx_client.aclose, transport.aclose]

        async def rxturn(model: str, probe: Probe, rx_client: Any = rx_client) -> tuple[int, int]:
            engine = TurnEngine(
                rx_client,
                handler=StreamHandler.default(),
                text_streamer=probe,
                observers=[DeltaCounter()],
                request_options=RequestOptions(model=model, max_tokens=1024),
                counter=counter,
            )
            result = await engine.run("Write a long reply.")
            usage = result.turns[-1].usage
            return (usage.input_tokens, usage.output_tokens) if usage else (0, 0)

        clients.append(Client("limit_http", fmt, floor, True, "bare aiohttp POST + LIMIT"))
        clients.append(
            Client("turn", fmt, rxturn, True, "TurnEngine, StreamHandler.default(), observer")
        )
        if not sdks:
            continue
        if fmt == "anthropic":
            import anthropic

            limits = type(anthropic.DEFAULT_CONNECTION_LIMITS)(
                max_connections=pool, max_keepalive_connections=pool
            )
            a_sdk = anthropic.AsyncAnthropic(
                api_key="k",
                base_url=base_url,
                max_retries=0,
                http_client=anthropic.DefaultAsyncHttpxClient(limits=limits),
            )
            closers.append(a_sdk.close)

            async def a_turn(model: str, probe: Probe, sdk: Any = a_sdk) -> tuple[int, int]:
                async with sdk.messages.stream(
                    model=model, max_tokens=1024, messages=messages
                ) as stream:
                    async for text in stream.text_stream:
                        probe(text)
                    message = await stream.get_final_message()
                return (message.usage.input_tokens, message.usage.output_tokens)

            clients.append(
                Client("sdk", fmt, a_turn, False, "anthropic.AsyncAnthropic messages.stream")
            )
        else:
            import openai

            limits = type(openai.DEFAULT_CONNECTION_LIMITS)(
                max_connections=pool, max_keepalive_connections=pool
            )
            o_sdk = openai.AsyncOpenAI(
                api_key="k",
                base_url=base_url + "/v1",
                max_retries=0,
                http_client=openai.DefaultAsyncHttpxClient(limits=limits),
            )
            closers.append(o_sdk.close)

            async def o_turn(model: str, probe: Probe, sdk: Any = o_sdk) -> tuple[int, int]:
                async with sdk.chat.completions.stream(
                    model=model, messages=messages, stream_options={"include_usage": True}
                ) as stream:
                    async for event in stream:
                        # the role chunk's "" content arrives as an empty delta: nothing to show
                        if event.type == "content.delta" and event.delta:
                            probe(event.delta)
                    completion = await stream.get_final_completion()
                usage = completion.usage
                return (usage.prompt_tokens, usage.completion_tokens) if usage else (0, 0)

            clients.append(
                Client("sdk", fmt, o_turn, False, "openai.AsyncOpenAI chat.completions.stream")
            )

    async def aclose() -> None:
        for close in reversed(closers):
            await close()

    return clients, aclose


# ------------------------------------------------------------------------------ the run


class _Pools:
    """The contenders with new connection pools for each phase that needs them.

    A phase that ends by cancelling turns mid-stream (objects in flight, steady state) can
    leave a pool with connections still checked out (an httpx pool under a cancelled SDK
    stream does), which would starve the next phase's workers; each such phase therefore
    gets fresh clients, warmed by one short turn each."""

    def __init__(self, base_url: str, turns: int, formats: tuple[str, ...], sdks: bool) -> None:
        self._args = (base_url, turns, formats, sdks)
        self._aclose: Callable[[], Awaitable[None]] | None = None

    async def fresh(self) -> dict[tuple[str, str], Client]:
        await self.aclose()
        clients, self._aclose = await make_clients(*self._args)
        for client in clients:  # warm: imports, connections, tokenizer
            await client.run(stamp_model(2, 0), _Probe(None))
        return {(c.name, c.fmt): c for c in clients}

    async def aclose(self) -> None:
        close, self._aclose = self._aclose, None
        if close is not None:
            await close()


async def _calibrated_turns(
    client: Client, turns: int, events: int, budget_s: float
) -> tuple[int, str | None]:
    """How many concurrent turns ``client`` can run within ``budget_s``: all ``turns``, or
    fewer (and why), judged from a run of a few dozen."""
    sample = min(turns, 40)
    probes = [_Probe(None) for _ in range(sample)]
    model = stamp_model(events, 0)
    w0 = time.perf_counter()
    await asyncio.gather(*(client.run(model, p) for p in probes), return_exceptions=True)
    projected = (time.perf_counter() - w0) * turns / sample
    if projected <= budget_s:
        return turns, None
    fewer = max(sample, int(turns * budget_s / projected) // 10 * 10)
    return fewer, (
        f"{sample} concurrent turns took {projected * sample / turns:.1f} s, so {turns:,} "
        f"would take ~{projected:.0f} s, over the {budget_s:g} s budget: ran {fewer:,}"
    )


async def run_concurrency(
    base_url: str,
    *,
    turns: int,
    events: int,
    rates: tuple[int, ...],
    turn_seconds: float,
    window_s: float,
    headline_rate: int,
    formats: tuple[str, ...] = ("anthropic", "openai"),
    sdks: bool = True,
    sdk_budget_s: float = 60.0,
    in_flight_turns: int = 200,
    throughput_rounds: int = 1,
    gc_thresholds: tuple[tuple[int, int, int], ...] = (),
    log: Callable[[str], None] = lambda text: None,
) -> dict[str, Any]:
    """Every phase of the module docstring against the stamp server at ``base_url``.

    The objects-in-flight count, then the throughput phase per format, then steady-state
    phases: the first format at every rate in ``rates`` (events/s offered across all turns;
    turns last ``turn_seconds`` on average; the SDK only at ``headline_rate``), each other
    format at ``headline_rate``; last, the first format at ``headline_rate`` under each of
    ``gc_thresholds`` (``gc.set_threshold``, information only)."""
    gc.unfreeze()  # the judged phases run with the collector as an application has it
    gc.collect()
    pools = _Pools(base_url, turns, formats, sdks)
    try:
        keys = list(await pools.fresh())
        out: dict[str, Any] = {
            "turns": turns,
            "formats": list(formats),
            "headline_rate": headline_rate,
            "gc": gc_state(),
            "in_flight": [],
            "throughput": {"events_per_turn": events},
            "latency": [],
            "gc_tuned": [],
        }
        for key in keys:
            clients = await pools.fresh()
            out["in_flight"].append(await in_flight(clients[key], min(turns, in_flight_turns)))
        log("objects in flight counted")
        counts: dict[tuple[str, str], tuple[int, str | None]] = {}
        clients = await pools.fresh()
        for fmt in formats:
            wire = 0
            async with aiohttp.ClientSession() as session:
                url = base_url + ("/v1/messages" if fmt == "anthropic" else "/v1/chat/completions")
                async with session.post(
                    url, json=request_body(fmt, stamp_model(events, 0))
                ) as response:
                    wire = wire_events(await response.read())
            per: dict[str, Any] = {"wire_events_per_turn": wire}
            timeout = max(60.0, 4 * sdk_budget_s)
            # The bare client and rxturn run ``throughput_rounds`` interleaved rounds (each
            # round in the other order than the last); the judged share is the median of the
            # per-round shares, as for the per-event ratios. An SDK runs once.
            runs: dict[str, list[dict[str, Any]]] = {"limit_http": [], "turn": []}
            for k in range(throughput_rounds):
                for name in ("limit_http", "turn") if k % 2 == 0 else ("turn", "limit_http"):
                    counts[(name, fmt)] = (turns, None)
                    runs[name].append(
                        await _throughput(clients[(name, fmt)], turns, events, wire, timeout)
                    )
            shares = [
                t["events_per_s"] / b["events_per_s"]
                for t, b in zip(runs["turn"], runs["limit_http"], strict=True)
            ]
            per["turn_share_rounds"] = shares
            per["turn_share"] = statistics.median(shares)
            for name, results in runs.items():
                ordered = sorted(results, key=lambda r: r["events_per_s"])
                result = dict(ordered[(len(ordered) - 1) // 2])  # the median round (lower)
                result["rounds_events_per_s"] = [r["events_per_s"] for r in results]
                result["errors"] = sum(r["errors"] for r in results)
                result["first_error"] = next(
                    (r["first_error"] for r in results if r["first_error"]), None
                )
                result["reduced"] = None
                per[name] = result
                rounds = ", ".join(f"{x:,.0f}" for x in result["rounds_events_per_s"])
                log(f"throughput {fmt} {name}: {rounds} events/s")
            if ("sdk", fmt) in clients:
                client = clients[("sdk", fmt)]
                n, why = await _calibrated_turns(client, turns, events, sdk_budget_s)
                counts[("sdk", fmt)] = (n, why)
                result = await _throughput(client, n, events, wire, timeout)
                result["reduced"] = why
                per["sdk"] = result
                log(f"throughput {fmt} sdk: {result['events_per_s']:,.0f} events/s")
            out["throughput"][fmt] = per
        for fmt in formats:
            for rate in rates if fmt == formats[0] else (headline_rate,):
                point: dict[str, Any] = {
                    "format": fmt,
                    "offered_events_per_s": rate,
                    "pace_ms": turns / rate * 1000,
                    "mean_events_per_turn": max(4, round(turn_seconds * rate / turns)),
                    "window_s": window_s,
                    "gc": gc_state(),
                }
                for name, _ in (k for k in keys if k[1] == fmt):
                    if name == "sdk" and rate != headline_rate:
                        continue
                    # a fresh pool: the previous phase cancelled its turns mid-stream
                    client = (await pools.fresh())[(name, fmt)]
                    n, why = counts[(name, fmt)]
                    mean = max(4, round(turn_seconds * rate / n))
                    result = await _steady(client, n, rate, mean, window_s)
                    result["reduced"] = why
                    point[name] = result
                    log(
                        f"steady {fmt} {rate:,}/s {name}: p99 "
                        f"{result['latency'].get('p99_us', float('nan')):,.0f} µs"
                    )
                out["latency"].append(point)
        for thresholds in gc_thresholds:
            fmt = formats[0]
            point = {
                "format": fmt,
                "offered_events_per_s": headline_rate,
                "pace_ms": turns / headline_rate * 1000,
                "mean_events_per_turn": max(4, round(turn_seconds * headline_rate / turns)),
                "window_s": window_s,
                "gc_threshold": list(thresholds),
            }
            for name in ("limit_http", "turn"):
                client = (await pools.fresh())[(name, fmt)]
                saved = gc.get_threshold()
                gc.set_threshold(*thresholds)
                try:
                    point[name] = await _steady(
                        client, turns, headline_rate, point["mean_events_per_turn"], window_s
                    )
                finally:
                    gc.set_threshold(*saved)
            out["gc_tuned"].append(point)
        return out
    finally:
        await pools.aclose()
