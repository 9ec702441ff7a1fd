"""Profile one contender on one stream with pyinstrument, the fake provider in a child process.

Run: ``python benchmarks/profile_contender.py [--contender turn] [--format anthropic]
[--events 100000]`` (the ``bench`` extra installs pyinstrument).

The contender is warmed twice on a small stream, the heap is frozen as ``run.py`` freezes it,
and one run on the large stream is profiled; the call tree goes to stdout. pyinstrument hooks
every Python call, so a run takes several times longer than unprofiled, and code that makes
many small calls (the per-delta callbacks) looks heavier than it is: read the tree for where
the time goes, and ``run.py`` for how much.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import tempfile
from pathlib import Path

import aiohttp
from _contenders import Env, build_contenders
from _servers import ChildServer
from _streams import capture, write_scenario

__all__ = ["main"]


async def profile(contender_name: str, fmt: str, events: int) -> str:
    from pyinstrument import Profiler

    with tempfile.TemporaryDirectory() as tmp:
        scenario = Path(tmp) / "scenario.json"
        write_scenario(scenario, (1_000, events))
        async with ChildServer("fake", str(scenario)) as fake:
            async with aiohttp.ClientSession() as session:
                small = await capture(session, fake.base_url, fmt, 1_000)
                large = await capture(session, fake.base_url, fmt, events)
            env = Env(fake.base_url)
            try:
                chosen = [c for c in build_contenders(env) if c.name == contender_name]
                if not chosen:
                    names = ", ".join(c.name for c in build_contenders(env))
                    raise SystemExit(f"no contender {contender_name!r} (one of: {names})")
                contender = chosen[0]
                for _ in range(2):
                    await contender.run(small)
                gc.collect()
                gc.freeze()
                profiler = Profiler(interval=0.0002, async_mode="disabled")
                profiler.start()
                await contender.run(large)
                profiler.stop()
                return profiler.output_text(unicode=True, color=False)
            finally:
                await env.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--contender", default="turn")
    parser.add_argument("--format", default="anthropic", choices=("anthropic", "openai"))
    parser.add_argument("--events", type=int, default=100_000)
    args = parser.parse_args()
    print(asyncio.run(profile(args.contender, args.format, args.events)))


if __name__ == "__main__":
    main()
