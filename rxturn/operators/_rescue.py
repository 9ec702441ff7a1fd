"""``rescue``: when streaming gave up on a transient failure, ask once more without streaming.

docs/behaviour.md §2.6; an Rx shell over the rescue's rules: which failures are rescued
(:func:`~rxturn.resilience.verdicts.is_rescuable`, one column of the classification table),
the rescue's budget (:func:`~rxturn.resilience.progress.rescue_budget`), its race
(:class:`~rxturn.resilience.progress.RescueRace`) and the error a lost race ends the turn with
(:func:`~rxturn.resilience.progress.rescue_failed`).

The non-streaming rescue runs only for failures the ladder gave up on while
the turn could still be saved: a spent transport budget, a total timeout, a rate-limit hard stop
(:func:`is_rescuable`). Never for a permanent error (the request itself is wrong), a
:class:`~rxturn.errors.Cancelled` (a user stop is not a failure) or a
:class:`~rxturn.errors.RateLimitEscalation` (the model is saturated: the fallback manager, not the
same model, should answer next).

Deadline arithmetic: with a shared :class:`~rxturn.operators.TurnProgress`, the rescue gets
what is left of the turn's total deadline if that is still in the future; if it has already
passed (the usual case after a total timeout), a *fresh* ``timeout`` budget from now; and no
deadline at all when the turn has no total deadline (a disabled ``timeout`` means the default
first-event timeout there). Without a ``TurnProgress``, ``timeout``
applies as is.

The rescue request is raced against that deadline
(:class:`~rxturn.resilience.progress.RescueRace`). A reply that completes at the same instant
the deadline fires wins: the deadline's failure is deferred by one scheduler turn, so a result
already delivered (or queued) first is accepted. Success emits
:class:`~rxturn.events.Fallback` and completes; failure emits
:class:`~rxturn.errors.RescueFailed` holding both the stream's error and the rescue's.
Cancellation is the job of :func:`rxturn.operators.cancellable` placed outside: disposing this
operator's subscription cancels the rescue request.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, SerialDisposable, SingleAssignmentDisposable
from reactivex.internal import curry_flip

from .._arguments import described
from ..errors import ConfigError
from ..events import Fallback
from ..messages import Message
from ..resilience.progress import RescueRace, TurnProgress, no_reply, rescue_budget, rescue_failed
from ..resilience.verdicts import is_rescuable
from ._scheduling import resolve_scheduler

__all__ = ["is_rescuable", "rescue_"]

_T = TypeVar("_T")


def _budget(progress: TurnProgress | None, timeout: float | None) -> float | None:
    """The rescue's seconds, never negative: the machine's budget, or without a turn's progress
    ``timeout`` itself (checked positive where the operator is built)."""
    if progress is None:
        return timeout
    return rescue_budget(progress.remaining(), timeout)


@curry_flip
def rescue_(
    source: Observable[_T],
    create: Callable[[], Observable[Message]],
    timeout: float | None = None,
    progress: TurnProgress | None = None,
    when: Callable[[BaseException], bool] = is_rescuable,
    scheduler: abc.SchedulerBase | None = None,
) -> Observable[_T | Fallback]:
    """See :func:`rxturn.operators.rescue`."""

    def subscribe(
        observer: abc.ObserverBase[_T | Fallback], scheduler_: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        # (at subscription, not when the stream fails: a scheduler that cannot time the
        # rescue is a ConfigError even on a turn that never needs one)
        sched = resolve_scheduler(scheduler, scheduler_)
        current = SerialDisposable()  # the stream, then the rescue request
        timer = SerialDisposable()

        def start_rescue(stream_error: Exception) -> None:
            budget = _budget(progress, timeout)
            race = RescueRace(budget)

            def fail(rescue_error: BaseException) -> None:
                if not race.outcome():
                    return
                timer.disposable = None
                current.disposable = None
                observer.on_error(rescue_failed(stream_error, rescue_error, progress))

            def on_reply(message: Message) -> None:
                if not race.outcome():
                    return
                timer.disposable = None
                if not isinstance(message, Message):  # pyright: ignore[reportUnnecessaryIsInstance]
                    # a Fallback of anything else would replace the reply with garbage
                    current.disposable = None
                    observer.on_error(
                        ConfigError(
                            "rescue: create()'s Observable must emit the reply as a Message, "
                            f"got {described(message)}"
                        )
                    )
                    return
                try:
                    observer.on_next(Fallback(message))
                except Exception as raised:  # the subscriber's own failure: it hears it
                    observer.on_error(raised)
                    return
                observer.on_completed()

            def on_done() -> None:
                fail(no_reply())

            if budget is not None:

                def deadline(_: abc.SchedulerBase, __: Any = None) -> None:
                    error = race.deadline()
                    if error is not None:
                        fail(error)
                    elif race.expiring and not race.settled:  # judged one scheduler turn later
                        timer.disposable = sched.schedule(deadline)

                timer.disposable = sched.schedule_relative(budget, deadline)
            subscription = SingleAssignmentDisposable()
            current.disposable = subscription
            try:
                request = create()
            except Exception as error:
                fail(error)
                return
            if not isinstance(request, Observable):  # pyright: ignore[reportUnnecessaryIsInstance]
                # the caller's mistake, not the provider's: said as such, not as a failed rescue
                if race.outcome():
                    timer.disposable = None
                    current.disposable = None
                    observer.on_error(
                        ConfigError(
                            "rescue: create() must return an Observable of the reply, "
                            f"got {described(request)}"
                        )
                    )
                return
            subscription.disposable = request.subscribe(
                on_reply, fail, on_done, scheduler=scheduler_
            )

        def on_error(error: Exception) -> None:
            try:
                rescuable = when(error)
            except Exception as broken:  # the caller's predicate: nobody upstream would hear of
                # it and the turn would never end; its error ends the turn (as ``catch`` does)
                broken.__context__ = error
                observer.on_error(broken)
                return
            if rescuable:
                start_rescue(error)
            else:
                observer.on_error(error)

        def forward(value: _T) -> None:
            try:
                observer.on_next(value)
            except Exception as raised:
                # the subscriber's own failure, never the stream's: let out to the source, it
                # came back as the stream's error, and a rescuable-looking one started a rescue
                # request for a subscriber that never heard its error
                current.dispose()
                observer.on_error(raised)

        stream = SingleAssignmentDisposable()
        current.disposable = stream
        stream.disposable = source.subscribe(
            forward, on_error, observer.on_completed, scheduler=scheduler_
        )
        return CompositeDisposable(current, timer)

    return Observable(subscribe)
