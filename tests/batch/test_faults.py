"""Faults: signals and ``kill -9`` at random moments, killed workers, budgets and Retry-After
pauses measured from the fake server's own request arrival times."""

from __future__ import annotations

import asyncio
import bisect
import os
import random
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli._support import clean_env, fake_server

from rxturn.batch import BatchConfig, Budget, FileRun, LocalGate
from rxturn.batch._file import LocalBackend
from rxturn.batch._workers import WorkerPool
from rxturn.testing import FakeProvider

from ._support import assert_complete, batch_args, lines, prompts, run_batch, write_rows

pytestmark = pytest.mark.slow  # subprocesses: the rxturn command, worker processes

#: each reply: 6 events 15 ms apart, so a run of a few hundred rows lasts a second or more
SLOW = {"models": {"*": [{"text": "a reply in several parts", "chunk_chars": 5, "delay_ms": 15}]}}


@pytest.fixture(scope="module")
def slow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with fake_server(SLOW, tmp_path_factory.mktemp("slow")) as url:
        yield url


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def _gone(pid: int, within: float = 15.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # reap it if it is ours
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:
            pass
        time.sleep(0.05)
    return False


def _start(inp: Path, out: Path, url: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        batch_args(inp, out, url, *extra),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(),
        stdin=subprocess.DEVNULL,
    )


def _wait_for_lines(out: Path, at_least: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        if out.exists() and out.read_bytes().count(b"\n") >= at_least:
            return
        time.sleep(0.01)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_kill_9_at_random_moments_then_resume_is_complete_and_duplicate_free(
    slow_server: str, tmp_path: Path, workers: str
) -> None:
    rng = random.Random(f"kill-{workers}")
    keys = [f"r{i}" for i in range(600)]
    inp = write_rows(tmp_path / "in.jsonl", prompts(600))
    out = tmp_path / "out.jsonl"
    for _ in range(4):
        proc = _start(inp, out, slow_server, "--workers", workers, "--concurrency", "40")
        _wait_for_lines(out, rng.randrange(0, 60), proc)
        time.sleep(rng.uniform(0, 0.3))
        children = _children(proc.pid)
        proc.kill()
        proc.communicate(timeout=30)
        for child in children:  # workers end with their parent (their stdin closes)
            assert _gone(child), f"worker {child} outlived its killed parent"
    done = run_batch(inp, out, slow_server, "--workers", workers, "--concurrency", "40")
    assert done.returncode == 0, done.stderr
    assert_complete(out, keys)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_with_130_and_the_rerun_completes(
    slow_server: str, tmp_path: Path, sig: signal.Signals
) -> None:
    keys = [f"r{i}" for i in range(400)]
    inp = write_rows(tmp_path / "in.jsonl", prompts(400))
    out = tmp_path / "out.jsonl"
    for delay in (20, 80):
        proc = _start(inp, out, slow_server, "--concurrency", "20")
        _wait_for_lines(out, delay, proc)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
        if proc.returncode == 0:  # it finished first: nothing left to interrupt
            break
        assert proc.returncode == 130, err
        assert "Traceback" not in err and "(interrupted)" in err
        found = [line["id"] for line in lines(out)]
        assert len(found) == len(set(found))
        assert out.read_bytes().endswith(b"\n")  # nothing torn
    done = run_batch(inp, out, slow_server, "--concurrency", "20")
    assert done.returncode == 0, done.stderr
    assert_complete(out, keys)


def test_a_killed_worker_loses_no_row(slow_server: str, tmp_path: Path) -> None:
    keys = [f"r{i}" for i in range(500)]
    inp = write_rows(tmp_path / "in.jsonl", prompts(500))
    out = tmp_path / "out.jsonl"
    proc = _start(inp, out, slow_server, "--workers", "2", "--concurrency", "30")
    _wait_for_lines(out, 40, proc)
    children = _children(proc.pid)
    assert len(children) == 2
    os.kill(children[0], signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert f"worker {children[0]} exited" in err
    assert_complete(out, keys)


def _most_in_window(times: list[float], window: float) -> int:
    times = sorted(times)
    return max(bisect.bisect_left(times, t + window) - i for i, t in enumerate(times))


async def _file_run(
    tmp_path: Path, url: str, rows: int, config: BatchConfig, gate: LocalGate, workers: int
) -> None:
    inp = write_rows(tmp_path / "in.jsonl", prompts(rows))
    file_run = FileRun(inp, tmp_path / "out.jsonl", config)
    file_run.prepare()
    try:
        pool = WorkerPool(config, file_run.run_number, workers=workers, gate=gate)
        summary = await file_run.run(pool, asyncio.Event())
    finally:
        file_run.close()
    assert summary.ok == rows


async def test_a_request_budget_holds_across_two_workers_at_the_server(tmp_path: Path) -> None:
    # A two-second window keeps the test short (the CLI's is sixty seconds) and leaves a
    # quarter second for the trip from grant to server on a loaded machine.
    async with FakeProvider({"models": {"*": [{"text": "ok"}]}}) as fake:
        config = BatchConfig(
            provider="anthropic", model="m", base_url=fake.base_url, concurrency=8, rpm=10
        )
        gate = LocalGate(Budget(rpm=10, window=2.0))
        await _file_run(tmp_path, fake.base_url, 35, config, gate, workers=2)
        arrivals = [r.arrived for r in fake.received]
    assert len(arrivals) == 35
    # no window holds more than the budget (the slack: the trip from grant to server)
    assert _most_in_window(arrivals, 1.75) <= 10
    assert arrivals[-1] - arrivals[0] >= 5.5  # 35 requests at 10 per two seconds span 4 windows


async def test_a_retry_after_seen_by_one_worker_pauses_every_worker(tmp_path: Path) -> None:
    """One request, the 61st, is refused with a Retry-After: only the worker that sent it sees
    it, and the other holds its new requests too (a storm that both workers meet shows
    nothing of the relay)."""
    reply = {"text": "ok", "chunk_chars": 1, "delay_ms": 2}
    refusal = {"status": 429, "error_type": "rate_limit_error", "retry_after": 1.5}
    scenario = {"models": {"*": [*[reply] * 60, refusal, reply]}}  # (the last entry repeats)
    async with FakeProvider(scenario) as fake:
        config = BatchConfig(provider="anthropic", model="m", base_url=fake.base_url, concurrency=3)
        await _file_run(tmp_path, fake.base_url, 400, config, LocalGate(Budget()), workers=2)
        received = list(fake.received)
    refused_at = received[60].arrived
    # (the server stamps a request when its handler runs, on this test's loop: a request sent
    # just before the pause can be stamped a little later on a loaded machine; an unpaused
    # worker sends one every few ms)
    during_pause = [
        r.arrived - refused_at
        for r in received
        if refused_at + 0.3 <= r.arrived <= refused_at + 1.4
    ]
    assert during_pause == []
    assert received[-1].arrived > refused_at + 1.5  # the run went on after the pause


async def test_an_unexpected_error_taking_a_finished_row_ends_the_run_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finished rows are taken by a callback, which also hands out the next input line: an
    error there that is no write error must still end the run (raised), not leave it waiting
    for rows nobody hands out."""

    def broken(self: FileRun, done: object, line: int) -> None:
        raise RuntimeError("taking the row broke")

    monkeypatch.setattr(FileRun, "_write", broken)
    async with FakeProvider({"models": {"*": [{"text": "ok"}]}}) as fake:
        config = BatchConfig(provider="anthropic", model="m", base_url=fake.base_url, concurrency=2)
        inp = write_rows(tmp_path / "in.jsonl", prompts(5))
        file_run = FileRun(inp, tmp_path / "out.jsonl", config)
        file_run.prepare()
        try:
            backend = LocalBackend(config, "sk-test", file_run.run_number)
            with pytest.raises(RuntimeError, match="taking the row broke"):
                await asyncio.wait_for(file_run.run(backend, asyncio.Event()), 30)
        finally:
            file_run.close()
