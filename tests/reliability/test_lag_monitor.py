"""The stall detector of test_loop_never_held (:class:`~._loopback.LagMonitor`) itself: it
sees the loop held by blocking code and by CPU-bound code, and it does not take the time the
loop's thread waited for a CPU (a loaded machine: the CI's two cores running the suite's own
subprocesses, another run beside it) for the loop being held. Before, it measured the gaps
between its wake-ups on the wall clock alone: on a loaded two-core machine the compressed-flood
tests read 360-440 ms where the bound is 300 ms, and failed."""

from __future__ import annotations

import asyncio
import os
import sys
import time

import pytest

from ._loopback import LagMonitor, _open_schedstat, _runqueue_wait

HELD = 0.3


async def test_a_loop_held_by_a_blocking_call_is_seen() -> None:
    async with LagMonitor() as monitor:
        await asyncio.sleep(0.02)
        time.sleep(HELD)  # the hold the monitor must see
        await asyncio.sleep(0.02)
    assert monitor.worst >= HELD - monitor.tick


async def test_a_loop_held_by_cpu_bound_code_is_seen() -> None:
    async with LagMonitor() as monitor:
        await asyncio.sleep(0.02)
        start = time.thread_time()
        while time.thread_time() - start < HELD:  # HELD of this thread's own CPU time
            pass
        await asyncio.sleep(0.02)
    assert monitor.worst >= HELD - monitor.tick


#: spins on the CPU the test's thread is pinned to, at a real-time priority: while it spins,
#: that thread is runnable but gets no CPU (what a loaded machine does to it, only longer;
#: short, as it keeps whatever else waits on that CPU waiting too)
_HOG = """
import os, sys, time
os.sched_setaffinity(0, {int(sys.argv[1])})
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    pass
"""


@pytest.mark.slow  # a subprocess
async def test_time_the_loops_thread_waits_for_a_cpu_is_not_a_held_loop() -> None:
    schedstat = _open_schedstat()
    if schedstat is None:
        pytest.skip("the kernel reports no scheduler statistics (/proc/thread-self/schedstat)")
    affinity = os.sched_getaffinity(0)
    cpu = min(affinity)
    os.sched_setaffinity(0, {cpu})  # this thread only (the loop's)
    try:
        waited = _runqueue_wait(schedstat)
        async with LagMonitor() as monitor:
            hog = await asyncio.create_subprocess_exec(
                sys.executable, "-c", _HOG, str(cpu), "0.25", stderr=asyncio.subprocess.PIPE
            )
            _, err = await asyncio.wait_for(hog.communicate(), 60)
        waited = _runqueue_wait(schedstat) - waited
    finally:
        os.sched_setaffinity(0, affinity)
        os.close(schedstat)
    if hog.returncode != 0 and b"PermissionError" in err:
        pytest.skip("no permission for a real-time priority: cannot keep the thread off its CPU")
    assert hog.returncode == 0, err.decode()[-2000:]
    assert waited >= 0.2  # the thread did wait for its CPU while the hog spun
    assert monitor.worst < waited / 2  # the whole of it, before
