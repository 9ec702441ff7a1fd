"""``--workers N`` starts no more worker processes than there are rows to run: a worker without
a row is a Python process (an interpreter, rxturn and aiohttp imported) for nothing, and
``--workers 1000`` on a small input started a thousand of them."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from rxturn.batch import LocalBackend
from rxturn.batch._file import FileRun
from rxturn.batch._runner import BatchConfig
from rxturn.batch._workers import WorkerPool
from rxturn.cli import main
from rxturn.cli._batch import _backend, _workers


def _prepared(tmp_path: Path, rows: int) -> FileRun:
    source = tmp_path / "in.jsonl"
    source.write_text("".join(f'{{"id": "r{i}", "prompt": "p"}}\n' for i in range(rows)))
    run = FileRun(
        source,
        tmp_path / "out.jsonl",
        BatchConfig(provider="openai", model="m", base_url="http://127.0.0.1:9"),
    )
    run.prepare()
    return run


@pytest.mark.parametrize(
    ("asked", "rows", "started"),
    [(50, 3, 3), (2, 3, 2), (1000, 2, 2), (8, 1, 1)],
    ids=["more-than-rows", "fewer-than-rows", "a-thousand", "one-row"],
)
async def test_no_more_workers_than_rows(
    tmp_path: Path, asked: int, rows: int, started: int
) -> None:
    run = _prepared(tmp_path, rows)
    try:
        backend = _backend(argparse.Namespace(ray=None, workers=asked), run, None)
        if started == 1:
            assert isinstance(backend, LocalBackend)  # one process: no pool at all
            await backend.aclose()
        else:
            assert isinstance(backend, WorkerPool)
            assert backend.size == started
    finally:
        run.close()


@pytest.mark.parametrize("asked", ["0", "-2", "257", "100000", "1e3", "two", ""])
def test_a_worker_count_out_of_range_is_refused_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], asked: str
) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": "r0", "prompt": "p"}\n')
    out = tmp_path / "out.jsonl"
    argv = ["batch", "run", str(source), "-o", str(out), "--provider", "ollama", "--model", "m"]
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--base-url", "http://127.0.0.1:9", "--workers", asked])
    assert exited.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert "from 1 to 256" in lines[-1] and repr(asked) in lines[-1]
    assert not out.exists()  # refused while reading the arguments: no output, no lock


def test_the_most_workers_and_auto_are_taken() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=_workers)
    assert parser.parse_args(["--workers", "256"]).workers == 256
    assert 1 <= parser.parse_args(["--workers", "auto"]).workers <= 256
