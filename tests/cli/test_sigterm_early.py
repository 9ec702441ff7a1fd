"""SIGTERM in the first moments of ``rxturn …``, while it still imports: the same exit as a
moment later (130 for ``replay``), never a traceback. Only the start of the interpreter itself
(before any of rxturn runs) is the interpreter's: a SIGTERM then kills the process (-15)."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time

import pytest

from ._support import RXTURN, TIMEOUT, clean_env

pytestmark = pytest.mark.slow  # each test starts the rxturn command as a subprocess


def _start(env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    # ``replay -`` waits for stdin (kept open): a command that would run until stopped
    return subprocess.Popen(
        [*RXTURN, "replay", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env if env is not None else clean_env(),
    )


def _finish(proc: subprocess.Popen[bytes]) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out.decode(), err.decode()


def _wait_for_import(proc: subprocess.Popen[bytes], module: str) -> bytes:
    """Read the importtime lines on stderr until ``module``'s import is done; what was read."""
    assert proc.stderr is not None
    fd = proc.stderr.fileno()
    seen = b""
    deadline = time.monotonic() + TIMEOUT
    name = module.encode()
    while not any(line.rpartition(b"|")[2].strip() == name for line in seen.splitlines()):
        left = deadline - time.monotonic()
        assert left > 0, f"{module} was never imported: {seen[-2000:]!r}"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            chunk = os.read(fd, 65536)
            assert chunk, f"stderr closed before {module} was imported: {seen[-2000:]!r}"
            seen += chunk
    return seen


def test_a_sigterm_while_the_command_line_imports_exits_130() -> None:
    """``-X importtime`` says on stderr when each import is done: a SIGTERM as argparse (the
    command line's first import) is done lands while the command line is still importing.
    Before, that was Python's default action: killed, exit -15."""
    env = {**clean_env(), "PYTHONPROFILEIMPORTTIME": "1"}
    for _ in range(5):
        proc = _start(env)
        try:
            seen = _wait_for_import(proc, "argparse")
            proc.send_signal(signal.SIGTERM)
        finally:
            code, out, err = _finish(proc)
        err = seen.decode() + err
        assert code == 130, err[-2000:]
        assert out == ""
        assert "Traceback" not in err, err[-2000:]


def test_a_sigterm_right_after_start_never_ends_in_a_traceback() -> None:
    """SIGTERM at moments spread over the first 100 ms: 130 once rxturn is there, -15 while
    the interpreter itself starts (which nothing in rxturn can change); never a traceback nor
    another status."""
    codes: list[int] = []
    for step in range(25):
        proc = _start()
        time.sleep(step * 0.004)
        proc.send_signal(signal.SIGTERM)
        code, out, err = _finish(proc)
        codes.append(code)
        assert code in (130, -signal.SIGTERM), (step, code, err[-2000:])
        assert "Traceback" not in err and out == "", (step, err[-2000:])
        if code == 130:
            assert err == "", err  # ended as Ctrl-C ends it: quietly
    assert codes[-1] == 130  # 100 ms in, rxturn handles it
