"""``batch run --ray`` with a hung actor: the driver's watchdog pings every actor holding rows
and has Ray restart one that does not answer (Ray restarts a dead actor, not a stopped one)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from batch._support import assert_complete, batch_args, prompts, write_rows
from cli._support import clean_env, fake_server

pytestmark = [pytest.mark.filterwarnings("ignore:::ray"), pytest.mark.slow]  # a Ray cluster

SLOW = {"models": {"*": [{"text": "a reply in several parts", "chunk_chars": 5, "delay_ms": 20}]}}


def _row_actors() -> list[int]:
    """The pids of the RowActor processes on this machine (Ray titles them ``ray::RowActor``)."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if (entry / "cmdline").read_bytes().startswith(b"ray::RowActor"):
                found.append(int(entry.name))
    return found


@pytest.mark.timeout(300)
def test_a_stopped_ray_actor_is_restarted_and_its_rows_run(ray: Any, tmp_path: Path) -> None:
    keys = [f"r{i}" for i in range(300)]
    inp = write_rows(tmp_path / "in.jsonl", prompts(300))
    out = tmp_path / "out.jsonl"
    address = ray.get_runtime_context().gcs_address
    before = set(_row_actors())
    stopped = 0
    (tmp_path / "srv").mkdir()
    with fake_server(SLOW, tmp_path / "srv") as url:
        proc = subprocess.Popen(
            batch_args(inp, out, url, "--ray", address, "--concurrency", "10"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=clean_env(RXTURN_BATCH_HEARTBEAT_S="0.1"),
            stdin=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and proc.poll() is None:
                if out.exists() and out.read_bytes().count(b"\n") >= 20:
                    break
                time.sleep(0.02)
            actors = [pid for pid in _row_actors() if pid not in before]
            if not actors:  # what the run had come to, to say why
                if proc.poll() is None:
                    proc.kill()
                _, err = proc.communicate(timeout=30)
                raise AssertionError(f"no RowActor process found; the run: {err[-2000:]}")
            stopped = actors[0]
            os.kill(stopped, signal.SIGSTOP)
            _, err = proc.communicate(timeout=200)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate(timeout=30)
            if stopped:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(stopped, signal.SIGKILL)
    assert proc.returncode == 0, err[-2000:]
    assert "answered nothing for" in err and "restarted" in err
    assert_complete(out, keys)
