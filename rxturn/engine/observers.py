"""Observers: callbacks that watch a run without being able to break it.

An observer is any object with some of the methods below; subclass :class:`Observer` to get a
no-op default for every one you leave out. All arguments are passed by keyword, so an observer
may name only what it reads and swallow the rest with ``**_``. The engine calls observers
through an :class:`ObserverSet`: in registration order, each call isolated (an observer that
raises is logged on the ``rxturn.engine.observers`` logger and the others still run; a turn is never
failed by its audience).

===================  ============================================================================
callback             keyword arguments / when it fires
===================  ============================================================================
on_run_start         session_id: str
                     → a run (``engine.run``) begins
on_run_end           success: bool, error: str | None, total_turns: int, duration_ms: float
                     → the run ends, however it ends
on_turn_start        turn: int, query: str
                     → a served turn begins (never a deferred one)
on_text_delta        turn: int, delta: str
                     → every text fragment, failed attempts' too
on_thinking_delta    turn: int, delta: str
                     → every reasoning fragment (``""`` = redacted)
on_attempt_reset     turn: int, reset: AttemptReset
                     → a retry starts: retract the failed attempt's deltas
on_response          turn: int, text: str, usage: Usage | None
                     → the turn's committed reply text
on_stream_success    turn: int, model: str, input_tokens: int, output_tokens: int
                     → the turn was served, by ``model`` (the one that actually served)
on_stream_failure    turn: int, model: str, error: BaseException
                     → the turn failed on ``model`` (never for a cancel)
on_fallback          from_model: str, to_model: str
                     → the breaker tripped and a backup exists
on_model_switched    from_model: str, to_model: str
                     → the serving model changed between turns
on_turn_end          turn: int, success: bool, error: str | None, duration_ms: float,
                     input_tokens: int, output_tokens: int
                     → a turn's LLM phase (or tool phase) ended
on_tool_call         turn: int, call: ToolCallPart
                     → the model asked for a tool
on_tool_result       turn: int, result: ToolResultPart
                     → a tool's result goes back to the model
on_compaction        before_tokens: int, after_tokens: int
                     → the conversation was compacted
on_request           turn: int, turn_id: int, model: str, request: Request,
                     options: RequestOptions, provider: str, base_url: str, stream: bool,
                     estimated_input_tokens: int
                     → the turn's model call begins (after ``on_turn_start``)
on_attempt_start     turn: int, turn_id: int, attempt: int, kind: str, model: str,
                     wait: float, after: str | None, context: contextvars.Context
                     → one request of the turn is about to be sent
on_attempt_end       turn: int, turn_id: int, attempt: int, record: AttemptRecord,
                     error: BaseException | None
                     → that request ended and its outcome is known
on_first_chunk       turn: int, turn_id: int
                     → the turn's first reply content arrived (streaming turns)
on_request_end       turn: int, turn_id: int, record: Turn, message: Message | None,
                     error: BaseException | None
                     → the turn's model call ended, served or failed (before ``on_response``)
===================  ============================================================================

Order for a text-only streaming turn: ``on_turn_start → on_request → on_attempt_start →
on_first_chunk → on_text_delta* → on_attempt_end → on_stream_success → on_request_end →
on_response → on_turn_end``.

The request callbacks (``on_request`` … ``on_request_end``) are what a tracer needs; docs/
observability.md shows the OpenTelemetry observer built on them. ``turn_id`` identifies one turn
across every engine of the process (``turn`` is only its index within its run), so an observer
shared by concurrent engines keys its per-turn state on it. ``attempt`` numbers every request of
the turn from 1 in the order of ``Turn.attempt_log`` (streaming attempts, the rescue, failover
legs); ``kind`` is ``"stream"``, ``"rescue"`` or ``"create"``; ``wait`` is the time, on the
engine's clock, since the previous attempt ended (or since the turn began: a limiter's wait),
and ``after`` the outcome of that previous attempt (``None`` for the first). ``context`` is a
fresh copy of the current :mod:`contextvars` context in which the request is sent: an observer
may set variables in it (``context.run(var.set, value)``) to make them current in the task that
sends the request, which is how a tracer makes its attempt span the parent of the HTTP client's
span. ``on_attempt_end`` fires once the outcome is known: at once for an attempt that ended by
itself, and for one let go from outside (a cancel, the total deadline) when the turn learns why.
Tool calls are bracketed by ``on_tool_call`` and ``on_tool_result``; a cancel during a tool ends
the run (``on_run_end``) without its ``on_tool_result``.

Deltas are the hot path: :meth:`ObserverSet.text_delta` and :meth:`ObserverSet.thinking_delta`
walk a list, computed when observers are added or removed, of only the observers that override
that callback, so a turn nobody watches pays an empty loop per fragment. A turn's events reach
them through one :class:`TurnRouter` (:meth:`ObserverSet.router`), the engine's only fan-out.
"""

from __future__ import annotations

import contextvars
import functools
import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final

from reactivex.subject import Subject

from ..errors import ConfigError
from ..events import AttemptReset, Delta, Fallback, HandlerEvent
from ..messages import Message, Request, RequestOptions, ToolCallPart, ToolResultPart, Usage
from .audit import AttemptRecord, Turn

__all__ = [
    "ALL_CALLBACKS",
    "CALLBACKS",
    "REQUEST_CALLBACKS",
    "LoggingObserver",
    "Observer",
    "ObserverSet",
    "RecordingObserver",
    "TurnRouter",
    "report_observer_error",
]

_log = logging.getLogger("rxturn.engine.observers")
_engine_log = logging.getLogger("rxturn.engine")

#: Every callback name, in the order of the table above.
CALLBACKS: Final[tuple[str, ...]] = (
    "on_run_start",
    "on_run_end",
    "on_turn_start",
    "on_text_delta",
    "on_thinking_delta",
    "on_attempt_reset",
    "on_response",
    "on_stream_success",
    "on_stream_failure",
    "on_fallback",
    "on_model_switched",
    "on_turn_end",
    "on_tool_call",
    "on_tool_result",
    "on_compaction",
)

#: The request callbacks, for tracers (see the module docstring). :class:`RecordingObserver` and
#: :class:`LoggingObserver` see them only when built with ``requests=True``.
REQUEST_CALLBACKS: Final[tuple[str, ...]] = (
    "on_request",
    "on_attempt_start",
    "on_attempt_end",
    "on_first_chunk",
    "on_request_end",
)

#: Every callback an :class:`ObserverSet` knows.
ALL_CALLBACKS: Final[tuple[str, ...]] = CALLBACKS + REQUEST_CALLBACKS


class Observer:
    """Base class: every callback is an optional no-op. Override the ones you care about."""

    def on_run_start(self, *, session_id: str) -> None:
        """A run begins."""

    def on_run_end(
        self, *, success: bool, error: str | None, total_turns: int, duration_ms: float
    ) -> None:
        """A run ended (successfully or not)."""

    def on_turn_start(self, *, turn: int, query: str) -> None:
        """A served turn begins; ``query`` is what the model is asked (display text)."""

    def on_text_delta(self, *, turn: int, delta: str) -> None:
        """A text fragment arrived (from any attempt: reset on ``on_attempt_reset``)."""

    def on_thinking_delta(self, *, turn: int, delta: str) -> None:
        """A reasoning fragment arrived; it never enters the message."""

    def on_attempt_reset(self, *, turn: int, reset: AttemptReset) -> None:
        """A retry starts: the failed attempt's fragments are void."""

    def on_response(self, *, turn: int, text: str, usage: Usage | None) -> None:
        """The turn's committed reply text (tool calls excluded)."""

    def on_stream_success(
        self, *, turn: int, model: str, input_tokens: int, output_tokens: int
    ) -> None:
        """The turn was served by ``model`` (the model that actually served, not the configured)."""

    def on_stream_failure(self, *, turn: int, model: str, error: BaseException) -> None:
        """The turn failed on ``model``; never called for a cancel."""

    def on_fallback(self, *, from_model: str, to_model: str) -> None:
        """The model breaker tripped: turns now go to ``to_model``."""

    def on_model_switched(self, *, from_model: str, to_model: str) -> None:
        """The serving model changed between turns (trip, chain advance, recovery, switch)."""

    def on_turn_end(
        self,
        *,
        turn: int,
        success: bool,
        error: str | None,
        duration_ms: float,
        input_tokens: int,
        output_tokens: int,
    ) -> None:
        """A turn's LLM phase (or tool phase) ended."""

    def on_tool_call(self, *, turn: int, call: ToolCallPart) -> None:
        """The model asked for a tool to be run."""

    def on_tool_result(self, *, turn: int, result: ToolResultPart) -> None:
        """A tool's result is going back to the model."""

    def on_compaction(self, *, before_tokens: int, after_tokens: int) -> None:
        """The conversation was compacted from ``before_tokens`` to ``after_tokens``."""

    def on_request(
        self,
        *,
        turn: int,
        turn_id: int,
        model: str,
        request: Request,
        options: RequestOptions,
        provider: str,
        base_url: str,
        stream: bool,
        estimated_input_tokens: int,
    ) -> None:
        """The turn's model call begins: ``model`` (the routed one) is asked ``request``.

        ``provider`` is ``"anthropic"``, ``"openai"``, ``"ollama"`` (or a client's own name),
        ``base_url`` where requests go, ``estimated_input_tokens`` the engine's offline estimate
        of the prompt.
        """

    def on_attempt_start(
        self,
        *,
        turn: int,
        turn_id: int,
        attempt: int,
        kind: str,
        model: str,
        wait: float,
        after: str | None,
        context: contextvars.Context,
    ) -> None:
        """Request ``attempt`` (1, 2, …) of the turn is about to be sent to ``model``.

        ``context`` is the :mod:`contextvars` context the request is sent in (set variables in
        it with ``context.run(var.set, value)``); see the module docstring.
        """

    def on_attempt_end(
        self,
        *,
        turn: int,
        turn_id: int,
        attempt: int,
        record: AttemptRecord,
        error: BaseException | None,
    ) -> None:
        """Request ``attempt`` ended: ``record`` is its attempt-log entry (``record.outcome``
        says how), ``error`` what ended it (``None`` when it served or was let go from outside)."""

    def on_first_chunk(self, *, turn: int, turn_id: int) -> None:
        """The first reply content of the turn arrived (streaming turns only)."""

    def on_request_end(
        self,
        *,
        turn: int,
        turn_id: int,
        record: Turn,
        message: Message | None,
        error: BaseException | None,
    ) -> None:
        """The turn's model call ended: ``record`` is its audit entry, ``message`` the reply
        (``None`` when it failed with ``error``)."""


def _interested(observer: object, name: str) -> Callable[..., object] | None:
    """``observer``'s bound callback ``name`` if it does something, else ``None``.

    Inherited :class:`Observer` no-ops do nothing; anything else callable counts (duck-typed
    observers included).
    """
    method = getattr(observer, name, None)
    if method is None or not callable(method):
        return None
    if getattr(method, "__func__", None) is getattr(Observer, name):
        return None
    return method


class ObserverSet:
    """The registered observers, called in registration order with each call isolated.

    Examples:
        >>> rec = RecordingObserver()
        >>> observers = ObserverSet([rec])
        >>> observers.emit("on_turn_start", turn=0, query="hi")
        >>> observers.text_delta(0, "Hel")
        >>> rec.names()
        ['on_turn_start', 'on_text_delta']
    """

    __slots__ = ("_by_name", "_observers", "_text", "_thinking", "text_single")

    def __init__(self, observers: Iterable[Observer] = ()) -> None:
        self._observers: list[Observer] = []
        self._by_name: dict[str, tuple[tuple[Observer, Callable[..., object]], ...]] = {}
        self._text: tuple[tuple[Observer, Callable[..., object]], ...] = ()
        self._thinking: tuple[tuple[Observer, Callable[..., object]], ...] = ()
        #: ``(observer, bound on_text_delta)`` when exactly one observer overrides it, else
        #: ``None``: a hot loop calls it without iterating :meth:`targets`. Always current.
        self.text_single: tuple[Observer, Callable[..., object]] | None = None
        for observer in observers:
            self._observers.append(observer)
        self._recompute()

    def __len__(self) -> int:
        return len(self._observers)

    def __iter__(self) -> Iterator[Observer]:
        return iter(tuple(self._observers))

    def __contains__(self, observer: object) -> bool:
        return any(registered is observer for registered in self._observers)

    def __repr__(self) -> str:
        return f"ObserverSet({[type(o).__name__ for o in self._observers]})"

    def add(self, observer: Observer) -> None:
        """Register ``observer`` after the ones already there."""
        if observer is None:  # pyright: ignore[reportUnnecessaryComparison]
            raise ConfigError("observer must not be None")
        self._observers.append(observer)
        self._recompute()

    def remove(self, observer: Observer) -> bool:
        """Unregister ``observer`` (its first registration); ``False`` if it was not registered."""
        for index, registered in enumerate(self._observers):
            if registered is observer:
                del self._observers[index]
                self._recompute()
                return True
        return False

    def interested(self, name: str) -> bool:
        """Whether any observer overrides callback ``name`` (skip building its arguments if not)."""
        return bool(self._by_name.get(name))

    @property
    def wants_deltas(self) -> bool:
        """Whether any observer overrides ``on_text_delta`` or ``on_thinking_delta``."""
        return bool(self._text or self._thinking)

    def _recompute(self) -> None:
        self._by_name = {
            name: tuple(
                (observer, method)
                for observer in self._observers
                if (method := _interested(observer, name)) is not None
            )
            for name in ALL_CALLBACKS
        }
        self._text = self._by_name["on_text_delta"]
        self.text_single = self._text[0] if len(self._text) == 1 else None
        self._thinking = self._by_name["on_thinking_delta"]

    def emit(self, name: str, **kwargs: object) -> None:
        """Call ``name(**kwargs)`` on every interested observer, in registration order.

        Raises:
            ConfigError: ``name`` is not one of :data:`ALL_CALLBACKS` (a typo must not go silent).
        """
        targets = self._by_name.get(name)
        if targets is None:
            raise ConfigError(
                f"unknown observer callback {name!r}; expected one of {', '.join(ALL_CALLBACKS)}"
            )
        for observer, method in targets:
            try:
                method(**kwargs)
            except Exception:
                report_observer_error(observer, name)

    def targets(self, name: str) -> tuple[tuple[Observer, Callable[..., object]], ...]:
        """``(observer, bound method)`` for every observer that overrides ``name``, in
        registration order: for a hot loop that calls them itself (catching and reporting
        errors with :func:`report_observer_error`, as :meth:`emit` does). A snapshot: ask
        again after observers may have changed (a callback may add or remove one).

        Raises:
            ConfigError: ``name`` is not one of :data:`ALL_CALLBACKS`.
        """
        targets = self._by_name.get(name)
        if targets is None:
            raise ConfigError(
                f"unknown observer callback {name!r}; expected one of {', '.join(ALL_CALLBACKS)}"
            )
        return targets

    def text_delta(self, turn: int, delta: str) -> None:
        """``on_text_delta(turn=turn, delta=delta)`` on the observers that override it."""
        single = self.text_single
        if single is not None:  # the common case: one observer, no loop
            try:
                single[1](turn=turn, delta=delta)
            except Exception:
                report_observer_error(single[0], "on_text_delta")
            return
        for observer, method in self._text:
            try:
                method(turn=turn, delta=delta)
            except Exception:
                report_observer_error(observer, "on_text_delta")

    def thinking_delta(self, turn: int, delta: str) -> None:
        """``on_thinking_delta(turn=turn, delta=delta)`` on the observers that override it."""
        for observer, method in self._thinking:
            try:
                method(turn=turn, delta=delta)
            except Exception:
                report_observer_error(observer, "on_thinking_delta")

    def router(
        self,
        turn: int,
        *,
        streamer: Callable[[str], object] | None = None,
        sink: Subject[HandlerEvent] | None = None,
        on_control: Callable[[AttemptReset | Fallback], object] | None = None,
        on_first: Callable[[], object] | None = None,
    ) -> TurnRouter:
        """The routing subscriber of one turn's handler stream (see :class:`TurnRouter`)."""
        return TurnRouter(self, turn, streamer, sink, on_control, on_first)


class TurnRouter:
    """Routes a turn's handler events to their callbacks: the routing table, one event at a time.

    It is one subscriber of the turn's shared batched stream (the fold is another, and so is
    every ``engine.turn_streams`` subscription). Per event, in this order: a text delta goes to
    the ``streamer``, then to ``on_text_delta``; a thinking delta to ``on_thinking_delta``; an
    ``AttemptReset`` or ``Fallback`` to ``on_control``, and a reset to ``on_attempt_reset``;
    then every event to ``sink`` (``engine.events``) when one is given. Observers are read per
    event through the :class:`ObserverSet`, so one added or removed by a callback takes effect
    at the next delta. Every callback is isolated: one that raises is logged and the turn goes
    on. :meth:`stop` ends the routing at once, even mid-batch (a callback cancelled the turn: the
    rest of its batch reaches nobody, exactly as one event at a time). ``on_first`` is called
    once, before the first batch of reply content (not an ``AttemptReset``) is routed.
    """

    __slots__ = ("_control", "_first", "_observers", "_sink", "_streamer", "stopped", "turn")

    def __init__(
        self,
        observers: ObserverSet,
        turn: int,
        streamer: Callable[[str], object] | None,
        sink: Subject[HandlerEvent] | None,
        on_control: Callable[[AttemptReset | Fallback], object] | None,
        on_first: Callable[[], object] | None = None,
    ) -> None:
        self._observers = observers
        self.turn = turn
        self._streamer = streamer
        self._sink = sink
        self._control = on_control
        self._first = on_first
        self.stopped = False

    def stop(self, *_: object) -> None:
        self.stopped = True

    def on_next(self, batch: list[HandlerEvent]) -> None:
        if self._first is not None and type(batch[0]) is not AttemptReset and not self.stopped:
            first, self._first = self._first, None
            try:
                first()
            except Exception:
                _engine_log.exception("a first-chunk callback raised; the turn goes on")
        observers = self._observers
        streamer = self._streamer
        sink = self._sink
        turn = self.turn
        delta_cls = Delta
        for event in batch:
            if self.stopped:
                return
            if type(event) is delta_cls:
                kind = event.kind  # type: ignore[union-attr]
                if kind == "text":
                    text = event.text  # type: ignore[union-attr]
                    if streamer is not None:
                        try:
                            streamer(text)
                        except Exception:
                            _engine_log.exception("text_streamer raised; the turn goes on")
                    # read per delta: a callback may add or remove an observer mid-batch
                    single = observers.text_single
                    if single is not None:  # the common case, without a call through text_delta
                        try:
                            single[1](turn=turn, delta=text)
                        except Exception:
                            report_observer_error(single[0], "on_text_delta")
                    else:
                        observers.text_delta(turn, text)
                elif kind == "thinking":
                    observers.thinking_delta(turn, event.text)  # type: ignore[union-attr]
            elif type(event) is AttemptReset or type(event) is Fallback:
                if self._control is not None:
                    self._control(event)  # type: ignore[arg-type]
                if type(event) is AttemptReset:
                    observers.emit("on_attempt_reset", turn=turn, reset=event)
            if sink is not None:
                try:
                    sink.on_next(event)
                except Exception:
                    _engine_log.exception("an engine.events subscriber raised; the turn goes on")


def report_observer_error(observer: object, name: str) -> None:
    """Log the exception being handled as a failing observer callback (the turn goes on)."""
    _log.exception("observer %s.%s raised; ignored", type(observer).__name__, name)


class RecordingObserver(Observer):
    """Records every callback as ``(name, kwargs)`` in :attr:`calls` (tests, notebooks).

    Every callback of :data:`CALLBACKS` is overridden, so it also sees every delta; with
    ``requests=True`` it records the :data:`REQUEST_CALLBACKS` as well.
    """

    def __init__(self, *, requests: bool = False) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        if requests:
            _opt_in(self, self.calls)

    def names(self) -> list[str]:
        """The callback names in the order they were called."""
        return [name for name, _ in self.calls]

    def calls_of(self, name: str) -> list[dict[str, object]]:
        """The keyword arguments of every call to ``name``, in order."""
        return [kwargs for called, kwargs in self.calls if called == name]

    def clear(self) -> None:
        self.calls.clear()


def _recorder(name: str) -> Callable[..., None]:
    def record(self: RecordingObserver, **kwargs: object) -> None:
        self.calls.append((name, kwargs))

    record.__name__ = record.__qualname__ = name
    record.__doc__ = f"Record ``{name}``."
    return record


def _opt_in(observer: RecordingObserver, calls: list[tuple[str, dict[str, Any]]]) -> None:
    """Give one recorder its own callables for the request callbacks."""
    for name in REQUEST_CALLBACKS:

        def record(name: str = name, **kwargs: Any) -> None:
            calls.append((name, kwargs))

        setattr(observer, name, record)


def _install(cls: type[Observer], make: Callable[[str], Callable[..., None]]) -> None:
    """Give ``cls`` its own method for every callback (so the fast path sees it as interested)."""
    for name in CALLBACKS:
        setattr(cls, name, make(name))


_install(RecordingObserver, _recorder)

_MAX_LOGGED_CHARS = 200
_DELTAS: Final = frozenset({"on_text_delta", "on_thinking_delta"})


def _fmt(value: object) -> str:
    """A compact, bounded rendering of one callback argument for a log line."""
    if isinstance(value, str):
        if len(value) > _MAX_LOGGED_CHARS:
            return repr(value[:_MAX_LOGGED_CHARS]) + f"…(+{len(value) - _MAX_LOGGED_CHARS} chars)"
        return repr(value)
    if isinstance(value, BaseException):
        return _fmt(f"{type(value).__name__}: {value}")
    if isinstance(value, Usage):
        return f"{value.input_tokens}/{value.output_tokens}"
    if isinstance(value, ToolCallPart):
        return f"{value.name}#{value.id}"  # inputs may be large or private: not logged
    if isinstance(value, ToolResultPart):
        flag = " error" if value.is_error else ""
        return f"#{value.tool_call_id}{flag} ({len(value.content)} chars)"
    if isinstance(value, AttemptReset):
        return f"attempt {value.attempt} after {value.error_type or 'error'}"
    if isinstance(value, float):
        return f"{value:.1f}"
    if isinstance(value, Request):  # prompts are private and may be large: not logged
        return f"<{len(value.messages)} messages>"
    if isinstance(value, Message):
        return f"<{value.role} message {value.id or ''}>".replace(" >", ">")
    if isinstance(value, RequestOptions):
        return f"<options model={value.model!r}>"
    if isinstance(value, contextvars.Context):
        return "<context>"
    if isinstance(value, AttemptRecord):
        return f"{value.model}/{value.kind}:{value.outcome}"
    if isinstance(value, Turn):
        return f"<turn {value.turn} error={value.error!r}>"
    return repr(value)


class LoggingObserver(Observer):
    """One structured log line per callback.

    Deltas go out at ``delta_level`` (DEBUG), everything else at ``level`` (INFO). Each record
    carries ``extra={"rxturn_callback": name, "rxturn_fields": kwargs}`` for structured
    handlers; the message renders the fields as ``key=value`` with long text cut to 200 chars
    and tool inputs left out. It logs only what the engine hands it, which never includes keys
    (requests and messages are summarised, never printed). With ``requests=True`` it logs the
    :data:`REQUEST_CALLBACKS` as well.
    """

    def __init__(
        self,
        logger: logging.Logger | None = None,
        *,
        level: int = logging.INFO,
        delta_level: int = logging.DEBUG,
        requests: bool = False,
    ) -> None:
        self.logger = logger if logger is not None else logging.getLogger("rxturn.turn")
        self.level = level
        self.delta_level = delta_level
        if requests:
            for name in REQUEST_CALLBACKS:
                setattr(self, name, functools.partial(self.log_kwargs, name))

    def log_kwargs(self, name: str, /, **fields: object) -> None:
        """:meth:`log` with the fields as keywords."""
        self.log(name, fields)

    def log(self, name: str, fields: dict[str, object]) -> None:
        """Emit the line for callback ``name`` (skipped cheaply when the level is disabled)."""
        level = self.delta_level if name in _DELTAS else self.level
        if not self.logger.isEnabledFor(level):
            return
        rendered = " ".join(f"{key}={_fmt(value)}" for key, value in fields.items())
        self.logger.log(
            level,
            "%s %s",
            name,
            rendered,
            extra={"rxturn_callback": name, "rxturn_fields": fields},
        )


def _logger_method(name: str) -> Callable[..., None]:
    def log(self: LoggingObserver, **kwargs: object) -> None:
        self.log(name, kwargs)

    log.__name__ = log.__qualname__ = name
    log.__doc__ = f"Log ``{name}``."
    return log


_install(LoggingObserver, _logger_method)
