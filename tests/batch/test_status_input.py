"""``batch status`` and ``batch export`` read two files, the output and ``--input``: a bad input
line is named with the input's path (a bare ``line 2: …`` could be the output's), in-process."""

from __future__ import annotations

from pathlib import Path

import pytest

from rxturn.cli import main


@pytest.mark.parametrize("command", ["status", "export"])
def test_a_bad_input_line_names_the_input_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    inp = tmp_path / "in.jsonl"
    inp.write_text('{"id": "a", "prompt": "x"}\n{"id": "a", "prompt": "y"}\n')
    out = tmp_path / "out.jsonl"  # none yet: every row would be pending
    assert main(["batch", command, str(out), "--input", str(inp)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"rxturn batch: error: {str(inp)!r} line 2: duplicate key 'a' (first on line 1)\n"
    )
    assert not out.exists()
