"""What ``OTelObserver`` costs a turn: no-op providers (target: within 5 %) and a recording SDK.

Three variants of the same turn — ``await engine.run(prompt)`` with the default resilient
handler against the fake provider running in a child process (``rxturn fake-server``), a one-delta
reply, the history reset before each turn — run interleaved, one turn of each per round, so
that drift on a shared machine hits them alike:

- ``without`` — no observer;
- ``noop`` — ``OTelObserver`` on OpenTelemetry's no-op tracer and meter providers (what a
  library user pays when the application installed no SDK);
- ``proxy`` — ``OTelObserver()`` on the global providers when the application set none
  (OpenTelemetry's proxies, which record nothing until an SDK is installed); unlike the
  explicit no-op providers the observer cannot know that nothing will ever record, so it does
  its work (minus span attributes: its spans are not recording);
- ``sdk`` — ``OTelObserver`` on a recording SDK: a ``TracerProvider`` with a simple processor
  into an in-memory exporter (cleared every round) and a ``MeterProvider`` with an in-memory
  reader; this is the cost of actually recording the spans and metrics.

Two figures per variant: the **turn fixed cost** (median CPU µs of this process per turn; the
fake server's CPU is in its own process) and a **concurrency** figure (wall seconds for ``-c``
turns gathered at once on one loop, one engine each, median over the rounds). The script
prints each variant's ratio to ``without``; the no-op ratios carry a PASS/MISS verdict against
the 5 % target, the SDK's are reported as a cost per turn.

Run: ``python benchmarks/bench_otel.py [--rounds 300] [--concurrency 200] [--batches 15]``
(``--quick`` for a smoke run). Not collected by pytest; nothing here is a timed assertion.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

from _servers import FakeServerProcess
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NoOpTracerProvider

from rxturn import AnthropicClient, StreamHandler, TurnEngine
from rxturn.engine.observation.observers import Observer
from rxturn.otel import OTelObserver

TARGET = 1.05
VARIANTS = ("without", "noop", "proxy", "sdk")
PROMPT = (
    "Summarise the attached incident report in three bullet points: what failed, why it "
    "failed, and what we changed so that it does not happen again."
)


def _fake() -> FakeServerProcess:
    """The fake provider in a child process (its CPU is not this process's)."""
    return FakeServerProcess(
        {"models": {"*": [{"text": "ok", "usage": {"input_tokens": 40, "output_tokens": 1}}]}}
    )


class _Variant:
    def __init__(self, name: str) -> None:
        self.name = name
        self.exporter: InMemorySpanExporter | None = None
        self.reader: InMemoryMetricReader | None = None
        self.observers: Callable[[], list[Observer]] = list
        if name == "noop":
            noop = OTelObserver(
                tracer_provider=NoOpTracerProvider(),
                meter_provider=NoOpMeterProvider(),
                capture_content=False,
            )
            self.observers = lambda: [noop]
        elif name == "proxy":
            proxied = OTelObserver(capture_content=False)  # the global providers: no SDK set
            self.observers = lambda: [proxied]
        elif name == "sdk":
            self.exporter = InMemorySpanExporter()
            tracer_provider = TracerProvider()
            tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
            self.reader = InMemoryMetricReader()
            recording = OTelObserver(
                tracer_provider=tracer_provider,
                meter_provider=MeterProvider(metric_readers=[self.reader]),
                capture_content=False,
            )
            self.observers = lambda: [recording]
        self.cpu: list[float] = []
        self.batch_wall: list[float] = []

    def clear(self) -> None:
        if self.exporter is not None:
            self.exporter.clear()


async def _turn(engine: TurnEngine, i: int) -> None:
    engine.history.clear()
    await engine.run(f"Turn {i}. {PROMPT}")


async def main(rounds: int, concurrency: int, batches: int) -> None:
    fake = _fake()
    try:
        async with AnthropicClient("bench", api_key="bench-key", base_url=fake.url) as client:
            variants = [_Variant(name) for name in VARIANTS]
            engines = {
                v.name: TurnEngine(client, handler=StreamHandler.default(), observers=v.observers())
                for v in variants
            }
            for i in range(20):  # warm-up: connections, tokenizer, code paths
                for v in variants:
                    await _turn(engines[v.name], i)
            gc.collect()
            gc.disable()
            try:
                for i in range(rounds):
                    order = variants[i % 4 :] + variants[: i % 4]
                    for v in order:
                        started = time.process_time()
                        await _turn(engines[v.name], i)
                        v.cpu.append(time.process_time() - started)
                        v.clear()
                    if i % 50 == 49:
                        gc.collect()
            finally:
                gc.enable()
            for b in range(batches):
                order = variants[b % 4 :] + variants[: b % 4]
                for v in order:
                    group = [
                        TurnEngine(client, handler=StreamHandler.default(), observers=v.observers())
                        for _ in range(concurrency)
                    ]
                    started = time.perf_counter()
                    await asyncio.gather(*(_turn(e, b) for e in group))
                    v.batch_wall.append(time.perf_counter() - started)
                    v.clear()
                    gc.collect()
    finally:
        fake.close()
    report(variants, rounds, concurrency, batches)


def report(variants: list[_Variant], rounds: int, concurrency: int, batches: int) -> None:
    base = variants[0]
    base_cpu = statistics.median(base.cpu)
    base_wall = statistics.median(base.batch_wall)
    print(f"turn fixed cost: {rounds} rounds, median CPU µs of this process per turn")
    print(f"concurrency: {concurrency} turns gathered on one loop, median of {batches} batches")
    print()
    print(f"{'variant':<9} {'turn µs':>9} {'ratio':>7} {'batch s':>9} {'turns/s':>9} {'ratio':>7}")
    for v in variants:
        cpu = statistics.median(v.cpu)
        wall = statistics.median(v.batch_wall)
        print(
            f"{v.name:<9} {cpu * 1e6:>9.0f} {cpu / base_cpu:>7.3f} {wall:>9.3f} "
            f"{concurrency / wall:>9.0f} {wall / base_wall:>7.3f}"
        )
    print()
    for v, title in ((variants[1], "no-op providers"), (variants[2], "global proxies")):
        turn_ratio = statistics.median(v.cpu) / base_cpu
        conc_ratio = statistics.median(v.batch_wall) / base_wall
        for label, ratio in (("turn fixed cost", turn_ratio), ("concurrency", conc_ratio)):
            verdict = "PASS" if ratio <= TARGET else "MISS"
            print(f"{title}, {label}: {ratio:.3f} x without (target <= {TARGET}) {verdict}")
    sdk = variants[3]
    extra = (statistics.median(sdk.cpu) - base_cpu) * 1e6
    print(
        f"recording SDK: {extra:+.0f} µs CPU per turn "
        f"({statistics.median(sdk.cpu) / base_cpu:.3f} x), "
        f"concurrency {statistics.median(sdk.batch_wall) / base_wall:.3f} x"
    )


def _args(argv: list[str] | None = None) -> Any:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--batches", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="a smoke run (30 rounds, 3 batches)")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.batches, args.concurrency = 30, 3, 50
    return args


if __name__ == "__main__":
    options = _args()
    asyncio.run(main(options.rounds, options.concurrency, options.batches))
