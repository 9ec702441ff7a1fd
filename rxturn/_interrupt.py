"""The command line's Ctrl-C/SIGTERM handler, :func:`interrupt`, and the console script's
first one, :data:`EARLY` (installed by :mod:`rxturn._entry`). It imports nothing but
:mod:`signal` and :mod:`sys`.

An interrupt never lands inside an import, nor inside an event loop's own code.
``KeyboardInterrupt`` raised at an arbitrary bytecode of a module's top level leaves the import
half done, and some of that code cannot take it: msgspec builds a decoder's type information
at import time, calling back into Python, and an exception raised in one of those callbacks
crashed the interpreter (SIGSEGV); one raised in importlib's own module-lock callback is
printed as "Exception ignored" and lost. So :func:`interrupt` raises a signal that comes
during an import in the code that started that import, at its first instruction after the
import returns. Likewise asyncio cannot take ``KeyboardInterrupt`` in the middle of its own
callbacks (one raised inside ``gather``'s bookkeeping left ``asyncio.run`` waiting forever for
its tasks to end, and one raised in a task is logged as "Task exception was never
retrieved"): while an event loop runs, the interrupt is raised by a callback of its own,
between two callbacks, and ``asyncio.run`` cancels the tasks (their clean-up runs) before it
passes the interrupt on. One that lands in a weakref callback or a finalizer, where no
exception can pass, is raised again in the code that ran when it was called.
"""

from __future__ import annotations

import signal
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import FrameType
    from typing import Any, TypeAlias

    #: what :func:`signal.signal` takes and gives back
    Handler: TypeAlias = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None

__all__ = ["EARLY", "Early", "give_back", "interrupt", "take_signals", "untraced"]

#: code run by the import system has a frozen file name (``<frozen importlib._bootstrap>``,
#: ``<frozen importlib._bootstrap_external>``, ``<frozen zipimport>``)
_IMPORT_SYSTEM = ("<frozen importlib.", "<frozen zipimport>")


def _importer(frame: FrameType | None) -> FrameType | None:
    """The frame that started the import ``frame`` runs in (the caller of the outermost
    import-system frame); ``None`` when ``frame`` runs in no import."""
    importer = None
    while frame is not None:
        if frame.f_code.co_filename.startswith(_IMPORT_SYSTEM):
            importer = frame.f_back
        frame = frame.f_back
    return importer


def interrupt(signum: int, frame: FrameType | None) -> None:
    """Ctrl-C and SIGTERM as the command line takes them: ``KeyboardInterrupt``, raised where
    the interrupted code can take it, that is outside any import (see the module's text).

    While an asyncio event loop runs in this thread, a callback of that loop raises it, between
    two of its callbacks (a second signal before that callback ran adds nothing). During an
    import, the frame that started it is traced by opcode, and the interrupt is raised there as
    its next instruction runs: tracing is on for the rest of that import only, and never where
    a debugger or profiler already traces (the interrupt is raised at once). One raised in a
    weakref callback or a finalizer is raised again after it (:class:`_Raised`)."""
    loop = _running_loop()
    if loop is not None:
        if _Raised.pending is loop:  # an interrupt is on its way already
            return
        try:
            loop.call_soon_threadsafe(_raise_now)  # wakes the loop up if it waits
        except RuntimeError:  # the loop is closing: no callback of it runs any more
            pass
        else:
            _Raised.pending = loop
            return
    importer = _importer(frame)
    if importer is None or sys.gettrace() is not None:
        raise _raised()
    _hold(importer)


def _running_loop() -> Any:
    """The asyncio event loop running in this thread, if any (asyncio is not imported here)."""
    # (asyncio.events may be half imported: the signal came during that import)
    running = getattr(sys.modules.get("asyncio.events"), "_get_running_loop", None)
    return None if running is None else running()


def _raise_now() -> None:
    """The loop's callback that raises the interrupt (:func:`interrupt`)."""
    _Raised.pending = None
    raise _raised()


def _hold(frame: FrameType) -> None:
    """Raise the interrupt in ``frame`` as its next instruction runs."""
    frame.f_trace_opcodes = True
    frame.f_trace = _raise_here
    sys.settrace(untraced)  # tracing on for this thread; the frames it starts stay untraced


def untraced(frame: FrameType, event: str, arg: object) -> None:
    """The trace function of every frame but the one held (none is traced)."""
    return None


def _raise_here(frame: FrameType, event: str, arg: object) -> None:
    """The held frame's first event (after its import returned): the interrupt held back."""
    sys.settrace(None)
    frame.f_trace = None
    raise _raised()


class _Raised:
    """The interrupt last raised, and the :data:`sys.unraisablehook` found before it.

    Python code that runs inside the interpreter's own machinery (a weakref callback such as
    the one asyncio's set of tasks runs for every task that ends, a ``__del__``, a callback of
    the garbage collector) cannot pass an exception on: one raised there is printed as
    "Exception ignored in: …" and dropped. An interrupt that lands there (a SIGTERM was lost,
    and the command ran on) goes to :data:`sys.unraisablehook`, which raises it again in the
    code that was running when that machinery was called, at its next instruction."""

    last: BaseException | None = None
    hook: Callable[[Any], object] | None = None
    #: the event loop given the callback that raises the interrupt (:func:`interrupt`)
    pending: object = None


def _raised() -> KeyboardInterrupt:
    """A new interrupt, known to :func:`_unraisable`, which is installed from now on."""
    if sys.unraisablehook is not _unraisable:
        _Raised.hook = sys.unraisablehook
        sys.unraisablehook = _unraisable
    raised = KeyboardInterrupt()
    _Raised.last = raised
    return raised


def _unraisable(unraisable: Any) -> None:
    if unraisable.exc_value is _Raised.last and sys.gettrace() is None:
        try:
            running = sys._getframe(1)  # pyright: ignore[reportPrivateUsage] - no other way
        except ValueError:  # called from no Python code: nothing runs on to take it
            running = None
        if running is not None:
            _hold(_importer(running) or running)
            return
    hook = _Raised.hook if _Raised.hook is not None else sys.__unraisablehook__
    hook(unraisable)


class Early:
    """Ctrl-C and SIGTERM until :func:`rxturn.cli.main` takes them: noted before
    :func:`rxturn._entry.main` runs (no ``try`` could catch an exception raised there),
    :func:`interrupt` after."""

    armed = False
    noted = False

    @classmethod
    def handle(cls, signum: int, frame: FrameType | None) -> None:
        if cls.armed:
            interrupt(signum, frame)
        else:
            cls.noted = True


#: the console script's handler until :func:`rxturn.cli.main` takes the signals
EARLY = Early.handle


def take_signals(loop: Any, callback: Callable[[int], object]) -> dict[int, Handler]:
    """Hand Ctrl-C and SIGTERM to ``callback(signum)`` on the event loop ``loop`` (a command that
    stops its own way: a chat turn, the fake server, a batch run), and return the handlers they
    had, for :func:`give_back`.

    A signal is taken only where the command line took it (:func:`interrupt`) or Python's own
    handling is in force, as :func:`rxturn.cli.main` decides: an ignored signal stays ignored
    (SIGINT in a shell's background job: Ctrl-C is the foreground job's) and a handler an
    embedding caller put in place stays its own. Off the main thread nothing is taken."""
    taken: dict[int, Handler] = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        previous = signal.getsignal(signum)
        if previous not in (interrupt, EARLY, signal.SIG_DFL, signal.default_int_handler):
            continue
        try:
            loop.add_signal_handler(signum, callback, signum)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
            break
        taken[signum] = previous
    return taken


def give_back(loop: Any, taken: dict[int, Handler]) -> None:
    """Give the signals :func:`take_signals` took their handlers back (asyncio's own removal
    would leave SIGTERM's default, killed with -15, and Python's Ctrl-C raised anywhere)."""
    for signum, previous in taken.items():
        loop.remove_signal_handler(signum)
        if previous is not None:
            signal.signal(signum, previous)
