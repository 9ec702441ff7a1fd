"""The batch phase: rows per second of ``rxturn batch run`` against a bare aiohttp loop.

Run alone (``python benchmarks/bench_batch.py [--rows N] [--no-rss]``) or from ``run.py
--batch``. One ``rxturn fake-server`` child process serves every contender the same reply:
about 100 tokens (400 characters) in 20 deltas, no delay, so the provider is as fast as it
gets and what is measured is the client side. In order:

0. **raw** (information, not a target): the same exchange with no HTTP client at all, the
   request written by hand on kept-alive asyncio streams and the chunked body read to its
   end: the floor under every asyncio client here, beside which the bare loop shows what
   aiohttp's own request costs;
1. **bare**: an aiohttp loop, 100 requests in flight, each reading its whole SSE body and
   dropping it: the most a client can do against this server on this machine; and **bare +
   LIMIT**, the same loop folding each body into its reply with the hand-written LIMIT fold of
   ``run.py`` (the least code that yields what a batch row writes: the reply);
2. **engine**: 100 ``TurnEngine`` turns in flight in this process (the resilient handler, the
   batch's token counter), no batch layer at all: the most ``rxturn batch run`` could reach;
3. **rxturn 1 worker**: ``rxturn batch run --concurrency 100`` on the same rows (every row a
   full turn with the resilient handler, written to the output and fsynced in groups); its
   rows/s and CPU per row are the steady state: a run of 200 rows is subtracted from the full
   run (rows, the seconds of their summary lines, CPU), so what every run pays once (start-up,
   the first turn's imports and set-up, the scan) is left out, as the in-process loops leave
   out their warm-up;
4. **rxturn --workers 2**: the same with two worker processes;
5. **peak RSS** of ``rxturn batch run`` on a 10^6-line input (written to a temporary file),
   stopped with SIGTERM after a few seconds of running, beside the same on 10^4 lines: the
   difference is what a million keys cost; the rows in flight cost the same in both; and of
   the resume of a finished 10^6-row run (its output written here, each line a copy of a real
   one with the row's id and ``input_sha``): what reading a million output lines back costs.

Beside rows/s (wall clock, which moves with whatever else the machine runs), each contender's
**CPU per row**: this process's CPU time for the in-process loops; for ``rxturn batch run``,
the CPU of the command and its worker processes (``wait4``), as the difference above; and the
server's CPU per request over each contender's run (from ``/proc``). CPU per row is the
steadier measure on a shared machine, and ``1e6 / CPU µs per row`` is the rows/s one free core
would give.

The target: rxturn 1 worker at least 0.7x the bare loop's rows/s (printed PASS/MISS against
both floors; a benchmark informs, it does not gate). ``--workers 2`` is judged against one
worker: it scales when it gives at least 1.2x.
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
from urllib.parse import urlsplit

import aiohttp
from _limit import LimitAnthropic
from _servers import FakeServerProcess

from rxturn.batch._input import input_sha
from rxturn.batch._runner import CharCounter
from rxturn.clients._factory import client_for
from rxturn.engine import TurnEngine
from rxturn.engine.handler import StreamHandler
from rxturn.engine.records._results import Session
from rxturn.messages import Message
from rxturn.transport.aiohttp import AiohttpTransport

TARGET = 0.7
SCALES = 1.2
#: rows of the short run whose cost ``rxturn_run`` subtracts
WARM = 200
CONCURRENCY = 100
_TEXT = ("lorem ipsum dolor sit amet " * 20)[:400]
SCENARIO = {"models": {"*": [{"text": _TEXT, "chunk_chars": 20}]}}
_SCRIPT = shutil.which("rxturn", path=str(Path(sys.executable).parent))
RXTURN = [_SCRIPT] if _SCRIPT else [sys.executable, "-m", "rxturn"]
#: bytes one read of :func:`raw_loop` asks for
SLICE = 64 * 1024
_SUMMARY = re.compile(r"(\d+) rows: (\d+) ok.* in ([0-9.]+)s")


def server_cpu(pid: int) -> float:
    """CPU seconds (user + system) the process ``pid`` has used so far."""
    with open(f"/proc/{pid}/stat") as file:
        fields = file.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def bare_loop(url: str, rows: int, fold: bool = False) -> tuple[float, float]:
    """Rows/s of a plain aiohttp client (POST, read the whole stream, ``CONCURRENCY`` at once;
    ``fold``: into its reply, with LIMIT) and its CPU µs per row."""
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
            if fold:
                folder = LimitAnthropic()
                async for chunk in r.content.iter_any():
                    folder.feed(chunk)
                assert folder.message().text == _TEXT
            else:
                async for _ in r.content.iter_any():
                    pass
            assert r.status == 200

    async with aiohttp.ClientSession(connector=connector) as session:
        cpu, started = time.process_time(), time.perf_counter()
        await asyncio.gather(*(one(session, i) for i in range(rows)))
        wall = time.perf_counter() - started
        return rows / wall, (time.process_time() - cpu) / rows * 1e6


async def raw_loop(url: str, rows: int) -> tuple[float, float]:
    """Rows/s and CPU µs per row of the same exchange with no HTTP client at all: one
    keep-alive connection per place over asyncio streams, the request written by hand and the
    chunked response read until its last chunk. Not a client (no parser, no checks): the floor
    under every asyncio client on this machine, to show what aiohttp's own request costs."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80

    async def worker(numbers: range) -> None:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            for i in numbers:
                body = json.dumps(
                    {
                        "model": "m",
                        "max_tokens": 256,
                        "stream": True,
                        "messages": [{"role": "user", "content": f"question number {i}"}],
                    }
                ).encode()
                head = (
                    f"POST /v1/messages HTTP/1.1\r\nHost: {parts.netloc}\r\n"
                    "x-api-key: bench\r\nanthropic-version: 2023-06-01\r\n"
                    f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
                )
                writer.write(head.encode() + body)
                received = await reader.readuntil(b"\r\n\r\n")
                assert received.startswith(b"HTTP/1.1 200") and b"chunked" in received.lower()
                received = b""
                while not received.endswith(b"\r\n0\r\n\r\n"):  # (SSE data ends in LF LF)
                    chunk = await reader.read(SLICE)
                    if not chunk:
                        raise ConnectionError("the server closed the connection mid-body")
                    received += chunk
        finally:
            writer.close()

    await asyncio.gather(
        *(worker(range(k, 2 * CONCURRENCY, CONCURRENCY)) for k in range(CONCURRENCY))
    )
    cpu, started = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker(range(k, rows, CONCURRENCY)) for k in range(CONCURRENCY)))
    wall = time.perf_counter() - started
    return rows / wall, (time.process_time() - cpu) / rows * 1e6


async def engine_loop(url: str, rows: int) -> tuple[float, float]:
    """Rows/s and CPU µs per row of ``CONCURRENCY`` ``TurnEngine`` loops, each a fresh
    one-message history per turn: the turn a batch row is, without the batch layer."""
    transport = AiohttpTransport(limit=CONCURRENCY)
    client = client_for("anthropic", "m", None, base_url=url, transport=transport)
    counter = CharCounter()
    engines = [
        TurnEngine(client, handler=StreamHandler(), counter=counter) for _ in range(CONCURRENCY)
    ]

    async def loop(engine: TurnEngine, numbers: range) -> None:
        for i in numbers:
            engine.session = Session((Message.user(f"question number {i}"),))
            await engine.turn()

    try:
        await asyncio.gather(*(loop(engine, range(2)) for engine in engines))  # warm up
        cpu, started = time.process_time(), time.perf_counter()
        await asyncio.gather(
            *(loop(engine, range(k, rows, CONCURRENCY)) for k, engine in enumerate(engines))
        )
        wall = time.perf_counter() - started
        return rows / wall, (time.process_time() - cpu) / rows * 1e6
    finally:
        await client.aclose()
        await transport.aclose()


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


def _run_cli(command: list[str]) -> tuple[str, int, float, float]:
    """Run ``command``; its stderr, exit code, wall seconds from start to exit, and CPU
    seconds (with its children's)."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    with tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read().decode("utf-8", "replace")
    return text, process.returncode, wall, usage.ru_utime + usage.ru_stime


def _timed_run(command: list[str]) -> tuple[int, float, float]:
    """Run ``rxturn batch run``: rows done, wall seconds of the process, CPU seconds. (The
    summary line's own seconds are rounded to a tenth: 5-10 % of a few thousand rows' run.)"""
    stderr, code, wall, cpu = _run_cli(command)
    match = _SUMMARY.search(stderr)
    if code != 0 or match is None:
        raise RuntimeError(f"rxturn batch run failed ({code}): {stderr[-500:]}")
    return int(match.group(2)), wall, cpu


def rxturn_run(url: str, inputs: tuple[Path, Path], out: Path, *extra: str) -> tuple[float, float]:
    """Steady-state rows/s and CPU µs per row of ``rxturn batch run``: a short run (``inputs[0]``,
    :data:`WARM` rows) and the full one (``inputs[1]``), each on a fresh output; the difference
    between the two is what the extra rows cost, without what every run pays once (start-up,
    the imports and set-up of its first turn, the scan)."""
    rows_a, seconds_a, cpu_a = _timed_run(
        _command(url, inputs[0], out.with_suffix(".warm"), *extra)
    )
    rows_b, seconds_b, cpu_b = _timed_run(_command(url, inputs[1], out, *extra))
    rows = rows_b - rows_a
    return rows / max(seconds_b - seconds_a, 1e-9), max(cpu_b - cpu_a, 0.0) / rows * 1e6


def peak_rss_mb(url: str, inp: Path, out: Path, seconds: float) -> float:
    """Peak RSS (MB) of a run stopped by SIGTERM ``seconds`` after it started sending (or of
    the whole run, when it ends sooner)."""
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
    # read while it runs (a run that finishes before ``seconds`` leaves no /proc entry to read
    # once it has exited): the last reading is the peak so far
    peak = 0.0
    stop = time.monotonic() + seconds
    while True:
        reading = _high_water_mb(process.pid)
        if reading is not None:
            peak = reading
        if process.poll() is not None or time.monotonic() >= stop:
            break
        time.sleep(0.05)
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    process.wait(timeout=120)
    if not peak:
        raise RuntimeError(f"process {process.pid} ended before its peak RSS could be read")
    return peak


def write_done_output(inp: Path, rows: int, model_output: Path, out: Path) -> None:
    """An output where every row of ``inp`` (:func:`write_input`'s ``rows``) has its ``ok``
    line: each a copy of ``model_output``'s first line (a real one of these settings) with the
    row's own id and ``input_sha``, and ``model_output``'s manifest: what a finished run leaves."""
    template = json.loads(model_output.read_bytes().split(b"\n", 1)[0])
    shutil.copyfile(
        model_output.with_name(model_output.name + ".manifest.json"),
        out.with_name(out.name + ".manifest.json"),
    )
    with open(inp, "rb") as rows_in, open(out, "w") as file:
        for _, raw in zip(range(rows), rows_in, strict=True):
            row = json.loads(raw)
            template["id"], template["input_sha"] = row["id"], input_sha(row)
            file.write(json.dumps(template, separators=(",", ":")) + "\n")


def resume_rss_mb(command: list[str]) -> float:
    """Peak RSS (MB) of ``command`` run to its end: a resume that finds every row done reads
    the whole output and scans the whole input, and exits. (Spawned without a fork, so its
    ``ru_maxrss`` is its own, not this process's copied at a fork.)"""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    with open(os.devnull, "wb") as null:
        pid = os.posix_spawn(
            command[0] if os.path.isabs(command[0]) else shutil.which(command[0]) or command[0],
            command,
            env,
            file_actions=[
                (os.POSIX_SPAWN_DUP2, null.fileno(), 1),
                (os.POSIX_SPAWN_DUP2, null.fileno(), 2),
            ],
        )
        _, status, usage = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"the resume exited {os.waitstatus_to_exitcode(status)}")
    return usage.ru_maxrss / 1024


def _high_water_mb(pid: int) -> float | None:
    """``VmHWM`` of ``pid``: its peak RSS since it exec'd (``None`` once it has exited).
    (``ru_maxrss`` from ``wait4`` would also count the copy of this process a fork made before
    the exec: inside ``run.py``, whose own RSS is large, that floor hides the command's.)"""
    try:
        with open(f"/proc/{pid}/status") as file:
            for line in file:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def run_phase(rows: int = 5000, rss: bool = True) -> dict[str, Any]:
    """The whole phase; prints its lines and returns its numbers."""
    results: dict[str, Any] = {"rows": rows, "concurrency": CONCURRENCY}
    load = os.getloadavg()[0]
    print(
        f"batch: {os.cpu_count()} CPUs, load average {load:.1f} at start (wall-clock rows/s "
        "move with the machine's other work; CPU per row much less)"
    )
    server = FakeServerProcess(SCENARIO)
    with tempfile.TemporaryDirectory(prefix="rxturn-bench-batch-") as tmp:
        directory = Path(tmp)
        try:
            inp = directory / "in.jsonl"
            write_input(inp, rows)
            short = directory / "short.jsonl"
            write_input(short, WARM)
            inputs = (short, inp)
            asyncio.run(bare_loop(server.url, min(rows, 500)))  # warm the server up
            measured: dict[str, tuple[float, float, float]] = {}

            def measure(name: str, run: Any, requests: int = rows) -> None:
                before = server_cpu(server.pid)
                rate, cpu = run()
                served = server_cpu(server.pid) - before
                measured[name] = (rate, cpu, served / requests * 1e6)

            measure("raw", lambda: asyncio.run(raw_loop(server.url, rows)))
            measure("bare", lambda: asyncio.run(bare_loop(server.url, rows)))
            measure("limit", lambda: asyncio.run(bare_loop(server.url, rows, fold=True)))
            measure("engine", lambda: asyncio.run(engine_loop(server.url, rows)))
            one_run = lambda: rxturn_run(server.url, inputs, directory / "out1.jsonl")  # noqa: E731
            two_run = lambda: rxturn_run(  # noqa: E731
                server.url, inputs, directory / "out2.jsonl", "--workers", "2"
            )
            measure("one", one_run, rows + WARM)
            measure("two", two_run, rows + WARM)
            (bare, bare_cpu, bare_srv), (engine, engine_cpu, engine_srv) = (
                measured["bare"],
                measured["engine"],
            )
            (one, one_cpu, one_srv), (two, two_cpu, two_srv) = measured["one"], measured["two"]
            limit, limit_cpu, limit_srv = measured["limit"]
            ratio, scaling, limit_ratio = one / bare, two / one, one / limit
            verdict = "PASS" if ratio >= TARGET else "MISS"
            limit_verdict = "PASS" if limit_ratio >= TARGET else "MISS"
            scales = "scales" if scaling >= SCALES else "does not scale"
            print(
                f"batch: {'contender':<34} {'rows/s':>8} {'':>13} {'CPU µs/row':>10} {'server':>7}"
            )
            engine_note = f"{engine / bare:.2f}x bare"
            raw, raw_cpu, raw_srv = measured["raw"]
            for name, rate, note, cpu, srv in (
                (
                    "raw HTTP/1.1, no client (floor)",
                    raw,
                    f"{raw / bare:.2f}x bare",
                    raw_cpu,
                    raw_srv,
                ),
                ("bare aiohttp loop", bare, "", bare_cpu, bare_srv),
                ("bare aiohttp loop + LIMIT fold", limit, "", limit_cpu, limit_srv),
                ("TurnEngine loop (no batch layer)", engine, engine_note, engine_cpu, engine_srv),
                ("rxturn batch run (1 worker)", one, f"{ratio:.2f}x bare", one_cpu, one_srv),
                ("rxturn batch run --workers 2", two, f"{scaling:.2f}x one", two_cpu, two_srv),
            ):
                print(f"batch: {name:<34} {rate:8.0f} {note:>13} {cpu:10.0f} {srv:7.0f}")
            print(
                f"batch: target >= {TARGET}x bare: {verdict} ({ratio:.2f}x rows/s); bare's CPU per "
                f"row is {bare_cpu / one_cpu:.2f}x rxturn's, {bare_cpu / engine_cpu:.2f}x the "
                "TurnEngine loop's"
            )
            print(
                f"batch: target >= {TARGET}x bare + LIMIT: {limit_verdict} ({limit_ratio:.2f}x "
                f"rows/s); its CPU per row is {limit_cpu / one_cpu:.2f}x rxturn's"
            )
            print(
                f"batch: --workers 2 vs 1 worker: {scaling:.2f}x, {scales} (>= {SCALES}x); "
                f"2 workers spend {two_cpu - one_cpu:+.0f} µs CPU/row more (the parent's relay)"
            )
            results.update(
                raw_rows_per_s=raw,
                raw_cpu_us_per_row=raw_cpu,
                bare_rows_per_s=bare,
                engine_rows_per_s=engine,
                rxturn_rows_per_s=one,
                workers2_rows_per_s=two,
                bare_cpu_us_per_row=bare_cpu,
                limit_rows_per_s=limit,
                limit_cpu_us_per_row=limit_cpu,
                limit_ratio=limit_ratio,
                limit_verdict=limit_verdict,
                engine_cpu_us_per_row=engine_cpu,
                rxturn_cpu_us_per_row=one_cpu,
                workers2_cpu_us_per_row=two_cpu,
                server_cpu_us_per_row=bare_srv,
                ratio=ratio,
                verdict=verdict,
                workers2_scaling=scaling,
                workers2_verdict=scales,
                load_average=load,
            )
            if rss:
                small, big = directory / "small.jsonl", directory / "big.jsonl"
                write_input(small, 10_000)
                write_input(big, 1_000_000)
                rss_small = peak_rss_mb(server.url, small, directory / "o-small.jsonl", 3.0)
                rss_big = peak_rss_mb(server.url, big, directory / "o-big.jsonl", 3.0)
                done = directory / "o-done.jsonl"
                write_done_output(big, 1_000_000, directory / "o-small.jsonl", done)
                rss_resume = resume_rss_mb(_command(server.url, big, done))
                print(f"batch: peak RSS, 10^4-line input    {rss_small:8.0f} MB")
                print(f"batch: peak RSS, 10^6-line input    {rss_big:8.0f} MB")
                print(f"batch: peak RSS, resuming 10^6 done {rss_resume:8.0f} MB")
                results.update(
                    peak_rss_mb_10k=rss_small,
                    peak_rss_mb_1m=rss_big,
                    peak_rss_mb_resume_1m=rss_resume,
                )
        finally:
            server.close()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--no-rss", action="store_true", help="skip the 10^6-line memory run")
    parser.add_argument("--json", type=Path, help="also write the phase's numbers to this file")
    args = parser.parse_args(argv)
    results = run_phase(args.rows, rss=not args.no_rss)
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
