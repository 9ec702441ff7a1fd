"""What a resume keeps of each key's last output line (``LastLines``): compact, and exactly the
line's status, ``input_sha`` and offset back, whatever the line spells its sha as; and the
manifest's count of runs, which numbers the next run's lines."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import msgspec
import pytest

from rxturn.batch import BatchConfig, BatchOutputError, FileRun
from rxturn.batch._output import LastLines, Manifest, read_output

_SHA = hashlib.sha256(b"a row").hexdigest()


@pytest.mark.parametrize(
    ("status", "sha", "offset"),
    [
        ("ok", _SHA, 0),
        ("error", _SHA, 123_456_789_012),
        ("ok", "", 7),
        ("error", "", 0),
        ("ok", "0" * 64, 1),  # a digest of leading zeros is still 64 digits back
        ("ok", _SHA.upper(), 5),  # other spellings of the same number stay as written
        ("ok", "0x" + _SHA[2:], 5),
        ("ok", _SHA[:-1], 5),
        ("ok", _SHA + "0", 5),
        ("ok", "٣" * 64, 5),  # digits int() would read, and no hex digest holds
        ("ok", " " + _SHA[1:], 5),
        ("error", _SHA, 1 << 50),  # beyond what the packed form holds
    ],
)
def test_a_last_line_comes_back_as_it_was_put(status: str, sha: str, offset: int) -> None:
    last = LastLines()
    last.put("k", status, sha, offset)
    assert last.get("k") == (status, sha, offset)
    assert last["k"] == (status, sha, offset)
    assert "k" in last and list(last) == ["k"] and len(last) == 1
    assert last.ok_count() == (status == "ok")
    assert last.get("other") is None
    with pytest.raises(KeyError):
        last["other"]


def test_the_last_put_wins_and_deleted_keys_go() -> None:
    last = LastLines()
    for i in range(1000):
        last.put(f"k{i}", "ok" if i % 3 else "error", _SHA if i % 2 else "", i * 10)
    last.put("k3", "ok", "", 1)
    for i in range(0, 1000, 2):
        del last[f"k{i}"]
    last.shrink()
    assert len(last) == 500 and "k0" not in last
    assert last.get("k3") == ("ok", "", 1)
    assert last.get("k5") == ("ok", _SHA, 50)
    assert last.ok_count() == sum(1 for i in range(1, 1000, 2) if i % 3 or i == 3)


def test_read_output_keeps_each_keys_last_line_and_its_offset(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    first = json.dumps({"id": "a", "status": "error", "input_sha": _SHA}) + "\n"
    second = json.dumps({"id": "b", "status": "ok", "input_sha": _SHA.upper()}) + "\n"
    third = json.dumps({"id": "a", "status": "ok", "input_sha": _SHA}) + "\n"
    out.write_text(first + second + third)
    state = read_output(out)
    assert state.last.get("a") == ("ok", _SHA, len(first) + len(second))
    assert state.last.get("b") == ("ok", _SHA.upper(), len(first))
    assert state.counts() == (2, 0)


@pytest.mark.parametrize("runs", ["-5", "-1", "1.5", '"2"'])
def test_a_manifest_whose_run_count_no_run_made_is_refused(tmp_path: Path, runs: str) -> None:
    """``run`` counts the runs (1, 2, …): a manifest edited to ``"runs": -5`` is refused, where
    the next run wrote its lines as run -4."""
    out = tmp_path / "out.jsonl"
    Manifest.path_for(out).write_text(
        f'{{"fingerprint": "f", "provider": "anthropic", "model": "m", "runs": {runs}}}'
    )
    with pytest.raises(BatchOutputError, match=r"is not a batch manifest \(.*\$\.runs"):
        Manifest.load(out)
    Manifest.path_for(out).write_text('{"fingerprint": "f", "provider": "p", "model": "m"}')
    assert Manifest.load(out) == Manifest(fingerprint="f", provider="p", model="m", runs=0)


def test_force_rewrites_a_manifest_that_is_no_manifest(tmp_path: Path) -> None:
    """A manifest that is not one (edited, say) was exit 2 with or without ``--force``, and
    the message named no way out but deleting it by hand; ``--force`` rewrites a manifest,
    and adopts an output without one."""
    inp = tmp_path / "in.jsonl"
    inp.write_text('{"id": "a", "prompt": "x"}\n')
    out = tmp_path / "out.jsonl"
    sha = hashlib.sha256(b'{"id":"a","prompt":"x"}').hexdigest()  # (its canonical JSON)
    line = json.dumps({"id": "a", "status": "ok", "input_sha": sha, "run": 1}) + "\n"
    out.write_text(line)
    Manifest.path_for(out).write_text("{bad")
    config = BatchConfig(provider="anthropic", model="m", base_url="http://127.0.0.1:9")
    with pytest.raises(BatchOutputError, match=r"is not a batch manifest \(.*`batch run --force`"):
        FileRun(inp, out, config).prepare()
    run = FileRun(inp, out, config, force=True)
    try:
        run.prepare()
    finally:
        run.close()
    saved = Manifest.load(out)
    # (the line's run 1 was this output's first run: the adopting run is its second)
    assert saved is not None and saved.model == "m" and saved.runs == 2
    assert out.read_text() == line  # the lines kept, the ok row still skipped
    assert run.pending.count(1) == 0


@pytest.mark.parametrize("version", [2, 99])
def test_a_manifest_of_a_newer_format_is_refused_untouched(tmp_path: Path, version: int) -> None:
    """A newer rxturn's manifest was read as this one's and rewritten as version 1 by the next
    run (its fields dropped), and ``status`` counted its output as this one's lines: now each
    refuses it, and only ``--force`` rewrites it."""
    inp = tmp_path / "in.jsonl"
    inp.write_text('{"id": "a", "prompt": "x"}\n')
    out = tmp_path / "out.jsonl"
    out.write_text("")
    config = BatchConfig(provider="anthropic", model="m", base_url="http://127.0.0.1:9")
    written = Manifest(fingerprint="f", provider="anthropic", model="m", runs=1, version=version)
    Manifest.path_for(out).write_bytes(msgspec.json.encode(written))
    before = Manifest.path_for(out).read_bytes()
    with pytest.raises(BatchOutputError, match=rf"newer rxturn \(version {version}; this one"):
        FileRun(inp, out, config).prepare()
    with pytest.raises(BatchOutputError, match=r"newer rxturn"):
        Manifest.load(out)  # (what status and export read)
    assert Manifest.path_for(out).read_bytes() == before
    run = FileRun(inp, out, config, force=True)
    try:
        run.prepare()
    finally:
        run.close()
    saved = Manifest.load(out)
    assert saved is not None and saved.version == 1 and saved.runs == 1


@pytest.mark.parametrize("version", ["0", "-1"])
def test_a_manifest_version_no_run_writes_is_no_manifest(tmp_path: Path, version: str) -> None:
    out = tmp_path / "out.jsonl"
    Manifest.path_for(out).write_text(
        f'{{"fingerprint": "f", "provider": "p", "model": "m", "version": {version}}}'
    )
    with pytest.raises(BatchOutputError, match=r"is not a batch manifest \(.*\$\.version"):
        Manifest.load(out)


def test_a_manifest_that_is_a_named_pipe_is_refused_in_its_own_words(tmp_path: Path) -> None:
    """A manifest path holding a named pipe was refused as the output is ("it is the
    checkpoint, read back and appended to): name a file"), which no flag can do for it."""
    out = tmp_path / "out.jsonl"
    os.mkfifo(Manifest.path_for(out))
    with pytest.raises(BatchOutputError) as caught:
        Manifest.load(out, broken_ok=True)  # (--force cannot rewrite it either)
    assert str(caught.value) == (
        f"the manifest {str(Manifest.path_for(out))!r} is a named pipe, not a regular file (it "
        "is read back, and replaced by each run): remove it"
    )
