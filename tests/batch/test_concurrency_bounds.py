"""``--concurrency`` beyond what a process can hold: a value no run could use is refused with
one line; a value above the open-files limit (a socket per row in flight) is lowered to fit,
said on stderr, and the run completes with every row ok rather than fail rows with
"Too many open files"."""

from __future__ import annotations

import resource
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli._support import clean_env, fake_server

from rxturn.batch import BatchConfig
from rxturn.errors import ConfigError

from ._support import assert_complete, batch_args, prompts, run_batch, write_rows

SLOW = {"models": {"*": [{"text": "a reply in several parts", "chunk_chars": 5, "delay_ms": 40}]}}


@pytest.fixture(scope="module")
def slow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with fake_server(SLOW, tmp_path_factory.mktemp("slow")) as url:
        yield url


def _limited(files: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_concurrency_above_the_open_files_limit_is_lowered_to_fit(
    slow_server: str, tmp_path: Path, workers: str
) -> None:
    keys = [f"r{i}" for i in range(900)]
    inp = write_rows(tmp_path / "in.jsonl", prompts(900))
    out = tmp_path / "out.jsonl"
    done = run_batch(
        inp,
        out,
        slow_server,
        "--concurrency",
        "5000",
        "--workers",
        workers,
        timeout=180,
        preexec_fn=lambda: _limited(256),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Too many open files" not in done.stderr
    assert "--concurrency 5000 lowered to" in done.stderr
    assert "ulimit -n" in done.stderr
    assert_complete(out, keys)


@pytest.mark.slow
def test_workers_beyond_the_open_files_limit_are_lowered_to_fit(
    slow_server: str, tmp_path: Path
) -> None:
    """The parent holds pipes for each worker: at 40 files, 32 workers cannot all be started
    (before, the run ended with "cannot start a batch worker process: Too many open files")."""
    keys = [f"r{i}" for i in range(32)]
    inp = write_rows(tmp_path / "in.jsonl", prompts(32))
    out = tmp_path / "out.jsonl"
    done = run_batch(
        inp, out, slow_server, "--workers", "32", timeout=180, preexec_fn=lambda: _limited(40)
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Too many open files" not in done.stderr
    assert "--workers 32 lowered to" in done.stderr
    assert "ulimit -n" in done.stderr
    assert_complete(out, keys)


@pytest.mark.slow
def test_a_concurrency_that_fits_is_kept_without_a_word(slow_server: str, tmp_path: Path) -> None:
    inp = write_rows(tmp_path / "in.jsonl", prompts(30))
    out = tmp_path / "out.jsonl"
    done = subprocess.run(
        batch_args(inp, out, slow_server, "--concurrency", "5000"),
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_env(),
        stdin=subprocess.DEVNULL,
        preexec_fn=lambda: _limited(256),
    )
    assert done.returncode == 0, done.stderr
    assert "lowered" not in done.stderr  # 30 rows: never more than 30 sockets


@pytest.mark.parametrize("value", ["10001", "100000", "1000000000", "99999999999999999999999"])
def test_a_concurrency_no_machine_can_hold_is_refused(tmp_path: Path, value: str) -> None:
    inp = write_rows(tmp_path / "in.jsonl", prompts(3))
    out = tmp_path / "out.jsonl"
    done = subprocess.run(
        batch_args(inp, out, "http://127.0.0.1:1", "--concurrency", value),
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(),
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2, done.stderr
    assert "--concurrency" in done.stderr and "10000" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize("value", [10_001, 10**9, 10**30])
def test_the_api_refuses_the_same_concurrency(value: int) -> None:
    with pytest.raises(ConfigError, match="concurrency"):
        BatchConfig(provider="anthropic", model="m", concurrency=value).check()


def test_the_api_takes_the_largest_concurrency() -> None:
    config = BatchConfig(provider="anthropic", model="m", concurrency=10_000).check()
    assert config.concurrency == 10_000


def test_the_soft_limit_is_raised_for_the_workers_pipes_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """64 workers of 10 rows each: the parent's pipes, not the sockets, set what it needs."""
    from rxturn.cli import _batch

    limits = [(100, 10_000)]
    monkeypatch.setattr(resource, "getrlimit", lambda _kind: limits[-1])
    monkeypatch.setattr(resource, "setrlimit", lambda _kind, pair: limits.append(pair))
    concurrency, workers, limit = _batch._fit_open_files(10, 640, 64)
    assert (concurrency, workers) == (10, 64)  # nothing lowered: the hard limit holds them
    # two pipes and a process descriptor per worker, beside what any process needs
    assert limit == limits[-1][0] >= 64 * 3 + 10
    assert limits[-1][1] == 10_000
