"""``run`` counts the runs on one output (SPEC: 1, 2, …): a run that adopts an output whose
manifest is lost or broken (``--force``) goes on from the highest ``run`` its lines hold, so
a later line never carries a smaller ``run`` than an earlier one (in-process:
``FileRun.prepare``, nothing is sent)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rxturn.batch import BatchConfig, FileRun


def _line(key: str, status: str, run: int) -> str:
    return json.dumps({"id": key, "status": status, "input_sha": "", "run": run}) + "\n"


def _prepared(source: Path, out: Path) -> int:
    config = BatchConfig(provider="openai", model="m", base_url="http://127.0.0.1:9")
    run = FileRun(source, out, config, force=True, notice=lambda _: None)
    try:
        run.prepare()
        return run.run_number
    finally:
        run.close()


@pytest.mark.parametrize(
    "manifest", [None, "{not json", '{"runs": 1}'], ids=["lost", "broken", "edited"]
)
def test_an_adopted_output_goes_on_from_its_highest_run(
    tmp_path: Path, manifest: str | None
) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": "a", "prompt": "p"}\n{"id": "b", "prompt": "q"}\n')
    out = tmp_path / "out.jsonl"
    # what five runs left: a's line of run 1, b's error lines of runs 2 and 5
    out.write_text(_line("a", "ok", 1) + _line("b", "error", 2) + _line("b", "error", 5))
    manifest_path = tmp_path / "out.jsonl.manifest.json"
    if manifest is not None:
        manifest_path.write_text(manifest)
    assert _prepared(source, out) == 6
    assert json.loads(manifest_path.read_text())["runs"] == 6
    assert _prepared(source, out) == 7  # and the manifest counts on from there
