"""The worker watchdog: a worker process that stops answering while it holds rows (stopped,
deadlocked, stuck in C) is killed and treated as a worker that died; one whose rows merely wait
on a slow provider is left alone. The heartbeat interval is made small through its environment
variable so that the silence limit (thirty heartbeats) is a few seconds here."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli._support import TIMEOUT, clean_env, fake_server

from ._support import assert_complete, batch_args, lines, prompts, run_batch, write_rows

pytestmark = pytest.mark.slow  # subprocesses: the rxturn command, worker processes

SLOW = {"models": {"*": [{"text": "a reply in several parts", "chunk_chars": 5, "delay_ms": 15}]}}
#: the first four replies at once (each worker is heard from: its silence limit is the
#: running one), then every reply waits 5 s before its first word: longer than that limit
LATE = {
    "models": {
        "*": [
            *[{"text": "quick"}] * 4,
            {"text": "late but fine", "first_content_delay_ms": 5000},
        ]
    }
}

#: heartbeats every 0.05 s: a worker silent for 1.5 s while it holds rows is killed
QUICK = {"RXTURN_BATCH_HEARTBEAT_S": "0.05"}


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


def test_a_stopped_worker_is_killed_and_its_rows_run_elsewhere(
    slow_server: str, tmp_path: Path
) -> None:
    keys = [f"r{i}" for i in range(400)]
    inp = write_rows(tmp_path / "in.jsonl", prompts(400))
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen(
        batch_args(inp, out, slow_server, "--workers", "2", "--concurrency", "20"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(**QUICK),
        stdin=subprocess.DEVNULL,
    )
    stopped = 0
    try:
        children = _workers_once_written(proc, out, 30)
        stopped = children[0]
        os.kill(stopped, signal.SIGSTOP)  # its rows are in flight and stay there
        _, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
        if proc.stderr is not None and not proc.stderr.closed:  # else a later test's warning
            proc.communicate(timeout=30)
        if stopped:  # it is gone if the watchdog worked; never leave it stopped
            with contextlib.suppress(ProcessLookupError):
                os.kill(stopped, signal.SIGKILL)
    assert proc.returncode == 0, err
    assert f"worker {stopped} answered nothing for" in err
    assert f"worker {stopped} exited (-9)" in err
    assert "Traceback" not in err
    assert_complete(out, keys)


def test_rows_waiting_on_a_slow_provider_do_not_look_like_a_hung_worker(
    tmp_path: Path,
) -> None:
    (tmp_path / "late").mkdir()
    with fake_server(LATE, tmp_path / "late") as url:
        inp = write_rows(tmp_path / "in.jsonl", prompts(12))
        out = tmp_path / "out.jsonl"
        env = clean_env(RXTURN_BATCH_HEARTBEAT_S="0.1")  # silent 3 s while holding rows: killed
        done = subprocess.run(
            batch_args(inp, out, url, "--workers", "2", "--concurrency", "2"),
            capture_output=True,
            text=True,
            timeout=90,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    assert done.returncode == 0, done.stderr
    assert "answered nothing" not in done.stderr and "exited" not in done.stderr
    assert [line["attempts"] for line in lines(out)] == [1] * 12


@pytest.mark.parametrize("value", ["0", "-1", "abc", "nan", "inf"])
def test_a_bad_heartbeat_setting_is_one_line(slow_server: str, tmp_path: Path, value: str) -> None:
    inp = write_rows(tmp_path / "in.jsonl", prompts(4))
    out = tmp_path / "out.jsonl"
    done = run_batch(
        inp,
        out,
        slow_server,
        "--workers",
        "2",
        timeout=60,
        env=clean_env(RXTURN_BATCH_HEARTBEAT_S=value),
    )
    assert done.returncode == 2, done.stderr
    assert "RXTURN_BATCH_HEARTBEAT_S" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr


def _workers_once_written(proc: subprocess.Popen[Any], out: Path, lines: int) -> list[int]:
    """The run's two worker processes once it has written ``lines`` lines (a bounded wait).

    The bound is the command line's: the run starts three interpreters (itself and two
    workers) before its first line, which took up to 14 s on a loaded two-core machine, where
    the bound was 30 s; and a run seen without its two workers now says what was seen (it
    said ``0 == 2``)."""
    deadline = time.monotonic() + TIMEOUT
    written = 0
    while time.monotonic() < deadline and proc.poll() is None:
        written = out.read_bytes().count(b"\n") if out.exists() else 0
        if written >= lines:
            break
        time.sleep(0.01)
    children = _children(proc.pid)
    assert len(children) == 2, (
        f"the run ended ({proc.returncode}) before the test saw {lines} lines"
        if proc.poll() is not None
        else f"{written} lines, workers {children}, after {TIMEOUT:.0f} s"
    )
    return children


def _gone(pid: int, within: float = 15.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            if Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] == "Z":
                return True  # dead, waiting for its (adopting) parent to reap it
        except (OSError, IndexError):
            return True
        time.sleep(0.05)
    return False


def test_a_stopped_worker_ends_with_its_killed_parent(slow_server: str, tmp_path: Path) -> None:
    """A stopped worker never reads the end of its stdin: the kernel ends it with its parent."""
    inp = write_rows(tmp_path / "in.jsonl", prompts(400))
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen(
        batch_args(inp, out, slow_server, "--workers", "2", "--concurrency", "20"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=clean_env(),
        stdin=subprocess.DEVNULL,
    )
    children: list[int] = []
    try:
        children = _workers_once_written(proc, out, 20)
        os.kill(children[0], signal.SIGSTOP)
        proc.kill()
        proc.wait(timeout=30)
        assert all(_gone(child) for child in children), "a worker outlived its killed parent"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        for child in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)


def test_a_worker_lost_while_stderr_is_closed_still_hands_its_rows_on(
    slow_server: str, tmp_path: Path
) -> None:
    """``2>&1 | head -1``: stderr's reader is gone when a worker dies; the notice about it
    must not be what stops its rows from running again."""
    keys = [f"r{i}" for i in range(400)]
    inp = write_rows(tmp_path / "in.jsonl", prompts(400))
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen(
        batch_args(inp, out, slow_server, "--workers", "2", "--concurrency", "20"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=clean_env(),
        stdin=subprocess.DEVNULL,
    )
    try:
        assert proc.stderr is not None
        proc.stderr.close()  # the reader goes away
        children = _workers_once_written(proc, out, 30)
        os.kill(children[0], signal.SIGKILL)
        proc.wait(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert proc.returncode == 0
    assert_complete(out, keys)


async def test_stopped_workers_are_stopped_together_at_the_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Closing the pool gives every worker one grace period at once: three stopped workers
    are killed together when it ends, not one grace period after another (as they were).
    What is measured is the spread of the three kills, about nothing when the graces run at
    once and at least two grace periods when they run in turn: a loaded machine that slows
    the whole close down does not move it."""
    import asyncio
    import sys

    from rxturn.batch import BatchConfig
    from rxturn.batch import _workers as workers

    monkeypatch.setattr(workers, "_STOP_GRACE_S", 1.0)
    pool = workers.WorkerPool(BatchConfig(provider="ollama", model="m"), 1, workers=3)
    for _ in range(3):  # processes that neither read their stdin nor end: stopped workers
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            "import time; time.sleep(60)",
            stdin=asyncio.subprocess.PIPE,
        )
        pool.workers.append(workers._Worker(process))
    killed: list[float] = []

    def recorded(kill: Any) -> Any:
        def record() -> None:
            killed.append(time.monotonic())
            kill()

        return record

    for worker in pool.workers:
        worker.process.kill = recorded(worker.process.kill)
    await asyncio.wait_for(pool.aclose(), 30)
    assert all(worker.process.returncode == -signal.SIGKILL for worker in pool.workers)
    assert len(killed) == 3
    assert max(killed) - min(killed) < 1.0  # in turn: two grace periods (2 s) at least
