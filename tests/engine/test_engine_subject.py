"""``engine.events`` and ``engine.turn_streams`` are Subjects whose ``on_next`` is one call:
they must still behave as RxPY's Subject does, item for item."""

from __future__ import annotations

from typing import Any

import pytest
from reactivex.internal import DisposedException
from reactivex.subject import Subject

from rxturn.engine.observation._subject import EngineSubject


def _script(subject: Subject[int]) -> list[Any]:
    """Subscribers that come and go during emissions; what each one saw, as a log."""
    seen: list[Any] = []
    first = subject.subscribe(lambda v: seen.append(("a", v)))

    def second(value: int) -> None:
        seen.append(("b", value))
        if value == 2:
            first.dispose()  # a subscriber leaving mid-emission: the walk is not disturbed
            subject.subscribe(lambda v: seen.append(("c", v)))  # joins for the next item

    subject.subscribe(second, on_completed=lambda: seen.append("b done"))
    for value in (1, 2, 3):
        subject.on_next(value)
    subject.on_completed()
    subject.on_next(4)  # stopped: dropped
    subject.subscribe(on_completed=lambda: seen.append("late done"))
    return seen


def test_engine_subject_delivers_as_a_subject_does() -> None:
    assert _script(EngineSubject()) == _script(Subject())
    assert _script(EngineSubject())[:4] == [("a", 1), ("b", 1), ("a", 2), ("b", 2)]


def test_disposed_engine_subject_raises_as_a_subject_does() -> None:
    for subject in (Subject[int](), EngineSubject[int]()):
        subject.dispose()
        with pytest.raises(DisposedException):
            subject.on_next(1)


def test_a_subscriber_error_reaches_the_emitter() -> None:
    subject = EngineSubject[int]()

    def boom(value: int) -> None:
        raise ValueError(value)

    subject.subscribe(boom)
    with pytest.raises(ValueError, match="7"):
        subject.on_next(7)
