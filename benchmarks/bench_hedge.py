"""Time to first text with and without a hedged first token, against a heavy-tailed fake.

The fake provider serves two models whose first content comes after a delay drawn from a
log-normal distribution (median ``median_ms``, shape ``sigma``: a long right tail, as hosted
models show): ``first_content_delay_ms`` sends the headers and ``message_start`` at once, then
waits. The same seeded draws serve both runs, so they face the same latencies:

* **plain** — every turn asks the primary only;
* **hedged** — ``TurnEngine(hedge=HedgePolicy(...))`` with an adaptive delay (the 0.9 quantile
  of the time to first content it has observed, within ``min_delay``..``max_delay``) and the
  default budget (10 % of the primary requests of the last minute, plus 3).

Per run: p50 / p90 / p99 / mean of the time from the turn's start to its first text on the
text streamer, and the extra requests the hedges cost (hedges sent per turn). Turns run
``concurrency`` at a time, each on its own engine (one engine is one conversation), sharing one
client and, when hedged, one policy (its budget and its estimate are shared, as in an app).

Run: ``python benchmarks/bench_hedge.py [--turns 400] [--median-ms 40] [--sigma 1.2]``;
``benchmarks/run.py`` runs it as its last phase. Not collected by pytest; no timed assertions.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import statistics
import time
from dataclasses import dataclass
from typing import Any

from rxturn import AnthropicClient, HedgePolicy, HedgeTarget, StreamHandler, TurnEngine
from rxturn.testing import FakeProvider

__all__ = ["HedgeBench", "run_hedge_bench"]


@dataclass(frozen=True)
class HedgeBench:
    turns: int = 400
    concurrency: int = 40
    median_ms: float = 40.0
    sigma: float = 1.2
    seed: int = 7
    min_delay: float = 0.005
    max_delay: float = 2.0


def _delays(bench: HedgeBench, stream: int) -> list[float]:
    rng = random.Random(bench.seed * 1000 + stream)
    mu = math.log(bench.median_ms)
    return [round(rng.lognormvariate(mu, bench.sigma), 3) for _ in range(bench.turns)]


def _scenario(bench: HedgeBench) -> dict[str, Any]:
    def entries(delays: list[float]) -> list[dict[str, Any]]:
        return [{"text": "first text, then more", "first_content_delay_ms": d} for d in delays]

    return {"models": {"primary": entries(_delays(bench, 1)), "backup": entries(_delays(bench, 2))}}


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))
    return ordered[index]


async def _one(client: AnthropicClient, policy: HedgePolicy | None) -> tuple[float, int]:
    started = time.perf_counter()
    first: list[float] = []

    def streamer(_: str) -> None:
        if not first:
            first.append(time.perf_counter())

    engine = TurnEngine(client, handler=StreamHandler(), hedge=policy, text_streamer=streamer)
    result = await engine.run("go")
    requests = len(result.turns[0].attempt_log)
    return (first[0] if first else time.perf_counter()) - started, requests


async def _run(bench: HedgeBench, hedged: bool) -> dict[str, Any]:
    policy = (
        HedgePolicy(
            (HedgeTarget("backup"),),
            min_delay=bench.min_delay,
            max_delay=bench.max_delay,
        )
        if hedged
        else None
    )
    async with (
        FakeProvider(_scenario(bench)) as fake,
        AnthropicClient("primary", api_key="bench", base_url=fake.base_url) as client,
    ):
        times: list[float] = []
        requests = 0
        for start in range(0, bench.turns, bench.concurrency):
            batch = range(start, min(bench.turns, start + bench.concurrency))
            done = await asyncio.gather(*(_one(client, policy) for _ in batch))
            times += [t for t, _ in done]
            requests += sum(r for _, r in done)
    return {
        "hedged": hedged,
        "turns": bench.turns,
        "p50_ms": _quantile(times, 0.50) * 1000,
        "p90_ms": _quantile(times, 0.90) * 1000,
        "p99_ms": _quantile(times, 0.99) * 1000,
        "mean_ms": statistics.fmean(times) * 1000,
        "extra_requests_per_turn": (requests - bench.turns) / bench.turns,
    }


async def run_hedge_bench(bench: HedgeBench) -> dict[str, Any]:
    """Both runs; the report (the input distribution's own quantiles included)."""
    primary = _delays(bench, 1)
    plain = await _run(bench, hedged=False)
    hedged = await _run(bench, hedged=True)
    return {
        "distribution": {
            "median_ms": bench.median_ms,
            "sigma": bench.sigma,
            "p50_ms": _quantile(primary, 0.50),
            "p99_ms": _quantile(primary, 0.99),
        },
        "plain": plain,
        "hedged": hedged,
    }


def table(report: dict[str, Any]) -> str:
    dist = report["distribution"]
    lines = [
        "Hedged first token: time to first text (ms), heavy-tailed first content "
        f"(log-normal, median {dist['median_ms']:g} ms, sigma {dist['sigma']:g}; "
        f"drawn p50 {dist['p50_ms']:.0f}, p99 {dist['p99_ms']:.0f})",
        f"{'run':<10}{'p50':>9}{'p90':>9}{'p99':>9}{'mean':>9}{'extra requests':>17}",
    ]
    for name in ("plain", "hedged"):
        row = report[name]
        lines.append(
            f"{name:<10}{row['p50_ms']:>9.1f}{row['p90_ms']:>9.1f}{row['p99_ms']:>9.1f}"
            f"{row['mean_ms']:>9.1f}{row['extra_requests_per_turn'] * 100:>16.1f}%"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=HedgeBench.turns)
    parser.add_argument("--concurrency", type=int, default=HedgeBench.concurrency)
    parser.add_argument("--median-ms", type=float, default=HedgeBench.median_ms)
    parser.add_argument("--sigma", type=float, default=HedgeBench.sigma)
    args = parser.parse_args(argv)
    bench = HedgeBench(
        turns=args.turns, concurrency=args.concurrency, median_ms=args.median_ms, sigma=args.sigma
    )
    print(table(asyncio.run(run_hedge_bench(bench))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
