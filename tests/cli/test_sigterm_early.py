"""SIGTERM in the first moments of ``rxturn …``, while it still imports: the same exit as a
moment later (130 for ``replay``), never a traceback. Only the start of the interpreter itself
(before any of rxturn runs) is the interpreter's: a SIGTERM then kills the process (-15)."""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

from ._support import RXTURN, TIMEOUT, clean_env, finish

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
            code, out, err = finish(proc)
        err = seen.decode() + err
        assert code == 130, err[-2000:]
        assert out == ""
        assert "Traceback" not in err, err[-2000:]


def test_a_sigterm_right_after_start_never_ends_in_a_traceback() -> None:
    """SIGTERM at moments spread over the first 100 ms: 130 once rxturn is there, -15 while
    the interpreter itself starts (which nothing in rxturn can change); never a traceback nor
    another status. (How far the start has got at a given moment depends on the machine's
    load: that rxturn, once there, takes it is the test above.)"""
    for step in range(25):
        proc = _start()
        time.sleep(step * 0.004)
        proc.send_signal(signal.SIGTERM)
        code, out, err = finish(proc)
        assert code in (130, -signal.SIGTERM), (step, code, err[-2000:])
        assert "Traceback" not in err and out == "", (step, err[-2000:])
        if code == 130:
            assert err == "", err  # ended as Ctrl-C ends it: quietly


#: a traceback frame of rxturn's own handling (its entry point's ``main``, its handlers in
#: rxturn._interrupt, the CLI)
_RXTURN_HANDLING = re.compile(r'_(entry|interrupt)\.py", line \d+, in (?!<module>)|rxturn/cli/')

#: what site prints when a line of a ``.pth`` file failed (any ``Exception``; a Ctrl-C during an
#: import it starts can leave a module half-made and surface as another error there)
_SITE_GAVE_UP = "\nRemainder of file ignored\n"


def test_a_ctrl_c_right_after_start_ends_as_a_sigterm_does() -> None:
    """Ctrl-C has the same handler as SIGTERM from the console script's first line: 130, never
    a traceback, once rxturn is there (before, Python's own handler raised it anywhere in the
    imports). The interpreter's own start stays the interpreter's (-2, or its traceback)."""
    for step in range(25):
        proc = _start()
        time.sleep(0.04 + step * 0.003)  # the interpreter has started: rxturn is importing
        proc.send_signal(signal.SIGINT)
        code, out, err = finish(proc)
        if code != 130:  # still the interpreter's start (its site import: a fatal error, 1)
            assert (
                code == -signal.SIGINT
                or (code == 1 and "Fatal Python error" in err)
                # site cut short in a .pth file (the editable install's finder) says so and
                # goes on without the rest of that file: what follows is the interpreter's
                or _SITE_GAVE_UP in err
            ), (step, code, err[-2000:])
            # ... before rxturn's entry point took the signal: nothing of rxturn's handling
            assert _RXTURN_HANDLING.search(err) is None, err[-2000:]
        else:
            assert err == "" and out == "", (step, err[-2000:])
    # and once the command line imports (argparse is done), surely rxturn's: 130
    proc = _start({**clean_env(), "PYTHONPROFILEIMPORTTIME": "1"})
    try:
        seen = _wait_for_import(proc, "argparse")
        proc.send_signal(signal.SIGINT)
    finally:
        code, out, err = finish(proc)
    assert code == 130, (seen.decode() + err)[-2000:]
    assert out == "" and "Traceback" not in err, err[-2000:]


_DRIVER = """
import signal, sys
from rxturn._entry import interrupt

signal.signal(signal.{sig}, interrupt)
try:
    {importer}
    after = True
except KeyboardInterrupt as exc:
    tb, where = exc.__traceback__, []
    while tb is not None:
        where.append(tb.tb_frame.f_code.co_filename.rpartition("/")[2])
        tb = tb.tb_next
    print(sorted(m for m in sys.modules if m.startswith("held_")),
          [sys.modules[m].done for m in sorted(sys.modules) if m.startswith("held_")],
          [w for w in where if w.startswith(("held_", "<frozen"))])
else:
    print("no interrupt")
"""


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
@pytest.mark.parametrize(
    "importer", ["import held_outer", "import importlib; importlib.import_module('held_outer')"]
)
def test_an_interrupt_during_an_import_is_raised_after_it(
    tmp_path: Any, sig: str, importer: str
) -> None:
    """A signal that comes while a module's top level runs (here: raised by a module that
    another imports) ends the command as the import returns, in the code that started it:
    every module of that import is complete. Before, ``KeyboardInterrupt`` was raised inside
    the module, half imported; in msgspec's decoder set-up that crashed the interpreter."""
    (tmp_path / "held_outer.py").write_text("import held_inner\ndone = True\n")
    (tmp_path / "held_inner.py").write_text(
        "import signal\n"
        f"signal.raise_signal(signal.{sig})\n"
        "total = 0\n"
        "for i in range(100_000):  # a good deal of bytecode after the signal\n"
        "    total += i\n"
        "done = True\n"
    )
    env = clean_env(PYTHONPATH=os.pathsep.join([str(tmp_path), *sys.path]))
    proc = subprocess.run(
        [sys.executable, "-c", _DRIVER.format(sig=sig, importer=importer)],
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    # both modules complete, and no frame of either (nor of the import system) in the traceback
    assert proc.stdout == "['held_inner', 'held_outer'] [True, True] []\n", proc.stderr
