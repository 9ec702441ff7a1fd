"""More rows than slots on one runner (a worker that takes a dead worker's rows beside its
own): the rows beyond ``concurrency`` wait for a slot, each gets the one freed for it, and
none fails; a row cancelled while it waits gives nothing up and takes nothing."""

from __future__ import annotations

import asyncio

from rxturn.batch import BatchConfig, RowOk, Runner
from rxturn.batch._input import decode_row
from rxturn.testing import FakeProvider

SCENARIO = {"models": {"*": [{"text": "ok", "chunk_chars": 1, "delay_ms": 5}]}}


async def test_a_freed_slot_goes_to_the_row_waiting_for_it() -> None:
    # a slot is freed while one row waits for it and, in the same turn of the loop, a new row
    # arrives (a worker reads new rows as others finish): the new row must not take it
    async with FakeProvider(SCENARIO) as fake:
        config = BatchConfig(provider="anthropic", model="m", base_url=fake.base_url, concurrency=1)
        async with Runner(config) as runner:
            rows = [decode_row({"id": f"r{i}", "prompt": "hi"}, i + 1) for i in range(3)]
            first = await asyncio.wait_for(runner.run_row(rows[0], "sha"), 30)  # a slot made
            held = runner._free.pop()  # the one slot
            waiting = asyncio.ensure_future(runner.run_row(rows[1], "sha"))
            await asyncio.sleep(0.05)  # it waits for the slot held
            arriving = asyncio.ensure_future(runner.run_row(rows[2], "sha"))
            runner._release(held)
            results = await asyncio.wait_for(asyncio.gather(waiting, arriving), 30)
    assert isinstance(first, RowOk)
    assert [type(r) for r in results] == [RowOk, RowOk]


async def test_a_row_cancelled_while_it_waits_for_a_slot_loses_no_slot() -> None:
    async with FakeProvider(SCENARIO) as fake:
        config = BatchConfig(provider="anthropic", model="m", base_url=fake.base_url, concurrency=1)
        async with Runner(config) as runner:
            rows = [decode_row({"id": f"r{i}", "prompt": "hi"}, i + 1) for i in range(4)]
            first = asyncio.ensure_future(runner.run_row(rows[0], "sha"))
            waiting = asyncio.ensure_future(runner.run_row(rows[1], "sha"))
            await asyncio.sleep(0)
            result = await asyncio.wait_for(first, 30)
            waiting.cancel()  # its slot was handed over already: it must come back
            await asyncio.gather(waiting, return_exceptions=True)
            rest = await asyncio.wait_for(
                asyncio.gather(*(runner.run_row(row, "sha") for row in rows[2:])), 30
            )
    assert isinstance(result, RowOk)
    assert [type(r) for r in rest] == [RowOk, RowOk]
