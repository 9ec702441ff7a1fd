"""A closed stdout ends every command quietly (exit 141, no traceback), and ``replay -`` reads
the stream from stdin."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from recorded import FIXTURES

from rxturn.testing import load_scenario
from rxturn.testing._emit import ReplyContext, stream_events

from ._support import RXTURN, TIMEOUT, clean_env, fake_server, run

pytestmark = pytest.mark.slow  # each test runs the rxturn command as a subprocess

BASIC = FIXTURES / "anthropic" / "basic_response.sse"
TOOL_USE = FIXTURES / "anthropic" / "tool_use_response.sse"


def _read_a_little_then_close(args: list[str], stdin: str | None = None) -> tuple[int, str]:
    """Run ``rxturn ARGS``, read a little of stdout, close it (what ``| head -c 100`` does)."""
    proc = subprocess.Popen(
        [*RXTURN, *args],
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env(),
    )
    assert proc.stdout is not None and proc.stderr is not None
    if stdin is not None:
        assert proc.stdin is not None
        proc.stdin.write(stdin.encode())
        proc.stdin.close()
    first = os.read(proc.stdout.fileno(), 100)
    assert first, "no output at all"
    proc.stdout.close()
    try:
        err = proc.stderr.read().decode()
        code = proc.wait(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    return code, err


def _big_stream(path: Path) -> Path:
    """A recorded Anthropic stream whose reply is ~1 MB of lines (more than a pipe holds)."""
    text = "".join(f"line {n} of a long reply\n" for n in range(40_000))
    (entry,) = load_scenario({"models": {"*": [{"text": text, "chunk_chars": 4096}]}}).models["*"]
    ctx = ReplyContext(model="m", seq=1, created=0, prompt_words=1, include_usage=False)
    path.write_bytes(b"".join(stream_events(entry, "anthropic", ctx)))
    return path


def test_demo_piped_into_head_ends_quietly() -> None:
    out = subprocess.run(
        ["bash", "-c", 'set -o pipefail; "$@" demo | head -1', "bash", *RXTURN],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=clean_env(),
    )
    assert out.stdout.startswith("rxturn demo — ")
    assert out.stdout.count("\n") == 1
    assert out.returncode == 141  # the demo's status under pipefail: SIGPIPE's, quietly
    assert "Traceback" not in out.stderr and "BrokenPipe" not in out.stderr
    assert "Exception ignored" not in out.stderr


def test_demo_stops_when_its_reader_goes_away() -> None:
    code, err = _read_a_little_then_close(["demo"])
    assert code == 141
    assert "Traceback" not in err and "Exception ignored" not in err


def test_replay_piped_into_head_ends_quietly(tmp_path: Path) -> None:
    big = _big_stream(tmp_path / "big.sse")
    for extra in ((), ("--json",)):
        code, err = _read_a_little_then_close(["replay", str(big), *extra])
        assert code == 141, err
        assert err == ""


def test_chat_piped_into_head_ends_quietly(tmp_path: Path) -> None:
    with fake_server({"models": {"*": [{"text": "a reply"}]}}, tmp_path) as url:
        args = ["chat", "--provider", "anthropic", "--base-url", url, "--model", "m"]
        code, err = _read_a_little_then_close(args, stdin="prompt\n" * 200)
    assert code == 141, err
    assert "Traceback" not in err and "Exception ignored" not in err


@pytest.mark.parametrize("flags", [(), ("--json",)], ids=["text", "json"])
def test_a_one_shot_reply_larger_than_a_pipe_into_head_ends_141(
    tmp_path: Path, flags: tuple[str, ...]
) -> None:
    """A reply written in one piece of more than a pipe holds: the reader goes away mid-write,
    which CPython's buffered writer reports as a short write, not an error (exit 0 before)."""
    text = "".join(f"line {n} of a long reply\n" for n in range(40_000))
    with fake_server({"models": {"*": [{"text": text, "chunk_chars": 400_000}]}}, tmp_path) as url:
        args = ["chat", "--provider", "anthropic", "--base-url", url, "--model", "m", *flags]
        code, err = _read_a_little_then_close([*args, "a prompt"])
    assert code == 141, err
    assert "Traceback" not in err and "Exception ignored" not in err


@pytest.fixture(params=[BASIC, TOOL_USE], ids=lambda p: p.name)
def fixture(request: pytest.FixtureRequest) -> Iterator[Path]:
    yield request.param


@pytest.mark.parametrize("flags", [(), ("--json",)], ids=["text", "json"])
def test_replay_dash_reads_the_stream_from_stdin(fixture: Path, flags: tuple[str, ...]) -> None:
    from_file = run("replay", str(fixture), *flags)
    from_stdin = run("replay", "-", *flags, stdin=fixture.read_text(encoding="utf-8"))
    assert from_file.returncode == from_stdin.returncode == 0
    assert from_stdin.stdout == from_file.stdout
    assert from_stdin.stderr == ""


def test_replay_dash_with_bad_input_is_one_error_line() -> None:
    for stdin in ("", "not a stream at all\n"):
        out = run("replay", "-", stdin=stdin)
        assert out.returncode == 2
        assert out.stdout == ""
        lines = out.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("rxturn replay: error: ")
        assert lines[0].endswith(")")  # where: the line
