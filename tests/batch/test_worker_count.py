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
from rxturn.cli._batch import _backend  # pyright: ignore[reportPrivateUsage]


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
