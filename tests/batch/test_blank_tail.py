"""A blank end of an output (an ``echo >> out.jsonl``, an editor's final newline) is no crash's
torn line: it is dropped as one is, but said as what it is, with no claim that a row runs again
(in-process: ``FileRun.prepare`` and ``batch status``, nothing is sent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rxturn.batch import BatchConfig, BatchOutputError, FileRun
from rxturn.batch._output import read_output
from rxturn.cli import main

LINE = b'{"id": "r0", "status": "ok", "input_sha": "", "run": 1}\n'


def _prepared(source: Path, out: Path, notices: list[str], force: bool = False) -> None:
    config = BatchConfig(provider="openai", model="m", base_url="http://127.0.0.1:9")
    run = FileRun(source, out, config, force=force, notice=notices.append)
    try:
        run.prepare()
    finally:
        run.close()


@pytest.mark.parametrize(
    ("tail", "status", "repaired"),
    [
        (b"\n", "1 blank byte at its end", "dropped 1 blank byte at its end"),
        (b" \t\r\n", "4 blank bytes at its end", "dropped 4 blank bytes at its end"),
        (b"  ", "2 blank bytes at its end", "dropped 2 blank bytes at its end"),
        (b"\n\n\n", "3 blank bytes at its end", "dropped 3 blank bytes at its end"),
        (b"\n \r\n\t", "5 blank bytes at its end", "dropped 5 blank bytes at its end"),
        (
            b'{"id": "r1", "st',
            "a torn last line of 16 bytes",
            "dropped a torn last line (16 bytes); its row 'r1' is not in the input",
        ),
        (
            b'{"id":"r0","status":"error","err',
            "a torn last line of 32 bytes",
            "dropped a torn last line (32 bytes); its row 'r0' has an earlier line, which stands",
        ),
        (
            b"{",
            "a torn last line of 1 byte",
            "dropped a torn last line (1 byte)",
        ),
    ],
    ids=[
        "newline",
        "blank-line",
        "spaces",
        "blank-lines",
        "blank-lines-and-spaces",
        "torn",
        "torn-superseding",
        "torn-1-byte",
    ],
)
def test_a_blank_end_is_dropped_and_said_as_blank(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tail: bytes, status: str, repaired: str
) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": "r0", "prompt": "p"}\n')
    out = tmp_path / "out.jsonl"
    out.write_bytes(LINE)
    _prepared(source, out, [], force=True)  # adopted: its manifest written
    out.write_bytes(LINE + tail)
    assert main(["batch", "status", str(out)]) == 0
    assert capsys.readouterr().out == f"1 row: 1 ok, 0 error, 0 pending ({status})\n"
    notices: list[str] = []
    _prepared(source, out, notices, force=True)
    assert notices == [f"repaired {str(out)!r}: {repaired}"]
    assert out.read_bytes() == LINE


def test_blank_lines_before_a_line_are_an_edit_refused_by_the_first(tmp_path: Path) -> None:
    """Blank lines are an end only at the end: with a line after them, no crash made them."""
    out = tmp_path / "out.jsonl"
    out.write_bytes(LINE + b"\n\n" + LINE)
    with pytest.raises(BatchOutputError, match=r"line 2 is not an rxturn batch output line"):
        read_output(out)


def test_a_torn_line_of_a_row_with_no_other_line_says_the_row_runs_again(tmp_path: Path) -> None:
    """The notice names the row whose line was cut short, and what becomes of it: it said
    "its row runs again" of every torn line, also of one whose row keeps an earlier line
    (a re-run's superseding line) or is not in the input, where no row runs."""
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": "r0", "prompt": "p"}\n{"id": "r\\u00e9 \\"1\\"", "prompt": "q"}\n')
    out = tmp_path / "out.jsonl"
    out.write_bytes(LINE)
    _prepared(source, out, [], force=True)
    torn = b'{"id": "r\\u00e9 \\"1\\"", "status": "o'
    out.write_bytes(LINE + torn)
    notices: list[str] = []
    _prepared(source, out, notices)
    said = f"dropped a torn last line ({len(torn)} bytes); its row 'ré \"1\"' runs again"
    assert notices == [f"repaired {str(out)!r}: {said}"]
