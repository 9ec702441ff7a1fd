"""rxturn's benchmark suite: every contender on the same bytes, side by side, in one process.

Run::

    python benchmarks/run.py            # full: 1k / 10k / 100k events, 5-15 minutes on 2 cores
    python benchmarks/run.py --quick    # 1k / 10k events, fewer repeats, a few minutes
    python benchmarks/run.py --tiny --out /tmp/x   # ~20 s; what the smoke test runs
    python benchmarks/run.py --loop uvloop         # the same on uvloop (information)

Outputs: a table on stdout, ``results/latest.json`` and ``results/ratios.png`` (median CPU cost
per event relative to LIMIT). ``benchmarks/README.md`` explains the method and the numbers.

Sequence: the fake provider starts in a child process; one stream per (format, size) is
captured from it; every contender is warmed up once, then timed on every stream (interleaved,
repeated; see :mod:`_measure`); peak memory is taken on the largest stream; the fixed cost of
a turn is measured against a bare request and the official SDKs (:mod:`_fixed`); finally the
fake is replaced by the stamp server, the collector is put back as a fresh interpreter has it,
and the objects per in-flight turn are counted and a thousand turns run at once, rxturn beside
a bare aiohttp client and the official SDKs (:mod:`_concurrency`); last, the time to first
text with and without a hedged first token against a heavy-tailed fake (:mod:`bench_hedge`).
Every current target (and those of the first round it kept) is printed with its measurement and
PASS/MISS. The process exits 0 even when a target is missed (benchmarks inform, they do not
gate) and 1 if a contender produced a wrong reply or failed.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import aiohttp
from _concurrency import run_concurrency
from _contenders import Env, build_contenders
from _fixed import fixed_costs
from _measure import Cell, measure_case, peak_memory
from _report import cell_json, chart, judge, table
from _servers import ChildServer
from _streams import capture, write_scenario
from bench_hedge import HedgeBench, run_hedge_bench
from bench_hedge import table as hedge_table

__all__ = ["MODES", "Mode", "main"]

FORMATS = ("anthropic", "openai")


@dataclass(frozen=True)
class Mode:
    """How much to run. ``budget`` is the seconds one contender may spend on one stream."""

    name: str
    sizes: tuple[int, ...]
    repeats: int
    min_repeats: int
    budget: float
    memory_size: int
    sdk_memory_size: int | None
    sdk_max_events: int | None
    fixed_turns: int
    turns: int
    turn_events: int
    rates: tuple[int, ...]
    headline_rate: int
    turn_seconds: float
    window_s: float
    sdk_budget_s: float
    in_flight_turns: int
    throughput_rounds: int
    gc_thresholds: tuple[tuple[int, int, int], ...] = ()


MODES = {
    "full": Mode(
        "full",
        sizes=(1_000, 10_000, 100_000),
        repeats=9,
        min_repeats=3,
        budget=8.0,
        memory_size=100_000,
        sdk_memory_size=10_000,
        sdk_max_events=None,
        fixed_turns=200,
        turns=1_000,
        turn_events=200,
        rates=(5_000, 10_000),
        headline_rate=5_000,
        turn_seconds=10.0,
        window_s=6.0,
        sdk_budget_s=60.0,
        in_flight_turns=200,
        throughput_rounds=3,
        gc_thresholds=((10_000, 10, 10),),
    ),
    "quick": Mode(
        "quick",
        sizes=(1_000, 10_000),
        repeats=5,
        min_repeats=2,
        budget=2.0,
        memory_size=10_000,
        sdk_memory_size=None,
        sdk_max_events=None,
        fixed_turns=40,
        turns=1_000,
        turn_events=50,
        rates=(5_000,),
        headline_rate=5_000,
        turn_seconds=6.0,
        window_s=4.0,
        sdk_budget_s=15.0,
        in_flight_turns=100,
        throughput_rounds=1,
    ),
    "tiny": Mode(
        "tiny",
        sizes=(200,),
        repeats=1,
        min_repeats=1,
        budget=0.0,
        memory_size=200,
        sdk_memory_size=200,
        sdk_max_events=None,
        fixed_turns=3,
        turns=5,
        turn_events=20,
        rates=(100,),
        headline_rate=100,
        turn_seconds=0.3,
        window_s=0.5,
        sdk_budget_s=10.0,
        in_flight_turns=5,
        throughput_rounds=2,
    ),
}


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="rxturn benchmark suite")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--quick", action="store_true", help="1k/10k events, fewer repeats")
    group.add_argument("--tiny", action="store_true", help="a few seconds (the smoke test)")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent / "results",
        help="directory for latest.json and ratios.png (default: benchmarks/results)",
    )
    parser.add_argument("--no-concurrency", action="store_true", help="skip the 1,000-turn run")
    parser.add_argument("--no-chart", action="store_true", help="do not draw the PNG")
    parser.add_argument("--no-hedge", action="store_true", help="skip the hedged-first-token phase")
    parser.add_argument(
        "--batch",
        action="store_true",
        help="add the batch phase: rxturn batch run vs a bare aiohttp loop, --workers 2, peak "
        "RSS on a 10^6-line input (bench_batch.py; a few minutes)",
    )
    parser.add_argument(
        "--loop",
        choices=("asyncio", "uvloop"),
        default="asyncio",
        help="event loop of the benchmark process (default asyncio, the one the targets are "
        "set for; uvloop is information, from the bench extra)",
    )
    return parser.parse_args(argv)


def _meta(mode: Mode, load_at_start: tuple[float, float, float]) -> dict[str, Any]:
    versions: dict[str, str] = {}
    from importlib import metadata

    for dist in ("rxturn", "msgspec", "reactivex", "aiohttp", "anthropic", "openai", "uvloop"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = "?"
    return {
        "mode": mode.name,
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_average_at_start": load_at_start,
        "versions": versions,
        "unit": "µs of CPU time of the benchmark process per wire event (SSE data line)",
        "method": (
            "fake provider in a child process; contenders timed by process CPU time (wall also "
            "recorded); interleaved rounds; median and min; ratios judged as the median of "
            "per-round ratios on the largest stream; memory = tracemalloc peak of one run"
        ),
        "sizes": list(mode.sizes),
        "loop": type(asyncio.get_running_loop()).__module__,
    }


async def _suite(mode: Mode, out_dir: Path, concurrency: bool) -> tuple[dict[str, Any], bool]:
    started = time.perf_counter()
    load_at_start = os.getloadavg()
    log = lambda text: print(f"[{time.perf_counter() - started:6.1f}s] {text}", flush=True)  # noqa: E731
    rows: list[dict[str, Any]] = []
    memory: list[dict[str, Any]] = []
    failures = False
    with tempfile.TemporaryDirectory() as tmp:
        scenario = Path(tmp) / "scenario.json"
        write_scenario(scenario, mode.sizes)
        async with ChildServer("fake", str(scenario)) as fake:
            log(f"fake provider at {fake.base_url}")
            async with aiohttp.ClientSession() as session:
                cases = {
                    (fmt, n): await capture(session, fake.base_url, fmt, n)
                    for fmt in FORMATS
                    for n in mode.sizes
                }
            env = Env(fake.base_url)
            contenders = build_contenders(env)
            try:
                for fmt in FORMATS:  # warm-up: imports, connections, tokenizer
                    warm = cases[(fmt, mode.sizes[0])]
                    for contender in contenders:
                        try:
                            await contender.run(warm)
                        except Exception as exc:
                            log(f"warm-up: {contender.name} on {warm.label} failed: {exc!r}")
                # Everything alive now (modules, SDK types, tokenizer, pools) is moved out of
                # the collector's sight, so the gc.collect() before each run takes milliseconds,
                # not the ~0.3 s a full walk of the SDKs' pydantic graphs costs.
                gc.collect()
                gc.freeze()
                for n in mode.sizes:
                    for fmt in FORMATS:
                        case = cases[(fmt, n)]
                        cells = await measure_case(
                            case,
                            contenders,
                            repeats=mode.repeats,
                            min_repeats=mode.min_repeats,
                            budget=mode.budget,
                            sdk_max_events=mode.sdk_max_events,
                        )
                        limit = next((c for c in cells if c.contender.name == "limit"), None)
                        rows.extend(cell_json(cell, limit) for cell in cells)
                        failures |= any(cell.error for cell in cells)
                        log(f"timed {case.label}: " + _summary(cells))
                for fmt in FORMATS:
                    for contender in contenders:
                        size = mode.sdk_memory_size if contender.role == "sdk" else mode.memory_size
                        if fmt not in contender.formats or size is None:
                            continue
                        case = cases[(fmt, size)]
                        entry: dict[str, Any] = {
                            "format": fmt,
                            "events": case.events,
                            "contender": contender.name,
                        }
                        try:
                            entry["peak_bytes"] = await peak_memory(contender, case)
                        except Exception as exc:
                            entry["peak_bytes"] = None
                            entry["error"] = f"{type(exc).__name__}: {exc}"
                            failures = True
                        memory.append(entry)
                    log(f"memory {fmt} done")
                base = {
                    (m["format"], m["events"]): m.get("peak_bytes")
                    for m in memory
                    if m["contender"] == "limit"
                }
                for m in memory:
                    limit_peak = base.get((m["format"], m["events"]))
                    if m.get("peak_bytes") and limit_peak:
                        m["ratio_to_limit"] = m["peak_bytes"] / limit_peak
                try:
                    fixed: dict[str, Any] | None = await fixed_costs(env, mode.fixed_turns, FORMATS)
                except Exception as exc:
                    log(f"fixed cost failed: {exc!r}")
                    fixed, failures = None, True
                log("fixed cost done")
            finally:
                await env.aclose()
    conc: dict[str, Any] | None = None
    if concurrency:
        async with ChildServer("stamp") as stamp:
            try:
                conc = await run_concurrency(
                    stamp.base_url,
                    turns=mode.turns,
                    events=mode.turn_events,
                    rates=mode.rates,
                    turn_seconds=mode.turn_seconds,
                    window_s=mode.window_s,
                    headline_rate=mode.headline_rate,
                    formats=FORMATS,
                    sdk_budget_s=mode.sdk_budget_s,
                    in_flight_turns=mode.in_flight_turns,
                    throughput_rounds=mode.throughput_rounds,
                    gc_thresholds=mode.gc_thresholds,
                    log=log,
                )
            except Exception as exc:
                log(f"concurrency run failed: {exc!r}")
                failures = True
        log("concurrency done")
    largest = mode.sizes[-1]
    targets = judge(rows, memory, fixed, conc, FORMATS, largest)
    report = {
        "meta": _meta(mode, load_at_start)
        | {"duration_s": time.perf_counter() - started, "load_average_at_end": os.getloadavg()},
        "streams": [
            {
                "format": c.format,
                "events": c.events,
                "wire_events": c.wire_events,
                "bytes": len(c.body),
            }
            for c in cases.values()
        ],
        "contenders": [
            {"name": c.name, "role": c.role, "where": c.where, "description": c.description}
            for c in contenders
        ],
        "results": rows,
        "memory": memory,
        "fixed_cost": fixed,
        "concurrency": conc,
        "targets": [t.json() for t in targets],
    }
    print(table(rows, memory, fixed, conc, targets, FORMATS, mode.sizes))
    return report, failures


def _summary(cells: list[Cell]) -> str:
    parts = []
    for cell in cells:
        if cell.ok:
            parts.append(f"{cell.contender.name} {min(cell.cpu) / cell.case.wire_events * 1e6:.2f}")
        else:
            parts.append(f"{cell.contender.name} {'skipped' if cell.skipped else 'ERROR'}")
    return ", ".join(parts)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    mode = MODES["tiny" if args.tiny else "quick" if args.quick else "full"]
    loop_factory = None
    if args.loop == "uvloop":
        try:  # by name: the type check passes whether or not the bench extra is installed
            uvloop = importlib.import_module("uvloop")
        except ImportError:
            print("--loop uvloop: uvloop is not installed (pip install -e '.[bench]')")
            return 2
        loop_factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        report, failures = runner.run(_suite(mode, args.out, not args.no_concurrency))
        if not args.no_hedge:  # the last phase: time to first text with and without hedging
            turns = {"tiny": 40, "quick": 200}.get(mode.name, 400)
            bench = HedgeBench(turns=turns, concurrency=min(20, turns))
            try:
                report["hedge"] = runner.run(run_hedge_bench(bench))
            except Exception as exc:
                print(f"hedge phase failed: {exc!r}")
                failures = True
            else:
                print()
                print(hedge_table(report["hedge"]))
    if args.batch:
        report["batch"] = batch_phase(tiny=args.tiny)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "latest.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    if not args.no_chart:
        chart(report["results"], FORMATS, mode.sizes, args.out / "ratios.png")
    print(f"\nwrote {args.out / 'latest.json'}" + ("" if args.no_chart else " and ratios.png"))
    return 1 if failures else 0


def batch_phase(tiny: bool) -> dict[str, Any]:
    """The batch phase (bench_batch.py) in a process of its own: its in-process loops (the bare
    aiohttp loop among them) would otherwise run in this process, whose heap the earlier phases
    have grown, and every full collection there walks all of it: the bare loop measured ~35 %
    more CPU per row here than in a fresh process, which flattered every ratio against it."""
    with tempfile.TemporaryDirectory(prefix="rxturn-bench-") as tmp:
        out = Path(tmp) / "batch.json"
        command = [sys.executable, str(Path(__file__).with_name("bench_batch.py"))]
        command += ["--rows", "1000" if tiny else "5000", "--json", str(out)]
        sys.stdout.flush()  # its lines after this process's
        subprocess.run([*command, *(["--no-rss"] if tiny else [])], check=True)
        return json.loads(out.read_text())


if __name__ == "__main__":
    sys.exit(main())
