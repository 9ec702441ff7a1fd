"""How the suite times and weighs a contender.

Time. Each run is bracketed by ``time.process_time()`` (CPU seconds of this process, all
threads) and ``time.perf_counter()`` (wall seconds). CPU time is the headline: the fake provider
runs in a child process on the other core, so CPU time is exactly what the client spends, and it
is far less disturbed than wall time by whatever else the machine is doing. Wall time is kept
and reported next to it. ``gc.collect()`` runs *before* each timed run, never inside one; the
collector stays enabled, so the collections a contender provokes are charged to it.

Repeats. Contenders of one stream run **interleaved** — round 1 runs each once, round 2 again,
and so on — so that drift in machine load affects all of them alike. After round 1 each
contender gets ``budget // first_run`` runs, clamped to ``[min_repeats, repeats]`` (``[1,
repeats]`` for the official SDKs): the slow SDKs at 100k events get one or two runs, LIMIT gets
all of them. The report gives the median and the minimum.

Memory. :func:`peak_memory` runs a contender once under ``tracemalloc`` and reports the peak of
traced Python allocations during that run (started after a ``gc.collect()``, so the stream's own
bytes, allocated earlier, are not counted for anyone). Contenders are weighed one at a time in
this process. tracemalloc slows allocation down, so these runs are never timed.
"""

from __future__ import annotations

import gc
import statistics
import time
import tracemalloc
from dataclasses import dataclass, field

from _contenders import Contender, Folded
from _streams import Case

__all__ = ["Cell", "Mismatch", "Stats", "check", "measure_case", "peak_memory", "stats"]


class Mismatch(AssertionError):
    """A contender folded a different reply than the scenario scripted."""


@dataclass(frozen=True)
class Stats:
    median: float
    min: float
    runs: int


def stats(values: list[float]) -> Stats:
    return Stats(statistics.median(values), min(values), len(values))


@dataclass
class Cell:
    """One contender on one stream: its timings (seconds), or why it has none."""

    contender: Contender
    case: Case
    cpu: list[float] = field(default_factory=list[float])
    wall: list[float] = field(default_factory=list[float])
    planned: int = 1
    error: str | None = None
    skipped: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.skipped is None and bool(self.cpu)


def check(case: Case, folded: Folded, who: str) -> None:
    """Raise :class:`Mismatch` unless ``folded`` is the scripted reply of ``case``."""
    text, inp, out = folded
    if text != case.text:
        first = next(
            (i for i, (a, b) in enumerate(zip(text, case.text, strict=False)) if a != b),
            min(len(text), len(case.text)),
        )
        raise Mismatch(
            f"{who} on {case.label}: text differs at char {first} "
            f"(got {len(text)} chars, expected {len(case.text)})"
        )
    if (inp, out) != case.usage:
        raise Mismatch(f"{who} on {case.label}: usage {(inp, out)}, expected {case.usage}")


async def _run_once(cell: Cell) -> None:
    gc.collect()
    cpu0 = time.process_time()
    wall0 = time.perf_counter()
    folded = await cell.contender.run(cell.case)
    wall = time.perf_counter() - wall0
    cpu = time.process_time() - cpu0
    check(cell.case, folded, cell.contender.name)
    cell.cpu.append(cpu)
    cell.wall.append(wall)


async def _attempt(cell: Cell) -> None:
    try:
        await _run_once(cell)
    except Exception as exc:
        cell.error = f"{type(exc).__name__}: {exc}"


async def measure_case(
    case: Case,
    contenders: list[Contender],
    *,
    repeats: int,
    min_repeats: int,
    budget: float,
    sdk_max_events: int | None,
) -> list[Cell]:
    """Time every contender that speaks ``case.format`` on ``case``, interleaved."""
    cells = [Cell(c, case) for c in contenders if case.format in c.formats]
    for cell in cells:
        if (
            cell.contender.role == "sdk"
            and sdk_max_events is not None
            and case.events > sdk_max_events
        ):
            cell.skipped = f"capped: SDKs run up to {sdk_max_events:,} events in this mode"
    live = [cell for cell in cells if cell.skipped is None]
    for cell in live:
        await _attempt(cell)
        if cell.error is None:
            # The SDKs are capped by the budget alone: one 100k-event openai SDK run takes
            # tens of seconds, and its median over three would dominate the whole suite.
            floor = 1 if cell.contender.role == "sdk" else min_repeats
            cell.planned = max(floor, min(repeats, int(budget / max(cell.wall[0], 1e-6))))
    for _ in range(1, max((c.planned for c in live), default=1)):
        for cell in live:
            if cell.error is None and len(cell.cpu) < cell.planned:
                await _attempt(cell)
    return cells


async def peak_memory(contender: Contender, case: Case) -> int:
    """Peak traced bytes allocated while ``contender`` folds ``case`` (one run)."""
    gc.collect()
    tracemalloc.start()
    try:
        folded = await contender.run(case)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    check(case, folded, contender.name)
    return peak
