"""The ``rxturn`` console script's entry point (and ``python -m rxturn``'s), which takes
Ctrl-C and SIGTERM first (the handler is :func:`rxturn._interrupt.interrupt`).

A supervisor's SIGTERM ends every command as Ctrl-C does (:func:`rxturn.cli.main`), but
:mod:`rxturn.cli` and the command it runs import a good deal first (argparse, then msgspec,
aiohttp, reactivex …): a SIGTERM during those imports found Python's default action and killed
the process (exit -15, 143 in a shell) where a moment later it exited 130. This module is what
the console script imports, and it imports nothing but :mod:`signal`, :mod:`sys` and the
handler's module: its
handler is in place from the moment ``import rxturn`` is done, before any heavy import. A
signal before :func:`main` is called (the rest of the console script's own line) is noted and
ends the command at once; from :func:`main` on it is Ctrl-C, and a Ctrl-C or SIGTERM during the
imports exits 130 like one during the command, never with a traceback.

Where and how the interrupt is raised (never inside an import, nor inside an event loop's
own code) is :mod:`rxturn._interrupt`'s: the handler lives there so that the command line
imports it without importing this module (which imports the command line).

What stays open is the start of the interpreter itself and ``import rxturn`` (its package is
lazy: a few milliseconds): a signal then is the interpreter's, and kills the process before
any of rxturn runs.
"""

from __future__ import annotations

import signal
import sys

from ._interrupt import EARLY, Early, interrupt, untraced

__all__ = ["EARLY", "interrupt", "main"]

#: Exit status after Ctrl-C or SIGTERM (128 + SIGINT, as a shell reports Ctrl-C).
_INTERRUPTED = 130


def _take(signum: int) -> None:
    """Give ``signum`` to :data:`EARLY` if it has Python's own handling (SIGTERM: killed;
    SIGINT: ``KeyboardInterrupt`` anywhere); an ignored SIGINT (a background job) stays so."""
    try:
        if signal.getsignal(signum) in (signal.SIG_DFL, signal.default_int_handler):
            signal.signal(signum, EARLY)
    except ValueError:  # imported off the main thread: the signal stays the caller's
        pass


_take(signal.SIGTERM)
_take(signal.SIGINT)


def main() -> int:
    """Run the command line with the arguments in ``sys.argv`` (see :func:`rxturn.cli.main`)."""
    Early.armed = True
    try:
        if Early.noted:  # a signal came while the console script started
            raise KeyboardInterrupt
        from .cli import main as command

        return command()
    except KeyboardInterrupt:  # before the command took the signals over
        return _INTERRUPTED
    finally:
        # the process exits with the status just decided: a signal now must neither kill it
        # (-15) nor raise into the interpreter's exit (a traceback)
        try:
            for signum in (signal.SIGTERM, signal.SIGINT):
                if signal.getsignal(signum) is not signal.SIG_IGN:
                    signal.signal(signum, signal.SIG_IGN)
        except ValueError:  # called off the main thread: nothing was installed there
            pass
        if sys.gettrace() is untraced:  # an interrupt still held back by an import is moot
            sys.settrace(None)
