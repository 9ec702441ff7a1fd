"""The turn's shared stream where users subscribe: the hand-written multicast against
``reactivex``'s ``Subject``.

A streaming turn's batches reach the user's ``engine.turn_streams`` subscriptions through one
multicast per turn (``Share``, in the module of :class:`rxturn.engine.TurnStream`): a tuple of
observers called in a plain loop. This script measures what a ``reactivex.subject.Subject`` in
its place would cost, three ways, each variant interleaved with the other round by round:

1. **per batch**: one batch of 8 events pushed through the multicast to 1 and to 3 subscribers
   (each wrapped as the engine wraps a user's, so that one that raises is dropped), CPU ns per
   batch, the median of 15 rounds of 20,000 pushes;
2. **objects**: the GC-tracked objects one turn's multicast keeps alive with one subscriber
   while the turn is in flight (the multicast, the subscription and its disposable);
3. **per turn**: a whole one-delta turn (``StreamHandler.default()``, the fake provider in a
   child process) with one ``engine.turn_streams`` subscriber that subscribes each turn's
   ``batches``, the engine using ``Share`` or a ``Subject`` adapted to ``Share``'s one method
   (``add``: subscribe, return the disposable), median CPU µs per turn over ``--rounds``.

Run: ``python benchmarks/bench_fanout.py [--rounds 300]`` (``--quick`` for a smoke run).
Nothing here is asserted; the decision it informs is in docs/design.md.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import statistics
import sys
import time
from typing import Any

from _servers import FakeServerProcess
from reactivex import abc
from reactivex.subject import Subject

from rxturn import OpenAIClient, StreamHandler, TurnEngine
from rxturn.engine import TurnStream
from rxturn.events import Delta

_PATHS: Any = importlib.import_module(TurnStream.__module__)  # where Share and _Isolated live
HandWritten: Any = _PATHS.Share
Isolated: Any = _PATHS._Isolated


class SubjectShare:
    """A ``reactivex`` ``Subject`` with ``Share``'s interface (what the engine calls)."""

    __slots__ = ("_subject",)

    def __init__(self) -> None:
        self._subject: Subject[Any] = Subject()

    def add(self, observer: abc.ObserverBase[Any]) -> abc.DisposableBase:
        return self._subject.subscribe(observer)

    def on_next(self, value: Any) -> None:
        self._subject.on_next(value)

    def on_error(self, error: Exception) -> None:
        self._subject.on_error(error)

    def on_completed(self) -> None:
        self._subject.on_completed()


VARIANTS: dict[str, Any] = {"hand-written Share": HandWritten, "reactivex Subject": SubjectShare}


class _Sink(abc.ObserverBase[Any]):
    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0

    def on_next(self, value: Any) -> None:
        self.n += 1

    def on_error(self, error: Exception) -> None:
        pass

    def on_completed(self) -> None:
        pass


def per_batch(subscribers: int, rounds: int = 15, pushes: int = 20_000) -> dict[str, float]:
    """Median CPU ns per batch pushed to ``subscribers`` isolated subscribers."""
    batch = [Delta(index=0, kind="text", text="abcd") for _ in range(8)]
    runs: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for _ in range(rounds):
        for name, cls in VARIANTS.items():
            share = cls()
            for _ in range(subscribers):
                share.add(Isolated(_Sink()))
            push = share.on_next
            started = time.process_time()
            for _ in range(pushes):
                push(batch)
            runs[name].append((time.process_time() - started) / pushes * 1e9)
    return {name: statistics.median(values) for name, values in runs.items()}


def objects(turns: int = 1_000) -> dict[str, float]:
    """GC-tracked objects per turn kept alive by a multicast with one subscriber."""
    out: dict[str, float] = {}
    for name, cls in VARIANTS.items():
        gc.collect()
        before = len(gc.get_objects())
        kept = []
        for _ in range(turns):
            share = cls()
            kept.append((share, share.add(Isolated(_Sink())), _Sink()))
        gc.collect()
        # less what the benchmark itself holds: the tuple, the sink it made and _Isolated + sink
        out[name] = (len(gc.get_objects()) - before - 1) / turns - 4
        del kept
    return out


async def per_turn(rounds: int) -> dict[str, float]:
    """Median CPU µs of a one-delta turn with one ``turn_streams`` subscriber, per variant."""
    replies = [{"text": "ok", "usage": {"input_tokens": 10, "output_tokens": 1}}]
    fake = FakeServerProcess({"models": {"*": replies}})
    runs: dict[str, list[float]] = {name: [] for name in VARIANTS}
    try:
        async with OpenAIClient("bench", api_key="k", base_url=fake.url + "/v1") as client:
            engine = TurnEngine(client, handler=StreamHandler.default())
            seen = _Sink()

            def watch(stream: TurnStream) -> None:
                stream.batches.subscribe(seen)

            engine.turn_streams.subscribe(watch)
            for i in range(-20, rounds):
                gc.collect()
                for name, cls in VARIANTS.items() if i % 2 else reversed(VARIANTS.items()):
                    _PATHS.Share = cls
                    engine.history.clear()
                    started = time.process_time()
                    await engine.run("hello")
                    if i >= 0:
                        runs[name].append((time.process_time() - started) * 1e6)
            if seen.n < 2 * rounds:
                raise AssertionError(f"the subscriber saw {seen.n} batches, expected more")
    finally:
        _PATHS.Share = HandWritten
        fake.close()
    return {name: statistics.median(values) for name, values in runs.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=300, help="turns per variant")
    parser.add_argument("--quick", action="store_true", help="a smoke run (30 rounds)")
    args = parser.parse_args(argv)
    rounds = 30 if args.quick else args.rounds
    names = list(VARIANTS)
    rows: list[tuple[str, dict[str, float], str]] = [
        ("per batch of 8 events, 1 subscriber", per_batch(1), "ns"),
        ("per batch of 8 events, 3 subscribers", per_batch(3), "ns"),
        ("objects per turn, 1 subscriber", objects(), "objects"),
        ("one-delta turn with a turn_streams subscriber", asyncio.run(per_turn(rounds)), "µs"),
    ]
    print(f"{'':48} {names[0]:>20} {names[1]:>20} {'ratio':>7}")
    for label, values, unit in rows:
        a, b = values[names[0]], values[names[1]]
        print(f"{label:48} {a:14,.1f} {unit:>5} {b:14,.1f} {unit:>5} {b / a:7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
