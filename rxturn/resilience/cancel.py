"""A cancel signal for turns: set once, observed by every wait of the pipeline.

A :class:`CancelToken` is the cooperative stop button of a turn. The engine checks it before
the provider is ever called, and every wait inside the stream handler (limiter, event wait,
backoff, rescue) races against it. Callbacks run synchronously in the thread that calls
:meth:`CancelToken.cancel`; from another thread use ``loop.call_soon_threadsafe(token.cancel)``.

Disposing an Rx subscription is the other way to stop: it tears the pipeline down silently.
Cancelling instead makes the turn *fail* with :class:`~rxturn.errors.Cancelled`, so the
caller learns that it stopped and why.

The cancel rule lives here once: a token already fired when a turn starts fails it before the
provider is called, one that fires later ends every wait, and either way the turn ends with
:func:`cancel_error` (the token's reason, stamped with the streaming attempts made). The
``cancellable`` operator and the handler's driver both apply it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import reactivex
from reactivex import Observable, abc
from reactivex.disposable import Disposable

from .._arguments import described
from ..errors import Cancelled, ConfigError

if TYPE_CHECKING:
    from .progress import TurnProgress

__all__ = ["CancelToken", "cancel_error"]


class CancelToken:
    """A one-shot cancel signal that can be re-armed between runs.

    Almost every turn registers one callback at a time (its handler's), so the first waits in a
    slot of its own and a list is made only for a second one held at the same time.
    """

    __slots__ = ("_first", "_more", "_reason")

    def __init__(self) -> None:
        self._reason: str | None = None
        #: the registered callbacks, in registration order: ``_first`` (when set) came before
        #: every one of ``_more``
        self._first: Callable[[], None] | None = None
        self._more: list[Callable[[], None]] | None = None

    def __repr__(self) -> str:
        return f"CancelToken(cancelled={self.cancelled})"

    @property
    def cancelled(self) -> bool:
        return self._reason is not None

    def cancel(self, reason: str = "cancelled") -> None:
        """Fire the signal (idempotent). Registered callbacks run once, in registration order.

        Raises:
            ConfigError: ``reason`` is not a str (``None`` fired nothing, and another value
                made the ``Cancelled`` that carried it fail to print).
        """
        if type(reason) is not str:
            raise ConfigError(f"cancel(reason=...) must be a str, got {described(reason)}")
        if self._reason is not None:
            return
        self._reason = reason
        first, more = self._first, self._more
        self._first = self._more = None
        if first is not None:
            first()
        if more:
            for callback in more:
                callback()

    def reset(self) -> None:
        """Re-arm the signal so the next run can start (the engine does this after a run)."""
        self._reason = None
        self._first = self._more = None

    def raise_if_cancelled(self) -> None:
        if self._reason is not None:
            raise Cancelled(self._reason)

    def error(self) -> Cancelled:
        return Cancelled(self._reason or "cancelled")

    def on_cancel(self, callback: Callable[[], None]) -> abc.DisposableBase:
        """Run ``callback`` when the signal fires (at once if it already has)."""
        if self._reason is not None:
            callback()
            return Disposable()
        self.add_callback(callback)
        return Disposable(lambda: self.remove_callback(callback))

    def add_callback(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` when the signal fires; :meth:`on_cancel` without the disposable
        (the stream handler keeps one per turn and removes it with :meth:`remove_callback`).
        The caller checks :attr:`cancelled` first: a fired signal does not call it."""
        if self._first is None and not self._more:
            self._first = callback
        elif self._more is None:
            self._more = [callback]
        else:
            self._more.append(callback)

    def remove_callback(self, callback: Callable[[], None]) -> None:
        """Forget ``callback`` (its first registration; no effect if it is not registered, or
        the signal fired)."""
        if self._first is not None and self._first == callback:
            self._first = None
            return
        more = self._more
        if more is not None and callback in more:
            more.remove(callback)

    def as_observable(self) -> Observable[None]:
        """An Observable that errors with :class:`Cancelled` when the signal fires."""

        def subscribe(
            observer: abc.ObserverBase[None], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            return self.on_cancel(lambda: observer.on_error(self.error()))

        return reactivex.create(subscribe)


def cancel_error(token: CancelToken, progress: TurnProgress | None = None) -> Cancelled:
    """The error a cancelled turn ends with: :class:`Cancelled` with the token's reason, its
    ``attempts`` the streaming attempts the turn made (when its ``progress`` is known)."""
    error = token.error()
    if progress is not None:
        progress.stamp(error)
    return error
