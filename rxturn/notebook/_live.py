"""``LiveText``: the streaming text, live, in Jupyter or a terminal, attachable mid-turn.

It follows a :class:`~rxturn.notebook.TurnRecorder` through a listener, so attaching late loses
nothing: the recorder already holds the current attempt's text and the discarded attempts'
tails, and the first render shows them. Text deltas render at most once per ``min_interval``
(a 100k-delta stream must not send 100k display updates to the browser); everything else
(turn start, reset, rescue, end) renders at once. A throttled delta leaves one flush scheduled
on the scheduler, never one timer per delta.

IPython is imported only when a Jupyter sink is created or used.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Callable
from typing import Any, Protocol, TextIO

from reactivex import abc
from reactivex.scheduler.eventloop import AsyncIOScheduler

from .._arguments import shown
from .._validate import positive
from ..errors import ConfigError
from ..operators._scheduling import clock as scheduler_clock
from ._recorder import TurnRecorder
from ._records import Change, Clock, EngineLike, LiveView, check_engine, cut

__all__ = ["DisplaySink", "IPythonSink", "LiveText", "PrintSink"]

_log = logging.getLogger("rxturn.notebook")  # the recorder's logger


class DisplaySink(Protocol):
    """Where a :class:`LiveText` puts its renders."""

    def show(self, view: LiveView) -> None:
        """Display ``view`` (the full current state; called at most once per throttle slot)."""
        ...


class IPythonSink:
    """Shows views as one HTML output, updated in place (``display_id``) in Jupyter.

    Outside a Jupyter kernel (plain ``python``, IPython's terminal, no IPython installed) there
    is no HTML to update in place: it prints like a :class:`PrintSink` instead.
    """

    def __init__(self, *, max_chars: int = 20_000) -> None:
        if not positive(max_chars, integer=True):
            raise ConfigError(
                f"IPythonSink.max_chars must be an int >= 1, got {shown(max_chars, 100)}"
            )
        self._max_chars = max_chars
        self._handle: Any = None
        self._fallback: PrintSink | None = None

    def show(self, view: LiveView) -> None:
        if self._fallback is None and self._handle is None and not _in_kernel():
            self._fallback = PrintSink()
        if self._fallback is not None:
            self._fallback.show(view)
            return
        # IPython leaves display()'s keyword arguments unannotated
        from IPython.display import HTML, display  # pyright: ignore[reportUnknownVariableType]

        content = HTML(view.to_html(max_chars=self._max_chars))
        if self._handle is None:
            self._handle = display(content, display_id=True)
        else:
            self._handle.update(content)


class PrintSink:
    """Terminal fallback: prints new text incrementally, and a marker line at each retraction."""

    def __init__(self, stream: TextIO | None = None) -> None:
        if stream is not None and not callable(getattr(stream, "write", None)):
            raise ConfigError(f"PrintSink.stream must be a text stream, got {shown(stream, 100)}")
        self._stream = stream
        self._seq = -2
        self._retracted = 0
        self._printed = 0
        self._ended = False
        self._model: str | None = None

    def show(self, view: LiveView) -> None:
        out = self._stream or sys.stdout
        if view.seq < 0:
            return  # nothing recorded yet
        if view.seq != self._seq:
            self._seq, self._retracted, self._printed, self._ended = view.seq, 0, 0, False
            self._model = view.model
            out.write(f"\n[{view.headline()}]\n")
        elif self._model is not None and view.model != self._model and view.status == "streaming":
            self._model = view.model  # another model serves on (a hedge won the race)
            out.write(f"\n[{view.headline()}]\n")
        for gone in view.retracted[self._retracted :]:
            out.write(f"\n[attempt {gone.attempt} discarded: {cut(gone.reason, 80)}]\n")
            self._printed = 0
        self._retracted = len(view.retracted)
        if len(view.text) < self._printed:  # replaced (a rescue): show it whole
            out.write("\n")
            self._printed = 0
        out.write(view.text[self._printed :])
        self._printed = len(view.text)
        if view.status == "failed" and not self._ended:
            self._ended = True
            out.write(f"\n[failed: {view.error or 'unknown error'}]")
        out.flush()


def _in_kernel() -> bool:
    """Whether this runs in a Jupyter kernel (an IPython shell with a kernel)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def _default_sink() -> DisplaySink:
    return IPythonSink() if _in_kernel() else PrintSink()


class LiveText:
    """A live view of the streaming text that can attach at any time and catch up.

    Args:
        sink: where renders go (default: in-place HTML in Jupyter, else incremental print).
        min_interval: seconds between two renders caused by text deltas; resets, rescues and
            turn ends render at once. A throttled delta leaves one trailing flush scheduled (at
            most one pending), so the last text always shows.
        scheduler: the clock of the throttle and where the trailing flush runs (default: the
            asyncio loop running at the time, if any; without one the flush waits for the next
            non-text change, e.g. the turn's end).

    Examples:
        >>> import io
        >>> out = io.StringIO()
        >>> rec = TurnRecorder()
        >>> live = LiveText(sink=PrintSink(out), min_interval=0).attach(rec)
        >>> rec.on_turn_start(turn=0, query="hi")
        >>> rec.on_text_delta(turn=0, delta="Hello")
        >>> out.getvalue()
        '\\n[turn 0 · streaming]\\nHello'
    """

    def __init__(
        self,
        *,
        sink: DisplaySink | None = None,
        min_interval: float = 0.1,
        scheduler: abc.SchedulerBase | None = None,
    ) -> None:
        if not positive(min_interval, allow_zero=True):
            raise ConfigError(
                f"LiveText.min_interval must be >= 0 seconds, got {shown(min_interval, 100)}"
            )
        if sink is not None and not callable(getattr(sink, "show", None)):
            raise ConfigError(
                f"LiveText.sink must have a show(view) method, got {shown(sink, 100)}"
            )
        if scheduler is not None and not isinstance(scheduler, abc.SchedulerBase):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(
                f"LiveText.scheduler must be a reactivex scheduler, got {shown(scheduler, 100)}"
            )
        self.sink: DisplaySink = sink if sink is not None else _default_sink()
        self.min_interval = min_interval
        self._scheduler = scheduler
        self._clock: Clock = scheduler_clock(scheduler) if scheduler is not None else time.monotonic
        self._recorder: TurnRecorder | None = None
        self._remove: Callable[[], None] | None = None
        self._last = float("-inf")
        self._dirty = False
        self._timer: abc.DisposableBase | None = None
        #: how many times the sink was called (for the curious, and for tests)
        self.renders = 0

    @property
    def recorder(self) -> TurnRecorder | None:
        """The recorder being followed."""
        return self._recorder

    def attach(self, source: TurnRecorder | EngineLike) -> LiveText:
        """Follow ``source`` and render what it has received so far right away.

        An engine is followed through the :class:`TurnRecorder` among its observers, or a new
        recorder attached to it (which cannot know the text streamed before this call).

        Raises:
            ConfigError: ``source`` is neither a :class:`TurnRecorder` nor an engine.
        """
        if not isinstance(source, TurnRecorder):
            check_engine(
                source, name="LiveText.attach(source)", wanted="a TurnRecorder or a TurnEngine"
            )
        self.detach()
        if isinstance(source, TurnRecorder):
            recorder = source
        else:
            found = [o for o in getattr(source, "observers", ()) if isinstance(o, TurnRecorder)]
            recorder = found[0] if found else TurnRecorder().attach(source)
        self._recorder = recorder
        self._remove = recorder.add_listener(self._changed)
        self.render()
        return self

    def detach(self) -> None:
        """Stop following (what is shown stays shown)."""
        if self._remove is not None:
            self._remove()
            self._remove = None
        self._cancel_flush()
        self._recorder = None

    def render(self) -> None:
        """Show the current state now (no throttle)."""
        if self._recorder is None:
            return
        self._cancel_flush()
        self._dirty = False
        self._last = self._clock()
        self.renders += 1
        self.sink.show(self._recorder.view())

    def _changed(self, change: Change) -> None:
        if change != "text" or self._clock() - self._last >= self.min_interval:
            self.render()
            return
        self._dirty = True
        if self._timer is None:
            self._schedule_flush()

    def _cancel_flush(self) -> None:
        if self._timer is not None:
            self._timer.dispose()
            self._timer = None

    def _schedule_flush(self) -> None:
        scheduler = self._scheduler
        if scheduler is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return
            scheduler = AsyncIOScheduler(loop)

        def flush(_: abc.SchedulerBase, __: Any = None) -> None:
            self._timer = None
            if self._dirty:
                # off the recorder's listener call, so isolated here as it is there: a sink
                # that broke raised into the scheduler (asyncio's "Exception in callback", or
                # out of a virtual-time run, failing the turn it watched)
                try:
                    self.render()
                except Exception:
                    _log.exception("LiveText sink %r raised; ignored", self.sink)

        delay = max(self.min_interval - (self._clock() - self._last), 0.0)
        self._timer = scheduler.schedule_relative(delay, flush)
