"""Worker processes that cannot be started: the interpreter gone (deleted, a broken venv), the
machine out of processes or files. The first start says so in one typed error; a restart
that fails hands the dead worker's rows to the workers still alive instead of leaving them
waiting for good."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from rxturn.batch import BatchConfig, BatchError, FileRun
from rxturn.batch._workers import WorkerPool
from rxturn.testing import FakeProvider

from ._support import assert_complete, prompts, write_rows

pytestmark = pytest.mark.slow  # worker processes

SLOW = {"models": {"*": [{"text": "a reply in several parts", "chunk_chars": 5, "delay_ms": 15}]}}


async def test_a_worker_interpreter_that_is_missing_is_one_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-such-python"))
    async with FakeProvider(SLOW) as fake:
        config = BatchConfig(provider="anthropic", model="m", base_url=fake.base_url)
        file_run = FileRun(write_rows(tmp_path / "in.jsonl", prompts(6)), tmp_path / "o", config)
        file_run.prepare()
        try:
            pool = WorkerPool(config, file_run.run_number, workers=2)
            with pytest.raises(BatchError, match="cannot start a batch worker process") as info:
                await asyncio.wait_for(file_run.run(pool, asyncio.Event()), 60)
        finally:
            file_run.close()
    assert "no-such-python" in str(info.value) and "\n" not in str(info.value)


async def test_a_restart_that_fails_leaves_the_rows_to_the_live_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = [f"r{i}" for i in range(300)]
    out = tmp_path / "out.jsonl"
    async with FakeProvider(SLOW) as fake:
        config = BatchConfig(
            provider="anthropic", model="m", base_url=fake.base_url, concurrency=20
        )
        file_run = FileRun(write_rows(tmp_path / "in.jsonl", prompts(300)), out, config)
        file_run.prepare()
        try:
            pool = WorkerPool(config, file_run.run_number, workers=2)
            running = asyncio.ensure_future(file_run.run(pool, asyncio.Event()))
            for _ in range(3000):  # both workers busy
                await asyncio.sleep(0.01)
                if len(pool.workers) == 2 and all(w.inflight for w in pool.workers):
                    break
            # from now on no new worker can start; then one of the two dies
            monkeypatch.setattr(sys, "executable", str(tmp_path / "no-such-python"))
            os.kill(pool.workers[0].process.pid, signal.SIGKILL)
            summary = await asyncio.wait_for(running, 90)
        finally:
            file_run.close()
    assert summary.ok == 300
    assert_complete(out, keys)
