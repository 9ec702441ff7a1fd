"""What the stream handler adds per event (the bound: at most 1 µs/event over the bare fold).

A 100k-event synthetic reply, decoded in advance into a list, is pushed by a synchronous source
(no IO, no decoding: only the pipeline is measured) through:

(a) the bare fold loop: ``for e in events: state = fold(state, e)``;
(b) the plain pipeline: ``source.pipe(ops.scan(fold, INITIAL_STATE))``;
(c) the default :class:`~rxturn.engine.handler.StreamHandler` (first-event, per-event and total
    deadlines all armed; retry ladder, rescue and cancel operators in place) followed by
    ``ops.scan(fold_handler, INITIAL_STATE)``, on an asyncio scheduler inside a running loop.

The handler's cost is (c) - (b). Two stream shapes are measured: ``text`` (one text block: the
common case) and ``mixed`` (text blocks interleaved with tool calls whose JSON arrives in
fragments, 20 % of the events). Each figure is the best of ``--repeat`` interleaved rounds.
The script exits 1 if the handler adds more than ``--budget`` µs/event on the text stream.

Run: ``python benchmarks/bench_handler.py [--events N] [--repeat N] [--budget US]``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable

from reactivex import Observable, abc
from reactivex import operators as ops
from reactivex.disposable import Disposable
from reactivex.scheduler.eventloop import AsyncIOScheduler

from rxturn.engine.handler import StreamHandler
from rxturn.events import (
    Delta,
    MessageDelta,
    MessageStart,
    MessageStop,
    PartStart,
    PartStop,
    StreamEvent,
)
from rxturn.fold import INITIAL_STATE, fold, fold_handler
from rxturn.messages import Message, Request, RequestOptions, Usage
from rxturn.resilience.cancel import CancelToken

__all__ = ["main"]


def text_stream(n: int) -> list[StreamEvent]:
    """One text block of ``n - 5`` deltas, framed as a complete reply (``n`` events)."""
    deltas: list[StreamEvent] = [Delta(0, f"tok{i % 97} ") for i in range(max(0, n - 5))]
    return [
        MessageStart(id="msg_bench", model="bench"),
        PartStart(0),
        *deltas,
        PartStop(0),
        MessageDelta("end_turn", Usage(input_tokens=10, output_tokens=n)),
        MessageStop(),
    ]


def mixed_stream(n: int) -> list[StreamEvent]:
    """Text blocks alternating with tool calls; about 20 % of the events are tool JSON."""
    events: list[StreamEvent] = [MessageStart(id="msg_bench", model="bench")]
    index = 0
    while len(events) < n - 2:
        events.append(PartStart(index))
        events.extend(Delta(index, f"word{i} ") for i in range(40))
        events.append(PartStop(index))
        index += 1
        events.append(PartStart(index, "tool_call", id=f"call_{index}", name="lookup"))
        events.append(Delta(index, '{"query": "', "tool_json"))
        events.extend(Delta(index, f"part{i} ", "tool_json") for i in range(8))
        events.append(Delta(index, '"}', "tool_json"))
        events.append(PartStop(index))
        index += 1
    events.append(MessageDelta("tool_call", Usage(input_tokens=10, output_tokens=n)))
    events.append(MessageStop())
    return events


def synchronous_source(events: list[StreamEvent]) -> Observable[StreamEvent]:
    """Push every event inside ``subscribe``, as fast as Python can call ``on_next``."""

    def subscribe(
        observer: abc.ObserverBase[StreamEvent], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        on_next = observer.on_next
        for event in events:
            on_next(event)
        observer.on_completed()
        return Disposable()

    return Observable(subscribe)


class BenchClient:
    """A :class:`~rxturn.clients.ModelClient` whose stream is the pre-decoded list."""

    model = "bench"
    base_url = "http://bench.invalid"

    def __init__(self, events: list[StreamEvent]) -> None:
        self._events = events

    def stream(
        self, request: Request, options: RequestOptions | None = None
    ) -> Observable[StreamEvent]:
        return synchronous_source(self._events)

    async def create(self, request: Request, options: RequestOptions | None = None) -> Message:
        raise AssertionError("the benchmark stream never fails")


def bare_fold(events: list[StreamEvent]) -> float:
    start = time.perf_counter()
    state = INITIAL_STATE
    for event in events:
        state = fold(state, event)
    elapsed = time.perf_counter() - start
    assert state.completed
    return elapsed


def _drain(observable: Observable[object]) -> float:
    finished: list[object] = []
    start = time.perf_counter()
    observable.pipe(ops.last()).subscribe(finished.append, _raise)
    elapsed = time.perf_counter() - start
    assert finished, "the pipeline did not complete"
    return elapsed


def _raise(error: Exception) -> None:
    raise error


def scan_pipeline(events: list[StreamEvent]) -> float:
    return _drain(synchronous_source(events).pipe(ops.scan(fold, INITIAL_STATE)))


def handler_pipeline(events: list[StreamEvent]) -> float:
    async def run() -> float:
        scheduler = AsyncIOScheduler(asyncio.get_running_loop())
        handler = StreamHandler.default()
        turn = handler.stream_turn(
            BenchClient(events),
            Request(messages=(Message.user("bench"),)),
            cancel=CancelToken(),
            scheduler=scheduler,
        )
        return _drain(turn.pipe(ops.scan(fold_handler, INITIAL_STATE)))

    return asyncio.run(run())


def best_of(
    measures: list[Callable[[list[StreamEvent]], float]], events: list[StreamEvent], n: int
) -> list[float]:
    """Best of ``n`` rounds for each measure, in µs per event.

    The measures take turns within each round, so a burst of load from other processes
    slows all of them alike instead of skewing one.
    """
    bests = [float("inf")] * len(measures)
    for _ in range(n):
        for i, measure in enumerate(measures):
            bests[i] = min(bests[i], measure(events))
    return [seconds / len(events) * 1e6 for seconds in bests]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--budget", type=float, default=1.0, help="µs/event the handler may add")
    args = parser.parse_args(argv)

    print(f"{args.events} events per stream, best of {args.repeat} runs, µs/event")
    print(f"{'stream':<8}{'(a) fold':>11}{'(b) scan':>11}{'(c) handler':>13}{'added':>9}")
    added_text = 0.0
    for name, make in (("text", text_stream), ("mixed", mixed_stream)):
        events = make(args.events)
        a, b, c = best_of([bare_fold, scan_pipeline, handler_pipeline], events, args.repeat)
        print(f"{name:<8}{a:>11.3f}{b:>11.3f}{c:>13.3f}{c - b:>9.3f}")
        if name == "text":
            added_text = c - b
    verdict = "within" if added_text <= args.budget else "OVER"
    print(
        f"handler adds {added_text:.3f} µs/event on the text stream: {verdict} the "
        f"{args.budget:g} µs budget"
    )
    return 0 if added_text <= args.budget else 1


if __name__ == "__main__":
    sys.exit(main())
