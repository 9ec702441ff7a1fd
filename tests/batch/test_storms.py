"""Provider storms (429/529 windows, dropped streams), two runs on one output, the bar."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from cli._support import RXTURN, TIMEOUT, clean_env, fake_server, received, run_tty

from ._support import assert_complete, batch_args, lines, prompts, run_batch, write_rows

pytestmark = pytest.mark.slow  # subprocesses: the fake server, rxturn batch run, worker processes


def test_a_429_storm_and_dropped_streams_end_with_every_row_ok(tmp_path: Path) -> None:
    scenario = {
        "models": {
            "*": [
                {"text": "dropped", "chunk_chars": 2, "drop_after_events": 3},
                {"status": 529, "retry_after": 0.05},
                {"text": "a reply that arrives whole", "delay_ms": 1},
            ]
        },
        # the storm opens with the first request, so it is met whatever the machine's pace
        "rate_limit_windows": [{"after_s": 0, "seconds": 0.4, "retry_after": 0.2}],
    }
    keys = [f"r{i}" for i in range(300)]
    inp = write_rows(tmp_path / "in.jsonl", prompts(300))
    out = tmp_path / "out.jsonl"
    with fake_server(scenario, tmp_path) as url:
        done = run_batch(inp, out, url, "--concurrency", "30", "--workers", "2")
        sent = len(received(url))
    assert done.returncode == 0, done.stderr
    assert_complete(out, keys)
    retried = [line for line in lines(out) if line["attempts"] > 1]
    assert retried  # the drop, the 529 and the storm were absorbed by retries
    assert all(line["message"]["content"][0]["text"] == "a reply that arrives whole"
               for line in lines(out))  # fmt: skip
    assert sent > 300 + 2  # one answer per row, the drop, the 529, and the storm's refusals


def test_a_second_run_on_the_same_output_exits_2_and_the_first_finishes(tmp_path: Path) -> None:
    # every row is in flight at once; the last request to arrive stalls for 5 s, so the first
    # run is still writing while the second starts, however slowly (its interpreter and
    # imports: a second or more on a loaded machine)
    reply = {"text": "a reply", "chunk_chars": 2}
    held = {**reply, "stall_after_events": 2, "stall_seconds": 5}
    slow = {"models": {"*": [*[reply] * 19, held]}}
    inp = write_rows(tmp_path / "in.jsonl", prompts(20))
    out = tmp_path / "out.jsonl"
    with fake_server(slow, tmp_path) as url:
        first = subprocess.Popen(
            batch_args(inp, out, url, "--concurrency", "20"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=clean_env(),
        )
        deadline = time.monotonic() + TIMEOUT
        while not (out.exists() and out.stat().st_size) and time.monotonic() < deadline:
            time.sleep(0.02)
        second = run_batch(inp, out, url)
        _, err = first.communicate(timeout=TIMEOUT)
    assert second.returncode == 2
    assert "another run is writing" in second.stderr
    assert first.returncode == 0, err
    assert_complete(out, [f"r{i}" for i in range(20)])


def test_a_terminal_gets_a_progress_bar(tmp_path: Path) -> None:
    inp = write_rows(tmp_path / "in.jsonl", prompts(30))
    with fake_server({"models": {"*": [{"text": "ok", "delay_ms": 5}]}}, tmp_path) as url:
        args = batch_args(inp, tmp_path / "out.jsonl", url)[len(RXTURN) :]  # the arguments
        args[args.index("--progress") + 1] = "auto"
        shown = run_tty(*args, stderr="tty")
    assert shown.returncode == 0, shown.out + shown.err
    bar = shown.out + shown.err
    assert "30/30" in bar and "100%" in bar and "ok 30 err 0" in bar
