"""``TurnRecorder``: a compact, timestamped log of turns, and the live text of the current one.

Why an observer *and* an ``engine.events`` subscriber: observers see text deltas, resets, outcomes
and breaker events, but never the rescue (a ``Fallback`` item) or when each attempt's first event
arrived; ``engine.events`` carries those. :meth:`TurnRecorder.attach` wires both and takes from
the event stream only what observers never see, so nothing is counted twice.

Why it stays small: the per-delta path appends the fragment to one ``io.StringIO`` (no
quadratic ``+=``) and bumps one counter in a time bin; no per-delta record or object is kept.
The log itself is a bounded deque, and discarded attempts keep only their tail.
"""

from __future__ import annotations

import io
import logging
import sys
import time
from collections import deque
from collections.abc import Callable
from typing import Literal

from reactivex import Observable, abc
from reactivex import operators as ops

from .._arguments import shown
from .._validate import positive
from ..engine.observation.observers import Observer
from ..errors import ConfigError
from ..events import AttemptReset, Delta, Fallback, HandlerEvent, MessageStart, MessageStop
from ..messages import ToolCallPart, ToolResultPart, Usage
from ._records import (
    Change,
    Clock,
    DeltaDensity,
    EngineLike,
    LiveView,
    Record,
    Retracted,
    check_engine,
    cut,
    error_text,
    tail,
)

__all__ = ["TurnRecorder"]

_log = logging.getLogger("rxturn.notebook")


class TurnRecorder(Observer):
    """A timestamped, memory-bounded log of turns, plus the live text of the current attempt.

    Use it as an observer (``TurnEngine(..., observers=[rec])``), or :meth:`attach` it to an
    engine to also see the rescue and first-event times, which only ``engine.events`` carries.
    For a bare handler stream, compose :meth:`tap` into the pipeline.

    Args:
        clock: ``() -> seconds`` for the timestamps (default ``time.monotonic``; pass
            ``rxturn.operators._scheduling.clock(scheduler)`` for virtual time).
        max_records: the log keeps the newest this many records.
        max_replies: committed replies kept (newest).
        density_bin: initial width, in seconds, of the text-delta density bins.
        keep_retracted_chars: how much of each discarded attempt's text is kept for display.

    Examples:
        >>> rec = TurnRecorder(clock=lambda: 0.0)
        >>> rec.on_turn_start(turn=0, query="hi")
        >>> rec.on_text_delta(turn=0, delta="Hel")
        >>> rec.on_attempt_reset(turn=0, reset=AttemptReset(attempt=2, reason="dropped"))
        >>> rec.on_text_delta(turn=0, delta="Hello")
        >>> rec.text, [r.text for r in rec.retracted]
        ('Hello', ['Hel'])
    """

    def __init__(
        self,
        *,
        clock: Clock = time.monotonic,
        max_records: int = 100_000,
        max_replies: int = 1_000,
        density_bin: float = 0.01,
        keep_retracted_chars: int = 4_000,
    ) -> None:
        if not callable(clock):
            raise ConfigError(
                f"TurnRecorder.clock must be a callable returning seconds, got {shown(clock, 100)}"
            )
        if (
            not positive(max_records, integer=True)
            or not positive(max_replies, integer=True)
            or not positive(keep_retracted_chars, integer=True, allow_zero=True)
        ):
            raise ConfigError(
                "TurnRecorder: max_records and max_replies must be >= 1, keep_retracted_chars >= 0"
            )
        if not positive(density_bin):
            raise ConfigError(
                f"TurnRecorder.density_bin must be > 0 seconds, got {shown(density_bin, 100)}"
            )
        self._clock = clock
        # a bound past what a deque can hold (an int, not a C size) keeps everything
        self._records: deque[Record] = deque(maxlen=min(max_records, sys.maxsize))
        # one counter per attempt that streamed; each holds at most DeltaDensity.max_bins bins
        self._densities: deque[DeltaDensity] = deque(maxlen=min(max_records, 10_000))
        self._replies: deque[tuple[int, str]] = deque(maxlen=min(max_replies, sys.maxsize))
        self._bin = density_bin
        self._keep = keep_retracted_chars
        self._listeners: list[Callable[[Change], None]] = []
        self._model_of: Callable[[], str] | None = None
        self._subscription: abc.DisposableBase | None = None
        self._engine: EngineLike | None = None
        self._seq = -1
        self._turn: int | None = None
        self._attempt = 1
        self._model: str | None = None
        self._text = io.StringIO()
        self._retracted: list[Retracted] = []
        self._density: DeltaDensity | None = None
        self._status: Literal["idle", "streaming", "rescued", "done", "failed"] = "idle"
        self._error: str | None = None
        self._resets = 0

    def __repr__(self) -> str:
        return (
            f"TurnRecorder(records={len(self._records)}, turns={self._seq + 1}, "
            f"resets={self._resets}, status={self._status!r})"
        )

    # -------------------------------------------------------------------------------- reads

    @property
    def records(self) -> list[Record]:
        """The log, oldest first."""
        return list(self._records)

    @property
    def densities(self) -> list[DeltaDensity]:
        """Per-attempt delta counters, oldest first."""
        return list(self._densities)

    @property
    def text(self) -> str:
        """The current attempt's text so far (empty right after a reset)."""
        return self._text.getvalue()

    @property
    def retracted(self) -> list[Retracted]:
        """The current turn's discarded attempts (tails), oldest first."""
        return list(self._retracted)

    @property
    def replies(self) -> list[tuple[int, str]]:
        """Committed replies as ``(seq, text)``, oldest first."""
        return list(self._replies)

    def count(self, kind: str) -> int:
        """How many records of ``kind`` the log holds."""
        return sum(1 for record in self._records if record.kind == kind)

    def of_kind(self, kind: str) -> list[Record]:
        """The records of ``kind``, oldest first."""
        return [record for record in self._records if record.kind == kind]

    def view(self) -> LiveView:
        """A snapshot for a live display."""
        return LiveView(
            seq=self._seq,
            turn=self._turn,
            attempt=self._attempt,
            model=self._model,
            text=self.text,
            retracted=tuple(self._retracted),
            status=self._status,
            error=self._error,
        )

    def clear(self) -> None:
        """Forget the log, the counters and the replies (listeners stay)."""
        self._records.clear()
        self._densities.clear()
        self._replies.clear()
        self._retracted.clear()
        self._text = io.StringIO()
        self._density = None
        self._resets = 0
        self._status = "idle"

    # ---------------------------------------------------------------------------- listeners

    def add_listener(self, listener: Callable[[Change], None]) -> Callable[[], None]:
        """Call ``listener(change)`` after every change; returns a function that removes it."""
        self._listeners.append(listener)

        def remove() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return remove

    def _notify(self, change: Change) -> None:
        # A display that breaks must not break the turn it watches (the engine isolates its
        # observers; a tapped stream would otherwise see the listener's error as its own).
        for listener in tuple(self._listeners):
            try:
                listener(change)
            except Exception:
                _log.exception("TurnRecorder listener %r raised; ignored", listener)

    # ------------------------------------------------------------------------------ wiring

    def attach(self, engine: EngineLike) -> TurnRecorder:
        """Observe ``engine`` and subscribe to ``engine.events`` (rescue, first event, stop).

        Deltas and resets arrive through the observer callbacks, so the events subscription
        records only what observers never see; nothing is counted twice. The model of each
        turn is read from ``engine.served_model()`` when it starts.

        Raises:
            ConfigError: the recorder is already attached to an engine, or ``engine`` is not one.
        """
        check_engine(engine, name="TurnRecorder.attach(engine)")
        if self._engine is not None:
            raise ConfigError("this TurnRecorder is already attached; call detach() first")
        if self not in engine.observers:
            engine.add_observer(self)
        self._engine = engine
        self._model_of = engine.served_model
        self._subscription = engine.events.subscribe(on_next=self._engine_event)
        return self

    def detach(self) -> None:
        """Stop recording the attached engine (observer and events subscription both)."""
        if self._subscription is not None:
            self._subscription.dispose()
            self._subscription = None
        if self._engine is not None:
            self._engine.observers.remove(self)
            self._engine = None
        self._model_of = None

    def tap(self) -> Callable[[Observable[HandlerEvent]], Observable[HandlerEvent]]:
        """An operator recording a bare handler stream as one turn per subscription.

        Examples:
            >>> # handler.stream_turn(client, request, options, cancel).pipe(rec.tap(), ...)
        """

        def operator(source: Observable[HandlerEvent]) -> Observable[HandlerEvent]:
            def subscribe(
                observer: abc.ObserverBase[HandlerEvent], scheduler: abc.SchedulerBase | None = None
            ) -> abc.DisposableBase:
                self._model = None  # learnt from this turn's MessageStart
                self.on_turn_start(turn=self._seq + 1, query="")

                def on_error(error: Exception) -> None:
                    self._record("stream_failure", detail=error_text(error))
                    self._end(False, error_text(error))

                return source.pipe(
                    ops.do_action(
                        on_next=self.observe,
                        on_error=on_error,
                        on_completed=lambda: self._end(True, None),
                    )
                ).subscribe(observer, scheduler=scheduler)

            return Observable(subscribe)

        return operator

    def observe(self, event: HandlerEvent) -> None:
        """Record one handler event (text, thinking, reset, rescue, message start/stop)."""
        if type(event) is Delta:
            if event.kind == "text":
                self.on_text_delta(turn=self._turn or 0, delta=event.text)
            elif event.kind == "thinking":
                self.on_thinking_delta(turn=self._turn or 0, delta=event.text)
        elif isinstance(event, AttemptReset):
            self.on_attempt_reset(turn=self._turn or 0, reset=event)
        else:
            self._engine_event(event)

    def _engine_event(self, event: HandlerEvent) -> None:
        if isinstance(event, MessageStart):
            if event.model and self._model is None:
                self._model = event.model
            self._record("message_start", detail=event.model)
        elif isinstance(event, MessageStop):
            self._record("message_stop")
        elif isinstance(event, Fallback):
            message = event.message
            self._retract("stream abandoned; the non-streaming rescue served the turn")
            self._text.write(message.text)
            self._status = "rescued"
            reason = message.stop_reason.value if message.stop_reason else "end_turn"
            self._record("rescue", detail=f"{len(message.text)} chars, stop {reason}")
            self._notify("rescue")

    # --------------------------------------------------------------------------- internals

    def _record(
        self,
        kind: str,
        *,
        detail: str = "",
        ok: bool | None = None,
        model: str | None = None,
        between_turns: bool = False,
    ) -> None:
        """Append a record; ``between_turns`` ones (run, breaker, compaction) name no turn."""
        self._records.append(
            Record(
                time=self._clock(),
                kind=kind,
                seq=self._seq,
                turn=None if between_turns else self._turn,
                attempt=0 if between_turns else self._attempt,
                model=model if model is not None else self._model,
                detail=detail,
                ok=ok,
            )
        )

    def _new_density(self, now: float) -> DeltaDensity:
        density = DeltaDensity(self._seq, self._attempt, now, bin_width=self._bin)
        self._densities.append(density)
        self._density = density
        return density

    def _retract(self, reason: str) -> None:
        text = self._text.getvalue()
        if text and self._keep:
            shown, dropped = tail(text, self._keep)
            self._retracted.append(
                Retracted(attempt=self._attempt, text=shown, reason=reason, dropped_chars=dropped)
            )
        self._text = io.StringIO()

    def _end(self, ok: bool, error: str | None) -> None:
        if self._status != "rescued" or not ok:
            self._status = "done" if ok else "failed"
        self._error = error
        self._record("turn_end", ok=ok, detail="ok" if ok else (error or "failed"))
        self._density = None
        self._notify("end")

    # --------------------------------------------------------------------- observer callbacks

    def on_run_start(self, *, session_id: str) -> None:
        self._record("run_start", detail=session_id, between_turns=True)

    def on_run_end(
        self, *, success: bool, error: str | None, total_turns: int, duration_ms: float
    ) -> None:
        detail = f"{total_turns} turns in {duration_ms:.0f} ms" + (f"; {error}" if error else "")
        self._record("run_end", ok=success, detail=cut(detail), between_turns=True)

    def on_turn_start(self, *, turn: int, query: str) -> None:
        self._seq += 1
        self._turn = turn
        self._attempt = 1
        self._text = io.StringIO()
        self._retracted = []
        self._status = "streaming"
        self._error = None
        self._density = None
        if self._model_of is not None:
            self._model = self._model_of()
        self._record("turn_start", detail=cut(query))
        self._notify("turn")

    def on_text_delta(self, *, turn: int, delta: str) -> None:
        now = self._clock()
        density = self._density
        if density is None:
            density = self._new_density(now)
        density.add(now, len(delta))
        self._text.write(delta)
        if self._listeners:
            self._notify("text")

    def on_thinking_delta(self, *, turn: int, delta: str) -> None:
        density = self._density
        if density is None:
            density = self._new_density(self._clock())
        density.thinking += 1

    def on_attempt_reset(self, *, turn: int, reset: AttemptReset) -> None:
        reason = f"{reset.error_type}: {reset.reason}" if reset.error_type else reset.reason
        self._retract(cut(reason))  # filed under the failed attempt's number
        self._attempt = reset.attempt
        self._resets += 1
        self._density = None
        self._record("attempt_reset", detail=cut(f"attempt {reset.attempt - 1} failed: {reason}"))
        self._notify("reset")

    def on_response(self, *, turn: int, text: str, usage: Usage | None) -> None:
        self._replies.append((self._seq, text))
        tokens = f", {usage.input_tokens}/{usage.output_tokens} tokens" if usage else ""
        self._record("response", detail=f"{len(text)} chars{tokens}")
        self._notify("response")

    def on_stream_success(
        self, *, turn: int, model: str, input_tokens: int, output_tokens: int
    ) -> None:
        self._model = model
        self._record("stream_success", detail=f"{input_tokens}/{output_tokens} tokens")

    def on_stream_failure(self, *, turn: int, model: str, error: BaseException) -> None:
        self._model = model
        self._record("stream_failure", detail=error_text(error))

    def on_hedge(
        self,
        *,
        turn: int,
        turn_id: int,
        model: str,
        hedge_model: str,
        reason: str,
        after: float,
    ) -> None:
        self._record("hedge", detail=cut(f"{model} raced by {hedge_model} after {after:.2f} s"))

    def on_hedge_won(
        self, *, turn: int, turn_id: int, model: str, hedge_model: str, after: float
    ) -> None:
        # the hedge's text is what streams from now on: the live headline names its model
        self._model = hedge_model
        self._record("hedge_won", detail=cut(f"{hedge_model} first; {model} cut"))
        self._notify("turn")

    def on_fallback(self, *, from_model: str, to_model: str) -> None:
        self._record(
            "fallback", detail=f"{from_model} → {to_model}", model=to_model, between_turns=True
        )

    def on_model_switched(self, *, from_model: str, to_model: str) -> None:
        self._model = to_model
        self._record("model_switched", detail=f"{from_model} → {to_model}", between_turns=True)

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
        self._end(success, None if success else cut(error or "failed"))

    def on_tool_call(self, *, turn: int, call: ToolCallPart) -> None:
        self._record("tool_call", detail=f"{call.name}#{call.id}")

    def on_tool_result(self, *, turn: int, result: ToolResultPart) -> None:
        flag = " (error)" if result.is_error else ""
        self._record("tool_result", detail=f"#{result.tool_call_id}{flag}")

    def on_compaction(self, *, before_tokens: int, after_tokens: int) -> None:
        self._record(
            "compaction", detail=f"{before_tokens} → {after_tokens} tokens", between_turns=True
        )
