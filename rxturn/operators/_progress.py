"""``TurnProgress`` and the operators that annotate an attempt's error with the turn's facts.

:class:`~rxturn.resilience.progress.TurnProgress` (the facts of one turn, shared by the
operators that handle it) lives with the rules in :mod:`rxturn.resilience.progress`; it is
exported here too, where the operators that take it are. Every operator also works without
one (each then keeps private bookkeeping).

Three operators sit between an attempt's deadlines and the limiter gate, each acting on the
attempt's error only (never per event):

- ``scrubbed(scrub)``: the client's ``scrub`` removes its key from the error, before anything
  downstream (a hook, a log, the retry ladder) sees it;
- ``annotate_progress(progress)``: a rate limit or a 408 learns what the attempt had received
  (:func:`~rxturn.resilience.progress.note_progress`);
- ``give_up_beyond_deadline(progress)``: a rate limit whose ``Retry-After`` outlasts the turn
  becomes :class:`~rxturn.errors.RetryAfterBeyondDeadline`
  (:func:`~rxturn.resilience.retry.beyond_deadline`), so the turn moves on to another model
  instead of waiting.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from reactivex import Observable, abc

from ..errors import ConfigError
from ..resilience.progress import TurnProgress, note_progress, stamp_attempts
from ..resilience.retry import beyond_deadline

__all__ = [
    "TurnProgress",
    "annotate_progress_",
    "give_up_beyond_deadline_",
    "scrubbed_",
    "stamp_attempts",
]

_T = TypeVar("_T")


def _on_error(source: Observable[_T], change: Callable[[Exception], Exception]) -> Observable[_T]:
    """``source`` with each error replaced by ``change(error)`` (items pass untouched)."""

    def subscribe(
        observer: abc.ObserverBase[_T], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        def on_error(error: Exception) -> None:
            observer.on_error(change(error))

        return source.subscribe(
            observer.on_next, on_error, observer.on_completed, scheduler=scheduler
        )

    return Observable(subscribe)


def scrubbed_(
    scrub: Callable[[BaseException], None] | None,
) -> Callable[[Observable[_T]], Observable[_T]]:
    """See :func:`rxturn.operators.scrubbed`."""

    def operator(source: Observable[_T]) -> Observable[_T]:
        clean = scrub
        if clean is None:
            return source

        def change(error: Exception) -> Exception:
            try:
                clean(error)
            except Exception as broken:
                # raised out of on_error it would end nothing (the turn hangs on asyncio), and
                # the error it failed to clean may still hold the key: neither goes downstream
                return ConfigError(
                    f"scrubbed: scrub raised {type(broken).__name__} on an attempt's "
                    f"{type(error).__name__}, which is withheld (it may hold the API key)"
                )
            return error

        return _on_error(source, change)

    return operator


def annotate_progress_(progress: TurnProgress) -> Callable[[Observable[_T]], Observable[_T]]:
    """See :func:`rxturn.operators.annotate_progress`."""

    def change(error: Exception) -> Exception:
        note_progress(error, progress)
        return error

    return lambda source: _on_error(source, change)


def give_up_beyond_deadline_(
    progress: TurnProgress,
) -> Callable[[Observable[_T]], Observable[_T]]:
    """See :func:`rxturn.operators.give_up_beyond_deadline`."""

    def change(error: Exception) -> Exception:
        return beyond_deadline(error, progress.attempts, progress.remaining())

    return lambda source: _on_error(source, change)
