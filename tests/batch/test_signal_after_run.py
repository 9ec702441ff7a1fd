"""A signal after ``rxturn batch run``'s event loop ended, while the command still writes its
summary and closes the output: the command's handler, as before the run (exit 130, one line),
never Python's defaults (SIGTERM killed the process, -15, after every row was written)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from cli._support import RXTURN, TIMEOUT, ThreadedFake, clean_env

from ._support import batch_args, lines, prompts, write_rows

pytestmark = pytest.mark.slow  # the console script's entry point in a subprocess

#: the console script, with a signal sent to itself as the summary line is made (after the
#: run's event loop has ended)
_SCRIPT = """
import os, signal, sys
import rxturn._entry
import rxturn.cli._batch as batch

made = batch._errors_seen
sig = getattr(signal, sys.argv[1])

def errors_seen(*args, **kwargs):
    os.kill(os.getpid(), sig)
    return made(*args, **kwargs)

batch._errors_seen = errors_seen
sys.argv[:2] = ["rxturn"]  # the arguments after the signal's name
sys.exit(rxturn._entry.main())
"""


def test_a_sigterm_during_the_summary_exits_130(tmp_path: Path) -> None:
    inp = write_rows(tmp_path / "in.jsonl", prompts(2))
    out = tmp_path / "out.jsonl"
    with ThreadedFake({"models": {"*": [{"text": "fine"}]}}) as fake:
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                _SCRIPT,
                "SIGTERM",
                *batch_args(inp, out, fake.base_url)[len(RXTURN) :],
            ],
            capture_output=True,
            text=True,
            env=clean_env(),
            timeout=TIMEOUT,
        )
    assert done.returncode == 130, (done.returncode, done.stderr)  # -15 before
    assert done.stderr == (
        "rxturn batch: interrupted; every line written so far is kept: the same command goes on\n"
    )
    assert sorted(line["id"] for line in lines(out)) == ["r0", "r1"]
