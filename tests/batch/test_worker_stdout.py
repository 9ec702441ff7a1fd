"""A worker's stdout is the pipe its frames travel on: something else in the worker process
that prints (a library's ``print``, a C extension's ``printf``, without a newline even) must
not cut into a frame, which would lose the row it carried. Here a ``sitecustomize`` in the
worker writes noise to file descriptor 1 from a thread all through the run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli._support import clean_env, fake_server

from ._support import assert_complete, batch_args, prompts, write_rows

pytestmark = pytest.mark.slow  # subprocesses: the rxturn command, worker processes

SLOW = {"models": {"*": [{"text": "a reply in several parts", "chunk_chars": 5, "delay_ms": 10}]}}

NOISE = """
import os, sys, threading, time
if b"rxturn.batch._worker" in open("/proc/self/cmdline", "rb").read():
    os.write(1, b"printed while the interpreter starts, without a newline ")

    def noise():
        while True:
            os.write(1, b"noise without a newline ")
            print("a library's print", end="", flush=True)
            time.sleep(0.003)
    threading.Thread(target=noise, daemon=True).start()
"""


def test_prints_in_a_worker_do_not_cut_into_its_frames(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(NOISE)
    keys = [f"r{i}" for i in range(300)]
    inp = write_rows(tmp_path / "in.jsonl", prompts(300))
    out = tmp_path / "out.jsonl"
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    with fake_server(SLOW, tmp_path) as url:
        done = subprocess.run(
            batch_args(inp, out, url, "--workers", "2", "--concurrency", "20"),
            capture_output=True,
            text=True,
            timeout=120,
            env=clean_env(PYTHONPATH=path, RXTURN_BATCH_HEARTBEAT_S="0.2"),
            stdin=subprocess.DEVNULL,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    # a frame lost to the noise leaves its row in flight in the parent after the worker has
    # finished it: the worker, with nothing left, goes quiet and the watchdog (6 s here) acts
    assert "answered nothing" not in done.stderr
    assert "noise without a newline" in done.stderr  # it went to stderr instead
    assert_complete(out, keys)


def test_what_was_printed_before_the_worker_took_its_stdout_ends_before_the_first_frame() -> None:
    script = (
        "import os, sys\n"
        "os.write(1, b'printed during the imports, without a newline ')\n"
        "from rxturn.batch._worker import _take_stdout\n"
        "out = _take_stdout()\n"
        "print('a print after: goes to stderr')\n"
        "out.write(b'FRAME\\n')\n"
        "out.flush()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        timeout=60,
        env=clean_env(),
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert b"FRAME" in done.stdout.split(b"\n")  # a line of its own
    assert b"a print after" in done.stderr and b"a print after" not in done.stdout
