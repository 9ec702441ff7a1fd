"""A granted request that waits longer than the window before it reaches the server is counted
all that while: the server never sees more than the budget in any window.

Measured from the fake server's own arrival times. The server records them with the clock the
budget runs on (the loop's monotonic clock, in this process), and a grant is stamped sent only
once its send is over, so a request is counted from at or after its arrival: no slack is needed
for the trip from grant to server, and the full window is checked.
"""

from __future__ import annotations

import asyncio
import bisect

import pytest

import rxturn.transport.aiohttp
from rxturn.batch import BatchConfig, Budget, LocalGate, RowOk, Runner, decode_row
from rxturn.batch import run_batch as run_rows
from rxturn.batch._workers import Message, WorkerPool, _Worker
from rxturn.testing import FakeProvider
from rxturn.transport.aiohttp import AiohttpTransport

WINDOW = 0.3
RPM = 2

#: "slow" streams its reply for about a second (twelve events, 80 ms apart); "fast" at once
SCENARIO = {
    "models": {
        "slow": [{"text": "a slow reply, streamed", "chunk_chars": 2, "delay_ms": 80}],
        "fast": [{"text": "quick"}],
    }
}


def _most_in_window(times: list[float], window: float) -> int:
    times = sorted(times)
    return max(bisect.bisect_left(times, t + window) - i for i, t in enumerate(times))


class _TwoConnections(AiohttpTransport):
    """The runner's transport with a pool of two connections, whatever its concurrency."""

    def __init__(self, **kwargs: object) -> None:
        kwargs["limit"] = 2
        super().__init__(**kwargs)  # pyright: ignore[reportArgumentType]


@pytest.mark.slow  # two slow replies hold the pool for a second of real time
async def test_grants_held_back_by_a_busy_connection_pool_never_overfill_a_window(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Six slots share a pool of two connections. The first two rows get the first two grants
    and hold both connections for about a second, streaming slow replies; every later row's
    request, granted meanwhile, waits for a connection far longer than the 0.3 s window. When
    the two slow replies end, the waiting requests leave together (their replies are instant,
    so the connections turn over at once). Counting a grant from when it was granted, or from
    before it had a connection, let the budget grant two more every window while they waited,
    and they all arrived inside one window; counted until they are sent, at most two do."""
    monkeypatch.setattr(rxturn.transport.aiohttp, "AiohttpTransport", _TwoConnections)
    rows = [{"id": "s1", "prompt": "one", "model": "slow"}]
    rows.append({"id": "s2", "prompt": "two", "model": "slow"})
    rows += [{"id": f"f{i}", "prompt": f"fast {i}", "model": "fast"} for i in range(6)]
    async with FakeProvider(SCENARIO) as fake:
        config = BatchConfig(
            provider="anthropic", model="fast", base_url=fake.base_url, concurrency=6, rpm=RPM
        )
        gate = LocalGate(Budget(rpm=RPM, window=WINDOW))
        results: list[object] = []
        summary = await run_rows(rows, config, gate=gate, on_result=results.append)
        received = list(fake.received)
    assert summary.ok == len(rows)
    assert all(isinstance(result, RowOk) for result in results)
    assert len(received) == len(rows)  # one request per row: nothing retried
    slow = [r.arrived for r in received if r.body["model"] == "slow"]
    fast = [r.arrived for r in received if r.body["model"] == "fast"]
    assert min(fast) - max(slow) >= 0.5  # the fast rows did wait for the slow replies' pool
    assert _most_in_window([r.arrived for r in received], WINDOW) <= RPM
    assert gate.budget.held == 0  # every grant was sent


class _Counting(LocalGate):
    """A local gate that counts its grants, sends and releases, and cancels the task that
    asks for its first grant as it grants it (a run interrupted right after a grant)."""

    def __init__(self, budget: Budget) -> None:
        super().__init__(budget)
        self.granted: list[int] = []
        self.sent: set[int] = set()
        self.released: set[int] = set()

    async def acquire(self, tokens: int) -> int:
        ticket = await super().acquire(tokens)
        self.granted.append(ticket)
        if len(self.granted) == 1:
            task = asyncio.current_task()
            assert task is not None
            task.cancel()  # lands at the row's next wait, before or after its send
        return ticket

    def restamp(self, ticket: int) -> None:
        self.sent.add(ticket)
        super().restamp(ticket)

    def release(self, ticket: int) -> None:
        self.released.add(ticket)
        super().release(ticket)


async def test_a_row_cancelled_after_its_grant_sends_it_or_gives_it_back() -> None:
    async with FakeProvider(SCENARIO) as fake:
        config = BatchConfig(provider="anthropic", model="fast", base_url=fake.base_url, rpm=1)
        gate = _Counting(Budget(rpm=1, window=3600.0))
        async with Runner(config, gate=gate) as runner:
            row = decode_row({"id": "a", "prompt": "hi"}, 1)
            with pytest.raises(asyncio.CancelledError):
                await runner.run_row(row, "sha")
            for _ in range(500):  # a send already under way ends on its own (at most 5 s)
                if not gate.budget.held:
                    break
                await asyncio.sleep(0.01)
            assert gate.budget.held == 0  # nothing holds the hour-long window's one request
            assert gate.granted == [0]
            assert gate.sent ^ gate.released == {0}  # sent, or released: exactly one
            if gate.released:  # given back: the next row goes at once
                result = await asyncio.wait_for(runner.run_row(row, "sha"), 30.0)
                assert isinstance(result, RowOk)
        # every request that reached the server was stamped sent (a send cut off on its way
        # counts as sent too: it may have arrived)
        assert len(fake.received) <= len(gate.sent)


class _NoProcess:
    """A worker process that is not there: the pool's messages to it go nowhere."""

    stdin = None
    pid = 0
    returncode = 0


async def _turns() -> None:
    for _ in range(20):  # the pool's grant tasks run on this loop: a few turns finish them
        await asyncio.sleep(0)


async def test_the_worker_pool_gives_back_every_grant_a_worker_will_not_send() -> None:
    """The parent's side of the worker pipe, driven message by message."""
    config = BatchConfig(provider="anthropic", model="m", rpm=1)
    gate = LocalGate(Budget(rpm=1, window=3600.0))
    pool = WorkerPool(config, 1, workers=1, gate=gate)
    worker = _Worker(_NoProcess())  # pyright: ignore[reportArgumentType]
    budget = gate.budget

    # an ask the worker cancelled after the parent granted it: the grant goes back
    pool._handle(worker, Message(t="acquire", n=1, tokens=1))
    await _turns()
    assert budget.held == 1
    pool._handle(worker, Message(t="cancel", n=1))
    assert budget.held == 0

    # a grant the worker will not send (its row ended first): released on its word
    pool._handle(worker, Message(t="acquire", n=2, tokens=1))
    await _turns()
    pool._handle(worker, Message(t="release", n=2))
    assert budget.held == 0

    # an ask cancelled while it waits is never granted, even once the budget frees up
    pool._handle(worker, Message(t="acquire", n=3, tokens=1))
    await _turns()
    pool._handle(worker, Message(t="acquire", n=4, tokens=1))
    await _turns()
    pool._handle(worker, Message(t="cancel", n=4))
    pool._handle(worker, Message(t="release", n=3))
    await _turns()
    assert budget.held == 0 and budget.in_window(gate.now()) == (0, 0.0)

    # a worker that dies holding a grant: it counts as sent (its request may have left)
    pool._handle(worker, Message(t="acquire", n=5, tokens=1))
    await _turns()
    assert budget.held == 1
    worker.alive = False
    pool.closing = True  # no new worker for this one
    await pool._lost(worker)
    assert budget.held == 0 and budget.in_window(gate.now()) == (1, 1.0)
