"""The attempt log of one turn: every request it made, with its usage and times.

:class:`AttemptLog` is the :class:`~rxturn.engine.handler.AttemptWatcher` the engine hands the
stream handler for a turn (and feeds itself for a non-streaming ``create``). It stamps each
attempt with the model being asked and the engine's clock, and keeps the usage the provider had
reported when the attempt ended — also for an attempt that failed, so that the audit's
``billed_usage`` says what the provider billed.

An attempt let go from outside (``disposed``) learns its outcome later: a cancel makes it
``"cancelled"``; a stream attempt cut by the turn's total deadline is a ``StreamTimeoutError``
(that is the only other way a stream attempt is let go while the turn goes on, to the rescue);
a rescue cut by its deadline is a ``RescueTimeoutError``. :meth:`AttemptLog.close` settles them
with the turn's own error.

A hedged first token (docs/engine.md) runs several stream attempts at once: the race reports
each racer (:meth:`AttemptLog.racer_started`, :meth:`~AttemptLog.racer_ended`) and names the one
whose end the handler reports as the attempt's (:meth:`~AttemptLog.racer_adopted`). A loser is
recorded ``"hedge_lost"`` with the usage it reported before the cut, or, when it reported none,
the turn's offline input estimate in ``estimated_usage``.

Given :class:`AttemptHooks`, the log is also where the observers' ``on_attempt_start`` and
``on_attempt_end`` fire (docs/observability.md): the start with a fresh copy of the current
:mod:`contextvars` context, which :meth:`AttemptLog.attempt_started` returns so that the caller
sends the request inside it; the end once the attempt's outcome is known. Nobody listening costs
one attribute test per attempt.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from typing import Literal

import msgspec

from ..errors import Cancelled, RescueFailed
from ..messages import Usage
from .audit import AttemptKind, AttemptRecord, billed
from .observers import ObserverSet

__all__ = ["AttemptHooks", "AttemptLog"]

_PENDING = ""
HEDGE_LOST = "hedge_lost"


class AttemptHooks:
    """Where a turn's attempt log reports attempts: the observers, and the turn's identity."""

    __slots__ = ("end", "observers", "start", "turn", "turn_id")

    def __init__(self, observers: ObserverSet, turn: int, turn_id: int) -> None:
        self.observers = observers
        self.turn = turn
        self.turn_id = turn_id
        self.start = observers.interested("on_attempt_start")
        self.end = observers.interested("on_attempt_end")


class _Open:
    __slots__ = ("kind", "model", "number", "started")

    def __init__(self, kind: AttemptKind, model: str, started: float, number: int = 0) -> None:
        self.kind: AttemptKind = kind
        self.model = model
        self.started = started
        self.number = number  # a racer's attempt number (0: numbered by the records)


class AttemptLog:
    """Records a turn's attempts (see the module docstring)."""

    __slots__ = (
        "_clock",
        "_hooks",
        "_last_end",
        "_numbered",
        "_open",
        "_racers",
        "_records",
        "estimate",
        "model",
    )

    def __init__(
        self, clock: Callable[[], float], model: str, hooks: AttemptHooks | None = None
    ) -> None:
        self._clock = clock
        self.model = model
        self._open: _Open | None = None
        self._records: list[AttemptRecord] = []
        self._racers: dict[int, _Open] | None = None
        self._numbered: list[tuple[int, int]] | None = None
        #: the turn's offline input estimate (tokens), for a hedge loser that reported none
        self.estimate: int | None = None
        self._hooks = hooks if hooks is not None and (hooks.start or hooks.end) else None
        self._last_end = clock() if self._hooks is not None else 0.0

    @property
    def records(self) -> tuple[AttemptRecord, ...]:
        return tuple(self._records)

    def attempt_started(self, kind: AttemptKind) -> contextvars.Context | None:
        """Open an attempt; the context to send it in when an observer asked for one."""
        if kind == "rescue":
            # a stream attempt let go before the rescue was cut by the total deadline
            self._settle("StreamTimeoutError", only="stream")
        opened = self._open = _Open(kind, self.model, self._clock())
        hooks = self._hooks
        if hooks is None or not hooks.start:
            return None
        context = contextvars.copy_context()
        records = self._records
        hooks.observers.emit(
            "on_attempt_start",
            turn=hooks.turn,
            turn_id=hooks.turn_id,
            attempt=len(records) + 1,
            kind=kind,
            model=opened.model,
            wait=max(0.0, opened.started - self._last_end),
            after=records[-1].outcome if records else None,
            context=context,
        )
        return context

    def attempt_ended(
        self,
        kind: AttemptKind,
        error: BaseException | None,
        usage: Usage | None,
        *,
        disposed: bool = False,
    ) -> None:
        opened = self._open
        self._open = None
        self._record(opened, kind, error, usage, disposed=disposed)

    def _record(
        self,
        opened: _Open | None,
        kind: AttemptKind,
        error: BaseException | None,
        usage: Usage | None,
        *,
        disposed: bool = False,
        outcome: str | None = None,
    ) -> None:
        started = opened.started if opened is not None else self._clock()
        model = opened.model if opened is not None else self.model
        if outcome is None:
            if disposed:
                outcome = _PENDING
            elif error is None:
                outcome = "served"
            else:
                outcome = _outcome_of(error)
        estimated = None
        if outcome == HEDGE_LOST and usage is None and self.estimate is not None:
            estimated = Usage(input_tokens=self.estimate, output_tokens=0)
        record = AttemptRecord(
            model=model,
            kind=kind,
            outcome=outcome,
            usage=usage,
            started=started,
            ended=self._clock(),
            estimated_usage=estimated,
        )
        self._records.append(record)
        number = len(self._records)
        if opened is not None and opened.number:
            number = opened.number
            self._numbers.append((len(self._records) - 1, number))
        if self._hooks is not None:
            self._last_end = record.ended
            if not disposed:
                self._ended(number, record, error)

    # -- a hedged race ----------------------------------------------------------------------

    def racer_started(self, index: int, model: str) -> contextvars.Context | None:
        """A racer of a hedged race starts (``index`` 0 is the primary)."""
        racers = self._racers
        if racers is None:
            racers = self._racers = {}
        number = len(self._records) + len(racers) + (self._open is not None) + 1
        opened = racers[index] = _Open("stream", model, self._clock(), number)
        hooks = self._hooks
        if hooks is None or not hooks.start:
            return None
        context = contextvars.copy_context()
        records = self._records
        hooks.observers.emit(
            "on_attempt_start",
            turn=hooks.turn,
            turn_id=hooks.turn_id,
            attempt=number,
            kind="stream",
            model=model,
            wait=0.0 if index else max(0.0, opened.started - self._last_end),
            after=records[-1].outcome if records and not index else None,
            context=context,
        )
        return context

    def racer_ended(
        self,
        index: int,
        error: BaseException | None,
        usage: Usage | None,
        *,
        outcome: str | None = None,
        disposed: bool = False,
    ) -> None:
        """A racer whose end the handler does not report: a loser, a failure others
        outran, or one let go with the race."""
        racers = self._racers
        opened = racers.pop(index, None) if racers is not None else None
        if opened is None:
            return
        self._record(opened, "stream", error, usage, disposed=disposed, outcome=outcome)

    def racer_adopted(self, index: int) -> None:
        """The racer whose end the handler will report as the attempt's own."""
        racers = self._racers
        opened = racers.pop(index, None) if racers is not None else None
        if opened is not None:
            self._open = opened

    @property
    def _numbers(self) -> list[tuple[int, int]]:
        """(record position, attempt number) of racers numbered at their start."""
        numbers = self._numbered
        if numbers is None:
            numbers = self._numbered = []
        return numbers

    def _number_of(self, position: int) -> int:
        for where, number in self._numbered or ():
            if where == position:
                return number
        return position + 1

    def _ended(self, attempt: int, record: AttemptRecord, error: BaseException | None) -> None:
        hooks = self._hooks
        if hooks is not None and hooks.end:
            hooks.observers.emit(
                "on_attempt_end",
                turn=hooks.turn,
                turn_id=hooks.turn_id,
                attempt=attempt,
                record=record,
                error=error,
            )

    def _settle(self, outcome: str, *, only: Literal["stream", "rescue"] | None = None) -> None:
        for index, record in enumerate(self._records):
            if record.outcome == _PENDING and (only is None or record.kind == only):
                settled = self._records[index] = _replace_outcome(record, outcome)
                self._ended(self._number_of(index), settled, None)

    def close(self, error: BaseException | None) -> tuple[AttemptRecord, ...]:
        """Settle attempts let go from outside with the turn's ``error``; the final log."""
        if self._open is not None:  # still open when the turn ended: let go with it
            self.attempt_ended(self._open.kind, None, None, disposed=True)
        for index in list(self._racers or ()):
            self.racer_ended(index, None, None, disposed=True)
        if any(record.outcome == _PENDING for record in self._records):
            if error is None or _is_cancel(error):
                self._settle("cancelled")
            else:
                rescue_error = error.rescue_error if isinstance(error, RescueFailed) else error
                self._settle("StreamTimeoutError", only="stream")
                self._settle(type(rescue_error).__name__, only="rescue")
        return self.records

    def billed(self) -> Usage | None:
        return billed(self._records)

    def discarded(self) -> Usage | None:
        """Usage of every attempt that did not serve."""
        return billed(record for record in self._records if record.outcome != "served")


def _is_cancel(error: BaseException) -> bool:
    return isinstance(error, Cancelled | asyncio.CancelledError)


def _outcome_of(error: BaseException) -> str:
    return "cancelled" if _is_cancel(error) else type(error).__name__


def _replace_outcome(record: AttemptRecord, outcome: str) -> AttemptRecord:
    return msgspec.structs.replace(record, outcome=outcome)
