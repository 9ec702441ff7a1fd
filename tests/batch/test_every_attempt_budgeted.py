"""Every attempt of a row spends budget: the first request, the retries, the non-streaming
rescue and the failover legs each wait for a grant, and one that cannot get it before its
deadline ends the row with a typed error instead of going out. Counted by the gate, and measured
from the fake server's own arrival times (two-second or thirty-second windows keep the tests
short). Requests held back longer than a window before they are sent: test_held_grants.py."""

from __future__ import annotations

import bisect

import pytest

import rxturn.errors
from rxturn.batch import BatchConfig, Budget, LocalGate, RowError, RowOk, Runner, decode_row
from rxturn.batch import run_batch as run_rows
from rxturn.resilience.policies import TimeoutPolicy
from rxturn.testing import FakeProvider

#: the primary model fails every request (4 streaming attempts, then the rescue); the backup
#: answers, on the same turn (same-turn failover)
FAILING_PRIMARY = {"models": {"primary": [{"status": 500}], "backup": [{"text": "served"}]}}
#: the primary model does not exist: each row fails over to the backup at once
MISSING_PRIMARY = {"models": {"primary": [{"status": 404}], "backup": [{"text": "served"}]}}


class _CountingGate(LocalGate):
    """A local gate that counts the grants it gives and the ones stamped sent."""

    def __init__(self, budget: Budget) -> None:
        super().__init__(budget)
        self.granted = 0
        self.sent = 0

    async def acquire(self, tokens: int) -> int:
        ticket = await super().acquire(tokens)
        self.granted += 1
        return ticket

    def restamp(self, ticket: int) -> None:
        self.sent += 1
        super().restamp(ticket)


def _most_in_window(times: list[float], window: float) -> int:
    times = sorted(times)
    return max(bisect.bisect_left(times, t + window) - i for i, t in enumerate(times))


async def test_the_first_request_and_the_failover_leg_each_take_a_grant() -> None:
    # the budget is never short here: what is counted is that every request had a grant (the
    # tests below make the budget bind, in real windows)
    gate = _CountingGate(Budget(rpm=1000, window=60.0))
    async with FakeProvider(MISSING_PRIMARY) as fake:
        config = BatchConfig(
            provider="anthropic",
            model="primary",
            fallback=("backup",),
            base_url=fake.base_url,
            concurrency=2,
            rpm=1000,
        )
        results: list[object] = []
        summary = await run_rows(
            [{"id": "a", "prompt": "one"}, {"id": "b", "prompt": "two"}],
            config,
            gate=gate,
            on_result=results.append,
        )
        received = list(fake.received)
    assert summary.ok == 2
    assert all(isinstance(r, RowOk) and r.model == "backup" for r in results)
    assert [r.body["model"] for r in received].count("primary") == 2
    assert len(received) == 4
    assert gate.granted == gate.sent == len(received)
    assert gate.budget.held == 0


# real windows and deadlines: 4.5 s and 2.5 s. A shorter window would let the retries' own
# back-off spread the requests, and the budget would no longer be what the test sees.
@pytest.mark.slow
async def test_retries_the_rescue_and_the_failover_leg_each_wait_for_a_grant() -> None:
    async with FakeProvider(FAILING_PRIMARY) as fake:
        config = BatchConfig(
            provider="anthropic",
            model="primary",
            fallback=("backup",),
            base_url=fake.base_url,
            concurrency=2,
            rpm=4,
        )
        results: list[object] = []
        summary = await run_rows(
            [{"id": "a", "prompt": "one"}, {"id": "b", "prompt": "two"}],
            config,
            gate=LocalGate(Budget(rpm=4, window=2.0)),
            on_result=results.append,
        )
        received = list(fake.received)
    assert summary.ok == 2
    assert all(isinstance(r, RowOk) and r.model == "backup" for r in results)
    primary = [r for r in received if r.body["model"] == "primary"]
    rescues = [r for r in primary if not r.body.get("stream")]
    # per row: the first attempt and three retries streamed, the rescue, the backup's leg
    assert len(rescues) == 2
    assert len(primary) == 2 * 5
    assert len(received) == 2 * 6
    # every one of them had a grant: no window holds more than the budget (a grant counts from
    # the end of its send, after the server recorded it, so the whole window is checked)
    assert _most_in_window([r.arrived for r in received], 2.0) <= 4


@pytest.mark.slow
async def test_an_attempt_whose_grant_would_come_after_its_deadline_is_not_sent() -> None:
    # Two requests per thirty seconds: the first attempt and the first retry get grants; the
    # second retry, the rescue and the backup's leg would wait past their deadlines (the turn's
    # second, then the rescue's and the leg's half second), so none of them is sent.
    async with FakeProvider(FAILING_PRIMARY) as fake:
        config = BatchConfig(
            provider="anthropic",
            model="primary",
            fallback=("backup",),
            base_url=fake.base_url,
            concurrency=1,
            rpm=2,
        )
        gate = LocalGate(Budget(rpm=2, window=30.0))
        timeouts = TimeoutPolicy(first_event=0.5, total=1.0)
        async with Runner(config, gate=gate, timeouts=timeouts) as runner:
            row = decode_row({"id": "a", "prompt": "hi"}, 1)
            result = await runner.run_row(row, "sha")
        received = list(fake.received)
    assert gate.budget.held == 0  # the asks that gave up at their deadlines hold nothing
    assert len(received) == 2
    assert all(r.body["model"] == "primary" and r.body.get("stream") for r in received)
    assert isinstance(result, RowError)
    error_type = getattr(rxturn.errors, result.error.type, None)
    assert isinstance(error_type, type) and issubclass(error_type, rxturn.errors.RxturnError)
    assert result.attempts >= 2
