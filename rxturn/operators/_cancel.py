"""``cancellable``: end a pipeline with :class:`~rxturn.errors.Cancelled` when a token fires.

docs/behaviour.md §2.8: the cancel signal is checked before the provider is ever called and inside
every wait. As an operator placed *outermost*, that is one mechanism for all of them: a token
already cancelled at subscription fails at once without subscribing upstream (no request is
made); a token that fires later disposes the whole upstream pipeline, which cancels whatever is
pending (the limiter wait, the backoff timer, the attempt's HTTP response, the rescue request)
and then reports ``Cancelled``. Nothing upstream can retry or rescue it, because nothing
upstream is still subscribed.

Disposing the subscription instead tears everything down silently, as disposal does in Rx.
The error is :func:`~rxturn.resilience.cancel.cancel_error`, as the handler's driver reports it.
"""

from __future__ import annotations

from typing import TypeVar

from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, Disposable, SingleAssignmentDisposable
from reactivex.internal import curry_flip

from ..resilience.cancel import CancelToken, cancel_error
from ..resilience.progress import TurnProgress

__all__ = ["cancellable_"]

_T = TypeVar("_T")


@curry_flip
def cancellable_(
    source: Observable[_T], token: CancelToken | None, progress: TurnProgress | None = None
) -> Observable[_T]:
    """See :func:`rxturn.operators.cancellable`."""
    if token is None:
        return source

    def subscribe(
        observer: abc.ObserverBase[_T], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        def cancelled() -> None:
            observer.on_error(cancel_error(token, progress))

        if token.cancelled:
            cancelled()
            return Disposable()
        upstream = SingleAssignmentDisposable()

        def on_cancel() -> None:
            upstream.dispose()
            cancelled()

        registration = token.on_cancel(on_cancel)
        upstream.disposable = source.subscribe(observer, scheduler=scheduler)
        return CompositeDisposable(registration, upstream)

    return Observable(subscribe)
