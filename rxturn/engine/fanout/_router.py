"""The fan-out: :class:`ObserverSet` and the per-turn :class:`TurnRouter`.

An :class:`ObserverSet` calls the registered observers in registration order, each call
isolated; the deltas, the hot path, walk precomputed lists of only the observers that override
them. A turn's events reach the text streamer, the observers and ``engine.events`` through one
:class:`TurnRouter` (:meth:`ObserverSet.router`), the engine's only fan-out.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator

from reactivex.subject import Subject

from ..._arguments import check_items, shown
from ...errors import ConfigError
from ...events import AttemptReset, Delta, Fallback, HandlerEvent
from ..observation._callbacks import ALL_CALLBACKS, Observer, checked_observer

__all__ = ["ObserverSet", "TurnRouter", "report_observer_error"]

_log = logging.getLogger("rxturn.engine.observers")
#: the types of the handler's control items
_CONTROL: frozenset[type] = frozenset((AttemptReset, Fallback))
_engine_log = logging.getLogger("rxturn.engine")


def _interested(observer: object, name: str) -> Callable[..., object] | None:
    """``observer``'s bound callback ``name`` if it does something, else ``None``: the one rule
    of who hears a callback.

    Inherited :class:`Observer` no-ops do nothing; anything else callable counts (duck-typed
    observers, and callbacks assigned on the instance, included). It is asked when the callback
    is emitted (the deltas: when observers are added or removed), so it always sees the
    observer as it is.
    """
    method = getattr(observer, name, None)
    if method is None or getattr(method, "__func__", None) is _NO_OPS[name]:
        return None
    return method if callable(method) else None


#: :class:`Observer`'s own no-op for each callback, looked up once
_NO_OPS: dict[str, object] = {name: getattr(Observer, name) for name in ALL_CALLBACKS}


def _unknown(name: str) -> ConfigError:
    return ConfigError(
        f"unknown observer callback {shown(name, 100)}; expected one of {', '.join(ALL_CALLBACKS)}"
    )


class ObserverSet:
    """The registered observers, called in registration order with each call isolated.

    Only the deltas, the hot path, are routed from lists made when observers are added or
    removed; every other callback finds its observers when it is emitted (a turn emits each a
    few times at most), so building a set costs no per-callback table.

    Examples:
        >>> from rxturn import ObserverSet, RecordingObserver
        >>> rec = RecordingObserver()
        >>> observers = ObserverSet([rec])
        >>> observers.emit("on_turn_start", turn=0, query="hi")
        >>> observers.text_delta(0, "Hel")
        >>> rec.names()
        ['on_turn_start', 'on_text_delta']
    """

    __slots__ = (
        "_observers",
        "_text",
        "_thinking",
        "listening",
        "text_observer",
        "text_single",
        "wants_deltas",
    )

    def __init__(self, observers: Iterable[Observer] = ()) -> None:
        #: replaced whole, never changed in place: a callback that adds or removes an observer
        #: while :meth:`emit` walks them does not disturb the walk
        self._observers: tuple[Observer, ...] = tuple(
            checked_observer(observer, "ObserverSet(observers=...)")
            for observer in check_items(observers, "ObserverSet(observers=...)", "observers")
        )
        #: ``on_text_delta`` targets when two or more observers override it (one: ``text_single``)
        self._text: tuple[tuple[Observer, Callable[..., object]], ...] = ()
        self._thinking: tuple[tuple[Observer, Callable[..., object]], ...] = ()
        #: the bound ``on_text_delta`` when exactly one observer overrides it (that observer:
        #: ``text_observer``), else ``None``: a hot loop calls it without iterating
        #: :meth:`targets`. Always current.
        self.text_single: Callable[..., object] | None = None
        self.text_observer: Observer | None = None
        #: whether any observer overrides ``on_text_delta`` or ``on_thinking_delta`` (an
        #: attribute, not a property: a turn's router reads it for every batch). Always current.
        self.wants_deltas = False
        #: whether any observer is registered: a turn asks it before each :meth:`interested`,
        #: an attribute read where a call was (an engine without observers asks a dozen times a
        #: turn). Always current.
        self.listening = False
        self._recompute()

    def __len__(self) -> int:
        return len(self._observers)

    def __iter__(self) -> Iterator[Observer]:
        return iter(self._observers)

    def __contains__(self, observer: object) -> bool:
        return any(registered is observer for registered in self._observers)

    def __repr__(self) -> str:
        return f"ObserverSet({[type(o).__name__ for o in self._observers]})"

    def add(self, observer: Observer) -> None:
        """Register ``observer`` after the ones already there."""
        self._observers = (*self._observers, checked_observer(observer, "observer"))
        self._recompute()

    def remove(self, observer: Observer) -> bool:
        """Unregister ``observer`` (its first registration); ``False`` if it was not registered."""
        observers = self._observers
        for index, registered in enumerate(observers):
            if registered is observer:
                self._observers = observers[:index] + observers[index + 1 :]
                self._recompute()
                return True
        return False

    def interested(self, name: str) -> bool:
        """Whether any observer overrides callback ``name`` (skip building its arguments if not;
        ``False`` for a name that is not a callback)."""
        if not self._observers:  # (an engine without observers asks this every turn)
            return False
        no_op = _NO_OPS.get(name)
        if no_op is None:
            return False
        # _interested's rule, inlined: asked about nine times a turn, so no call per observer
        for observer in self._observers:
            method = getattr(observer, name, None)
            if (
                method is not None
                and getattr(method, "__func__", None) is not no_op
                and callable(method)
            ):
                return True
        return False

    def _recompute(self) -> None:
        """The deltas' routing, after observers were added or removed."""
        if not self._observers:
            self.text_single = self.text_observer = None
            self._text = self._thinking = ()
            self.wants_deltas = self.listening = False
            return
        text = self.targets("on_text_delta")
        if len(text) == 1:
            self.text_observer, self.text_single = text[0]
            self._text = ()
        else:
            self.text_single = self.text_observer = None
            self._text = text
        self._thinking = self.targets("on_thinking_delta")
        self.wants_deltas = self.text_single is not None or bool(self._text or self._thinking)
        self.listening = True

    def emit(self, name: str, **kwargs: object) -> None:
        """Call ``name(**kwargs)`` on every interested observer, in registration order.

        Raises:
            ConfigError: ``name`` is not one of :data:`ALL_CALLBACKS` (a typo must not go silent).
        """
        no_op = _NO_OPS.get(name)
        if no_op is None:
            raise _unknown(name)
        for observer in self._observers:
            method = getattr(observer, name, None)  # _interested's rule, inlined
            if method is None or getattr(method, "__func__", None) is no_op or not callable(method):
                continue
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
        if name not in _NO_OPS:
            raise _unknown(name)
        if not self._observers:
            return ()
        return tuple(
            (observer, method)
            for observer in self._observers
            if (method := _interested(observer, name)) is not None
        )

    def text_delta(self, turn: int, delta: str) -> None:
        """``on_text_delta(turn=turn, delta=delta)`` on the observers that override it."""
        single = self.text_single
        if single is not None:  # the common case: one observer, no loop
            try:
                single(turn=turn, delta=delta)
            except Exception:
                report_observer_error(self.text_observer, "on_text_delta")
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
        if streamer is None and sink is None and not observers.wants_deltas:
            # nobody hears an event but the control items (an AttemptReset or a Fallback), and
            # until one comes no callback runs that could add a listener: skip to it, if any
            if _CONTROL.isdisjoint(map(type, batch)):  # (the usual batch: looked at in C)
                return
            position = next(i for i, event in enumerate(batch) if type(event) in _CONTROL)
            if position:
                batch = batch[position:]
        turn = self.turn
        delta_cls = Delta
        for event in batch:
            if self.stopped:
                return
            if type(event) is delta_cls:
                kind = event.kind
                if kind == "text":
                    text = event.text
                    if streamer is not None:
                        try:
                            streamer(text)
                        except Exception:
                            _engine_log.exception("text_streamer raised; the turn goes on")
                    # read per delta: a callback may add or remove an observer mid-batch
                    single = observers.text_single
                    if single is not None:  # the common case, without a call through text_delta
                        try:
                            single(turn=turn, delta=text)
                        except Exception:
                            report_observer_error(observers.text_observer, "on_text_delta")
                    else:
                        observers.text_delta(turn, text)
                elif kind == "thinking":
                    observers.thinking_delta(turn, event.text)
            elif type(event) in _CONTROL:  # one set lookup, not two type tests per event
                control: AttemptReset | Fallback = event  # pyright: ignore[reportAssignmentType]
                if self._control is not None:
                    self._control(control)
                if type(control) is AttemptReset:
                    observers.emit("on_attempt_reset", turn=turn, reset=control)
            if sink is not None:
                try:
                    sink.on_next(event)
                except Exception:  # (its subscribers' errors stay inside it): it was disposed
                    _engine_log.exception("engine.events refused an event; the turn goes on")
                    self._sink = sink = None  # once a turn, not once an event


def report_observer_error(observer: object, name: str) -> None:
    """Log the exception being handled as a failing observer callback (the turn goes on)."""
    _log.exception("observer %s.%s raised; ignored", type(observer).__name__, name)
