"""``rxturn chat > log 2>&1`` from a user's shell: stdout block-buffered, stderr line-buffered,
one file. Each line lands in the order it happened: a reply before the notice of the next
turn's retry, that notice before the reply it preceded. (A test's child whose environment had
``PYTHONUNBUFFERED`` never met the buffering; in-process, the streams are made as a shell's.)"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from rxturn.cli import main

from ._support import ThreadedFake

SCENARIO = {
    "models": {
        "m": [
            {"text": "first reply"},
            {"status": 529, "retry_after": 0.01},
            {"text": "second reply"},
        ]
    }
}


def test_stdout_and_stderr_in_one_file_keep_their_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "log"
    # two descriptors on one file, as ``> log 2>&1`` gives (appending, so neither overwrites
    # the other): stdout with a buffer far larger than the text, stderr line-buffered
    out = io.TextIOWrapper(open(log, "ab", buffering=65536), encoding="utf-8")  # noqa: SIM115
    err = io.TextIOWrapper(open(log, "ab", buffering=65536), encoding="utf-8", line_buffering=True)  # noqa: SIM115
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(sys, "stdin", io.StringIO("one\ntwo\n"))
    try:
        with ThreadedFake(SCENARIO) as fake:
            code = main(
                ["chat", "--provider", "anthropic", "--model", "m", "--base-url", fake.base_url]
            )
    finally:
        out.close()
        err.close()
    lines = log.read_text(encoding="utf-8").splitlines()
    assert code == 0, lines
    assert [line.split(":")[0] for line in lines] == [
        "first reply",
        "[attempt 2",
        "second reply",
    ]
