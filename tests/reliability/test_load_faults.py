"""Load with faults: 500 concurrent turns on one event loop, a seeded random mix of faults.

Every turn gets its own model name, and so its own script on one shared fake provider: healthy,
a fault once then healthy, or (streaming) the fault four times then healthy — drawn from the
fault matrix's fake-provider faults, with that matrix's expectation for the cell
(:mod:`.test_fault_matrix`). All 500 run at once through one shared connection pool. Then:

- every turn ended — reply or typed error, exactly the one its cell predicts (checked by the
  matrix's own :func:`check_cell`: text, error class, attempts, observer log, audit) — inside
  its deadline (the handler's total, plus the rescue's fresh first-event budget, plus 2 s of
  scheduling slack; ``asyncio.wait_for`` is only the safety net). The deadlines are the
  matrix's scaled up (``LOAD_TIMEOUTS``) because 500 turns share one thread; with them longer
  than the fake's 3 s stall, a stalled reply is simply served late;
- afterwards no extra asyncio task is alive, the pool holds no acquired connection, nothing was
  left for the garbage collector to close (no ``ResourceWarning``), the process
  has the file descriptors it had before (a small constant allowed), and traced memory is back
  near where it started (``tracemalloc``, generous bound).

The seed is printed (``-s``) and in every failure message; ``RXTURN_LOAD_SEED=<n>`` replays a
run, ``RXTURN_LOAD_TURNS`` changes the count.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import os
import random
import time
import tracemalloc
import warnings
from typing import Any

import pytest

from rxturn.engine import TurnEngine
from rxturn.engine.handler import StreamHandler
from rxturn.errors import RxturnError
from rxturn.resilience.policies import RateLimitPolicy, RetryPolicy, TimeoutPolicy
from rxturn.testing import FakeProvider
from rxturn.transport.aiohttp import AiohttpTransport

from .conftest import FORMAT_NAMES, make_client
from .test_fault_matrix import (
    CELLS,
    FAULTS,
    PROMPT,
    Cell,
    CellRun,
    Reply,
    TimedRecorder,
    check_cell,
)

pytestmark = pytest.mark.timeout(120)

TURNS = int(os.environ.get("RXTURN_LOAD_TURNS", "500"))
SEED = int(os.environ.get("RXTURN_LOAD_SEED", "90210"))
#: The matrix's policies scaled for a loaded loop: 500 turns share one thread, so a healthy
#: first event may take seconds (not the matrix's 0.3 s); the ladders are unchanged.
LOAD_TIMEOUTS = TimeoutPolicy(first_event=6.0, per_event=6.0, total=15.0)
#: The longest a turn may take: the total deadline, then the rescue's fresh first-event budget,
#: plus slack for 500 turns sharing one loop (the safety net is far beyond it).
DEADLINE = (LOAD_TIMEOUTS.total or 0) + (LOAD_TIMEOUTS.first_event or 0) + 2.0
SAFETY_NET = 40.0
_STALLS = ("stall_mid_stream", "stall_before_first_event")


def load_handler() -> StreamHandler:
    return StreamHandler(
        timeouts=LOAD_TIMEOUTS,
        retry=RetryPolicy(base_delay=0.001, max_delay=0.01),
        rate_limit=RateLimitPolicy(default_delay=0.01, max_delay=1.0),
    )


def _load_cell(cell: Cell) -> Cell:
    # With these deadlines longer than the fake's 3 s stall, a stall is only a delay: the
    # stalled reply itself is served, on the first attempt (the matrix's passthrough column).
    if cell.fault in _STALLS:
        return dataclasses.replace(cell, expect=Reply(by="fault"))
    return cell


#: The cells a fake provider can play (the scripted-server faults need exact bytes instead).
LOAD_CELLS = [
    _load_cell(cell)
    for cell in CELLS
    if cell.handler == "resilient" and FAULTS[cell.fault].fake is not None
]


def _draw(rng: random.Random) -> Cell:
    healthy = [c for c in LOAD_CELLS if c.fault == "no_fault"]
    return rng.choice(healthy) if rng.random() < 0.3 else rng.choice(LOAD_CELLS)


def _fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


def _acquired(transport: AiohttpTransport) -> int:
    """Connections checked out of the pool right now (0 when no session is open)."""
    session = getattr(transport, "_session", None)
    connector = getattr(session, "connector", None) if session is not None else None
    acquired = getattr(connector, "_acquired", None)
    return len(acquired) if acquired is not None else 0


async def _settle(baseline: set[asyncio.Task[Any]]) -> set[asyncio.Task[Any]]:
    """Extra tasks still alive after giving the loop up to 2 s to finish its cleanup."""
    extra: set[asyncio.Task[Any]] = set()
    for _ in range(200):
        extra = {t for t in asyncio.all_tasks() if t not in baseline and not t.done()}
        if not extra:
            break
        await asyncio.sleep(0.01)
    return extra


async def _one_turn(
    model: str, cell: Cell, fake: FakeProvider, transport: AiohttpTransport
) -> tuple[CellRun, float]:
    """One turn of the load: its own client (sharing the pool), engine and observer log."""
    run = CellRun()
    client = make_client(cell.fmt, fake, model=model, transport=transport)
    recorder = TimedRecorder()
    engine = TurnEngine(
        client,
        handler=load_handler(),
        mode=cell.path,
        observers=[recorder],
        text_streamer=run.streamed.append,
    )
    started = time.monotonic()
    try:
        run.result = await asyncio.wait_for(engine.run(PROMPT), SAFETY_NET)
    except RxturnError as exc:
        run.error = exc
    except TimeoutError:
        run.crash = f"no outcome within {SAFETY_NET}s"
    took = time.monotonic() - started
    await client.aclose()
    run.elapsed = recorder.ended - recorder.started
    run.calls = recorder.calls
    run.turns = list(engine.session.runs[-1].turns)
    run.history = len(engine.history)
    return run, took


async def _run_load(plan: list[tuple[str, Cell]], tag: str) -> list[tuple[CellRun, float]]:
    """All turns at once on one fake and one pool; returns each turn's run and duration."""
    scenario = {"models": {name: [r.fake for r in cell.replies()] for name, cell in plan}}
    transport = AiohttpTransport(limit=len(plan) + 50, read_timeout=30.0)
    try:
        async with FakeProvider(scenario) as fake:
            results = await asyncio.gather(
                *(_one_turn(model, cell, fake, transport) for model, cell in plan)
            )
            assert _acquired(transport) == 0, f"{tag}: connections still checked out of the pool"
            per_model: dict[str, int] = {}
            for body in fake.requests:
                per_model[body["model"]] = per_model.get(body["model"], 0) + 1
    finally:
        await transport.aclose()
    for (model, _), (run, _) in zip(plan, results, strict=True):
        run.requests = per_model.get(model, 0)
    return results


def _broken_cells(
    plan: list[tuple[str, Cell]], results: list[tuple[CellRun, float]]
) -> tuple[list[str], tuple[float, str]]:
    """Turns that missed their deadline or broke their cell; and the slowest turn."""
    failures: list[str] = []
    slowest = (0.0, "")
    for (model, cell), (run, took) in zip(plan, results, strict=True):
        slowest = max(slowest, (took, cell.id))
        try:
            assert took <= DEADLINE, f"took {took:.2f}s, deadline {DEADLINE:.2f}s"
            check_cell(cell, run, model=model)
        except AssertionError as exc:
            failures.append(f"{model} {cell.id}: {str(exc).splitlines()[0]}")
    return failures, slowest


@pytest.mark.slow
async def test_500_concurrent_turns_with_faults_all_end_cleanly(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rng = random.Random(SEED)
    tag = f"seed {SEED}"
    with capsys.disabled():
        print(f"\n[load] seed={SEED} turns={TURNS} (RXTURN_LOAD_SEED to replay)")
    plan = [(f"t{i}", _draw(rng)) for i in range(TURNS)]

    fds_before = _fd_count()
    baseline_tasks = set(asyncio.all_tasks())
    tracemalloc.start()
    try:
        # warm up once (tiktoken tables, imports, first connections) before the memory baseline
        async with (
            FakeProvider({"models": {"*": [{"text": "warm"}]}}) as warm,
            make_client("anthropic", warm) as client,
        ):
            await TurnEngine(client, handler=load_handler()).run(PROMPT)
        gc.collect()
        memory_before = tracemalloc.get_traced_memory()[0]

        # A connection, transport or response nobody closed is closed by the garbage collector
        # with a ResourceWarning: record them instead of letting them vanish.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResourceWarning)
            results = await _run_load(plan, tag)
            gc.collect()
        unclosed = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
        assert not unclosed, f"{tag}: {len(unclosed)} left for the GC to close: {unclosed[:3]}"
        failures, slowest = _broken_cells(plan, results)
        assert not failures, f"{tag}: {len(failures)} turns broke their cell:\n" + "\n".join(
            failures[:20]
        )
        extra = await _settle(baseline_tasks)
        assert not extra, f"{tag}: {len(extra)} tasks outlived their turns: {list(extra)[:5]}"
        del results
        gc.collect()
        memory_after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    grown = memory_after - memory_before
    fds_after = _fd_count()
    with capsys.disabled():
        print(
            f"[load] slowest turn {slowest[0]:.2f}s ({slowest[1]}); traced memory grew "
            f"{grown / 1024:.0f} KiB; file descriptors {fds_before} -> {fds_after}"
        )
    assert grown < 16 * 1024 * 1024, f"{tag}: {grown / 2**20:.1f} MiB still held after the run"
    assert fds_after <= fds_before + 3, f"{tag}: file descriptors leaked"


def test_the_load_mix_covers_every_fake_fault_and_format() -> None:
    rng = random.Random(SEED)
    drawn = [_draw(rng) for _ in range(TURNS)]
    assert {c.fault for c in drawn} == {c.fault for c in LOAD_CELLS}
    assert {c.fmt for c in drawn} == set(FORMAT_NAMES)
    assert {c.path for c in drawn} == {"streaming", "non_streaming"}
    assert any(c.persistent for c in drawn)
