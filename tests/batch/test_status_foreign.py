"""``batch status`` / ``batch export`` of a path that is no batch output: a file no run wrote
(no manifest beside it) is refused with the words and exit code ``batch run`` uses for it,
never read as an output with a torn tail; a directory, a named pipe and a file that cannot be
read are one line each too. Both stay read-only: nothing is written, cut or created."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ._support import cli, prompts, write_rows

pytestmark = pytest.mark.slow  # the rxturn command as a subprocess

FOREIGN = {
    "text-without-newline": b"a note without a final newline",
    "text-with-newline": b"a note\n",
    "binary": bytes(range(256)) * 4,
    "zeros": b"\x00" * 64,
    "json-document": b'{"name": "my config", "keep": true}',
    "json-line": b'{"id": "r0", "prompt": "an input line, not an output line"}\n',
}


def _commands(out: Path, inp: Path) -> list[list[str]]:
    return [
        ["batch", "status", str(out)],
        ["batch", "status", str(out), "--json"],
        ["batch", "status", str(out), "--input", str(inp)],
        ["batch", "export", str(out), "--input", str(inp)],
    ]


def _beside(out: Path) -> list[str]:
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(out.name))


@pytest.mark.parametrize("content", list(FOREIGN.values()), ids=list(FOREIGN))
def test_a_file_no_run_wrote_is_not_a_batch_output(tmp_path: Path, content: bytes) -> None:
    inp = write_rows(tmp_path / "in.jsonl", prompts(2))
    out = tmp_path / "notes.txt"
    out.write_bytes(content)
    refused = cli(
        "batch", "run", str(inp), "-o", str(out), "--provider", "openai", "--model", "m",
        "--base-url", "http://127.0.0.1:1", "--progress", "none",
    )  # fmt: skip
    assert refused.returncode == 2, refused.stderr
    files = _beside(out)  # the output, and the lock file run leaves (empty, unlocked)
    for command in _commands(out, inp):
        done = cli(*command)
        assert done.returncode == refused.returncode, (command, done.stdout, done.stderr)
        assert done.stdout == ""
        assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
        # the words of run's refusal, but for its hint: a reader has no --force to offer
        said = "so no batch run wrote it; "
        assert refused.stderr.split(said)[1] == "use another output, or --force to adopt it\n"
        assert done.stderr.split(said)[0] == refused.stderr.split(said)[0], command
        assert done.stderr.split(said)[1] == "`batch run --force` would adopt it as an output\n"
        assert out.read_bytes() == content
        assert _beside(out) == files  # no manifest made, nothing else


def test_an_empty_file_is_an_output_with_no_lines(tmp_path: Path) -> None:
    """A run takes an empty file as a new output: status counts nothing in it, and leaves it."""
    inp = write_rows(tmp_path / "in.jsonl", prompts(2))
    out = tmp_path / "out.jsonl"
    out.write_bytes(b"")
    done = cli("batch", "status", str(out), "--input", str(inp), "--json")
    assert done.returncode == 0, done.stderr
    assert done.stdout == '{"ok":0,"error":0,"pending":2,"total":2}\n'
    assert out.read_bytes() == b""
    assert _beside(out) == ["out.jsonl"]


def test_a_directory_and_a_named_pipe_are_one_line_each(tmp_path: Path) -> None:
    inp = write_rows(tmp_path / "in.jsonl", prompts(2))
    directory = tmp_path / "a-dir"
    directory.mkdir()
    fifo = tmp_path / "a-fifo"
    os.mkfifo(fifo)
    for path, words in ((directory, "is a directory"), (fifo, "is a named pipe")):
        for command in _commands(path, inp):
            done = cli(*command)  # a pipe is never opened (that would wait for a writer)
            assert done.returncode == 2, (command, done.stderr)
            assert words in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_a_file_that_cannot_be_read_is_one_line_exit_1(tmp_path: Path) -> None:
    """``/proc/self/mem`` is a regular file of size 0 whose read fails (EIO), even for root,
    for whom no permission bit makes a file unreadable."""
    inp = write_rows(tmp_path / "in.jsonl", prompts(2))
    for command in _commands(Path("/proc/self/mem"), inp):
        done = cli(*command)
        assert done.returncode == 1, (command, done.stderr)
        assert "cannot read '/proc/self/mem'" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr and "internal error" not in done.stderr
        assert done.stderr.count("\n") == 1, done.stderr
