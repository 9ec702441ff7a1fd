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
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Literal

from ..errors import Cancelled, RescueFailed
from ..messages import Usage
from .audit import AttemptKind, AttemptRecord, billed

__all__ = ["AttemptLog"]

_PENDING = ""


class _Open:
    __slots__ = ("kind", "model", "started")

    def __init__(self, kind: AttemptKind, model: str, started: float) -> None:
        self.kind: AttemptKind = kind
        self.model = model
        self.started = started


class AttemptLog:
    """Records a turn's attempts (see the module docstring)."""

    __slots__ = ("_clock", "_open", "_records", "model")

    def __init__(self, clock: Callable[[], float], model: str) -> None:
        self._clock = clock
        self.model = model
        self._open: _Open | None = None
        self._records: list[AttemptRecord] = []

    @property
    def records(self) -> tuple[AttemptRecord, ...]:
        return tuple(self._records)

    def attempt_started(self, kind: AttemptKind) -> None:
        if kind == "rescue":
            # a stream attempt let go before the rescue was cut by the total deadline
            self._settle("StreamTimeoutError", only="stream")
        self._open = _Open(kind, self.model, self._clock())

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
        started = opened.started if opened is not None else self._clock()
        model = opened.model if opened is not None else self.model
        if disposed:
            outcome = _PENDING
        elif error is None:
            outcome = "served"
        else:
            outcome = _outcome_of(error)
        self._records.append(
            AttemptRecord(
                model=model,
                kind=kind,
                outcome=outcome,
                usage=usage,
                started=started,
                ended=self._clock(),
            )
        )

    def _settle(self, outcome: str, *, only: Literal["stream", "rescue"] | None = None) -> None:
        for index, record in enumerate(self._records):
            if record.outcome == _PENDING and (only is None or record.kind == only):
                self._records[index] = _replace_outcome(record, outcome)

    def close(self, error: BaseException | None) -> tuple[AttemptRecord, ...]:
        """Settle attempts let go from outside with the turn's ``error``; the final log."""
        if self._open is not None:  # still open when the turn ended: let go with it
            self.attempt_ended(self._open.kind, None, None, disposed=True)
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
    return AttemptRecord(
        model=record.model,
        kind=record.kind,
        outcome=outcome,
        usage=record.usage,
        started=record.started,
        ended=record.ended,
    )
