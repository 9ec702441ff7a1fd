"""``batch status`` and ``batch export`` read two files, the output and ``--input``: a bad input
line is named with the input's path (a bare ``line 2: …`` could be the output's), in-process."""

from __future__ import annotations

import json
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


def _edited_output(tmp_path: Path) -> tuple[Path, Path]:
    """An output whose rows a and c were answered, then the input's row a was edited."""
    from rxturn.batch._input import input_sha
    from rxturn.batch._output import Manifest

    inp = tmp_path / "in.jsonl"
    old = {"id": "a", "prompt": "the question as it was"}
    out = tmp_path / "out.jsonl"
    out.write_text(
        "".join(
            json.dumps({"id": row["id"], "status": "ok", "input_sha": input_sha(row), "run": 1})
            + "\n"
            for row in (old, {"id": "c", "prompt": "z"})
        )
    )
    Manifest(fingerprint="f", provider="openai", model="m", runs=1).save(out)
    rows = [{"id": "a", "prompt": "the question as it is now"}, {"id": "b", "prompt": "y"}]
    inp.write_text("".join(json.dumps(row) + "\n" for row in [*rows, {"id": "c", "prompt": "z"}]))
    return inp, out


@pytest.mark.parametrize(
    ("args", "stdout"),
    [
        (["status", "--json"], '{"ok":1,"error":0,"pending":2,"total":3}\n'),
        (["status"], "3 rows: 1 ok, 0 error, 2 pending\n"),
    ],
    ids=["json", "text"],
)
def test_a_row_edited_since_its_line_counts_as_pending_and_is_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], stdout: str
) -> None:
    """``batch run`` refuses such a row without --force and runs it again with it: its old
    line answers another question, so status does not count it as done (a script waiting for
    ``pending == 0`` before an export would export that old answer), and says so on stderr
    (the --json object keeps its four keys)."""
    inp, out = _edited_output(tmp_path)
    command, *flags = args
    assert main(["batch", command, str(out), "--input", str(inp), *flags]) == 0
    captured = capsys.readouterr()
    assert captured.out == stdout
    assert captured.err == (
        "rxturn batch: row 'a' of the input changed since its output line was written, counted "
        "as pending; 'rxturn batch run --force' runs it again\n"
    )


def test_export_says_which_lines_answer_an_edited_row_and_how_many_rows_it_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inp, out = _edited_output(tmp_path)
    assert main(["batch", "export", str(out), "--input", str(inp)]) == 0
    captured = capsys.readouterr()
    assert [json.loads(line)["id"] for line in captured.out.splitlines()] == ["a", "c"]
    changed, missing = captured.err.splitlines()
    assert changed.startswith("rxturn batch: row 'a' of the input changed since its output")
    assert "exported as written (it answers the row as it was)" in changed
    assert missing == (  # b: not exported, and said so (fewer lines than rows, else silent)
        f"rxturn batch: 1 row of the input has no line in {str(out)!r} yet, left out (pending: "
        "the same 'rxturn batch run' runs it)"
    )


@pytest.mark.parametrize("command", ["status", "export"])
@pytest.mark.parametrize("text", ["", "\n\n"])
def test_an_input_without_rows_is_refused_as_run_refuses_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, text: str
) -> None:
    """An empty ``--input`` (a pipe whose writer failed, say) was "0 rows: 0 ok, 0 error, 0
    pending" and an empty export, both exit 0, beside an output of answered rows: it is the
    input ``batch run`` refuses, refused here with the same words and exit code."""
    inp, out = _edited_output(tmp_path)
    inp.write_text(text)
    assert main(["batch", command, str(out), "--input", str(inp)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"rxturn batch: error: the input {str(inp)!r} has no rows (it is empty, or only blank "
        "lines)\n"
    )
