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

from ..cost import Cost, Pricer, total_cost
from ..errors import Cancelled, RescueFailed
from ..messages import Usage
from .audit import AttemptKind, AttemptRecord, billed
from .observers import ObserverSet

__all__ = ["AttemptHooks", "AttemptLog"]

_PENDING = ""


class AttemptHooks:
    """Where a turn's attempt log reports attempts: the observers, and the turn's identity."""

    __slots__ = ("end", "observers", "start", "turn", "turn_id")

    def __init__(self, observers: ObserverSet, turn: int, turn_id: int) -> None:
        self.observers = observers
        self.turn = turn
        self.turn_id = turn_id
        self.start = observers.interested("on_attempt_start")
        self.end = observers.interested("on_attempt_end")


class AttemptLog:
    """Records a turn's attempts (see the module docstring)."""

    __slots__ = (
        "_clock",
        "_hooks",
        "_last_end",
        "_open_kind",
        "_open_model",
        "_open_started",
        "_pricer",
        "_records",
        "model",
    )

    def __init__(
        self,
        clock: Callable[[], float],
        model: str,
        hooks: AttemptHooks | None = None,
        pricer: Pricer | None = None,
    ) -> None:
        self._clock = clock
        self._pricer = pricer
        self.model = model
        # the attempt in flight (kind None: none), kept as slots: no object per attempt
        self._open_kind: AttemptKind | None = None
        self._open_model = model
        self._open_started = 0.0
        # grown one record at a time: no object until an attempt ends
        self._records: tuple[AttemptRecord, ...] = ()
        self._hooks = hooks if hooks is not None and (hooks.start or hooks.end) else None
        self._last_end = clock() if self._hooks is not None else 0.0

    @property
    def records(self) -> tuple[AttemptRecord, ...]:
        return self._records

    def attempt_started(self, kind: AttemptKind) -> contextvars.Context | None:
        """Open an attempt; the context to send it in when an observer asked for one."""
        if kind == "rescue":
            # a stream attempt let go before the rescue was cut by the total deadline
            self._settle("StreamTimeoutError", only="stream")
        self._open_kind = kind
        model = self._open_model = self.model
        started = self._open_started = self._clock()
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
            model=model,
            wait=max(0.0, started - self._last_end),
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
        if self._open_kind is not None:
            self._open_kind = None
            started, model = self._open_started, self._open_model
        else:
            started, model = self._clock(), self.model
        if disposed:
            outcome = _PENDING
        elif error is None:
            outcome = "served"
        else:
            outcome = _outcome_of(error)
        record = AttemptRecord(
            model=model,
            kind=kind,
            outcome=outcome,
            usage=usage,
            started=started,
            ended=self._clock(),
            cost=self._pricer.price(model, usage) if self._pricer is not None else None,
        )
        self._records = (*self._records, record)
        if self._hooks is not None:
            self._last_end = record.ended
            if not disposed:
                self._ended(len(self._records), record, error)

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
                settled = _replace_outcome(record, outcome)
                records = self._records
                self._records = (*records[:index], settled, *records[index + 1 :])
                self._ended(index + 1, settled, None)

    def close(self, error: BaseException | None) -> tuple[AttemptRecord, ...]:
        """Settle attempts let go from outside with the turn's ``error``; the final log."""
        if self._open_kind is not None:  # still open when the turn ended: let go with it
            self.attempt_ended(self._open_kind, None, None, disposed=True)
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

    def cost(self) -> Cost | None:
        """Every attempt's cost, summed (``None`` without pricing)."""
        return (
            total_cost(record.cost for record in self._records)
            if self._pricer is not None
            else None
        )

    def discarded(self) -> Usage | None:
        """Usage of every attempt that did not serve."""
        return billed(record for record in self._records if record.outcome != "served")


def _is_cancel(error: BaseException) -> bool:
    return isinstance(error, Cancelled | asyncio.CancelledError)


def _outcome_of(error: BaseException) -> str:
    return "cancelled" if _is_cancel(error) else type(error).__name__


def _replace_outcome(record: AttemptRecord, outcome: str) -> AttemptRecord:
    return AttemptRecord(
        model=record.model,
        kind=record.kind,
        outcome=outcome,
        usage=record.usage,
        started=record.started,
        ended=record.ended,
        cost=record.cost,
    )
