"""``OUT.jsonl.lock``: a run refused before it wrote anything leaves no lock file it made (a
mistyped input name left one beside a missing output); a file that stays is an output's, as
after any run; and removing it never lets two runs hold the lock at once. In-process."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rxturn.batch import BatchConfig, BatchInputError, FileRun
from rxturn.batch import _output as output_module
from rxturn.batch._errors import BatchLockedError
from rxturn.batch._output import OutputLock

CONFIG = BatchConfig(provider="openai", model="m", base_url="http://127.0.0.1:1")


def test_a_refused_first_run_leaves_no_file_but_an_outputs_lock_stays(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    with pytest.raises(BatchInputError, match="cannot read"):
        FileRun(tmp_path / "missing.jsonl", out, CONFIG).prepare()
    assert list(tmp_path.iterdir()) == []
    inp = tmp_path / "in.jsonl"
    inp.write_text('{"id": "a", "prompt": "x"}\n')
    ran = FileRun(inp, out, CONFIG)
    ran.prepare()
    ran.close()
    (tmp_path / "out.jsonl.lock").unlink()  # say, cleaned up by hand
    inp.write_text('{"id": "a", "prompt": "x"}\n{oops\n')
    with pytest.raises(BatchInputError, match="line 2"):
        FileRun(inp, out, CONFIG).prepare()
    assert (tmp_path / "out.jsonl.lock").exists()  # the output's (its manifest exists)


def test_a_lock_file_removed_under_a_waiting_run_is_not_a_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run B opened the lock file just before run A, refused, removed it: B's lock on that
    removed file would let run C take a new one at the same time. B takes the new one."""
    first = OutputLock(tmp_path / "out.jsonl")
    first.acquire()
    stale = os.open(first.path, os.O_RDWR)  # B's open, before the removal
    first.release(remove=True)
    real_open = os.open
    calls: list[int] = []

    def opening(path: object, flags: int, mode: int = 0o777) -> int:
        calls.append(flags)
        return stale if len(calls) == 1 else real_open(path, flags, mode)  # pyright: ignore[reportArgumentType]

    monkeypatch.setattr(output_module.os, "open", opening)
    second = OutputLock(tmp_path / "out.jsonl")
    second.acquire()
    monkeypatch.undo()
    assert len(calls) > 1  # it looked again
    with pytest.raises(BatchLockedError):
        OutputLock(tmp_path / "out.jsonl").acquire()
    second.release()


def test_a_symlink_to_an_output_shares_its_lock_and_manifest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two runs, one through ``latest.jsonl -> out.jsonl``: each took a lock of its own name,
    and both wrote every row into the one file (1,200 lines for 600 rows)."""
    from rxturn.cli import main

    inp = tmp_path / "in.jsonl"
    inp.write_text('{"id": "a", "prompt": "x"}\n')
    out = tmp_path / "out.jsonl"
    link = tmp_path / "latest.jsonl"
    link.symlink_to(out.name)
    first = FileRun(inp, out, CONFIG)
    first.prepare()
    try:
        with pytest.raises(BatchLockedError, match="another run is writing"):
            FileRun(inp, link, CONFIG).prepare()
    finally:
        first.close()
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "in.jsonl",
        "latest.jsonl",
        "out.jsonl",
        "out.jsonl.lock",
        "out.jsonl.manifest.json",
    ]
    assert main(["batch", "status", str(link)]) == 0  # the output's manifest, found
    assert capsys.readouterr().out == "0 rows: 0 ok, 0 error, 0 pending\n"


@pytest.mark.parametrize("made", ["before", "by-the-run"])
def test_a_hard_link_to_an_output_is_the_same_output(tmp_path: Path, made: str) -> None:
    """A second name of the same file has a lock file of its own name: the output file itself
    is locked too, once it exists (made by the first run, or there before it)."""
    inp = tmp_path / "in.jsonl"
    inp.write_text('{"id": "a", "prompt": "x"}\n')
    out = tmp_path / "out.jsonl"
    if made == "before":
        out.touch()
    first = FileRun(inp, out, CONFIG)
    first.prepare()
    try:
        os.link(out, tmp_path / "other.jsonl")
        with pytest.raises(BatchLockedError, match="under another name"):
            FileRun(inp, tmp_path / "other.jsonl", CONFIG).prepare()
    finally:
        first.close()
    second = FileRun(inp, tmp_path / "other.jsonl", CONFIG, force=True)
    second.prepare()  # the first run is over: its locks went with it
    second.close()


@pytest.mark.skipif(not os.path.exists("/proc/locks"), reason="no table of locks to read here")
def test_status_says_when_a_run_is_writing_the_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its counts are then a moment's, and a last line being written is no torn one. Told
    from the kernel's table of locks, never by trying the lock (a run starting at that
    instant would find it taken and refuse)."""
    from rxturn.cli import main

    inp = tmp_path / "in.jsonl"
    inp.write_text('{"id": "a", "prompt": "x"}\n')
    out = tmp_path / "out.jsonl"
    running = FileRun(inp, out, CONFIG)
    running.prepare()
    try:
        out.write_bytes(b'{"id": "a", "status": "ok", "input_sha": "", "run": 1}\n{"id": "b"')
        assert main(["batch", "status", str(out)]) == 0
        assert (
            capsys.readouterr().out == "1 row: 1 ok, 0 error, 0 pending (a run is writing it now)\n"
        )
    finally:
        running.close()
    assert main(["batch", "status", str(out)]) == 0
    assert (
        capsys.readouterr().out
        == "1 row: 1 ok, 0 error, 0 pending (a torn last line of 10 bytes)\n"
    )
