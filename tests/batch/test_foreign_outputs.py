"""An existing file named as the output that no run wrote: a one-line JSON document or a line
of text without a final newline looks like a torn last line, which a resume truncates away.
Without a manifest beside it nothing says a run wrote it (a run writes its manifest before its
first line), so it is refused, untouched, unless ``--force`` adopts it."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli._support import RXTURN, TIMEOUT, clean_env, fake_server, received

from ._support import assert_complete, batch_args, prompts, write_rows

pytestmark = pytest.mark.slow  # the rxturn command as a subprocess


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with fake_server({"models": {"m": [{"text": "fine"}]}}, tmp_path_factory.mktemp("fake")) as url:
        yield url


def _run(inp: Path, out: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        batch_args(inp, out, url, *extra),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=clean_env(),
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(
    "content",
    [b'{"name": "my config", "keep": true}', b"a note without a final newline", b"\x00" * 64],
    ids=["json-document", "text", "zeros"],
)
def test_a_file_no_run_wrote_is_refused_untouched(
    server: str, tmp_path: Path, content: bytes
) -> None:
    inp = write_rows(tmp_path / "in.jsonl", prompts(3))
    out = tmp_path / "precious.json"
    out.write_bytes(content)
    before = len(received(server))
    done = _run(inp, out, server)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert "no manifest" in done.stderr and "--force" in done.stderr
    assert out.read_bytes() == content
    assert len(received(server)) == before
    adopted = _run(inp, out, server, "--force")
    assert adopted.returncode == 0, adopted.stderr
    assert f"dropped a torn last line ({len(content)} bytes)" in adopted.stderr
    assert_complete(out, ["r0", "r1", "r2"])


def _limit_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


@pytest.mark.parametrize("ending", [b"", b"\n"], ids=["no-newline", "one-newline-at-the-end"])
def test_a_huge_line_is_never_read_whole(server: str, tmp_path: Path, ending: bytes) -> None:
    """A 1.5 GiB file of one line (sparse: no disk is spent) named as the output, read with 1 GiB
    of memory at most: without a manifest every command refuses it (no run wrote it) without
    reading it; with a run's manifest beside it, status and export read it and say what it is
    (an output line is never longer than a few megabytes)."""
    inp = write_rows(tmp_path / "in.jsonl", prompts(3))
    small = tmp_path / "small.jsonl"
    assert _run(inp, small, server).returncode == 0  # a run's manifest, to put beside it
    out = tmp_path / "big.jsonl"
    with out.open("wb") as file:
        file.truncate(3 << 29)
        file.seek(0, 2)
        file.write(ending)
    readers = (["batch", "status", str(out)], ["batch", "export", str(out), "--input", str(inp)])
    for args in (*readers, batch_args(inp, out, server)[1:], None, *readers):
        if args is None:
            manifest = small.with_name(small.name + ".manifest.json")
            out.with_name(out.name + ".manifest.json").write_bytes(manifest.read_bytes())
            continue
        done = subprocess.run(
            [*RXTURN, *args],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            env=clean_env(),
            stdin=subprocess.DEVNULL,
            preexec_fn=_limit_memory,
        )
        assert "Traceback" not in done.stderr, done.stderr[-1500:]
        assert done.stderr.count("\n") <= 1, done.stderr[-1500:]
        if not out.with_name(out.name + ".manifest.json").exists():
            assert done.returncode == 2 and "no manifest" in done.stderr, done.stderr
        elif ending:
            assert done.returncode == 2 and "longer than 64 MiB" in done.stderr, done.stderr
        else:  # one torn line: nothing whole yet
            assert done.returncode == 0, done.stderr
    assert out.stat().st_size == (3 << 29) + len(ending)
