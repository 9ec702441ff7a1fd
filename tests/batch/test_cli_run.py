"""``rxturn batch run | status | export`` end to end, against ``rxturn fake-server``."""

from __future__ import annotations

import json
import resource
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli._support import TIMEOUT, clean_env, fake_server, received

from ._support import (
    assert_complete,
    batch_args,
    cli,
    last_by_key,
    lines,
    prompts,
    run_batch,
    write_rows,
)

pytestmark = pytest.mark.slow  # subprocesses: the rxturn command, worker processes

OK_KEYS = {"id", "status", "message", "model", "attempts", "rescued", "usage", "billed_usage"}
OK_KEYS |= {"input_sha", "run", "cost"}
ERROR_KEYS = {"id", "status", "error", "attempts", "billed_usage", "input_sha", "run", "cost"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    scenario = {
        "models": {
            "m": [{"text": "a fine answer"}],
            "other": [{"text": "from the other model"}],
            "bad": [{"status": 400, "error_message": "this row is refused"}],
        }
    }
    with fake_server(scenario, tmp_path_factory.mktemp("fake")) as url:
        yield url


def _count(url: str) -> int:
    return len(received(url))


def test_a_run_writes_one_line_per_row_and_a_rerun_sends_nothing(
    server: str, tmp_path: Path
) -> None:
    inp = write_rows(tmp_path / "in.jsonl", prompts(300))
    out = tmp_path / "out.jsonl"
    before = _count(server)
    done = run_batch(inp, out, server, "--concurrency", "32")
    assert done.returncode == 0, done.stderr
    assert_complete(out, [f"r{i}" for i in range(300)])
    first = lines(out)[0]
    assert set(first) == OK_KEYS
    assert first["message"]["content"] == [{"type": "text", "text": "a fine answer"}]
    assert first["run"] == 1 and first["model"] == "m"
    assert first["usage"]["output_tokens"] > 0
    assert _count(server) - before == 300
    manifest = json.loads((tmp_path / "out.jsonl.manifest.json").read_text())
    assert manifest["runs"] == 1 and manifest["model"] == "m"
    again = run_batch(inp, out, server)
    assert again.returncode == 0, again.stderr
    assert _count(server) - before == 300  # nothing sent again
    assert len(lines(out)) == 300
    status = cli("batch", "status", str(out), "--input", str(inp), "--json")
    assert json.loads(status.stdout) == {"ok": 300, "error": 0, "pending": 0, "total": 300}


def test_the_input_on_stdin_is_spooled(server: str, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    text = "".join(json.dumps(row) + "\n" for row in prompts(20))
    done = subprocess.run(
        batch_args(Path("-"), out, server),
        input=text,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=clean_env(),
    )
    assert done.returncode == 0, done.stderr
    assert_complete(out, [f"r{i}" for i in range(20)])


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        ('{"id": "r2", "prompt": "again"}', "line 5: duplicate key 'r2' (first on line 3)"),
        ("{oops", "line 5: not valid JSON"),
        ('{"id": "z", "text": "hi"}', "line 5: a row of no known shape"),
    ],
)
def test_bad_input_exits_2_naming_the_line_and_sends_nothing(
    server: str, tmp_path: Path, bad: str, words: str
) -> None:
    inp = tmp_path / "in.jsonl"
    inp.write_text(
        '{"id": "r0", "prompt": "a"}\n{"id": "r1", "prompt": "b"}\n{"id": "r2", "prompt": "c"}\n'
        '{"id": "r3", "prompt": "d"}\n' + bad + "\n"
    )
    out = tmp_path / "out.jsonl"
    before = _count(server)
    done = run_batch(inp, out, server)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert words in done.stderr
    assert _count(server) == before
    assert not out.exists() or out.read_text() == ""


def test_refused_rows_are_error_lines_and_retry_errors_appends_a_superseding_line(
    server: str, tmp_path: Path
) -> None:
    rows: list[dict[str, Any]] = prompts(30)
    for row in rows[::10]:
        row["model"] = "bad"
    inp = write_rows(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.jsonl"
    done = run_batch(inp, out, server)
    assert done.returncode == 3, done.stderr
    last = last_by_key(out)
    errors = {key for key, line in last.items() if line["status"] == "error"}
    assert errors == {"r0", "r10", "r20"}
    assert set(last["r0"]) == ERROR_KEYS
    assert last["r0"]["error"]["type"] == "BadRequestError"
    assert "this row is refused" in last["r0"]["error"]["message"]
    assert last["r0"]["attempts"] == 1  # a 400 is not retried
    # a plain re-run leaves the error lines alone
    before = _count(server)
    assert run_batch(inp, out, server).returncode == 3
    assert _count(server) == before
    # --retry-errors sends exactly the three again; their new lines win
    again = run_batch(inp, out, server, "--retry-errors")
    assert again.returncode == 3
    assert _count(server) - before == 3
    assert len(lines(out)) == 33
    assert {line["id"] for line in lines(out)[30:]} == errors
    assert all(line["run"] == 3 for line in lines(out)[30:])
    status = cli("batch", "status", str(out), "--input", str(inp), "--json")
    assert json.loads(status.stdout) == {"ok": 27, "error": 3, "pending": 0, "total": 30}
    exported = [
        json.loads(line)
        for line in cli("batch", "export", str(out), "--input", str(inp)).stdout.splitlines()
    ]
    assert [line["id"] for line in exported] == [row["id"] for row in rows]
    assert exported[0]["run"] == 3


def test_an_edited_row_stops_the_run_unless_forced(server: str, tmp_path: Path) -> None:
    rows = prompts(10)
    inp = write_rows(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.jsonl"
    assert run_batch(inp, out, server).returncode == 0
    rows[4]["prompt"] = "an edited question"
    write_rows(inp, rows)
    before = _count(server)
    refused = run_batch(inp, out, server)
    assert refused.returncode == 2
    assert "line 5: row 'r4' changed" in refused.stderr
    assert _count(server) == before
    forced = run_batch(inp, out, server, "--force")
    assert forced.returncode == 0, forced.stderr
    assert _count(server) - before == 1
    assert received(server)[-1]["messages"][0]["content"] == "an edited question"
    assert lines(out)[-1]["id"] == "r4"


def test_an_output_of_another_models_run_stops_the_run_unless_forced(
    server: str, tmp_path: Path
) -> None:
    inp = write_rows(tmp_path / "in.jsonl", prompts(10))
    out = tmp_path / "out.jsonl"
    assert run_batch(inp, out, server).returncode == 0
    write_rows(inp, prompts(12))
    before = _count(server)
    refused = run_batch(inp, out, server, model="other")
    assert refused.returncode == 2
    assert 'model "m", now "other"' in refused.stderr
    assert _count(server) == before
    forced = run_batch(inp, out, server, "--force", model="other")
    assert forced.returncode == 0
    assert _count(server) - before == 2  # rows with an ok line are still skipped
    manifest = json.loads((tmp_path / "out.jsonl.manifest.json").read_text())
    assert manifest["model"] == "other" and manifest["runs"] == 2


@pytest.mark.parametrize("tail", [b'{"id": "r3", "status": "o', b"garbage\n"])
def test_a_torn_last_line_is_repaired_and_said(server: str, tmp_path: Path, tail: bytes) -> None:
    inp = write_rows(tmp_path / "in.jsonl", prompts(10))
    out = tmp_path / "out.jsonl"
    assert run_batch(inp, out, server).returncode == 0
    kept = [line for line in out.read_bytes().splitlines(keepends=True) if b'"r3"' not in line]
    out.write_bytes(b"".join(kept) + tail)
    done = run_batch(inp, out, server)
    assert done.returncode == 0, done.stderr
    assert f"dropped a torn last line ({len(tail)} bytes)" in done.stderr
    assert_complete(out, [f"r{i}" for i in range(10)])


def test_a_corrupt_line_before_the_end_is_refused(server: str, tmp_path: Path) -> None:
    inp = write_rows(tmp_path / "in.jsonl", prompts(5))
    out = tmp_path / "out.jsonl"
    assert run_batch(inp, out, server).returncode == 0
    data = out.read_bytes().splitlines(keepends=True)
    out.write_bytes(data[0] + b"not a line\n" + b"".join(data[1:]))
    done = run_batch(inp, out, server)
    assert done.returncode == 2
    assert "line 2 is not an rxturn batch output line" in done.stderr


def _limit_file_size(limit: int) -> Any:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_a_full_disk_is_a_clear_error_and_nothing_is_lost(server: str, tmp_path: Path) -> None:
    inp = write_rows(tmp_path / "in.jsonl", prompts(200))
    out = tmp_path / "out.jsonl"
    # one row at a time, so one line per write: the lines finished in one turn of the loop go
    # out in one write, all or none, and on a loaded machine a first turn could finish more
    # rows than 20 kB holds (none kept: nothing here would show the lines before are kept)
    full = subprocess.run(
        batch_args(inp, out, server, "--concurrency", "1"),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=clean_env(),
        stdin=subprocess.DEVNULL,
        preexec_fn=_limit_file_size(20_000),  # the file may not grow past 20 kB
    )
    assert full.returncode == 1
    assert "cannot write" in full.stderr and "Traceback" not in full.stderr
    assert full.stderr.count("error:") == 1
    partial = lines(out)  # only whole lines
    assert 0 < len(partial) < 200
    rest = run_batch(inp, out, server)
    assert rest.returncode == 0, rest.stderr
    assert_complete(out, [f"r{i}" for i in range(200)])


def test_a_missing_key_or_bad_arguments_exit_2(tmp_path: Path) -> None:
    inp = write_rows(tmp_path / "in.jsonl", prompts(1))
    out = str(tmp_path / "out.jsonl")
    no_key = cli("batch", "run", str(inp), "-o", out, "--provider", "anthropic", "--model", "m")
    assert no_key.returncode == 2
    assert "ANTHROPIC_API_KEY is not set" in no_key.stderr
    bad = cli(
        "batch",
        "run",
        str(inp),
        "-o",
        out,
        "--provider",
        "openai",
        "--model",
        "m",
        "--base-url",
        "http://127.0.0.1:1",
        "--concurrency",
        "0",
    )
    assert bad.returncode == 2 and "--concurrency" in bad.stderr
    missing = cli(
        "batch",
        "run",
        str(tmp_path / "nope.jsonl"),
        "-o",
        out,
        "--provider",
        "ollama",
        "--model",
        "m",
    )
    assert missing.returncode == 2 and "cannot read" in missing.stderr
