"""The engine's hot Subjects (``engine.events``, ``engine.turn_streams``).

:class:`EngineSubject` is a :class:`reactivex.subject.Subject` in every respect but the cost of
``on_next``: RxPY's goes through four calls and takes the Subject's lock twice per item (to
check that it is not disposed, then to copy its subscribers); here it is one call. The engine
emits from its event loop's thread only, and copying the list of subscribers is atomic in
Python, so the lock guarded nothing an item could see: the same subscribers get the same items
in the same order, a disposed Subject still raises ``DisposedException``, and a stopped one
still drops the item. ``engine.events`` is called once per event of every turn.
"""

from __future__ import annotations

from typing import TypeVar

from reactivex.internal import DisposedException
from reactivex.subject import Subject

__all__ = ["EngineSubject"]

_T = TypeVar("_T")


class EngineSubject(Subject[_T]):
    """A :class:`~reactivex.subject.Subject` whose ``on_next`` is one call (module docstring)."""

    def on_next(self, value: _T) -> None:
        if self.is_disposed:
            raise DisposedException()
        if self.is_stopped:
            return
        for observer in self.observers.copy():
            observer.on_next(value)
