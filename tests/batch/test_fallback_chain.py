"""``--fallback`` naming the run's own model (a copy-paste, or a list of models shared by
several runs): the default model has no backup left, rows of other models do. Every row runs;
before, the first engine refused to be built ("failover needs a fallback chain") and the run
ended with exit 1 after writing its manifest."""

from __future__ import annotations

from pathlib import Path

import pytest

from rxturn.batch import BatchConfig, RowOk, run_batch
from rxturn.testing import FakeProvider

from ._support import lines, write_rows
from ._support import run_batch as cli_run

SCENARIO = {
    "models": {
        "m": [{"text": "from m"}],
        "m2": [{"status": 404, "error_message": "no model m2"}],
    }
}


async def test_a_fallback_that_is_the_runs_own_model_runs_every_row() -> None:
    async with FakeProvider(SCENARIO) as fake:
        config = BatchConfig(
            provider="anthropic", model="m", base_url=fake.base_url, fallback=("m",)
        )
        seen: list[object] = []
        rows = [{"id": "a", "prompt": "hi"}, {"id": "b", "prompt": "hi", "model": "m2"}]
        summary = await run_batch(rows, config, on_result=seen.append, progress=False)
    assert summary.ok == 2, seen
    by_id = {r.id: r for r in seen if isinstance(r, RowOk)}
    assert by_id["a"].model == "m"
    assert by_id["b"].model == "m"  # m2 is not found: the row failed over to its backup, m


async def test_a_fallback_named_twice_runs_every_row() -> None:
    # the breaker refuses a chain that names a backup twice; the batch's list is used once each
    async with FakeProvider(SCENARIO) as fake:
        config = BatchConfig(
            provider="anthropic", model="m2", base_url=fake.base_url, fallback=("m", "m")
        )
        seen: list[object] = []
        summary = await run_batch(
            [{"id": "a", "prompt": "hi"}], config, on_result=seen.append, progress=False
        )
    assert summary.ok == 1, seen
    assert [r.model for r in seen if isinstance(r, RowOk)] == ["m"]


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["1", "2"])
def test_the_cli_runs_with_the_runs_own_model_as_fallback(tmp_path: Path, workers: str) -> None:
    from cli._support import fake_server

    inp = write_rows(tmp_path / "in.jsonl", [{"id": f"r{i}", "prompt": "hi"} for i in range(4)])
    out = tmp_path / "out.jsonl"
    with fake_server(SCENARIO, tmp_path) as url:
        done = cli_run(inp, out, url, "--fallback", "m", "--workers", workers)
    assert done.returncode == 0, done.stderr
    assert sorted(line["id"] for line in lines(out)) == ["r0", "r1", "r2", "r3"]
