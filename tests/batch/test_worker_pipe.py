"""A worker whose parent is gone (its stdout pipe closed) ends quietly: no traceback on stderr."""

from __future__ import annotations

import subprocess
import sys

from rxturn.batch import BatchConfig
from rxturn.batch._workers import Message, encode_message, row_frame


def test_a_worker_writing_to_a_closed_pipe_ends_without_a_traceback() -> None:
    config = BatchConfig(provider="openai", model="m", base_url="http://127.0.0.1:9")
    worker = subprocess.Popen(
        [sys.executable, "-m", "rxturn.batch._worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert worker.stdin is not None and worker.stdout is not None
    worker.stdout.close()  # the parent's end of the pipe: gone, as when it is killed
    worker.stdin.write(encode_message(Message(t="config", config=config, run=1)))
    for number in range(1, 4):  # rows that fail at once: their lines go to the closed pipe
        worker.stdin.write(row_frame(number, b"{not json"))
    worker.stdin.flush()
    try:
        _, err = worker.communicate(timeout=60)  # closes stdin: the worker's cue to end
    finally:
        worker.kill()
    text = err.decode(errors="replace")
    assert "Traceback" not in text, text
    assert worker.returncode == 0, text
