"""``waiting_s`` of the progress line: the wall time during which the run waited for the
provider's rate limit (a request waiting for its grant, a Retry-After pause, a row's sleep on
the rate-limit ladder after a 429/529), each second counted once however many rows waited in it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from rxturn.batch import BatchConfig, Budget, LocalGate, run_batch
from rxturn.batch._budget import WaitClock
from rxturn.resilience.policies import RateLimitPolicy
from rxturn.testing import FakeProvider

from ._support import prompts, write_rows


def test_overlapping_sleeps_count_once() -> None:
    clock = WaitClock()
    clock.add(10.0, 4.0)  # 10..14
    clock.add(11.0, 1.0)  # 11..12, inside the first
    clock.add(13.0, 3.0)  # 13..16, overlapping its end
    assert clock.waited(12.0) == pytest.approx(2.0)
    assert clock.waited(16.0) == pytest.approx(6.0)
    assert clock.waited(100.0) == pytest.approx(6.0)  # nothing waits after 16


def test_gaps_between_waits_do_not_count() -> None:
    clock = WaitClock()
    clock.add(0.0, 1.0)
    clock.add(5.0, 2.0)
    assert clock.waited(3.0) == pytest.approx(1.0)
    assert clock.waited(10.0) == pytest.approx(3.0)


def test_an_open_wait_counts_while_it_lasts_and_overlaps_a_sleep_once() -> None:
    clock = WaitClock()
    clock.begin(0.0)  # a request waits for its grant
    clock.add(1.0, 5.0)  # a row sleeps 1..6
    assert clock.waited(3.0) == pytest.approx(3.0)
    clock.end(4.0)  # granted: the sleep goes on
    assert clock.waited(5.0) == pytest.approx(5.0)
    assert clock.waited(9.0) == pytest.approx(6.0)
    clock.begin(9.0)
    clock.begin(9.5)  # two waiting at once count once
    clock.end(10.0)
    assert clock.waited(11.0) == pytest.approx(8.0)
    clock.end(11.0)
    assert clock.waited(20.0) == pytest.approx(8.0)


@pytest.mark.parametrize("seconds", [0.0, -1.0, float("nan"), float("inf")])
def test_a_sleep_of_no_length_counts_nothing(seconds: float) -> None:
    clock = WaitClock()
    clock.add(0.0, seconds)
    assert clock.waited(10.0) == 0.0


async def test_the_gate_counts_pauses_and_ladder_sleeps_with_its_own_waits() -> None:
    now = [0.0]
    gate = LocalGate(Budget(rpm=1, window=3600.0), clock=lambda: now[0])
    gate.rate_limited(2.0)  # a row sleeps 0..2 after a 429
    now[0] = 1.0
    gate.pause(3.0)  # a Retry-After: the run holds 1..4
    now[0] = 10.0
    assert gate.waited == pytest.approx(4.0)
    first = await gate.acquire(1)
    waiter = asyncio.ensure_future(gate.acquire(1))  # waits for the budget from 10
    for _ in range(5):
        await asyncio.sleep(0)
    gate.rate_limited(1.0)  # 10..11, while the waiter waits
    now[0] = 12.0
    assert gate.waited == pytest.approx(6.0)
    gate.release(first)
    await asyncio.wait_for(waiter, 5.0)
    now[0] = 30.0
    assert gate.waited == pytest.approx(6.0)


async def test_a_rows_sleep_after_a_rate_limit_is_counted_in_one_process() -> None:
    """Before: the ladder's sleep outlasted the Retry-After pause, so the gate never made
    anyone wait and a run held by the provider read ``waiting_s`` 0."""
    scenario = {"models": {"*": [{"status": 429, "retry_after": 0.3}, {"text": "ok"}]}}
    gate = LocalGate(Budget())
    async with FakeProvider(scenario) as fake:
        config = BatchConfig(provider="openai", model="m", base_url=fake.openai_base_url)
        summary = await run_batch(prompts(1), config, gate=gate, progress=False)
    assert summary.ok == 1
    assert gate.waited >= 0.3


@pytest.mark.slow  # subprocesses, and the ladder's default wait (no Retry-After): seconds
@pytest.mark.parametrize("workers", ["1", "2"])
def test_progress_json_counts_a_rate_limit_without_retry_after(
    tmp_path: Path, workers: str
) -> None:
    from cli._support import fake_server

    from ._support import cli

    scenario = {"models": {"*": [{"status": 429}, {"text": "ok"}]}}
    inp = write_rows(tmp_path / "in.jsonl", prompts(2))
    with fake_server(scenario, tmp_path) as url:
        done = cli(
            "batch", "run", str(inp), "-o", str(tmp_path / "out.jsonl"), "--provider", "openai",
            "--model", "m", "--base-url", url, "--workers", workers, "--progress", "json",
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    reports = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    # a row slept the ladder's default wait (no Retry-After) before its retry
    assert reports[-1]["waiting_s"] >= RateLimitPolicy().default_delay - 0.01
