"""``rxturn batch run --ray ADDRESS`` with nothing listening there: Ray's own client retries
for minutes, printing a warning every few seconds. The run looks first (a TCP connect with a
short timeout) and says it in one line, exit 1, before the output is touched. No Ray cluster
is started for this."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from batch._support import batch_args, prompts, write_rows
from cli._support import TIMEOUT, clean_env, closed_port

pytestmark = pytest.mark.slow  # the rxturn command as a subprocess


@pytest.mark.parametrize("scheme", ["", "ray://"])
def test_a_ray_address_with_nothing_there_is_one_line_and_nothing_is_written(
    tmp_path: Path, scheme: str
) -> None:
    pytest.importorskip("ray", reason="the ray extra: pip install -e '.[ray]'")
    inp = write_rows(tmp_path / "in.jsonl", prompts(3))
    address = f"{scheme}127.0.0.1:{closed_port()}"
    done = subprocess.run(
        batch_args(inp, tmp_path / "out.jsonl", "http://127.0.0.1:9", "--ray", address),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=clean_env(RAY_ADDRESS=""),
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1, done.stderr[-2000:]
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.stderr.startswith(
        f"rxturn batch: error: cannot reach the Ray cluster at {address!r}"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]
