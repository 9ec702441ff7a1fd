"""What pricing (the ``rxturn[cost]`` extra) costs a turn: target, no measurable cost (within 2 %).

Two variants of the same turn — ``await engine.run(prompt)`` with the default resilient handler
against the fake provider in a child process (``rxturn fake-server``), a one-delta reply whose
usage varies every turn (so no price is ever the same twice), the history reset before each
turn — run interleaved, one turn of each per round, so that drift on a shared machine hits both
alike:

- ``unpriced`` — an engine whose pricer is switched off (as without the extra);
- ``priced`` — an engine as built with the extra installed: every attempt priced with
  genai-prices (``claude-sonnet-4-5``, a model it prices).

The figure is the **turn fixed cost**: median CPU µs of this process per turn (the fake server's
CPU is its own). The script prints both, their ratio and a PASS/MISS verdict against the target,
and checks that every priced turn was priced. A second line times ``Pricer.price`` alone, the
first call of a usage shape (genai-prices' full calculation) and the later ones.

Run: ``python benchmarks/bench_cost.py [--rounds 300]`` (``--quick`` for a smoke run). Not
collected by pytest; nothing here is a timed assertion.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time

from _servers import FakeServerProcess

from rxturn import AnthropicClient, StreamHandler, TurnEngine
from rxturn.cost import Pricer, cost_available
from rxturn.messages import Usage

TARGET = 1.02
MODEL = "claude-sonnet-4-5"


def _fake(turns: int) -> FakeServerProcess:
    """The fake provider in a child process, usage varying per request."""
    replies = [
        {"text": "ok", "usage": {"input_tokens": 400 + i, "output_tokens": 1 + i % 7}}
        for i in range(turns)
    ]
    return FakeServerProcess({"models": {"*": replies}})


async def main(rounds: int) -> int:
    if not cost_available():
        print("bench_cost: the cost extra is not installed (pip install '.[cost]')")
        return 1
    warmup = 20
    fake = _fake(2 * (rounds + warmup) + 10)
    try:
        async with AnthropicClient(MODEL, api_key="bench-key", base_url=fake.url) as client:
            priced = TurnEngine(client, handler=StreamHandler.default())
            unpriced = TurnEngine(client, handler=StreamHandler.default())
            unpriced._calls.pricer = None  # as without the extra
            engines = {"unpriced": unpriced, "priced": priced}
            cpu: dict[str, list[float]] = {name: [] for name in engines}
            costs = 0
            for i in range(warmup):
                for engine in engines.values():
                    engine.history.clear()
                    await engine.run(f"warm-up {i}")
            gc.collect()
            gc.disable()
            try:
                for i in range(rounds):
                    order = list(engines.items()) if i % 2 == 0 else list(engines.items())[::-1]
                    for name, engine in order:
                        engine.history.clear()
                        start = time.process_time()
                        result = await engine.run(f"Turn {i}: say ok.")
                        cpu[name].append(time.process_time() - start)
                        if name == "priced":
                            assert result.cost is not None and result.cost.unpriced_attempts == 0
                            costs += 1
                        else:
                            assert result.cost is None
            finally:
                gc.enable()
    finally:
        fake.close()
    base = statistics.median(cpu["unpriced"]) * 1e6
    with_cost = statistics.median(cpu["priced"]) * 1e6
    ratio = with_cost / base
    verdict = "PASS" if ratio <= TARGET else "MISS"
    print(
        f"turn fixed cost: unpriced {base:.0f} µs, priced {with_cost:.0f} µs, "
        f"ratio {ratio:.3f} (target <= {TARGET}) {verdict}; {costs} turns priced"
    )
    _price_alone()
    return 0


def _price_alone() -> None:
    pricer = Pricer("anthropic")
    start = time.perf_counter()
    pricer.price(MODEL, Usage(input_tokens=1000, output_tokens=10, cache_read_tokens=0))
    first = (time.perf_counter() - start) * 1e6
    n = 2000
    start = time.perf_counter()
    for i in range(n):
        pricer.price(MODEL, Usage(input_tokens=1000 + i, output_tokens=10, cache_read_tokens=i))
    later = (time.perf_counter() - start) / n * 1e6
    print(f"Pricer.price: first of a usage shape {first:.0f} µs, later ones {later:.1f} µs each")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--quick", action="store_true", help="30 rounds")
    args = parser.parse_args()
    sys.exit(asyncio.run(main(30 if args.quick else args.rounds)))
