"""A provider's Retry-After pauses every worker, but no longer than the rate-limit ladder
waits (its ``max_delay``, 60 s by default): a ``Retry-After: 86400`` (a daily quota) held every
row of the run for a day, while each row's own retry came back after a minute and waited
on the pause."""

from __future__ import annotations

from rxturn.batch import BatchConfig, Budget, LocalGate, Runner


async def test_a_retry_after_longer_than_the_ladder_waits_pauses_for_the_ladders_wait() -> None:
    gate = LocalGate(Budget(), clock=lambda: 1000.0)
    config = BatchConfig(provider="anthropic", model="m", base_url="http://127.0.0.1:9")
    async with Runner(config, gate=gate) as runner:
        runner.met_retry_after(86400.0)
    assert gate.budget.paused_until == 1060.0  # the ladder's default cap: 60 s


async def test_a_short_retry_after_pauses_as_asked() -> None:
    gate = LocalGate(Budget(), clock=lambda: 1000.0)
    config = BatchConfig(provider="anthropic", model="m", base_url="http://127.0.0.1:9")
    async with Runner(config, gate=gate) as runner:
        runner.met_retry_after(2.5)
    assert gate.budget.paused_until == 1002.5
