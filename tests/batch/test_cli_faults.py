"""Every fault class through the real console script, as an outside checker would drive it:
bad input (from a file and from stdin), outputs that cannot be continued or written, signals
during the scan, a closed port, stdout that is full or closed early, and the key that must not
show. Each ends in one stderr line and the exit code docs/batch.md names, never a traceback;
where the input is bad, the fake server receives nothing."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli._support import RXTURN, TIMEOUT, clean_env, closed_port, fake_server, received

from rxturn.batch._output import Manifest

from ._support import assert_complete, batch_args, cli, lines, prompts, run_batch, write_rows

pytestmark = pytest.mark.slow  # each test runs the rxturn command as a subprocess

GOOD = b'{"id": "r0", "prompt": "a"}\n{"id": "r1", "prompt": "b"}\n'


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    scenario = {
        "models": {
            "m": [{"text": "fine"}],
            "refused": [{"status": 400, "error_message": "this row is refused"}],
        }
    }
    with fake_server(scenario, tmp_path_factory.mktemp("fake")) as url:
        yield url


def _one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr
    assert stderr.count("\n") == 1, stderr
    assert stderr.startswith("rxturn batch: error: ")
    return stderr.removeprefix("rxturn batch: error: ").strip()


BAD_INPUTS: dict[str, tuple[bytes, str]] = {
    "not JSON": (GOOD + b"{oops\n", "line 3: not valid JSON"),
    "a key twice in one object": (
        GOOD + b'{"id": "r2", "prompt": "x", "prompt": "y"}\n',
        "line 3: the key 'prompt' appears twice in one object",
    ),
    "a row id twice": (
        GOOD + b'{"custom_id": "r1", "params": {"messages": [{"role": "user", "content": "c"}]}}\n',
        "line 3: duplicate key 'r1' (first on line 2)",
    ),
    "no known shape": (GOOD + b'{"id": "r2", "text": "hi"}\n', "line 3: a row of no known shape"),
    "an empty prompt": (GOOD + b'{"id": "r2", "prompt": "  "}\n', "line 3: prompt is empty"),
    "a byte order mark": (b"\xef\xbb\xbf" + GOOD, "line 1: starts with a UTF-8 byte order mark"),
    "bytes that are not UTF-8": (
        GOOD + b'{"id": "r2", "prompt": "\xff"}\n',
        "line 3: not UTF-8 text (byte 0xff at column 25)",
    ),
    "a torn last input line": (GOOD + b'{"id": "r2", "pro', "line 3: not valid JSON"),
    "blank lines then a bad one": (GOOD + b"\n\n  \n[1]\n", "line 6: expected a JSON object"),
    "an empty file": (b"", "the input has no rows (it is empty, or only blank lines)"),
    "only blank lines": (b"\n \n\t\n", "the input has no rows (it is empty, or only blank lines)"),
}


@pytest.mark.parametrize("stdin", [False, True], ids=["file", "stdin"])
@pytest.mark.parametrize("case", list(BAD_INPUTS), ids=list(BAD_INPUTS))
def test_bad_input_exits_2_with_one_line_and_sends_nothing(
    server: str, tmp_path: Path, case: str, stdin: bool
) -> None:
    data, words = BAD_INPUTS[case]
    inp = tmp_path / "in.jsonl"
    inp.write_bytes(data)
    out = tmp_path / "out.jsonl"
    before = len(received(server))
    done = subprocess.run(
        batch_args(Path("-") if stdin else inp, out, server),
        input=data if stdin else None,
        stdin=None if stdin else subprocess.DEVNULL,
        capture_output=True,
        timeout=TIMEOUT,
        env=clean_env(TMPDIR=str(tmp_path)),
    )
    stderr = done.stderr.decode()
    assert done.returncode == 2, stderr
    assert _one_error_line(stderr).startswith(words)
    assert len(received(server)) == before  # nothing sent
    assert not out.exists() or out.read_bytes() == b""
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("rxturn-batch-")] == []


def test_a_100_mb_line_exits_2_without_reading_it_whole(server: str, tmp_path: Path) -> None:
    inp = tmp_path / "in.jsonl"
    with inp.open("wb") as file:
        file.write(GOOD)
        file.write(b'{"id": "big", "prompt": "' + b"y" * (100 << 20) + b'"}\n')
    before = len(received(server))
    done = subprocess.run(
        [*batch_args(inp, tmp_path / "out.jsonl", server)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=clean_env(),
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2, done.stderr
    assert _one_error_line(done.stderr) == "line 3: longer than 32 MiB (a row is one request)"
    assert len(received(server)) == before


def test_stdin_that_cannot_be_spooled_is_one_line_and_leaves_no_file(
    server: str, tmp_path: Path
) -> None:
    spool = tmp_path / "spool"
    spool.mkdir()
    data = b"".join(json.dumps(r).encode() + b"\n" for r in prompts(2000))
    done = subprocess.run(
        batch_args(Path("-"), tmp_path / "out.jsonl", server),
        input=data,
        capture_output=True,
        timeout=TIMEOUT,
        env=clean_env(TMPDIR=str(spool)),
        preexec_fn=_limit_file_size(10_000),  # the spooled copy cannot grow past 10 kB
    )
    stderr = done.stderr.decode()
    assert done.returncode == 1, stderr
    assert _one_error_line(stderr).startswith("cannot copy stdin to a temporary file in")
    assert list(spool.iterdir()) == []


def _limit_file_size(limit: int) -> Any:
    def apply() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


@pytest.mark.parametrize(
    ("output", "words"),
    [
        ("", "the output '.' names no file"),
        (".", "the output '.' names no file"),
        ("missing/out.jsonl", "the directory 'missing' does not exist"),
        ("in.jsonl/out.jsonl", "the directory 'in.jsonl' is not a directory"),
        ("adir", "'adir' is a directory, not an output file"),
        ("in.jsonl", "the output 'in.jsonl' is the input file: write to another file"),
    ],
)
def test_an_output_path_no_run_can_use_exits_2_and_leaves_the_input_alone(
    server: str, tmp_path: Path, output: str, words: str
) -> None:
    (tmp_path / "adir").mkdir()
    inp = tmp_path / "in.jsonl"
    inp.write_bytes(b'{"id": "only", "prompt": "one row"}\n')
    done = subprocess.run(
        [*batch_args(Path("in.jsonl"), Path(output), server)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=clean_env(),
        stdin=subprocess.DEVNULL,
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert words in _one_error_line(done.stderr)
    assert inp.read_bytes() == b'{"id": "only", "prompt": "one row"}\n'


@pytest.mark.parametrize(
    ("tail", "repaired"),
    [
        (b'{"id": "r3", "status": "ok", "mess', True),  # torn mid-line
        (b"\x00\x00\x00\x00", True),  # a size extended past what was written
        (b"garbage\n", True),  # one line that is not JSON at the end
        (b'{"id": "r3", "prompt": "an input line"}\n', False),  # JSON, but no output line
        (b"garbage\nmore garbage\n", False),  # two: no crash writes that
    ],
)
def test_an_output_with_a_foreign_end_is_repaired_or_refused(
    server: str, tmp_path: Path, tail: bytes, repaired: bool
) -> None:
    inp = write_rows(tmp_path / "in.jsonl", prompts(8))
    out = tmp_path / "out.jsonl"
    assert run_batch(inp, out, server).returncode == 0
    kept = [line for line in out.read_bytes().splitlines(keepends=True) if b'"r3"' not in line]
    out.write_bytes(b"".join(kept) + tail)
    for command in (("status", str(out)), ("export", str(out), "--input", str(inp))):
        shown = cli("batch", *command)
        assert "Traceback" not in shown.stderr
        assert shown.returncode == (0 if repaired else 2), shown.stderr
    before = len(received(server))
    done = run_batch(inp, out, server)
    if repaired:
        assert done.returncode == 0, done.stderr
        assert f"dropped a torn last line ({len(tail)} bytes)" in done.stderr
        assert_complete(out, [f"r{i}" for i in range(8)])
        assert len(received(server)) - before == 1  # r3 alone
    else:
        assert done.returncode == 2
        assert "is not an rxturn batch output line" in _one_error_line(done.stderr)
        assert out.read_bytes().endswith(tail)  # nothing dropped
        assert len(received(server)) == before


def test_a_truncated_output_runs_the_lost_rows_again(server: str, tmp_path: Path) -> None:
    inp = write_rows(tmp_path / "in.jsonl", prompts(20))
    out = tmp_path / "out.jsonl"
    assert run_batch(inp, out, server).returncode == 0
    data = out.read_bytes()
    out.write_bytes(data[: len(data) // 2])  # anywhere, most likely mid-line
    kept = len(data[: len(data) // 2].split(b"\n")) - 1
    before = len(received(server))
    done = run_batch(inp, out, server)
    assert done.returncode == 0, done.stderr
    assert_complete(out, [f"r{i}" for i in range(20)])
    assert len(received(server)) - before == 20 - kept


def test_an_input_edited_between_runs_is_found_by_its_sha(server: str, tmp_path: Path) -> None:
    rows = prompts(6)
    inp = write_rows(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.jsonl"
    assert run_batch(inp, out, server).returncode == 0
    rows[2]["options"] = {"temperature": 0.5}  # same key, same prompt, another request
    write_rows(inp, rows)
    before = len(received(server))
    refused = run_batch(inp, out, server)
    assert refused.returncode == 2
    assert _one_error_line(refused.stderr).startswith("line 3: row 'r2' changed")
    assert len(received(server)) == before
    status = cli("batch", "status", str(out), "--input", str(inp), "--json")
    # its line answers the row as it was: not done (run refuses it, and --force runs it again)
    assert json.loads(status.stdout) == {"ok": 5, "error": 0, "pending": 1, "total": 6}
    assert "row 'r2' of the input changed since its output line was written" in status.stderr


def test_a_sha_respelled_in_the_output_is_a_changed_row(server: str, tmp_path: Path) -> None:
    """The sha of an output line is compared as the text it is: the same digest in capitals (an
    edit) does not pass for the row's own."""
    inp = write_rows(tmp_path / "in.jsonl", prompts(3))
    out = tmp_path / "out.jsonl"
    assert run_batch(inp, out, server).returncode == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    for row in rows:
        if row["id"] == "r1":
            row["input_sha"] = row["input_sha"].upper()
    out.write_text("".join(json.dumps(row) + "\n" for row in rows))
    before = len(received(server))
    refused = run_batch(inp, out, server)
    assert refused.returncode == 2
    assert _one_error_line(refused.stderr).startswith("line 2: row 'r1' changed")
    assert len(received(server)) == before


def test_error_rows_exit_3_and_the_summary_names_the_error(server: str, tmp_path: Path) -> None:
    rows: list[dict[str, Any]] = prompts(6)
    rows[1]["model"] = rows[4]["model"] = "refused"
    inp = write_rows(tmp_path / "in.jsonl", rows)
    done = run_batch(inp, tmp_path / "out.jsonl", server)
    assert done.returncode == 3
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "6 rows: 4 ok, 2 error, 0 pending" in done.stderr
    assert "errors: 2 BadRequestError (first: BadRequestError: " in done.stderr
    assert "this row is refused" in done.stderr
    assert done.stderr.endswith(f"this row is refused; requested {server}/v1/messages)\n")


def test_a_closed_port_is_an_error_line_per_row_and_one_summary_naming_the_url(
    tmp_path: Path,
) -> None:
    inp = write_rows(tmp_path / "in.jsonl", prompts(2))
    url = f"http://127.0.0.1:{closed_port()}"
    done = run_batch(inp, tmp_path / "out.jsonl", url)
    assert done.returncode == 3
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert f"cannot connect to {url}/v1/messages" in done.stderr
    assert {line["status"] for line in lines(tmp_path / "out.jsonl")} == {"error"}


def test_a_wrong_url_path_is_an_error_per_row_not_a_traceback(server: str, tmp_path: Path) -> None:
    inp = write_rows(tmp_path / "in.jsonl", prompts(2))
    secret = "plugh-path-SECRET-0123456789"  # pasted into the path: the summary names the URL
    env = clean_env(ANTHROPIC_API_KEY=secret)
    done = run_batch(inp, tmp_path / "out.jsonl", f"{server}/no/such/api/{secret}", env=env)
    assert done.returncode == 3, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "errors: 2 " in done.stderr
    assert f"; requested {server}/no/such/api/[redacted]/v1/messages)" in done.stderr


def test_a_tpm_below_one_requests_reply_budget_is_said_at_the_start(
    server: str, tmp_path: Path
) -> None:
    """Each request's estimate counts its max_tokens: a --tpm at most that runs one row per
    minute, hours for a big input, said nowhere on a pipe unless said at the start (the
    wording's cases: tests/batch/test_cli_summary.py)."""
    inp = write_rows(tmp_path / "in.jsonl", prompts(1))  # one row: granted at once
    done = run_batch(inp, tmp_path / "out.jsonl", server, "--tpm", "8000")
    assert done.returncode == 0, done.stderr
    notice, summary = done.stderr.splitlines()
    assert notice.startswith("rxturn batch: --tpm 8000 is at most the default max_tokens (8192)")
    assert summary.startswith("rxturn batch: 1 row: 1 ok")


def test_the_api_key_shows_nowhere(tmp_path: Path) -> None:
    secret = "plugh-batch-SECRET-0123456789"  # no known key prefix: only the key itself tells
    scenario = {
        "models": {
            "m": [{"text": "fine"}],
            "echo": [{"status": 401, "error_message": f"invalid x-api-key: {secret}"}],
            "echo-stream": [
                {"text": "part", "error_event_after_events": 1, "error_message": f"bad {secret}"}
            ],
        }
    }
    rows: list[dict[str, Any]] = prompts(6)
    rows[1]["model"] = "echo"
    rows[2]["model"] = "echo-stream"
    inp = write_rows(tmp_path / "in.jsonl", rows)
    with fake_server(scenario, tmp_path) as url:
        for workers in ("1", "2"):
            out = tmp_path / f"out-{workers}.jsonl"
            done = subprocess.run(
                [
                    *batch_args(inp, out, url, "--workers", workers),
                    "--progress",
                    "json",
                ],
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
                env=clean_env(ANTHROPIC_API_KEY=secret),
                stdin=subprocess.DEVNULL,
            )
            assert done.returncode == 3, done.stderr
            assert "[redacted]" in out.read_text()  # the echoes were there, and scrubbed
            for text in (done.stdout, done.stderr, out.read_text()):
                assert secret not in text
            manifest = tmp_path / f"out-{workers}.jsonl.manifest.json"
            assert secret not in manifest.read_text()
            sent = json.loads(_get(url + "/_fake/requests"))
            assert sent  # the key did reach the provider, in the header only


def _get(url: str) -> str:
    import urllib.request

    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_the_scan_exits_130_and_sends_nothing(
    server: str, tmp_path: Path, sig: signal.Signals
) -> None:
    inp = tmp_path / "in.jsonl"
    with inp.open("w") as file:  # a scan long enough to be caught in
        for i in range(400_000):
            file.write(f'{{"id": "r{i}", "prompt": "question {i}"}}\n')
    out = tmp_path / "out.jsonl"
    before = len(received(server))
    proc = subprocess.Popen(
        batch_args(inp, out, server),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(),
        stdin=subprocess.DEVNULL,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    _wait_for_lock(proc)  # set-up has begun: the scan follows
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 130, err
    said = "interrupted; every line written so far is kept: the same command goes on"
    assert err == f"rxturn batch: {said}\n"
    assert len(received(server)) == before
    assert not out.exists() or out.read_bytes() == b""
    # the lock went with the process: the next run gets it
    assert cli("batch", "status", str(out), "--input", str(inp), "--json").returncode == 0


def _wait_for_lock(proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline and proc.poll() is None:
        locks = Path("/proc/locks").read_text().splitlines()
        if any(len(f) > 4 and f[4] == str(proc.pid) for f in (line.split() for line in locks)):
            return
        time.sleep(0.005)
    raise AssertionError("the run never took its lock")


def test_status_and_export_into_a_full_stdout_are_one_line(server: str, tmp_path: Path) -> None:
    inp = write_rows(tmp_path / "in.jsonl", prompts(3))
    out = tmp_path / "out.jsonl"
    assert run_batch(inp, out, server).returncode == 0
    for command in (["status", str(out)], ["export", str(out), "--input", str(inp)]):
        with open("/dev/full", "w") as full:
            done = subprocess.run(
                [*RXTURN, "batch", *command],
                stdout=full,
                stderr=subprocess.PIPE,
                text=True,
                timeout=TIMEOUT,
                env=clean_env(),
            )
        assert done.returncode == 1
        assert _one_error_line(done.stderr) == "cannot write to stdout: No space left on device"


@pytest.mark.parametrize("command", ["status", "export", "run"])
def test_every_command_into_head_ends_quietly(server: str, tmp_path: Path, command: str) -> None:
    inp = write_rows(tmp_path / "in.jsonl", prompts(3000))
    small = write_rows(tmp_path / "small.jsonl", prompts(20))
    out = tmp_path / "out.jsonl"
    out.write_text(
        "".join(
            json.dumps({"id": f"r{i}", "status": "error", "error": {"type": "X", "message": "m"}})
            + "\n"
            for i in range(3000)
        )
    )
    # a run's manifest beside it (a file no run wrote is refused, not read)
    Manifest(fingerprint="f", provider="anthropic", model="m").save(out)
    args = {
        "status": ["status", str(out), "--input", str(inp)],
        "export": ["export", str(out), "--input", str(inp)],
        "run": batch_args(small, tmp_path / "new.jsonl", server)[len(RXTURN) + 1 :],
    }[command]
    for reader in ("head -1", "cat"):
        shell = subprocess.run(
            " ".join([*RXTURN, "batch", *args]) + f" | {reader}; echo exit=${{PIPESTATUS[0]}}",
            shell=True,
            executable="/bin/bash",
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            env=clean_env(),
        )
        assert "Traceback" not in shell.stderr
        code = int(shell.stdout.rsplit("exit=", 1)[1])
        if command == "run":
            assert code == 0 and shell.stdout.startswith("exit=")  # nothing on stdout
            assert shell.stderr.count("\n") == 1  # the summary only
        else:
            assert code in ((0, 141) if reader == "head -1" else (0,))
            assert shell.stderr == ""
            shown = shell.stdout.rsplit("exit=", 1)[0]
            if reader == "head -1":
                assert shown.count("\n") == 1
            elif command == "export":
                assert shown.count("\n") == 3000


@contextlib.contextmanager
def _read_only(directory: Path) -> Iterator[None]:
    """``directory`` cannot be written to: a read-only mount as root, else its mode."""
    mounted = False
    if os.geteuid() == 0:
        done = subprocess.run(
            ["mount", "--bind", "-o", "ro", str(directory), str(directory)],
            capture_output=True,
            check=False,
        )
        if done.returncode == 0:
            subprocess.run(
                ["mount", "-o", "remount,ro,bind", str(directory)], capture_output=True, check=False
            )
            mounted = True
    if not mounted:
        directory.chmod(0o555)
    try:
        probe = directory / ".probe"
        try:
            probe.write_text("x")
        except OSError:
            pass
        else:
            probe.unlink()
            pytest.fail(f"could not make {directory} read-only here (no mount, running as root)")
        yield
    finally:
        if mounted:
            subprocess.run(["umount", str(directory)], capture_output=True, check=False)
        else:
            directory.chmod(0o755)


def test_a_read_only_output_is_one_line_exit_1_and_nothing_is_lost(
    server: str, tmp_path: Path
) -> None:
    inp = write_rows(tmp_path / "in.jsonl", prompts(10))
    place = tmp_path / "place"
    place.mkdir()
    out = place / "out.jsonl"
    # half the rows first, then the place turns read-only
    write_rows(tmp_path / "half.jsonl", prompts(5))
    assert run_batch(tmp_path / "half.jsonl", out, server).returncode == 0
    with contextlib.suppress(OSError):
        (place / "out.jsonl.lock").unlink()  # so even the lock must be created anew
    written = out.read_bytes()
    before = len(received(server))
    with _read_only(place):
        for target in (out, place / "fresh.jsonl"):
            done = run_batch(inp, target, server)
            assert done.returncode == 1, done.stderr
            message = _one_error_line(done.stderr)
            assert message.startswith("cannot create the lock") and (
                "read-only" in message or "permission denied" in message
            )
        assert out.read_bytes() == written
        assert len(received(server)) == before
    done = run_batch(inp, out, server)
    assert done.returncode == 0, done.stderr
    assert_complete(out, [f"r{i}" for i in range(10)])


@pytest.mark.parametrize("flag", ["--model", "--system", "--fallback"])
def test_an_argument_that_is_not_utf8_is_one_line_and_sends_nothing(
    server: str, tmp_path: Path, flag: str
) -> None:
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    inp.write_bytes(GOOD)
    command = [os.fsencode(a) for a in batch_args(inp, out, server)]
    command += [os.fsencode(flag), b"m\xff"]  # bytes that are not UTF-8, as a shell passes them
    before = len(received(server))
    done = subprocess.run(command, capture_output=True, timeout=TIMEOUT, env=clean_env())
    assert done.returncode == 2
    assert done.stderr.decode() == (
        f"rxturn batch: error: {flag} is not valid UTF-8; nothing was sent\n"
    )
    assert len(received(server)) == before
    assert not out.exists()
