"""The batch phase: rows per second of ``rxturn batch run`` against a bare aiohttp loop.

Run alone (``python benchmarks/bench_batch.py [--rows N] [--no-rss]``) or from ``run.py
--batch``. One ``rxturn fake-server`` child process serves both contenders the same reply:
about 100 tokens (400 characters) in 20 deltas, no delay, so the provider is as fast as it
gets and what is measured is the client side. In order:

1. **bare**: an aiohttp loop, 100 requests in flight, each reading its whole SSE body: the
   most a client can do against this server on this machine;
2. **rxturn 1 worker**: ``rxturn batch run --concurrency 100`` on the same rows (every row a
   full turn with the resilient handler, written to the output and fsynced in groups); its
   rows/s is taken from its own summary (the run, without interpreter start-up and the scan);
3. **rxturn --workers 2**: the same with two worker processes (on a 2-core machine that also
   runs the server, the gain is bounded by the cores);
4. **peak RSS** of ``rxturn batch run`` on a 10^6-line input (written to a temporary file),
   stopped with SIGTERM after a few seconds of running, beside the same on 10^4 lines: the
   difference is what a million keys cost; the rows in flight cost the same in both.

The target: rxturn 1 worker at least 0.7x the bare loop's rows/s (printed PASS/MISS; a
benchmark informs, it does not gate).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

TARGET = 0.7
CONCURRENCY = 100
_TEXT = ("lorem ipsum dolor sit amet " * 20)[:400]
SCENARIO = {"models": {"*": [{"text": _TEXT, "chunk_chars": 20}]}}
_SCRIPT = shutil.which("rxturn", path=str(Path(sys.executable).parent))
RXTURN = [_SCRIPT] if _SCRIPT else [sys.executable, "-m", "rxturn"]
_SUMMARY = re.compile(r"(\d+) rows: (\d+) ok.* in ([0-9.]+)s")


class FakeServer:
    """``rxturn fake-server`` in a child process."""

    def __init__(self, directory: Path) -> None:
        path = directory / "scenario.json"
        path.write_text(json.dumps(SCENARIO))
        self.process = subprocess.Popen(
            [*RXTURN, "fake-server", "--scenario", str(path)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()
        if not line.startswith("listening on "):
            self.close()
            raise RuntimeError(f"fake-server did not start: {line!r}")
        self.url = line.removeprefix("listening on ")

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()


async def bare_loop(url: str, rows: int) -> float:
    """Rows/s of a plain aiohttp client: POST, read the whole stream, ``CONCURRENCY`` at once."""
    connector = aiohttp.TCPConnector(limit=CONCURRENCY)
    places = asyncio.Semaphore(CONCURRENCY)
    headers = {"x-api-key": "bench", "anthropic-version": "2023-06-01"}

    async def one(session: aiohttp.ClientSession, i: int) -> None:
        body = {
            "model": "m",
            "max_tokens": 256,
            "stream": True,
            "messages": [{"role": "user", "content": f"question number {i}"}],
        }
        async with places, session.post(f"{url}/v1/messages", json=body, headers=headers) as r:
            async for _ in r.content.iter_any():
                pass
            assert r.status == 200

    async with aiohttp.ClientSession(connector=connector) as session:
        started = time.perf_counter()
        await asyncio.gather(*(one(session, i) for i in range(rows)))
        return rows / (time.perf_counter() - started)


def write_input(path: Path, rows: int) -> None:
    with open(path, "w") as file:
        for i in range(rows):
            file.write(f'{{"id": "r{i}", "prompt": "question number {i}"}}\n')


def _command(url: str, inp: Path, out: Path, *extra: str) -> list[str]:
    options = ["--provider", "anthropic", "--model", "m", "--base-url", url, "--progress", "none"]
    return [
        *RXTURN,
        *("batch", "run", str(inp), "-o", str(out)),
        *options,
        *("--concurrency", str(CONCURRENCY), *extra),
    ]


def rxturn_run(url: str, inp: Path, out: Path, *extra: str) -> float:
    """Rows/s of ``rxturn batch run`` from its summary line."""
    done = subprocess.run(
        _command(url, inp, out, *extra),
        capture_output=True,
        text=True,
        timeout=1800,
        env={k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")},
    )
    match = _SUMMARY.search(done.stderr)
    if done.returncode != 0 or match is None:
        raise RuntimeError(f"rxturn batch run failed ({done.returncode}): {done.stderr[-500:]}")
    return int(match.group(2)) / float(match.group(3))


def peak_rss_mb(url: str, inp: Path, out: Path, seconds: float) -> float:
    """Peak RSS (MB) of a run stopped by SIGTERM ``seconds`` after it started sending."""
    process = subprocess.Popen(
        _command(url, inp, out),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and process.poll() is None:
        if out.exists() and out.stat().st_size > 0:
            break
        time.sleep(0.05)
    time.sleep(seconds)
    process.send_signal(signal.SIGTERM)
    _, status, usage = os.wait4(process.pid, 0)
    del status
    return usage.ru_maxrss / 1024


def run_phase(rows: int = 5000, rss: bool = True) -> dict[str, Any]:
    """The whole phase; prints its lines and returns its numbers."""
    results: dict[str, Any] = {"rows": rows, "concurrency": CONCURRENCY}
    with tempfile.TemporaryDirectory(prefix="rxturn-bench-batch-") as tmp:
        directory = Path(tmp)
        server = FakeServer(directory)
        try:
            inp = directory / "in.jsonl"
            write_input(inp, rows)
            asyncio.run(bare_loop(server.url, min(rows, 500)))  # warm the server up
            bare = asyncio.run(bare_loop(server.url, rows))
            one = rxturn_run(server.url, inp, directory / "out1.jsonl")
            two = rxturn_run(server.url, inp, directory / "out2.jsonl", "--workers", "2")
            results.update(bare_rows_per_s=bare, rxturn_rows_per_s=one, workers2_rows_per_s=two)
            ratio = one / bare
            verdict = "PASS" if ratio >= TARGET else "MISS"
            print(f"batch: bare aiohttp loop            {bare:8.0f} rows/s")
            print(f"batch: rxturn batch run (1 worker)  {one:8.0f} rows/s  {ratio:.2f}x bare")
            print(f"batch: rxturn batch run --workers 2 {two:8.0f} rows/s  {two / one:.2f}x one")
            print(f"batch: target >= {TARGET}x bare: {verdict} ({ratio:.2f}x)")
            results.update(ratio=ratio, verdict=verdict)
            if rss:
                small, big = directory / "small.jsonl", directory / "big.jsonl"
                write_input(small, 10_000)
                write_input(big, 1_000_000)
                rss_small = peak_rss_mb(server.url, small, directory / "o-small.jsonl", 3.0)
                rss_big = peak_rss_mb(server.url, big, directory / "o-big.jsonl", 3.0)
                print(f"batch: peak RSS, 10^4-line input    {rss_small:8.0f} MB")
                print(f"batch: peak RSS, 10^6-line input    {rss_big:8.0f} MB")
                results.update(peak_rss_mb_10k=rss_small, peak_rss_mb_1m=rss_big)
        finally:
            server.close()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--no-rss", action="store_true", help="skip the 10^6-line memory run")
    args = parser.parse_args(argv)
    run_phase(args.rows, rss=not args.no_rss)
    return 0


if __name__ == "__main__":
    sys.exit(main())
