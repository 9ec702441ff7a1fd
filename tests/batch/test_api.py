"""The Python API: a coroutine over any iterable of rows, and an Observable of row results."""

from __future__ import annotations

import asyncio
import json
import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from reactivex import operators as ops

from rxturn.batch import (
    BatchConfig,
    BatchInputError,
    RowError,
    RowOk,
    RowResult,
    batch_results,
    run_batch,
)
from rxturn.batch._output import Manifest
from rxturn.batch._runner import CharCounter, drive, encode_result
from rxturn.errors import ConfigError
from rxturn.testing import FakeProvider

from ._support import cli, prompts, write_rows

SCENARIO = {
    "models": {
        "m": [{"text": "an answer", "chunk_chars": 3}],
        "bad": [{"status": 404, "error_message": "no such model"}],
    }
}


def _config(url: str, **kwargs: Any) -> BatchConfig:
    return BatchConfig(provider="openai", model="m", base_url=url, **kwargs)


async def test_run_batch_returns_a_summary_and_reports_each_row() -> None:
    rows = prompts(40)
    rows[3]["model"] = "bad"
    seen: list[RowResult] = []
    async with FakeProvider(SCENARIO) as fake:
        summary = await run_batch(rows, _config(fake.openai_base_url), on_result=seen.append)
    assert (summary.total, summary.ok, summary.error, summary.pending) == (40, 39, 1, 0)
    assert summary.exit_code == 3
    assert sorted(r.id for r in seen) == sorted(r["id"] for r in rows)
    failed = [r for r in seen if isinstance(r, RowError)]
    assert [r.id for r in failed] == ["r3"]
    assert failed[0].error.type == "NotFoundError"
    served = [r for r in seen if isinstance(r, RowOk)]
    assert all(r.text == "an answer" for r in served)
    assert summary.output_tokens == sum(r.usage.output_tokens for r in served if r.usage)


async def test_output_lines_have_the_keys_in_the_order_the_output_format_lists() -> None:
    """``id`` first, then ``status``, then the rest in the documented order (docs/batch.md)."""
    rows = prompts(2)
    rows[1]["model"] = "bad"
    seen: list[RowResult] = []
    async with FakeProvider(SCENARIO) as fake:
        await run_batch(rows, _config(fake.openai_base_url), on_result=seen.append)
    lines = {r.id: json.loads(encode_result(r)) for r in seen}
    assert list(lines["r0"]) == [
        "id", "status", "message", "model", "attempts", "rescued", "usage", "billed_usage",
        "input_sha", "run", "cost",
    ]  # fmt: skip
    assert list(lines["r1"]) == [
        "id", "status", "error", "attempts", "billed_usage", "input_sha", "run", "cost",
    ]  # fmt: skip
    assert (lines["r0"]["status"], lines["r1"]["status"]) == ("ok", "error")


@pytest.mark.parametrize("by", ["type", "status"])
async def test_the_observable_composes_with_rx_operators(by: str) -> None:
    """Filtered by the result's type, or by its ``status`` as the output line has it (and as
    ``batch_results``' docstring filters)."""
    rows = prompts(25)
    rows[0]["model"] = "bad"
    async with FakeProvider(SCENARIO) as fake:
        done: asyncio.Future[list[str]] = asyncio.get_running_loop().create_future()
        batch_results(rows, _config(fake.openai_base_url, concurrency=5)).pipe(
            ops.filter(
                (lambda r: isinstance(r, RowOk)) if by == "type" else (lambda r: r.status == "ok")
            ),
            ops.map(lambda r: r.id),
            ops.to_list(),
        ).subscribe(on_next=done.set_result, on_error=done.set_exception)
        ids = await asyncio.wait_for(done, 30)
    assert sorted(ids) == sorted(f"r{i}" for i in range(1, 25))


async def test_disposing_the_observable_cancels_the_rows_in_flight() -> None:
    slow = {"models": {"*": [{"text": "slow", "stall_after_events": 1}]}}
    async with FakeProvider(slow) as fake:
        results: list[RowResult] = []
        subscription = batch_results(prompts(10), _config(fake.openai_base_url)).subscribe(
            results.append
        )
        for _ in range(500):
            if len(fake.requests) == 10:
                break
            await asyncio.sleep(0.01)
        assert len(fake.requests) == 10
        subscription.dispose()
        for _ in range(500):
            if fake.disconnects == 10:
                break
            await asyncio.sleep(0.01)
        assert fake.disconnects == 10  # every stream in flight was closed
    assert results == []


async def test_a_second_subscription_reruns_a_list_and_refuses_a_used_iterator() -> None:
    # cold: each subscription is a run of its own; before, a generator's second run read no
    # row and completed empty, as if it had succeeded
    async with FakeProvider(SCENARIO) as fake:
        config = _config(fake.openai_base_url)
        listed = batch_results(prompts(2), config).pipe(ops.map(lambda r: r.id), ops.to_list())
        for _ in range(2):
            assert sorted(await asyncio.wait_for(listed, 10)) == ["r0", "r1"]
        assert len(fake.requests) == 4
        once = batch_results(iter(prompts(2)), config).pipe(ops.count())
        assert await asyncio.wait_for(once, 10) == 2
        with pytest.raises(ConfigError, match=r"rows is an iterator .*pass a list"):
            await asyncio.wait_for(once, 10)
        assert len(fake.requests) == 6


async def test_an_observer_whose_on_next_raises_hears_that_error_at_once() -> None:
    # before: the error waited in on_error until every row in flight had finished (here, a
    # stalled one: the turn's deadlines, minutes), and the failed observer was handed each of
    # their results meanwhile
    scenario = {
        "models": {"fast": [{"text": "ok"}], "*": [{"text": "slow", "stall_after_events": 1}]}
    }
    rows = prompts(3)
    rows[0]["model"] = "fast"
    async with FakeProvider(scenario) as fake:
        done: asyncio.Future[BaseException] = asyncio.get_running_loop().create_future()
        delivered: list[str] = []

        def on_next(result: RowResult) -> None:
            delivered.append(result.id)
            raise ValueError("the observer's own bug")

        batch_results(rows, _config(fake.openai_base_url)).subscribe(
            on_next, done.set_result, lambda: done.set_result(AssertionError("completed"))
        )
        error = await asyncio.wait_for(done, 10)
        assert isinstance(error, ValueError) and str(error) == "the observer's own bug"
        assert delivered == ["r0"]
        for _ in range(500):  # the stalled rows are let go, their streams closed
            if fake.disconnects == 2:
                break
            await asyncio.sleep(0.01)
        assert fake.disconnects == 2


@pytest.mark.parametrize(
    ("row", "words"),
    [
        ({"id": "b"}, "a row of no known shape"),
        ({"id": "b", "prompt": " "}, "prompt is empty"),
        ({"id": "b", "prompt": "x", "extra": 1}, "unknown field 'extra'"),
        ({"id": "b", "prompt": "x", "options": {"max_tokens": 0}}, "options: "),
        ({"id": "", "prompt": "x"}, "id must not be empty"),
        ({"custom_id": "b", "params": {"messages": []}}, "params.messages"),
    ],
    ids=["no shape", "blank prompt", "unknown field", "bad option", "empty id", "no messages"],
)
async def test_a_bad_row_is_a_typed_error_naming_it(row: dict[str, Any], words: str) -> None:
    """A row of a Python iterable is named ``row N`` as every other error of its rows is (a
    line is a line of an input file), ``line`` holding N."""
    async with FakeProvider(SCENARIO) as fake:
        with pytest.raises(BatchInputError) as caught:
            await run_batch([{"id": "a", "prompt": "x"}, row], _config(fake.base_url))
    assert str(caught.value).startswith(f"row 2: {words}"), str(caught.value)
    assert caught.value.line == 2


async def test_rows_are_read_only_as_fast_as_places_free_up() -> None:
    pulled = 0
    finished = 0
    most_ahead = 0

    def rows() -> Iterator[int]:
        nonlocal pulled, most_ahead
        for i in range(200):
            pulled += 1
            most_ahead = max(most_ahead, pulled - finished)
            yield i

    async def work(_: int) -> None:
        nonlocal finished
        await asyncio.sleep(0)
        finished += 1

    running = await drive(rows(), lambda job: asyncio.ensure_future(work(job)), limit=7)
    await asyncio.gather(*running)
    assert finished == 200
    assert most_ahead <= 7  # never more rows in memory than places


def test_importing_rxturn_batch_loads_neither_ray_nor_pyarrow() -> None:
    code = (
        "import sys, rxturn.batch, rxturn.ray\n"
        "print(','.join(m for m in ('ray', 'pyarrow', 'pandas') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == ""


@pytest.mark.slow  # 150 streams of ten events 100 ms apart
async def test_the_fake_provider_holds_150_streams_at_once() -> None:
    # every reply takes 10 events 100 ms apart: all 150 requests arrive before any finishes
    scenario = {"models": {"*": [{"text": "x" * 40, "chunk_chars": 4, "delay_ms": 100}]}}
    first_done: list[float] = []
    async with FakeProvider(scenario) as fake:
        summary = await run_batch(
            prompts(150),
            _config(fake.openai_base_url, concurrency=150),
            on_result=lambda _: first_done.append(time.monotonic()),
        )
        arrivals = [r.arrived for r in fake.received]
    assert summary.ok == 150
    assert sum(1 for t in arrivals if t < min(first_done)) == 150


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's listen queue")
async def test_the_fake_provider_queues_hundreds_of_connections_at_once() -> None:
    """A batch opens hundreds of connections in one moment. They are made while the server's
    event loop is busy (here: blocked by this test), so the kernel's listen queue holds them
    until it accepts; beyond the queue the kernel drops the handshake and the client waits a
    second for TCP's retransmit. aiohttp's default queue is 128 connections."""
    wanted = 300
    somaxconn = Path("/proc/sys/net/core/somaxconn")
    if somaxconn.exists() and int(somaxconn.read_text()) < wanted:
        pytest.skip("the kernel caps every listen queue below the test's connections")
    async with FakeProvider(SCENARIO) as fake:
        sockets = [socket.socket() for _ in range(wanted)]
        try:
            for sock in sockets:  # the loop runs nothing meanwhile: none is accepted
                sock.setblocking(False)
                sock.connect_ex(("127.0.0.1", fake.port))
            # a loopback handshake the queue takes completes at once; half a second is well
            # under the retransmit that would complete a dropped one
            _, writable, _ = select.select([], sockets, [], 0.5)
            for _ in range(50):
                if len(writable) == wanted:
                    break
                _, writable, _ = select.select([], sockets, [], 0.01)
            connected = sum(
                sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0 for sock in writable
            )
        finally:
            for sock in sockets:
                sock.close()
    assert connected == wanted


@pytest.mark.slow  # subprocesses: the fake server and rxturn batch run
def test_progress_json_has_exactly_the_documented_keys(tmp_path: Path) -> None:
    from cli._support import fake_server

    slow = {"models": {"*": [{"text": "slow reply", "chunk_chars": 2, "delay_ms": 40}]}}
    inp = write_rows(tmp_path / "in.jsonl", prompts(60))
    with fake_server(slow, tmp_path) as url:
        done = cli(
            "batch", "run", str(inp), "-o", str(tmp_path / "out.jsonl"), "--provider", "openai",
            "--model", "m", "--base-url", url, "--concurrency", "10", "--progress", "json",
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    reports = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    assert len(reports) >= 2
    keys = {"done", "total", "ok", "error", "rows_per_s", "tokens_per_s", "waiting_s", "eta_s"}
    assert all(set(report) == keys for report in reports)
    assert reports[-1]["done"] == reports[-1]["total"] == 60
    assert [r["done"] for r in reports] == sorted(r["done"] for r in reports)


@pytest.mark.slow  # subprocesses: the fake server and rxturn batch run
def test_nothing_reaches_a_pipe_unless_asked(tmp_path: Path) -> None:
    from cli._support import fake_server

    inp = write_rows(tmp_path / "in.jsonl", prompts(5))
    with fake_server({"models": {"*": [{"text": "ok"}]}}, tmp_path) as url:
        done = cli(
            "batch", "run", str(inp), "-o", str(tmp_path / "out.jsonl"), "--provider", "openai",
            "--model", "m", "--base-url", url,
        )  # fmt: skip
    assert done.returncode == 0
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1  # the summary line only
    assert done.stderr.startswith("rxturn batch: 5 rows: 5 ok, 0 error, 0 pending")


def test_export_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    inp = write_rows(tmp_path / "in.jsonl", prompts(3000))
    out = tmp_path / "out.jsonl"
    out.write_text(
        "".join(
            json.dumps({"id": f"r{i}", "status": "error", "error": {"type": "X", "message": "m"}})
            + "\n"
            for i in range(3000)
        )
    )
    # a run's manifest beside it (a file no run wrote is refused, not read)
    Manifest(fingerprint="f", provider="openai", model="m").save(out)
    from cli._support import RXTURN, clean_env

    shell = subprocess.run(
        f"{' '.join(RXTURN)} batch export {out} --input {inp} | head -1",
        shell=True,
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(),
    )
    assert shell.stdout.count("\n") == 1
    assert shell.stderr == ""


async def test_no_output_line_holds_the_api_key() -> None:
    from rxturn.batch._runner import encode_result
    from rxturn.testing import assert_no_secret

    secret = "sk-ant-batch-SECRET-0123456789"
    scenario = {"models": {"*": [{"status": 401, "error_message": f"bad key {secret}"}]}}
    seen: list[RowResult] = []
    async with FakeProvider(scenario) as fake:
        config = BatchConfig(provider="anthropic", model="m", base_url=fake.base_url)
        await run_batch(prompts(3), config, api_key=secret, on_result=seen.append)
    assert len(seen) == 3 and all(isinstance(r, RowError) for r in seen)
    for result in seen:
        assert_no_secret(result, secret)
        assert secret.encode() not in encode_result(result)


async def test_each_output_line_carries_the_rows_cost() -> None:
    """A served row's cost is genai-prices' own figure for its usage; a failed row's attempts
    that reported no usage count as unpriced."""
    import genai_prices

    scenario = {
        "models": {
            "claude-sonnet-4-5": [
                {"text": "priced", "usage": {"input_tokens": 1000, "output_tokens": 200}}
            ],
            "gone": [{"status": 404, "error_message": "no such model"}],
        }
    }
    rows: list[dict[str, Any]] = [
        {"id": "a", "prompt": "x"},
        {"id": "b", "prompt": "y", "model": "gone"},
    ]
    seen: list[RowResult] = []
    async with FakeProvider(scenario) as fake:
        config = BatchConfig(
            provider="anthropic", model="claude-sonnet-4-5", base_url=fake.base_url
        )
        await run_batch(rows, config, api_key="k", on_result=seen.append)
    by_id = {r.id: r for r in seen}
    served, failed = by_id["a"], by_id["b"]
    assert isinstance(served, RowOk) and isinstance(failed, RowError)
    assert served.usage is not None and served.cost is not None
    expected = genai_prices.calc_price(
        genai_prices.Usage(
            input_tokens=served.usage.input_tokens, output_tokens=served.usage.output_tokens
        ),
        "claude-sonnet-4-5",
        provider_id="anthropic",
    ).total_price
    assert served.cost.total == expected and served.cost.unpriced_attempts == 0
    line = json.loads(encode_result(served))
    assert line["cost"] == {"total": str(expected), "unpriced_attempts": 0, "currency": "USD"}
    assert failed.cost is not None and failed.cost.unpriced_attempts >= 1


def test_char_counter_counts_four_characters_a_token_and_eight_a_message() -> None:
    from rxturn.messages import Message

    counter = CharCounter()
    messages = [Message.user("a" * 40), Message.assistant("xyz"), Message.user("b" * 9)]
    assert counter.count_messages(messages) == (10 + 8) + (0 + 8) + (2 + 8)
    assert counter.count_messages(iter(messages)) == 36  # any iterable, read once
    assert counter.count_messages([]) == 0
    assert counter.count_message(messages[0]) == 18
    assert counter.count_text("a" * 41) == 10


class _Broken:
    """A user's own client whose every call raises an exception of its own (not rxturn's),
    quoting the key it was given."""

    model = "m"
    base_url = "http://127.0.0.1:9"

    def stream(self, request: object, options: object = None) -> object:
        raise RuntimeError("upstream said no\nfor key sk-ant-api03-" + "k" * 40)

    async def create(self, request: object, options: object = None) -> object:
        raise RuntimeError("upstream said no\nfor key sk-ant-api03-" + "k" * 40)


async def test_a_user_clients_own_exception_is_the_rows_error_line() -> None:
    # A row's failure is its line, never the batch's: a user's client raising its own
    # exception (not an rxturn error) ended the whole run with it, key and newline included.
    results: list[RowResult] = []
    config = BatchConfig(provider="anthropic", model="m", base_url="http://127.0.0.1:9")
    rows = [{"id": "a", "prompt": "hi"}, {"id": "b", "prompt": "hi"}]
    summary = await asyncio.wait_for(
        run_batch(rows, config, on_result=results.append, client=_Broken(), progress=False),  # pyright: ignore[reportArgumentType]
        30,
    )
    assert (summary.ok, summary.error) == (0, 2)
    for result in results:
        assert isinstance(result, RowError)
        assert result.error.type == "RuntimeError"
        assert result.error.message.startswith("upstream said no")
        assert "\n" not in result.error.message and "k" * 40 not in result.error.message
