"""A thousand streaming turns at once on one event loop: throughput, latency, errors.

The server is the stamp server of :mod:`_servers` in a child process (the fake provider's bytes,
Anthropic format). Two phases, each run first by the floor client and then by rxturn:

**Throughput.** ``turns`` turns start together; each streams ``events`` deltas that the server
writes as fast as the socket takes them. Reported: aggregate events/s (all wire events of all
turns / wall time from the first request to the last reply), CPU µs per event (per-turn setup
included), errors.

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

Clients:

- ``limit_http`` — one aiohttp session; per turn a POST whose body chunks feed LIMIT's fold;
  the probe runs on each decoded text delta.
- ``turn`` — one :class:`~rxturn.clients.AnthropicClient` on one ``AiohttpTransport`` whose pool
  allows every turn its own connection, and per turn a ``TurnEngine`` with the default
  resilient handler (three deadlines armed), an observer, and the probe as ``text_streamer``.

An error is any exception a turn raised or a reply that is not exactly the streamed deltas
with the scripted usage.
"""

from __future__ import annotations

import asyncio
import gc
import random
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from _contenders import DeltaCounter
from _limit import LimitAnthropic
from _servers import PLACEHOLDER, stamp_model
from _streams import request_body, wire_events

__all__ = ["run_concurrency"]

_WIDTH = len(PLACEHOLDER)
_NEVER = 1 << 62
_MAX_ERRORS_KEPT = 5
_START_LIMIT_S = 120.0

#: One turn against the stamp server: (model, probe) → (input tokens, output tokens).
TurnFn = Callable[[str, "_Probe"], Awaitable[tuple[int, int]]]


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
    """rxturn's transport with :class:`_Handover` stamped as each body chunk is handed over."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def send(self, *args: Any, **kwargs: Any) -> Any:
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
    name: str, turns: int, turn: TurnFn, events: int, wire: int
) -> dict[str, Any]:
    probes = [_Probe(None) for _ in range(turns)]
    model = stamp_model(events, 0)
    gc.collect()
    c0, w0 = time.process_time(), time.perf_counter()
    results = await asyncio.gather(*(turn(model, p) for p in probes), return_exceptions=True)
    wall = time.perf_counter() - w0
    cpu = time.process_time() - c0
    errors = [e for r, p in zip(results, probes, strict=True) if (e := _verdict(r, p, events))]
    total = turns * wire
    return {
        "client": name,
        "turns": turns,
        "wall_s": wall,
        "cpu_s": cpu,
        "events_per_s": total / wall,
        "cpu_us_per_event": cpu / total * 1e6,
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
    }


async def _steady(
    name: str,
    turns: int,
    turn: TurnFn,
    rate: int,
    mean_events: int,
    window_s: float,
) -> dict[str, Any]:
    pace_us = int(turns / rate * 1e6)
    rng = random.Random(20_000 + rate)
    latencies: list[int] = []
    added: list[int] = []
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
                result: tuple[int, int] | BaseException = await turn(
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
        "client": name,
        "turns_completed": counts["turns"],
        "wall_s": wall,
        "cpu_s": cpu,
        "deltas_delivered": delivered,
        "cpu_us_per_delta": cpu / max(1, delivered) * 1e6,
        "errors": counts["errors"],
        "first_error": errors[0] if errors else None,
        "latency": _percentiles(latencies),
        "added": _percentiles(added),
    }


async def run_concurrency(
    base_url: str,
    *,
    turns: int,
    events: int,
    rates: tuple[int, ...],
    turn_seconds: float,
    window_s: float,
    gc_rate: int | None = None,
    gc_thresholds: tuple[tuple[int, int, int], ...] = (),
) -> dict[str, Any]:
    """The throughput phase, then one steady-state latency phase per aggregate rate in
    ``rates`` (events/s offered across all turns; turns last ``turn_seconds`` on average), then
    the ``gc_rate`` phase again under each of ``gc_thresholds`` (``gc.set_threshold``)."""
    from rxturn.clients import AnthropicClient
    from rxturn.engine import TurnEngine
    from rxturn.handler import StreamHandler
    from rxturn.messages import RequestOptions
    from rxturn.tokens import TiktokenCounter
    from rxturn.transport.aiohttp import AiohttpTransport

    url = base_url + "/v1/messages"
    counter = TiktokenCounter()
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=turns + 16))
    transport = AiohttpTransport(limit=turns + 16)
    client = AnthropicClient(
        "bench", api_key="k", base_url=base_url, transport=_StampingTransport(transport)
    )

    async def count_wire(n: int) -> int:
        async with session.post(url, json=request_body("anthropic", stamp_model(n, 0))) as r:
            return wire_events(await r.read())

    async def floor(model: str, probe: _Probe) -> tuple[int, int]:
        folder = LimitAnthropic(on_text=probe)
        async with session.post(url, json=request_body("anthropic", model)) as response:
            response.raise_for_status()
            async for chunk in response.content.iter_any():
                _Handover.ns = time.monotonic_ns()
                folder.feed(chunk)
        usage = folder.message().usage
        return (usage.input_tokens, usage.output_tokens) if usage else (0, 0)

    async def rxturn(model: str, probe: _Probe) -> tuple[int, int]:
        engine = TurnEngine(
            client,
            handler=StreamHandler.default(),
            text_streamer=probe,
            observers=[DeltaCounter()],
            request_options=RequestOptions(model=model, max_tokens=1024),
            counter=counter,
        )
        result = await engine.run("Write a long reply.")
        usage = result.turns[-1].usage
        return (usage.input_tokens, usage.output_tokens) if usage else (0, 0)

    clients: tuple[tuple[str, TurnFn], ...] = (("limit_http", floor), ("turn", rxturn))
    try:
        for _, fn in clients:  # warm: connections, tokenizer
            await fn(stamp_model(2, 0), _Probe(None))
        wire = await count_wire(events)
        out: dict[str, Any] = {
            "turns": turns,
            "throughput": {"events_per_turn": events, "wire_events_per_turn": wire},
            "latency": [],
        }
        for name, fn in clients:
            out["throughput"][name] = await _throughput(name, turns, fn, events, wire)
        for rate in rates:
            mean_events = max(4, round(turn_seconds * rate / turns))
            point: dict[str, Any] = {
                "offered_events_per_s": rate,
                "pace_ms": turns / rate * 1000,
                "mean_events_per_turn": mean_events,
                "window_s": window_s,
            }
            for name, fn in clients:
                point[name] = await _steady(name, turns, fn, rate, mean_events, window_s)
            out["latency"].append(point)
        out["gc_tuned"] = []
        for thresholds in gc_thresholds if gc_rate is not None else ():
            assert gc_rate is not None
            mean_events = max(4, round(turn_seconds * gc_rate / turns))
            point = {
                "offered_events_per_s": gc_rate,
                "pace_ms": turns / gc_rate * 1000,
                "mean_events_per_turn": mean_events,
                "window_s": window_s,
                "gc_threshold": list(thresholds),
            }
            saved = gc.get_threshold()
            gc.set_threshold(*thresholds)
            try:
                for name, fn in clients:
                    point[name] = await _steady(name, turns, fn, gc_rate, mean_events, window_s)
            finally:
                gc.set_threshold(*saved)
            out["gc_tuned"].append(point)
        return out
    finally:
        await client.aclose()
        await transport.aclose()
        await session.close()
