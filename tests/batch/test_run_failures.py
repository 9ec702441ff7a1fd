"""A run that cannot go on ends with one error, said once: no other failure of the rows in
flight is left for asyncio to print at exit ("exception was never retrieved", with a
traceback), and a setting that no worker can start with (a malformed key) is one line, exit 2,
not a traceback per worker and a loop of restarts."""

from __future__ import annotations

import asyncio
import gc
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cli._support import TIMEOUT, clean_env

from rxturn.batch import BatchConfig, BatchInputError, Budget, FileRun, LocalGate
from rxturn.batch._file import Done
from rxturn.batch._workers import WorkerPool
from rxturn.errors import ConfigError

from ._support import batch_args, prompts, write_rows


class _EveryRowFails:
    """A backend whose rows all fail in the same turn of the loop (as every row of an input
    edited under the run does: each line is read again and no longer parses)."""

    def __init__(self) -> None:
        self.gate = LocalGate(Budget())
        self.submitted = 0

    async def start(self) -> None:
        return None

    def submit(self, number: int, raw: bytes) -> asyncio.Future[Done]:
        self.submitted += 1
        future: asyncio.Future[Done] = asyncio.get_running_loop().create_future()
        future.set_exception(BatchInputError(f"line {number}: not valid JSON", line=number))
        return future

    async def aclose(self) -> None:
        return None


async def test_when_rows_in_flight_all_fail_the_first_is_raised_and_none_is_left_unseen(
    tmp_path: Path,
) -> None:
    unseen: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, context: unseen.append(context))
    config = BatchConfig(
        provider="anthropic", model="m", base_url="http://127.0.0.1:9", concurrency=8
    )
    inp = write_rows(tmp_path / "in.jsonl", prompts(20))
    file_run = FileRun(inp, tmp_path / "out.jsonl", config)
    file_run.prepare()
    backend = _EveryRowFails()
    try:
        with pytest.raises(BatchInputError, match="line 1: not valid JSON"):
            await asyncio.wait_for(file_run.run(backend, asyncio.Event()), 30)
    finally:
        file_run.close()
    assert backend.submitted == 8  # a full round was in flight, and nothing after it was sent
    gc.collect()
    await asyncio.sleep(0)
    assert [c.get("message") for c in unseen] == []


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_malformed_key_is_one_line_exit_2_and_nothing_is_written(
    tmp_path: Path, workers: str
) -> None:
    inp = write_rows(tmp_path / "in.jsonl", prompts(4))
    out = tmp_path / "out.jsonl"
    done = subprocess.run(
        [*batch_args(inp, out, "http://127.0.0.1:9", "--workers", workers)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=clean_env(ANTHROPIC_API_KEY="sk-with a space"),
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert "ANTHROPIC_API_KEY holds whitespace or control characters" in done.stderr
    assert "with a space" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


@pytest.mark.slow
async def test_workers_that_cannot_start_end_the_run_with_their_error_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """The parent checks the key before it starts workers; whatever else stops a worker from
    setting up (here the key, changed behind the parent's back) ends the run with that error,
    once, instead of a traceback from every worker and a restart after each."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-with a space")
    config = BatchConfig(
        provider="anthropic", model="m", base_url="http://127.0.0.1:9", concurrency=2
    )
    pool = WorkerPool(config, 1, workers=2)
    await pool.start()
    try:
        futures = [pool.submit(n, b'{"id": "r%d", "prompt": "x"}' % n) for n in range(1, 5)]
        outcomes = await asyncio.wait_for(asyncio.gather(*futures, return_exceptions=True), 30)
    finally:
        await asyncio.wait_for(pool.aclose(), 30)
    assert all(isinstance(o, ConfigError) for o in outcomes), outcomes
    assert "api_key must be a non-empty string without whitespace" in str(outcomes[0])
    assert pool.respawns == 0
    err = capfd.readouterr().err
    assert "Traceback" not in err, err


class _SignalAt:
    """A backend whose rows are served at once, and a signal (``stop``) that arrives after
    ``after`` rows were handed out, or as the backend closes (``after`` None: every row done)."""

    def __init__(self, stop: asyncio.Event, after: int | None) -> None:
        self.gate = LocalGate(Budget())
        self.stop = stop
        self.after = after
        self.submitted = 0

    async def start(self) -> None:
        return None

    def submit(self, number: int, raw: bytes) -> asyncio.Future[Done]:
        self.submitted += 1
        if self.submitted == self.after:
            self.stop.set()
        key = f"r{number - 1}"
        line = f'{{"id": "{key}", "status": "ok", "input_sha": "", "run": 1}}\n'.encode()
        future: asyncio.Future[Done] = asyncio.get_running_loop().create_future()
        future.set_result(Done(line, key, "ok", 0, 0))
        return future

    async def aclose(self) -> None:
        if self.after is None:
            self.stop.set()


@pytest.mark.parametrize(("after", "interrupted"), [(None, False), (2, True)])
async def test_a_signal_once_every_row_has_its_line_interrupted_nothing(
    tmp_path: Path, after: int | None, interrupted: bool
) -> None:
    """A Ctrl-C as a complete run closes said "(interrupted)" and exited 130 (a script would
    run it again for nothing); one while rows are left is still an interruption."""
    config = BatchConfig(provider="anthropic", model="m", base_url="http://127.0.0.1:9")
    inp = write_rows(tmp_path / "in.jsonl", prompts(5))
    file_run = FileRun(inp, tmp_path / "out.jsonl", config)
    file_run.prepare()
    stop = asyncio.Event()
    try:
        summary = await asyncio.wait_for(file_run.run(_SignalAt(stop, after), stop), 30)
    finally:
        file_run.close()
    assert stop.is_set()
    assert summary.interrupted is interrupted
    assert summary.exit_code == (130 if interrupted else 0)
    assert summary.ok == (2 if interrupted else 5)


class _SizedAtStart:
    """A backend that learns how many rows it can hold as it starts, as the Ray backend does
    (the cluster's actors, each taking --concurrency rows); its rows wait until released."""

    def __init__(self, capacity: int) -> None:
        self.gate = LocalGate(Budget())
        self.capacity = 1  # before start: one worker's worth, or nothing known
        self._capacity = capacity
        self.held: list[tuple[int, asyncio.Future[Done]]] = []
        self.most = 0

    async def start(self) -> None:
        self.capacity = self._capacity

    def submit(self, number: int, raw: bytes) -> asyncio.Future[Done]:
        future: asyncio.Future[Done] = asyncio.get_running_loop().create_future()
        self.held.append((number, future))
        self.most = max(self.most, sum(not f.done() for _, f in self.held))
        return future

    def release(self) -> None:
        for number, future in self.held:
            if not future.done():
                key = f"r{number - 1}"
                line = f'{{"id": "{key}", "status": "ok", "input_sha": "", "run": 1}}\n'
                future.set_result(Done(line.encode(), key, "ok", 0, 0))

    async def aclose(self) -> None:
        return None


async def test_the_rows_in_flight_are_the_capacity_the_backend_has_once_started(
    tmp_path: Path,
) -> None:
    """``--ray`` ran one actor's --concurrency rows at a time over all its actors: the run
    read the backend's capacity before starting it, and the Ray backend only knows it (actors
    times --concurrency) once it has started on the cluster."""
    config = BatchConfig(
        provider="anthropic", model="m", base_url="http://127.0.0.1:9", concurrency=1
    )
    inp = write_rows(tmp_path / "in.jsonl", prompts(10))
    file_run = FileRun(inp, tmp_path / "out.jsonl", config)
    file_run.prepare()
    backend = _SizedAtStart(4)
    run = asyncio.ensure_future(file_run.run(backend, asyncio.Event()))
    try:
        for _ in range(100):  # until the run has handed out what it will (bounded)
            await asyncio.sleep(0)
        assert backend.most == 4
        for _ in range(3000):  # every row's line, a few at a time (bounded: 30 s)
            if run.done():
                break
            backend.release()
            await asyncio.sleep(0.01)
        summary = await asyncio.wait_for(run, 30)
    finally:
        run.cancel()
        file_run.close()
    assert summary.ok == 10 and backend.most == 4
