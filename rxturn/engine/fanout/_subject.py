"""``engine.events``: a ``reactivex`` ``Subject`` whose ``on_next`` is one call per observer.

The routing calls ``engine.events``' ``on_next`` once per event of every watched turn, so its
cost is a per-event cost. ``reactivex``'s ``Subject.on_next`` spends three Python calls and two
lock round trips before it reaches an observer (``check_disposed`` under the lock, then
``Observer.on_next``, then ``_on_next_core``, which takes the lock again to copy the observer
list). :class:`EventSubject` does the same steps in one method: raise ``DisposedException`` once
disposed, nothing once stopped (completed or failed), else call every observer subscribed when
the emission began, on a copy of the list (so one that subscribes or unsubscribes during the
emission changes the next emission, not this one). The copy is one C call, atomic under the
interpreter's lock as the ``Subject``'s was under its own; subscribing, disposing and the end
notifications are ``Subject``'s own code, unchanged. The lock is not taken around the checks:
``Subject`` released it between its check and its copy too, so no interleaving with another
thread was excluded by it.

One departure from ``Subject``: a subscriber whose ``on_next`` raises is logged (naming the
subject, ``engine.events`` or ``engine.turn_streams``) and dropped, and the emission goes on to
the subscribers after it. ``Subject`` lets the error out of the loop, so one faulty subscriber
silenced every one subscribed after it, on every event, and logged each time. The ``try`` costs
nothing while nobody raises.

Measured (one subscriber, ``on_next`` alone): ~1.16 µs per value through ``Subject``, ~0.31 µs
through :class:`EventSubject`, ~0.12 µs for the subscriber's function called directly.
"""

from __future__ import annotations

import logging
from typing import TypeVar

from reactivex import abc
from reactivex.internal import DisposedException
from reactivex.subject import Subject

__all__ = ["EventSubject"]

_T = TypeVar("_T")

_log = logging.getLogger("rxturn.engine")


class EventSubject(Subject[_T]):
    """A ``Subject`` (everything but ``on_next`` is ``Subject``'s) with a one-method
    ``on_next`` that isolates its subscribers: see the module docstring.

    Args:
        name: how a log message names the subject (``"engine.events"``).
    """

    def __init__(self, name: str = "EventSubject") -> None:
        Subject.__init__(self)  # pyright: ignore[reportUnknownMemberType]
        self.name = name

    def on_next(self, value: _T) -> None:
        if self.is_disposed:
            raise DisposedException()
        if not self.is_stopped:
            for observer in self.observers.copy():
                try:
                    observer.on_next(value)
                except Exception:
                    self._drop(observer)

    def _drop(self, observer: abc.ObserverBase[_T]) -> None:
        """Log the error being handled and unsubscribe ``observer`` (it raised)."""
        _log.exception("an %s subscriber raised; it is dropped, the turn goes on", self.name)
        with self.lock:
            if observer in self.observers:
                self.observers.remove(observer)
