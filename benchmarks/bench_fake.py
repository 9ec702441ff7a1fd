"""How fast the fake provider produces and serves events (it is the benchmarks' server).

Two numbers per wire format:

* **generate** — events/s of :func:`rxturn.testing._emit.stream_events` alone, on one core
  (the target is >= 200k events/s; a reply of N deltas must never be the bottleneck);
* **serve** — events/s and MB/s end to end over loopback: the FakeProvider writes, a raw
  aiohttp client reads the whole body (client and server share this process and core).

Run: ``python benchmarks/bench_fake.py [--chars 200000] [--chunk 4] [--repeat 5]``.
Not collected by pytest; no timed assertions anywhere.
"""

from __future__ import annotations

import argparse
import asyncio
import time

import aiohttp

from rxturn.testing import FakeProvider, load_scenario
from rxturn.testing._emit import ReplyContext, Wire, stream_events

__all__: list[str] = []

WIRES: tuple[Wire, ...] = ("anthropic", "openai", "ollama")
PATHS = {"anthropic": "/v1/messages", "openai": "/v1/chat/completions", "ollama": "/api/chat"}


def _text(chars: int) -> str:
    words = ["the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog,", "naïvely", ""]
    out: list[str] = []
    total = 0
    while total < chars:
        word = words[len(out) % len(words)] + " "
        out.append(word)
        total += len(word)
    return "".join(out)[:chars]


def bench_generate(chars: int, chunk: int, repeat: int) -> None:
    for ascii_only in (True, False):
        text = _text(chars)
        if ascii_only:
            text = text.replace("ï", "i")
        entry = load_scenario({"models": {"*": [{"text": text, "chunk_chars": chunk}]}}).models[
            "*"
        ][0]
        ctx = ReplyContext(model="bench-model", include_usage=True)
        for wire in WIRES:
            best = float("inf")
            events = 0
            for _ in range(repeat):
                started = time.perf_counter()
                events = len(stream_events(entry, wire, ctx))
                best = min(best, time.perf_counter() - started)
            label = "ascii" if ascii_only else "utf-8"
            print(
                f"generate  {wire:<9} {label:<5} {events:>8} events  {events / best:>12,.0f} ev/s"
            )


async def bench_serve(chars: int, chunk: int, repeat: int) -> None:
    scenario = {"models": {"*": [{"text": _text(chars).replace("ï", "i"), "chunk_chars": chunk}]}}
    async with (
        FakeProvider(scenario) as fake,
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as http,
    ):
        for wire in WIRES:
            body = {
                "model": "bench-model",
                "stream": True,
                "max_tokens": 10,
                "messages": [{"role": "user", "content": "go"}],
            }
            best, size = float("inf"), 0
            for _ in range(repeat):
                started = time.perf_counter()
                async with http.post(fake.base_url + PATHS[wire], json=body) as resp:
                    size = 0
                    async for data in resp.content.iter_any():
                        size += len(data)
                best = min(best, time.perf_counter() - started)
            events = -(-chars // chunk)
            print(
                f"serve     {wire:<9} ascii {events:>8} deltas  {events / best:>12,.0f} ev/s"
                f"  {size / best / 1e6:8.1f} MB/s"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--chars", type=int, default=200_000, help="reply length in characters")
    parser.add_argument("--chunk", type=int, default=4, help="chunk_chars (characters per delta)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement (best kept)")
    args = parser.parse_args()
    bench_generate(args.chars, args.chunk, args.repeat)
    asyncio.run(bench_serve(args.chars, args.chunk, args.repeat))


if __name__ == "__main__":
    main()
