"""The ``rxturn`` console script's entry point (and ``python -m rxturn``'s).

A supervisor's SIGTERM ends every command as Ctrl-C does (:func:`rxturn.cli.main`), but
:mod:`rxturn.cli` and the command it runs import a good deal first (argparse, then msgspec,
aiohttp, reactivex …): a SIGTERM during those imports found Python's default action and killed
the process (exit -15, 143 in a shell) where a moment later it exited 130. This module is what
the console script imports, and it imports nothing but :mod:`signal`: its handler is in place
from the moment ``import rxturn`` is done, before any heavy import. A SIGTERM before
:func:`main` is called (the rest of the console script's own line) is noted and ends the
command at once; from :func:`main` on it is Ctrl-C, and a Ctrl-C or SIGTERM during the imports
exits 130 like one during the command, never with a traceback.

What stays open is the start of the interpreter itself and ``import rxturn`` (its package is
lazy: a few milliseconds): a signal then is the interpreter's, and kills the process before
any of rxturn runs.
"""

from __future__ import annotations

import signal

__all__ = ["main"]

#: Exit status after Ctrl-C or SIGTERM (128 + SIGINT, as a shell reports Ctrl-C).
_INTERRUPTED = 130


class _Early:
    """SIGTERM until :func:`rxturn.cli.main` takes it: noted before :func:`main` runs (no
    ``try`` could catch an exception raised there), Ctrl-C (``KeyboardInterrupt``) after."""

    armed = False
    noted = False

    @classmethod
    def handle(cls, signum: int, frame: object) -> None:
        if cls.armed:
            raise KeyboardInterrupt
        cls.noted = True


try:  # noqa: SIM105 - no contextlib: this module imports nothing it can do without
    signal.signal(signal.SIGTERM, _Early.handle)
except ValueError:  # imported off the main thread: the signal stays the caller's
    pass


def main() -> int:
    """Run the command line with the arguments in ``sys.argv`` (see :func:`rxturn.cli.main`)."""
    _Early.armed = True
    try:
        if _Early.noted:  # a SIGTERM came while the console script started
            raise KeyboardInterrupt
        from .cli import main as command

        return command()
    except KeyboardInterrupt:  # before the command took the signals over
        return _INTERRUPTED
    finally:
        # the process exits with the status just decided: a SIGTERM now must neither kill it
        # (-15) nor raise into the interpreter's exit (a traceback)
        try:  # noqa: SIM105 - as above
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        except ValueError:  # called off the main thread: nothing was installed there
            pass
