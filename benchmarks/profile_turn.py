"""Where a turn's fixed cost and its objects go: pyinstrument over one-delta turns, and the
GC-tracked objects of turns in flight, by type and by the line that allocated them.

Run::

    python benchmarks/profile_turn.py [--format anthropic] [--turns 300] [--in-flight 200]
        [--no-profile] [--no-objects]

(the ``bench`` extra installs pyinstrument). Two parts:

1. **Fixed cost.** The turn of ``run.py``'s fixed-cost phase — one long-lived ``TurnEngine``,
   ``StreamHandler.default()`` with its three deadlines, a text streamer, an observer and an
   ``engine.events`` subscriber — runs ``--turns`` one-delta turns against the fake provider in
   its child process, under pyinstrument. First a split of the samples into the parts of a turn
   (each sample goes to the first rule in :data:`SPLIT` that one of its frames matches), then
   the call tree, then the functions with the most self time. pyinstrument samples wall time:
   the "event loop waiting" part is the loop idle while the child process answers, not CPU the
   turn spends; pyinstrument's hook on every call also inflates code that makes many calls.
2. **Objects in flight.** ``--in-flight`` turns (rxturn's, then the bare aiohttp + LIMIT
   client's) start on slow paced streams from the stamp server; once each has received its
   second delta, the GC-tracked objects that appeared are counted per turn, by type, and — with
   ``tracemalloc`` recording 30 frames — by the innermost rxturn line (or, failing that,
   reactivex or other line) on the stack that allocated them.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import tempfile
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _concurrency import Client, in_flight, make_clients
from _contenders import Env
from _fixed import _engine, _engine_turn
from _servers import ChildServer, stamp_model
from _streams import write_scenario

__all__ = ["main"]


async def profile_fixed(fmt: str, turns: int) -> str:
    from pyinstrument import Profiler

    with tempfile.TemporaryDirectory() as tmp:
        scenario = Path(tmp) / "scenario.json"
        write_scenario(scenario, (10,))
        async with ChildServer("fake", str(scenario)) as fake:
            env = Env(fake.base_url)
            try:
                engine = _engine(env, fmt, "default")
                for i in range(20):  # warm: connection, tokenizer, overhead cache
                    await _engine_turn(engine, -1 - i)
                gc.collect()
                profiler = Profiler(interval=0.0001, async_mode="disabled")
                profiler.start()
                for i in range(turns):
                    await _engine_turn(engine, i)
                profiler.stop()
            finally:
                await env.aclose()
    session = profiler.last_session
    assert session is not None
    parts = split(session)
    total = sum(seconds for _, seconds in parts) or 1.0
    busy = total - dict(parts)["event loop waiting (select / epoll)"]
    table = "\n".join(
        f"  {seconds / turns * 1e6:8,.0f} µs  {seconds / total:6.1%}  "
        f"{seconds / busy if 'waiting' not in name else 0:6.1%}  {name}"
        for name, seconds in parts
    )
    tree = profiler.output_text(unicode=True, color=False)
    flat = profiler.output_text(unicode=True, color=False, flat=True)
    flat_top = "\n".join(flat.splitlines()[:45])
    return (
        f"=== fixed cost: {turns} one-delta {fmt} turns (default handler, 3 subscribers) ===\n"
        f"wall {session.duration:.3f} s, CPU {session.cpu_time:.3f} s under the profiler\n"
        f"  per turn   of all  of busy  part of the turn\n{table}\n\n"
        f"{tree}\n=== self time, top functions ===\n{flat_top}\n"
    )


#: (part of a turn, predicate on one frame (function, file)): a sample goes to the first part
#: any frame of its stack matches, in this order.
_STARTS = ("plan_turn", "TurnPlan", "Ladder.start", "attach_batches", "open_bridge", "Bridge.start")

SPLIT: list[tuple[str, Any]] = [
    (
        "token estimate (tiktoken)",
        lambda f, p: "tiktoken" in p or "rxturn/engine/context/tokens.py" in p,
    ),
    (
        "request build + body encode",
        lambda f, p: (f.startswith("build_") or "_prepare" in f) and "/rxturn/" in p,
    ),
    ("SSE + JSON decoding (rxturn/wire)", lambda f, p: "/rxturn/wire/" in p),
    (
        "HTTP exchange (aiohttp, rxturn transport)",
        lambda f, p: "/aiohttp/" in p or "/rxturn/transport/" in p,
    ),
    ("starting the ladder and the attempt", lambda f, p: any(s in f for s in _STARTS)),
    (
        "per-chunk work: the ladder's checks, fan-out, fold",
        lambda f, p: "on_next" in f or "_on_batch" in f or "fold" in f,
    ),
    (
        "completion and tear-down (on_completed, dispose, timers)",
        lambda f, p: "on_completed" in f or "dispose" in f or "_finish" in f or "Timer" in f,
    ),
    ("engine bookkeeping (turn, history, outcome, audit)", lambda f, p: "/rxturn/engine/" in p),
    ("other rxturn code", lambda f, p: "/rxturn/" in p),
    ("event loop waiting (select / epoll)", lambda f, p: f in ("select", "poll", "epoll.poll")),
    ("asyncio scheduling and the rest", lambda f, p: True),
]


def split(session: Any) -> list[tuple[str, float]]:
    """Seconds of ``session``'s samples per part of :data:`SPLIT`."""
    totals = dict.fromkeys((name for name, _ in SPLIT), 0.0)
    for stack, seconds in session.frame_records:
        frames = []
        for identifier in stack:
            parts = identifier.split("\x00")
            frames.append((parts[0], parts[1] if len(parts) > 1 else ""))
        for name, rule in SPLIT:
            if any(rule(function, path) for function, path in frames):
                totals[name] += seconds
                break
    return list(totals.items())


def _origin(obj: object) -> str:
    trace = tracemalloc.get_object_traceback(obj)
    if trace is None:
        return "(untraced: a free-list object, or allocated before tracing)"
    frames = list(trace)  # most recent call last
    for marker in ("/rxturn/", "/reactivex/"):
        for frame in reversed(frames):
            if marker in frame.filename:
                tail = frame.filename.split(marker, 1)[1]
                return f"{marker.strip('/')}/{tail}:{frame.lineno}"
    frame = frames[-1]
    return f"{Path(frame.filename).name}:{frame.lineno}"


async def origins(client: Client, n: int) -> tuple[Counter[str], int]:
    """The lines that allocated the GC-tracked objects ``n`` in-flight turns keep alive."""
    from _concurrency import _Arrivals, _Ready

    ready = _Ready(n)
    await asyncio.sleep(0.2)
    gc.collect()
    before = {id(obj) for obj in gc.get_objects()}
    tracemalloc.start(30)
    tasks = [
        asyncio.ensure_future(client.run(stamp_model(2_000, 50_000), _Arrivals(ready)))
        for _ in range(n)
    ]
    try:
        await asyncio.wait_for(ready.event.wait(), 60.0)
        gc.collect()
        where: Counter[str] = Counter(
            _origin(obj) for obj in gc.get_objects() if id(obj) not in before
        )
    finally:
        tracemalloc.stop()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return where, n


async def profile_objects(fmt: str, n: int) -> str:
    lines: list[str] = []
    async with ChildServer("stamp") as stamp:
        clients, aclose = await make_clients(stamp.base_url, n, (fmt,), sdks=False)
        try:
            for client in clients:
                await client.run(stamp_model(2, 0), lambda text: None)
            for client in clients:
                result: dict[str, Any] = await in_flight(client, n, top=40)
                lines.append(
                    f"=== {client.name} ({client.label}), {fmt}: {n} turns in flight: "
                    f"{result['objects_per_turn']:,.1f} gc-tracked objects and "
                    f"{result['bytes_per_turn']:,.0f} bytes per turn ==="
                )
                lines.append("  by type (objects per turn):")
                lines += [f"    {count:7.1f}  {name}" for name, count in result["top_types"]]
                where, _ = await origins(client, n)
                lines.append("  by allocating line (objects per turn; innermost rxturn frame):")
                lines += [f"    {count / n:7.1f}  {line}" for line, count in where.most_common(40)]
        finally:
            await aclose()
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--format", default="anthropic", choices=("anthropic", "openai"))
    parser.add_argument("--turns", type=int, default=300, help="one-delta turns to profile")
    parser.add_argument("--in-flight", type=int, default=200, help="turns in flight to count")
    parser.add_argument("--no-profile", action="store_true", help="skip the pyinstrument part")
    parser.add_argument("--no-objects", action="store_true", help="skip the objects part")
    args = parser.parse_args(argv)
    if not args.no_profile:
        print(asyncio.run(profile_fixed(args.format, args.turns)), flush=True)
    if not args.no_objects:
        print(asyncio.run(profile_objects(args.format, args.in_flight)), flush=True)


if __name__ == "__main__":
    main()
