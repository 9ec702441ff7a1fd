"""Paths that are not plain files: a device or a pipe named as the output, a pipe or a device
named as the input (``<(...)``, ``/dev/stdin``), and ``--input -`` for ``status``/``export``.

An output is the checkpoint, read back before the run and appended to: a device never ends
when read (``/dev/zero``, ``/dev/full``), a terminal or a pipe waits for a writer that never
comes (``/dev/stdout``), so each is refused before anything is touched (not even a lock file
beside it). An input is read twice (the scan, then the run): a pipe can be read once, so it is
copied first, as ``-`` is, with the same bound on a line."""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli._support import RXTURN, TIMEOUT, clean_env, fake_server, received

from ._support import assert_complete, batch_args, cli, prompts, run_batch, write_rows

pytestmark = pytest.mark.slow  # each test runs the rxturn command as a subprocess


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with fake_server({"models": {"m": [{"text": "fine"}]}}, tmp_path_factory.mktemp("fake")) as url:
        yield url


def _one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr
    assert stderr.count("\n") == 1, stderr
    assert stderr.startswith("rxturn batch: error: "), stderr
    return stderr.removeprefix("rxturn batch: error: ").strip()


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.jsonl"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("device", ["/dev/full", "/dev/zero", "/dev/null", "fifo"])
def test_a_device_or_a_pipe_as_the_output_is_refused_before_anything_is_touched(
    server: str, tmp_path: Path, device: str, fifo: Path
) -> None:
    out = fifo if device == "fifo" else Path(device)
    inp = write_rows(tmp_path / "in.jsonl", prompts(3))
    lock = out.with_name(out.name + ".lock")
    had_lock = lock.exists()
    before = len(received(server))
    done = subprocess.run(
        batch_args(inp, out, server),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=clean_env(),
        stdin=subprocess.DEVNULL,
        preexec_fn=_limit_memory,  # reading a device whole would take every byte there is
    )
    assert done.returncode == 2, done.stderr
    assert "not a regular file" in _one_error_line(done.stderr)
    assert len(received(server)) == before
    assert lock.exists() == had_lock


@pytest.mark.parametrize("device", ["/dev/full", "/dev/zero", "fifo"])
def test_status_and_export_of_a_device_or_a_pipe_are_refused(
    tmp_path: Path, device: str, fifo: Path
) -> None:
    out = fifo if device == "fifo" else Path(device)
    inp = write_rows(tmp_path / "in.jsonl", prompts(3))
    for command in (["status", str(out)], ["export", str(out), "--input", str(inp)]):
        done = subprocess.run(
            [*RXTURN, "batch", *command],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            env=clean_env(),
            stdin=subprocess.DEVNULL,
            preexec_fn=_limit_memory,
        )
        assert done.returncode == 2, done.stderr
        assert "not a regular file" in _one_error_line(done.stderr)


def _limit_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def _limit_file_size() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 20, 64 << 20))


def _feed(path: Path, data: bytes) -> threading.Thread:
    """Write ``data`` into the named pipe ``path`` (opening blocks until a reader comes)."""

    def write() -> None:
        with open(path, "wb") as file:
            file.write(data)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def test_a_named_pipe_as_the_input_is_read_once_and_every_row_runs(
    server: str, tmp_path: Path, fifo: Path
) -> None:
    data = write_rows(tmp_path / "rows.jsonl", prompts(7)).read_bytes()
    out = tmp_path / "out.jsonl"
    writer = _feed(fifo, data)
    done = run_batch(fifo, out, server)
    writer.join(TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert_complete(out, [f"r{i}" for i in range(7)])
    assert [p for p in tmp_path.iterdir() if p.name.startswith("rxturn-batch-")] == []


def test_dev_stdin_on_a_pipe_is_read_once_and_every_row_runs(server: str, tmp_path: Path) -> None:
    data = write_rows(tmp_path / "rows.jsonl", prompts(5)).read_bytes()
    out = tmp_path / "out.jsonl"
    done = subprocess.run(
        batch_args(Path("/dev/stdin"), out, server),
        input=data,
        capture_output=True,
        timeout=TIMEOUT,
        env=clean_env(TMPDIR=str(tmp_path)),
    )
    assert done.returncode == 0, done.stderr.decode()
    assert_complete(out, [f"r{i}" for i in range(5)])
    assert [p for p in tmp_path.iterdir() if p.name.startswith("rxturn-batch-")] == []


def test_an_endless_line_on_stdin_is_refused_without_spooling_it_whole(
    server: str, tmp_path: Path
) -> None:
    spool = tmp_path / "spool"
    spool.mkdir()
    with open("/dev/zero", "rb") as zeros:
        done = subprocess.run(
            batch_args(Path("-"), tmp_path / "out.jsonl", server),
            stdin=zeros,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            env=clean_env(TMPDIR=str(spool)),
            preexec_fn=_limit_file_size,  # were it spooled, it would stop at 64 MiB
        )
    assert done.returncode == 2, done.stderr
    assert _one_error_line(done.stderr) == "line 1: longer than 32 MiB (a row is one request)"
    assert list(spool.iterdir()) == []


def test_status_and_export_read_the_input_from_stdin(server: str, tmp_path: Path) -> None:
    inp = write_rows(tmp_path / "in.jsonl", prompts(4))
    out = tmp_path / "out.jsonl"
    write_rows(tmp_path / "half.jsonl", prompts(2))
    assert run_batch(tmp_path / "half.jsonl", out, server).returncode == 0
    status = cli("batch", "status", str(out), "--input", "-", "--json", stdin=inp.read_text())
    assert status.returncode == 0, status.stderr
    assert status.stdout == '{"ok":2,"error":0,"pending":2,"total":4}\n'
    export = cli("batch", "export", str(out), "--input", "-", stdin=inp.read_text())
    assert export.returncode == 0, export.stderr
    assert [line.split('"id":"')[1].split('"')[0] for line in export.stdout.splitlines()] == [
        "r0",
        "r1",
    ]


@pytest.mark.parametrize("progress", ["json", "bar", "none"])
def test_a_closed_stderr_leaves_the_run_and_its_exit_code_alone(
    server: str, tmp_path: Path, progress: str
) -> None:
    """Progress and the summary go to stderr; its reader going away (``2>&1 | head -1``)
    must not change what the run does or the exit code that says how it went."""
    inp = write_rows(tmp_path / "in.jsonl", prompts(30))
    out = tmp_path / "out.jsonl"
    read, write = os.pipe()
    os.close(read)  # nobody reads stderr: the first write to it fails
    try:
        done = subprocess.run(
            [*batch_args(inp, out, server), "--progress", progress],
            stdout=subprocess.DEVNULL,
            stderr=write,
            timeout=TIMEOUT,
            env=clean_env(),
            stdin=subprocess.DEVNULL,
        )
    finally:
        os.close(write)
    assert done.returncode == 0
    assert_complete(out, [f"r{i}" for i in range(30)])


def test_a_closed_stderr_leaves_the_exit_code_of_bad_input_alone(tmp_path: Path) -> None:
    inp = tmp_path / "in.jsonl"
    inp.write_bytes(b"{oops\n")
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(
            batch_args(inp, tmp_path / "out.jsonl", "http://127.0.0.1:9"),
            stdout=subprocess.DEVNULL,
            stderr=write,
            timeout=TIMEOUT,
            env=clean_env(),
            stdin=subprocess.DEVNULL,
        )
    finally:
        os.close(write)
    assert done.returncode == 2
